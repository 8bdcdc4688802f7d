"""F.embedding_bag and nn.EmbeddingBag against PyTorch: values, gradients w.r.t. weight and
per_sample_weights (float32/float64), the node name, every mode with offsets, 2-D input,
include_last_offset, padding_idx, scale_grad_by_freq (PyTorch's CPU scales included), max_norm,
the errors and messages, the module's constructor, repr and seeded initialisation; plus an
independent NumPy reference and float64 finite differences."""
import warnings

import numpy as np
import pytest

import jitgrad as jt
from tests._parity import agree, compare, raises_like, torch

if torch is None:  # pragma: no cover
    pytest.skip("PyTorch is the reference", allow_module_level=True)

R = np.random.default_rng(5)
W = R.standard_normal((7, 3))
PSW = R.random(8) + 0.5
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 0])
OFFS = np.array([0, 2, 2, 5])  # bags [0, 2), [] , [2, 5), [5, 8)
DTYPES = ("float32", "float64")


def _bag(T, w, p=None, idx=IDX, offs=OFFS, **kw):
    o = None if offs is None else T.tensor(offs)
    return T.nn.functional.embedding_bag(T.tensor(idx), w, o, per_sample_weights=p, **kw)


CASES = {
    "sum": dict(mode="sum"),
    "mean": dict(),
    "max": dict(mode="max"),
    "sum_padding": dict(mode="sum", padding_idx=4),
    "mean_padding": dict(mode="mean", padding_idx=2),
    "mean_padding_negative": dict(mode="mean", padding_idx=-3),
    "max_padding": dict(mode="max", padding_idx=2),
    "sum_last_offset": dict(mode="sum", include_last_offset=True, offs=np.append(OFFS, 8)),
    "mean_last_offset": dict(include_last_offset=True, offs=np.array([0, 3, 8])),
    "max_last_offset": dict(mode="max", include_last_offset=True, offs=np.append(OFFS, 8)),
    "sum_freq": dict(mode="sum", scale_grad_by_freq=True),
    "mean_freq_padding": dict(mode="mean", scale_grad_by_freq=True, padding_idx=2),
    "sum_2d": dict(mode="sum", idx=IDX.reshape(2, 4), offs=None),
    "mean_2d": dict(idx=IDX.reshape(4, 2), offs=None),
    "max_2d": dict(mode="max", idx=IDX.reshape(2, 4), offs=None),
    "int32_indices": dict(mode="sum", idx=IDX.astype(np.int32)),
    "all_padding_bag": dict(mode="mean", idx=np.array([3, 3, 1]), offs=np.array([0, 2]),
                            padding_idx=3),
    "empty_input": dict(mode="mean", idx=np.array([], dtype=np.int64), offs=np.array([0, 0])),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_embedding_bag(case, dtype):
    kw = dict(CASES[case])
    tol = 2e-6 if dtype == "float32" else 1e-12
    compare(lambda T, w: _bag(T, w, **kw), [W], dtype=dtype, grad=True, rtol=tol, atol=tol)


def test_no_bags():
    # not run under PyTorch: 2.13 crashes (segfault) on empty offsets with float64 weights and
    # in the backward; its float32 forward gives a (0, dim) result, as here
    out = _bag(jt, jt.tensor(W, requires_grad=True), mode="sum",
               offs=np.array([], dtype=np.int64))
    assert tuple(out.shape) == (0, 3) and type(out.grad_fn).__name__ == "EmbeddingBagBackward0"


PSW_CASES = {
    "psw": dict(),
    "psw_padding": dict(padding_idx=5),
    "psw_freq": dict(scale_grad_by_freq=True),
    "psw_2d": dict(idx=IDX.reshape(2, 4), offs=None),
    "psw_last_offset": dict(include_last_offset=True, offs=np.array([0, 4, 8])),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(PSW_CASES))
def test_embedding_bag_per_sample_weights(case, dtype):
    kw = dict(CASES.get(case, {}), **PSW_CASES[case])
    shape = np.shape(kw.get("idx", IDX))
    tol = 2e-6 if dtype == "float32" else 1e-12
    compare(lambda T, w, p: _bag(T, w, p, mode="sum", **kw), [W, PSW.reshape(shape)],
            dtype=dtype, grad=True, rtol=tol, atol=tol)


def test_only_per_sample_weights_require_grad():
    compare(lambda T, p: _bag(T, T.tensor(W), p, mode="sum"), [PSW], grad=True)


def test_max_ties_go_to_the_first_row():
    w = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 3.0]])
    compare(lambda T, w: T.nn.functional.embedding_bag(T.tensor([0, 1, 2, 1]), w,
                                                       T.tensor([0]), mode="max"),
            [w], grad=True)


