"""Reductions against PyTorch: values, dtypes, shapes, grad_fn names, gradients (also against
float64 central differences) and the errors of misuse. Each case runs the same expression with
``T`` bound to jitgrad and to torch."""
import math
import warnings

import numpy as np
import pytest
from _parity import typed_tensors

import jitgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
INPUTS = {
    "x": RNG.standard_normal((3, 4)),
    "x3": RNG.standard_normal((2, 3, 4)),
    "s": np.array(1.5),
    "e": np.zeros((0, 3)),
    "ties": np.array([[1., 3., 3., 0.], [2., 2., 1., 2.], [5., 5., 5., 5.]]),
    "nan": np.array([[1., np.nan, 3.], [np.nan, 0., 2.], [1., 2., 3.]]),
    "zeros": np.array([[1., 0., 3.], [0., 0., 2.], [1., 2., 3.]]),
    "i": RNG.integers(-5, 5, (3, 4)),
    "b": RNG.integers(0, 2, (3, 4)).astype(bool),
    "u8": RNG.integers(0, 255, (3, 4)).astype(np.uint8),
}


def make(T, name, grad=True):
    return typed_tensors(T, [INPUTS[name]], grad=grad)[0]


def run(T, expr, name):
    x = make(T, name)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = eval(expr, {"T": T, "x": x, "math": math})
    return x, out, [str(m.message) for m in w]


def leaves(r):
    if isinstance(r, (tuple, list)):
        return [t for item in r for t in leaves(item)]
    return [r]


def check(expr, name, grad=True):
    """Run ``expr`` under both libraries and compare everything user-visible."""
    try:
        xp, rp, wp = run(torch, expr, name)
    except Exception as e:  # PyTorch refuses: jitgrad must refuse with the same type
        with pytest.raises(type(e)):
            run(jitgrad, expr, name)
        return
    xj, rj, wj = run(jitgrad, expr, name)
    assert bool(wj) == bool(wp), (expr, name, wj, wp)
    if isinstance(rp, tuple):
        assert type(rj).__name__ == type(rp).__name__
    lp, lj = leaves(rp), leaves(rj)
    assert len(lp) == len(lj)
    weighted = []
    for a, b in zip(lj, lp):
        if not isinstance(b, torch.Tensor):
            assert a == b
            continue
        assert str(a.dtype) == str(b.dtype), (expr, name)
        assert tuple(a.shape) == tuple(b.shape), (expr, name)
        np.testing.assert_allclose(a.detach().numpy().astype(float),
                                   b.detach().numpy().astype(float), rtol=1e-6, atol=1e-6,
                                   equal_nan=True, err_msg=f"{expr} [{name}]")
        gp = type(b.grad_fn).__name__ if b.grad_fn is not None else None
        gj = type(a.grad_fn).__name__ if a.grad_fn is not None else None
        assert gj == gp, (expr, name)
        if b.requires_grad:
            weighted.append((a, b, RNG.standard_normal(tuple(b.shape))))
    if grad and weighted:
        lossp = sum((b * torch.tensor(w)).sum() for _, b, w in weighted)
        lossj = sum((a * jitgrad.tensor(w)).sum() for a, _, w in weighted)
        gp = torch.autograd.grad(lossp, [xp], allow_unused=True)[0]
        gj = jitgrad.autograd.grad(lossj, [xj], allow_unused=True)[0]
        assert (gj is None) == (gp is None), (expr, name)
        if gp is not None:
            np.testing.assert_allclose(gj.numpy(), gp.numpy(), rtol=1e-6, atol=1e-8,
                                       equal_nan=True, err_msg=f"grad {expr} [{name}]")


DIMS = ["", "dim=0", "dim=-1", "dim=(0, 1)", "dim=[0, -1]", "dim=None", "0, keepdim=True",
        "dim=None, keepdim=True", "dim=2", "dim=[]"]
FLOAT = ["x", "x3", "s", "e", "ties", "nan", "zeros"]
ALL = FLOAT + ["i", "b", "u8"]

