"""Index checks on CUDA tensors: a bad index in a device index tensor is found by the kernel
(``cuda_kernels.bounds``) and raised at the next synchronizing point (``.cpu()``, ``.item()``,
``jitgrad.cuda.synchronize()``) with the CPU path's error type and words (which
tests/test_index_parity.py checks against PyTorch); the op itself makes no device->host read.
Also the index ops added with these checks (take, put, index_copy, index_fill, scatter_reduce,
nonzero of a 0-d tensor) against the CPU path, values and gradients.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_index_checks.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

X = np.arange(12.0).reshape(3, 4)
W = np.random.default_rng(2).standard_normal((3, 4))


def L(v):
    return np.array(v, dtype=np.int64)


# (id, fn(x, *others) on tensors of one device, arrays): each raises on the CPU
BAD = [
    ("gather_neg", lambda x, i: jg.gather(x, 1, i), (X, L([[0, -1]]))),
    ("gather_oob", lambda x, i: jg.gather(x, 0, i), (X, L([[0, 3]]))),
    ("scatter_neg", lambda x, i, s: jg.scatter(x, 1, i, s), (X, L([[0, -1]]), W[:1, :2])),
    ("scatter_value_oob", lambda x, i: jg.scatter(x, 1, i, 2.0), (X, L([[4]]))),
    ("scatter_add_neg", lambda x, i, s: jg.scatter_add(x, 1, i, s), (X, L([[-1]]), W[:1, :1])),
    ("scatter_reduce_oob", lambda x, i, s: jg.scatter_reduce(x, 1, i, s, "amax"),
     (X, L([[5]]), W[:1, :1])),
    ("index_select_neg", lambda x, i: jg.index_select(x, 0, i), (X, L([1, -1]))),
    ("index_select_dim1", lambda x, i: jg.index_select(x, 1, i), (X, L([4]))),
    ("index_add_neg", lambda x, i, s: jg.index_add(x, 0, i, s), (X, L([-1]), W[:1])),
    ("index_add_loop", lambda x, i, s: jg.index_add(x, 0, i, s, alpha=2), (X, L([3]), W[:1])),
    ("index_copy_neg", lambda x, i, s: jg.index_copy(x, 0, i, s), (X, L([-1]), W[:1])),
    ("index_fill_oob", lambda x, i: jg.index_fill(x, 1, i, 0.5), (X, L([-5]))),
    ("take_oob", lambda x, i: jg.take(x, i), (X, L([[1, 12]]))),
    ("put_oob", lambda x, i, s: jg.put(x, i, s), (X, L([-13]), W[0, :1])),
    ("getitem_oob", lambda x, i: x[i], (X, L([0, 3]))),
    ("getitem_pair_oob", lambda x, i, j: x[i, j], (X, L([0, 1]), L([-5, 0]))),
    ("setitem_oob", lambda x, i: _set(x, i), (X, L([[3]]))),
    ("index_put_accumulate_oob", lambda x, i, v: jg.index_put(x, (i,), v, accumulate=True),
     (X, L([1, 3]), W[:1])),
    ("embedding_neg", lambda w, i: jg.nn.functional.embedding(i, w), (X, L([0, -1]))),
    ("nll_target_oob", lambda x, t: jg.nn.functional.nll_loss(x, t), (X, L([0, 4, 1]))),
    ("cross_entropy_neg", lambda x, t: jg.nn.functional.cross_entropy(x, t), (X, L([0, -2, 1]))),
]


def _set(x, i):
    y = x * 1
    y[i] = 7.0
    return y


def _tensors(arrays, dev):
    return [jg.tensor(a, device=dev) for a in arrays]


def _cpu_error(fn, arrays):
    with pytest.raises(Exception) as info:
        fn(*_tensors(arrays, "cpu"))
    return type(info.value), str(info.value)


@pytest.mark.parametrize("name,fn,arrays", BAD, ids=[b[0] for b in BAD])
def test_bad_device_index_raises_cpu_error_at_sync(device, name, fn, arrays):
    from jitgrad.backends import cuda as B
    exc, msg = _cpu_error(fn, arrays)
    ts = _tensors(arrays, "cuda")
    before = B.stats.d2h
    out = fn(*ts)  # asynchronous: nothing reported yet, nothing read back
    assert B.stats.d2h == before
    with pytest.raises(exc) as info:
        out.cpu()
    assert str(info.value) == msg
    # reported once: the flag is clear and later reads work
    np.testing.assert_array_equal(ts[0].cpu().numpy(), arrays[0])
    jg.cuda.synchronize()


def test_synchronize_reports_the_pending_error(device):
    x = jg.tensor(X, device="cuda")
    jg.gather(x, 1, jg.tensor(L([[0, 9]]), device="cuda"))
    with pytest.raises(RuntimeError, match="^index 9 is out of bounds for dimension 1 with "
                                           "size 4$"):
        jg.cuda.synchronize()
    jg.cuda.synchronize()  # cleared


def test_bad_index_never_writes_out_of_bounds(device):
    """A skipped index leaves the destination untouched (the kernel never writes past it)."""
    x = jg.tensor(X, device="cuda")
    y = jg.index_add(x, 0, jg.tensor(L([5, 1]), device="cuda"), jg.ones(2, 4, device="cuda",
                                                                          dtype=jg.float64))
    with pytest.raises(RuntimeError):
        jg.cuda.synchronize()
    want = X.copy()
    want[1] += 1
    np.testing.assert_array_equal(y.cpu().numpy(), want)


def test_host_keys_are_checked_before_launch(device):
    x = jg.tensor(X, device="cuda")
    for key in (L([3]), [0, -4], jg.tensor(L([5]))):
        with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
            x[key]


# ----------------------------------------------------------------------------- values


def _run(fn, arrays, dev):
    ts = [jg.tensor(a, device=dev, requires_grad=a.dtype.kind == "f") for a in arrays]
    y = fn(*ts)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    if y.requires_grad:
        (y * w).sum().backward()
    return (y.detach().cpu().numpy(), type(y.grad_fn).__name__ if y.grad_fn else None,
            [t.grad.cpu().numpy() if t.grad is not None else None for t in ts])


SR_I = L([[0, 0, 3], [1, 1, 1], [2, 0, 2]])
GOOD = [
    ("take", lambda x, i: jg.take(x, i), (X, L([[0, -1], [11, 5]]))),
    ("put", lambda x, i, s: jg.put(x, i, s), (X, L([1, -1, 4]), W[0, :3])),
    ("put_accumulate", lambda x, i, s: jg.put(x, i, s, accumulate=True),
     (X, L([1, 1, -11]), W[0, :3])),
    ("index_copy", lambda x, i, s: jg.index_copy(x, 1, i, s), (X, L([3, 0]), W[:, :2])),
    ("index_fill", lambda x, i: jg.index_fill(x, 1, i, -1.5), (X, L([3, -1, 0]))),
    ("index_fill_tensor", lambda x, i, v: jg.index_fill(x, 0, i, v), (X, L([2]), np.array(4.0))),
    ("index_select_dim1", lambda x, i: jg.index_select(x, 1, i), (X, L([3, 3, 0]))),
    ("gather_int32", lambda x, i: jg.gather(x, 1, i), (X, np.array([[3, 0]], np.int32))),
    ("take_along_dim_wraps", lambda x, i: jg.take_along_dim(x, i, 1), (X, L([[7], [-5], [2]]))),
    ("index_put", lambda x, i, j, v: jg.index_put(x, (i, j), v), (X, L([0, 2]), L([-1, 1]),
                                                                    W[0, :2])),
    ("index_put_accumulate", lambda x, i, v: jg.index_put(x, (i,), v, accumulate=True),
     (X, L([1, -2, 0]), W[:1])),
] + [(f"scatter_reduce_{r}_{inc}",
      lambda x, i, s, r=r, inc=inc: jg.scatter_reduce(x, 1, i, s, r, include_self=inc),
      (X, SR_I, W[:, :3] * 10)) for r in ("sum", "mean", "amax", "amin") for inc in (True, False)]


@pytest.mark.parametrize("name,fn,arrays", GOOD, ids=[g[0] for g in GOOD])
def test_index_ops_match_cpu(device, name, fn, arrays):
    want = _run(fn, arrays, "cpu")
    got = _run(fn, arrays, "cuda")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1] == want[1]
    for a, b in zip(got[2], want[2]):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12)
    jg.cuda.synchronize()  # no error was flagged


def test_scatter_reduce_amax_propagates_nan_on_device(device):
    x = np.zeros((1, 3))
    s = np.array([[np.nan, 1.0, -1.0]])
    i = L([[0, 0, 2]])
    for r in ("amax", "amin"):
        want = jg.scatter_reduce(jg.tensor(x), 1, jg.tensor(i), jg.tensor(s), r).numpy()
        got = jg.scatter_reduce(jg.tensor(x, device="cuda"), 1, jg.tensor(i, device="cuda"),
                                jg.tensor(s, device="cuda"), r).cpu().numpy()
        np.testing.assert_array_equal(got, want)


def test_nonzero_of_0d_on_device(device):
    for v in (5.0, 0.0):
        t = jg.tensor(v, device="cuda")
        got, want = jg.nonzero(t), jg.nonzero(jg.tensor(v))
        assert got.is_cuda and tuple(got.shape) == tuple(want.shape)
        (gt,), (wt,) = t.nonzero(as_tuple=True), jg.tensor(v).nonzero(as_tuple=True)
        np.testing.assert_array_equal(gt.cpu().numpy(), wt.numpy())


def test_multiplying_scatters_are_staged_through_the_host(device):
    """No float atomic multiply: scatter_reduce prod / reduce='multiply' run the CPU scatter on
    host copies (tests/cuda/test_host_staged_ops.py), the CPU path's values."""
    def both(x, i):
        return (jg.scatter_reduce(x, 1, i, x[:1, :1], "prod"),
                jg.scatter(x, 1, i, 2.0, reduce="multiply"))
    got = both(jg.tensor(X, device="cuda"), jg.tensor(L([[0]]), device="cuda"))
    want = both(jg.tensor(X), jg.tensor(L([[0]])))
    for g, w in zip(got, want):
        assert g.device.type == "cuda"
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
