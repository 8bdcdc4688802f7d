"""``out=`` (jitgrad/ops/out.py) against PyTorch: the result lands in ``out`` (which is
returned, its version bumped), dtype rules per op family, resizing with PyTorch's warning, the
autograd refusal, and partial-overlap errors. Every expectation is read off torch."""
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

F32, F64, I64, BOOL = "float32", "float64", "int64", "bool"

# (label, call(T, out), out shape, out dtype)
CASES = [
    ("cat", lambda T, o: T.cat([T.ones(3), T.ones(3) * 2], out=o), (6,), F32),
    ("cat_to_f64", lambda T, o: T.cat([T.ones(3), T.ones(3)], out=o), (6,), F64),
    ("cat_to_long", lambda T, o: T.cat([T.ones(3), T.ones(3)], out=o), (6,), I64),
    ("stack", lambda T, o: T.stack([T.ones(3), T.zeros(3)], out=o), (2, 3), F32),
    ("stack_resized", lambda T, o: T.stack([T.ones(3), T.zeros(3)], out=o), (4,), F32),
    ("stack_empty_out", lambda T, o: T.stack([T.ones(3), T.zeros(3)], out=o), (0,), F32),
    ("sum", lambda T, o: T.sum(T.full((2, 3), 0.6), 0, out=o), (3,), F32),
    ("sum_in_long", lambda T, o: T.sum(T.full((2, 3), 0.6), 0, out=o), (3,), I64),
    ("sum_to_f64", lambda T, o: T.sum(T.full((2, 3), 0.6), 1, keepdim=True, out=o), (2, 1), F64),
    ("mean", lambda T, o: T.mean(T.full((2, 3), 0.6), 0, out=o), (3,), F64),
    ("mean_to_long", lambda T, o: T.mean(T.full((2, 3), 0.6), 0, out=o), (3,), I64),
    ("prod_in_long", lambda T, o: T.prod(T.full((2, 3), 1.6), 0, out=o), (3,), I64),
    ("cumsum", lambda T, o: T.cumsum(T.full((2, 3), 0.6), 1, out=o), (2, 3), F64),
    ("amax", lambda T, o: T.amax(T.arange(6.).reshape(2, 3), 1, out=o), (2,), F32),
    ("amax_wrong_dtype", lambda T, o: T.amax(T.arange(6.).reshape(2, 3), 1, out=o), (2,), F64),
    ("amin", lambda T, o: T.amin(T.arange(6.).reshape(2, 3), 0, out=o), (3,), F32),
    ("logsumexp", lambda T, o: T.logsumexp(T.arange(6.).reshape(2, 3), 1, out=o), (2,), F64),
    ("logsumexp_long", lambda T, o: T.logsumexp(T.arange(6.).reshape(2, 3), 1, out=o), (2,), I64),
    ("mm", lambda T, o: T.mm(T.ones(2, 3), T.ones(3, 2), out=o), (2, 2), F32),
    ("add_to_f64", lambda T, o: T.add(T.ones(3), T.ones(3), alpha=2, out=o), (3,), F64),
    ("add_to_long", lambda T, o: T.add(T.ones(3), T.ones(3), out=o), (3,), I64),
    ("add_resized", lambda T, o: T.add(T.ones(3), T.ones(3), out=o), (2,), F32),
    ("exp_to_f64", lambda T, o: T.exp(T.ones(3), out=o), (3,), F64),
    ("eq_to_float", lambda T, o: T.eq(T.ones(3), T.arange(3.), out=o), (3,), F32),
    ("lt_to_bool", lambda T, o: T.lt(T.ones(3), T.arange(3.), out=o), (3,), BOOL),
    ("where", lambda T, o: T.where(T.arange(3.) > 0, T.ones(3), T.zeros(3), out=o), (3,), F32),
    ("clamp", lambda T, o: T.clamp(T.arange(4.), 1, 2, out=o), (4,), F64),
    ("int_div_to_long", lambda T, o: T.div(T.arange(4), 2, out=o), (4,), I64),
    ("floor_divide", lambda T, o: T.floor_divide(T.arange(4), 2, out=o), (4,), I64),
    ("zeros", lambda T, o: T.zeros(3, out=o), (3,), F64),
    ("zeros_resized_silently", lambda T, o: T.ones(4, out=o), (2,), F32),
    ("linspace", lambda T, o: T.linspace(0, 1, 5, out=o), (5,), F64),
    ("arange", lambda T, o: T.arange(4, out=o), (2,), F32),
    ("full", lambda T, o: T.full((2,), 7, out=o), (2,), I64),
    ("mm_wrong_dtype", lambda T, o: T.mm(T.ones(2, 3), T.ones(3, 2), out=o), (2, 2), F64),
    ("gather", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                     T.tensor([[0, 2], [1, 0]]), out=o), (2, 2), F32),
    ("gather_keywords", lambda T, o: T.gather(input=T.arange(6.).reshape(2, 3), dim=0,
                                              index=T.tensor([[1, 0, 1]]), out=o), (1, 3), F32),
    ("gather_resized", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                             T.tensor([[0, 2], [1, 0]]), out=o), (3,), F32),
    ("gather_empty_out", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                               T.tensor([[0, 2], [1, 0]]), out=o), (0,), F32),
    ("gather_wrong_dtype", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                                 T.tensor([[0, 2], [1, 0]]), out=o), (2, 2), I64),
    ("gather_to_f64", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                            T.tensor([[0, 2], [1, 0]]), out=o), (2, 2), F64),
    ("gather_bad_index", lambda T, o: T.gather(T.arange(6.).reshape(2, 3), 1,
                                               T.tensor([[0, 3]]), out=o), (1, 2), F32),
]