CASES = []
for f in ["sum", "mean", "amax", "amin"]:
    CASES += [f"T.{f}(x, {d})" if d else f"T.{f}(x)" for d in DIMS]
CASES += ["x.sum()", "x.sum(None)", "x.sum(dtype=T.float32)", "x.sum(1, dtype=T.float64)",
          "x.mean(dtype=T.float32)", "x.sum(dtype=T.int64)", "x.mean(dtype=T.int64)",
          "x.sum(dtype=T.int32)", "x.prod(0, dtype=T.int32)", "x.cumsum(0, dtype=T.int32)"]
CASES += ["T.prod(x)", "T.prod(x, 0)", "T.prod(x, -1, keepdim=True)", "T.prod(x, (0, 1))",
          "T.prod(x, dim=None)", "x.prod(dtype=T.float64)"]
for f in ["max", "min"]:
    CASES += [f"T.{f}(x)", f"T.{f}(x, 0)", f"T.{f}(x, -1)", f"T.{f}(x, 1, True)",
              f"T.{f}(x, (0, 1))", f"T.{f}(x, 1).values", f"T.{f}(x, 1).indices",
              f"repr(T.{f}(x, 1)).startswith('torch.return_types.{f}(')"]
for f in ["argmax", "argmin"]:
    CASES += [f"T.{f}(x)", f"T.{f}(x, 0)", f"T.{f}(x, -1, keepdim=True)",
              f"T.{f}(x, keepdim=True)", f"T.{f}(x, dim=(0, 1))"]
for f in ["var", "std"]:
    CASES += [f"T.{f}(x)", f"T.{f}(x, 0)", f"T.{f}(x, (0, 1))", f"T.{f}(x, 1, keepdim=True)",
              f"T.{f}(x, unbiased=False)", f"T.{f}(x, False)", f"T.{f}(x, 1, False)",
              f"T.{f}(x, dim=1, correction=0)", f"T.{f}(x, dim=1, correction=2)",
              f"T.{f}(x, correction=30)", f"T.{f}(x, dim=0, correction=1.5)"]
for f in ["var_mean", "std_mean"]:
    CASES += [f"T.{f}(x)", f"T.{f}(x, 0)", f"T.{f}(x, 1, keepdim=True)",
              f"T.{f}(x, unbiased=False)", f"T.{f}(x, dim=1, correction=0)",
              f"T.{f}(x, 1)[0]", f"T.{f}(x, 1)[1]"]
for p in ["", "1", "2", "3", "0.5", "1.5", "0", "-1", "math.inf", "-math.inf"]:
    CASES += [f"T.norm(x, {p})" if p else "T.norm(x)", f"T.norm(x, {p or 2}, dim=1)",
              f"T.norm(x, {p or 2}, 0, True)"]
CASES += ["T.norm(x, dtype=T.float32)", "T.norm(x, 2, dim=(0, 1))"]
CASES += ["T.logsumexp(x, 0)", "T.logsumexp(x, -1, keepdim=True)", "T.logsumexp(x, (0, 1))",
          "T.cumsum(x, 0)", "T.cumsum(x, -1)", "x.cumsum(0, dtype=T.float32)",
          "x.cumsum(1, dtype=T.int64)"]
for f in ["all", "any"]:
    CASES += [f"T.{f}(x)", f"T.{f}(x, 0)", f"T.{f}(x, -1, keepdim=True)"]
CASES += ["T.count_nonzero(x)", "T.count_nonzero(x, 0)", "T.count_nonzero(x, (0, 1))",
          "T.count_nonzero(x, -1)"]
CASES += ["T.aminmax(x)", "T.aminmax(x, dim=0)", "T.aminmax(x, dim=-1, keepdim=True)",
          "T.aminmax(x).max", "T.aminmax(x, dim=1).min"]