def _numpy_bags(w, idx, offs, mode, psw=None, padding_idx=None):
    """Independent reference: the definition, bag by bag."""
    out = []
    ends = list(offs[1:]) + [len(idx)]
    for s, e in zip(offs, ends):
        rows = [w[i] * (1.0 if psw is None else psw[k]) for k, i in enumerate(idx)
                if s <= k < e and i != padding_idx]
        if not rows:
            out.append(np.zeros(w.shape[1]))
        elif mode == "sum":
            out.append(np.sum(rows, 0))
        elif mode == "mean":
            out.append(np.mean(rows, 0))
        else:
            out.append(np.max(rows, 0))
    return np.array(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_matches_numpy_definition(mode):
    got = jt.nn.functional.embedding_bag(jt.tensor(IDX), jt.tensor(W), jt.tensor(OFFS),
                                         mode=mode, padding_idx=4)
    np.testing.assert_allclose(got.numpy(), _numpy_bags(W, IDX, OFFS, mode, padding_idx=4),
                               rtol=1e-12, atol=1e-15)
    if mode == "sum":
        got = jt.nn.functional.embedding_bag(jt.tensor(IDX), jt.tensor(W), jt.tensor(OFFS),
                                             mode="sum", per_sample_weights=jt.tensor(PSW))
        np.testing.assert_allclose(got.numpy(), _numpy_bags(W, IDX, OFFS, "sum", PSW),
                                   rtol=1e-12)


def test_finite_differences_and_double_backward():
    w = jt.tensor(W, requires_grad=True)
    p = jt.tensor(PSW, requires_grad=True)
    i, o = jt.tensor(IDX), jt.tensor(OFFS)
    f = jt.nn.functional.embedding_bag
    assert jt.autograd.gradcheck(lambda a, b: f(i, a, o, mode="sum", per_sample_weights=b),
                                 (w, p))
    assert jt.autograd.gradcheck(lambda a: f(i, a, o, mode="mean", padding_idx=2), (w,))
    assert jt.autograd.gradcheck(lambda a: f(i, a, o, mode="max"), (w,))
    assert jt.autograd.gradgradcheck(
        lambda a, b: f(i, a, o, mode="sum", per_sample_weights=b), (w, p))


def test_max_norm_renormalises_the_weight_in_place():
    def fn(T):
        w = T.tensor(W * 3)
        out = T.nn.functional.embedding_bag(T.tensor(IDX[:5]), w, T.tensor([0, 3]), max_norm=1.5,
                                            mode="sum")
        return out, w
    ja, ta = (fn(lib) for lib in (jt, torch))
    for a, b in zip(ja, ta):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


ERRORS = {
    "offsets_start": dict(offs=np.array([1, 2])),
    "offsets_start_int32": dict(offs=np.array([2, 3], dtype=np.int32),
                                idx=IDX.astype(np.int32)),
    "offsets_end": dict(offs=np.array([0, 9])),
    "float_indices": dict(idx=IDX.astype(np.float32)),
    "float_offsets": dict(offs=OFFS.astype(np.float32)),
    "padding_high": dict(padding_idx=7),
    "padding_low": dict(padding_idx=-8),
    "last_offset_empty": dict(offs=np.array([], dtype=np.int64), include_last_offset=True),
    "1d_without_offsets": dict(offs=None),
    "2d_offsets": dict(offs=OFFS.reshape(2, 2)),
    "3d_input": dict(idx=IDX.reshape(2, 2, 2)),
    "bad_mode": dict(mode="min"),
    "max_freq": dict(mode="max", scale_grad_by_freq=True),
    "max_sparse": dict(mode="max", sparse=True),
    "empty_2d": dict(idx=np.zeros((2, 0), dtype=np.int64), offs=None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(case, dtype):
    kw = dict(ERRORS[case])
    raises_like(lambda T, w: _bag(T, w, **kw), W, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_index_range_messages(mode, dtype):
    # float32 sum/mean run FBGEMM's kernel in PyTorch, float64 and max ATen's loop: two texts.
    # FBGEMM's position is absolute only single-threaded (per thread chunk otherwise)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        raises_like(lambda T, w: _bag(T, w, idx=IDX + 3, mode=mode), W, dtype=dtype)
        raises_like(lambda T, w: _bag(T, w, idx=(IDX - 1).astype(np.int32),
                                      offs=OFFS.astype(np.int32), mode=mode), W, dtype=dtype)
    finally:
        torch.set_num_threads(threads)


def test_2d_input_with_offsets_message():
    # the same text, but the offsets' type is each library's own Tensor class
    msgs = []
    for lib in (torch, jt):
        with pytest.raises(ValueError) as e:
            _bag(lib, lib.tensor(W), idx=IDX.reshape(2, 4))
        msgs.append(str(e.value).replace(repr(lib.Tensor), "<Tensor>"))
    assert msgs[0] == msgs[1]


def test_weight_and_per_sample_weight_errors():
    raises_like(lambda T, w: _bag(T, w[0]), W)
    raises_like(lambda T, w: _bag(T, w.long()), W)
    raises_like(lambda T, w: _bag(T, w, T.ones(7, dtype=w.dtype), mode="sum"), W)
    raises_like(lambda T, w: _bag(T, w, T.ones(8, dtype=w.dtype), mode="mean"), W)
    raises_like(lambda T, w: _bag(T, w, T.ones(8, dtype=T.float32), mode="sum"), W)


def test_swapped_arguments_warn_and_work():
    def fn(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = T.nn.functional.embedding_bag(T.tensor(W), T.tensor(IDX), T.tensor(OFFS))
        return out, [str(w.message) for w in caught]
    agree(fn)


# ----------------------------------------------------------------------------- module

MODULE_REPRS = [
    "nn.EmbeddingBag(10, 3)", "nn.EmbeddingBag(10, 3, mode='sum', padding_idx=-1)",
    "nn.EmbeddingBag(5, 2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)",
    "nn.EmbeddingBag(5, 2, mode='max', include_last_offset=True, sparse=True)",
]


@pytest.mark.parametrize("expr", MODULE_REPRS)
def test_module_repr(expr):
    assert repr(eval(expr, {"nn": jt.nn})) == repr(eval(expr, {"nn": torch.nn}))


def test_module_seeded_init_and_forward():
    def fn(T):
        T.manual_seed(4)
        m = T.nn.EmbeddingBag(7, 3, mode="sum", padding_idx=2)
        out = m(T.tensor(IDX), T.tensor(OFFS), T.tensor(PSW, dtype=T.float32))
        out.sum().backward()
        return m.weight.detach(), out.detach(), type(out.grad_fn).__name__, m.weight.grad
    agree_close = [fn(lib) for lib in (jt, torch)]
    (jw, jo, jn, jg), (tw, to, tn, tg) = agree_close
    np.testing.assert_array_equal(jw.numpy(), tw.numpy())  # the same N(0, 1) draws
    assert (jw.numpy()[2] == 0).all() and jn == tn
    np.testing.assert_allclose(jo.numpy(), to.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jg.numpy(), tg.numpy(), rtol=1e-6, atol=1e-7)


def test_module_2d_input_and_from_pretrained():
    def fn(T):
        m = T.nn.EmbeddingBag.from_pretrained(T.tensor(W), mode="max", freeze=False)
        out = m(T.tensor(IDX.reshape(4, 2)))
        out.sum().backward()
        return out, m.weight.grad, m.weight.requires_grad, m.mode
    agree(fn)
    agree(lambda T: T.nn.EmbeddingBag.from_pretrained(T.tensor(W)).weight.requires_grad)


@pytest.mark.parametrize("expr", [
    "nn.EmbeddingBag(5, 2, padding_idx=5)", "nn.EmbeddingBag(5, 2, padding_idx=-6)",
    "nn.EmbeddingBag(5, 2, _weight=torch.ones(4, 2))",
    "nn.EmbeddingBag.from_pretrained(torch.ones(4))",
])
def test_module_constructor_errors(expr):
    outcomes = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as e:
            eval(expr, {"nn": lib.nn, "torch": lib})
        outcomes.append((type(e.value).__name__, str(e.value)))
    assert outcomes[0] == outcomes[1]