def _run(T, call, shape, dtype):
    out = T.zeros(shape, dtype=getattr(T, dtype))
    v0 = out._version
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = call(T, out)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return ("error", type(e), str(e).split("\n")[0])
    return ("ok", res is out, out.dtype.__repr__(), tuple(out.shape),
            out.numpy().tolist(), out._version > v0,
            [str(x.message).split(" (Triggered")[0] for x in w])


@pytest.mark.parametrize("label,call,shape,dtype", CASES, ids=[c[0] for c in CASES])
def test_out_matches_torch(label, call, shape, dtype):
    t = _run(torch, call, shape, dtype)
    j = _run(jitgrad, call, shape, dtype)
    if t[0] == "ok":
        assert j[:4] == t[:4] and j[5:] == t[5:], (j, t)
        np.testing.assert_allclose(np.array(j[4], dtype=float), np.array(t[4], dtype=float),
                                   rtol=1e-6)
    else:
        assert j == t


@pytest.mark.parametrize("fn", [
    lambda T, x, o: T.cat([x, x], out=o),
    lambda T, x, o: T.mul(x, 2, out=o),
    lambda T, x, o: T.exp(x, out=o),
    lambda T, x, o: T.sum(x.reshape(3, 2), 0, out=o),
    lambda T, x, o: T.mm(x.reshape(2, 3), x.reshape(3, 2), out=o),
    lambda T, x, o: T.gather(x, 0, T.tensor([0, 1]), out=o),
])
def test_out_refuses_autograd_like_torch(fn):
    msgs = []
    for T in (torch, jitgrad):
        x = T.ones(6, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            fn(T, x, T.zeros(1))
        msgs.append(str(e.value))
        with T.no_grad():  # no recording: allowed
            assert fn(T, x, T.zeros(0)) is not None
    assert msgs[0] == msgs[1]


def test_out_partly_overlapping_an_input_is_refused_like_torch():
    msgs = []
    for T in (torch, jitgrad):
        a = T.ones(3)
        with pytest.raises(RuntimeError) as e:
            T.add(a, a, out=a[:2])
        msgs.append(str(e.value))
        assert T.mul(a, 2, out=a) is a and a.tolist() == [2.0, 2.0, 2.0]  # exact alias: fine
    assert msgs[0] == msgs[1]