def _pytorch_bug(expr, name):
    # var/std(x, dim=()) and logsumexp(x, dim=()): PyTorch's backward (or forward) divides by
    # the size of an empty dim list (2/(1 - 1)); jitgrad reduces all dims consistently
    return "dim=()" in expr


@pytest.mark.parametrize("expr", CASES)
def test_reduction_matches_pytorch(expr):
    for name in ALL:
        if not _pytorch_bug(expr, name):
            check(expr, name)


@pytest.mark.parametrize("expr,shape", [
    ("T.var(x, 1)", (3, 4)), ("T.std(x, 0)", (3, 4)), ("T.std(x)", (5,)),
    ("T.var_mean(x, 1)[0] * T.var_mean(x, 1)[1]", (3, 4)),
    ("T.std_mean(x)[0] + T.std_mean(x)[1]", (4,)),
    ("T.norm(x, 3, dim=1)", (3, 4)), ("T.norm(x, 1.5)", (6,)), ("T.norm(x, 0.5)", (6,)),
    ("T.max(x, 1).values", (3, 4)), ("T.amin(x, 0)", (3, 4)), ("T.max(x)", (6,)),
    ("T.aminmax(x, dim=1).max * 2 + T.aminmax(x, dim=1).min", (3, 4)),
    ("T.prod(x, 1)", (3, 4)), ("T.logsumexp(x, 1)", (3, 4)),
])
def test_reduction_gradcheck(expr, shape):
    """Gradients and second derivatives against float64 central differences."""
    rng = np.random.default_rng(3)
    x = jitgrad.tensor(rng.standard_normal(shape) + np.sign(rng.standard_normal(shape)) * 0.5,
                       dtype=jitgrad.float64, requires_grad=True)

    def f(x):
        return eval(expr, {"T": jitgrad, "x": x})

    assert jitgrad.autograd.gradcheck(f, (x,))
    assert jitgrad.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("expr", [
    "T.max(x, 0)", "T.amax(x, -2)", "T.amax(x)", "T.argmax(x)", "T.argmax(x, 0)",
    "T.aminmax(x)", "T.aminmax(x, dim=0)", "T.norm(x, math.inf)", "T.min(x)",
])
def test_empty_errors(expr):
    e = torch.zeros(0, 3)
    with pytest.raises(Exception) as want:
        eval(expr, {"T": torch, "x": e, "math": math})
    with pytest.raises(type(want.value)) as got:
        eval(expr, {"T": jitgrad, "x": jitgrad.zeros(0, 3), "math": math})
    assert str(got.value).split(".")[0] == str(want.value).split(".")[0]


def test_bool_argmax_refused():
    with pytest.raises(RuntimeError, match="does not support bool input"):
        jitgrad.argmax(jitgrad.tensor([True, False]))


def test_max_nan_gradient_goes_to_nans():
    for T in (torch, jitgrad):
        x = T.tensor([1.0, float("nan"), 3.0, float("nan")], dtype=T.float64,
                     requires_grad=True)
        x.max().backward()
        assert np.allclose(x.grad.numpy(), [0, 0.5, 0, 0.5])


def test_var_mean_single_node():
    x = jitgrad.randn(3, 4, dtype=jitgrad.float64, requires_grad=True)
    v, m = jitgrad.var_mean(x, 1)
    assert v.grad_fn is m.grad_fn and type(v.grad_fn).__name__ == "VarMeanBackward0"
    (v.sum() + m.sum()).backward()
    ref = x.detach().clone().requires_grad_()
    (ref.var(1).sum() + ref.mean(1).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


def test_return_type_is_a_named_tuple():
    r = jitgrad.max(jitgrad.tensor([[1.0, 3.0], [2.0, 0.0]]), 1)
    values, indices = r
    assert isinstance(r, tuple) and r.values is values and r.indices is indices
    assert repr(r).startswith("torch.return_types.max(\nvalues=tensor([3., 2.]),\nindices=")
    import pickle
    assert pickle.loads(pickle.dumps(r)).indices.tolist() == [1, 0]
