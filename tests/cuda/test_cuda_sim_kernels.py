"""The hand-written device kernels (reductions, matmul, softmax, gather/scatter, layout) against
NumPy, on the simulator or a GPU; plus the backend's transfer accounting.

Shapes are small and odd: rows longer than a simulator block (16 threads), more rows than its
grid (2 blocks), partial matmul tiles, strided and broadcast views.
"""
from __future__ import annotations

import numpy as np
import pytest

# IEEE specials in the simulator's NumPy scalar math warn; the device does not.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(1234)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def tol(dt):
    return {"rtol": 2e-6, "atol": 2e-6} if np.dtype(dt) == F32 else {"rtol": 1e-12,
                                                                      "atol": 1e-12}


def dev_view(backend, host, permute=None):
    """A device View whose values are ``host``; with ``permute``, a non-contiguous one: the
    permuted view of a device buffer that holds ``host`` in another axis order."""
    from jitgrad.backends.cuda_kernels import as_view
    if permute is None:
        return as_view(backend.to_device(host))
    base = np.ascontiguousarray(np.transpose(host, np.argsort(permute)))
    return as_view(backend.to_device(base)).permute(permute)


# ----------------------------------------------------------------------------- reductions

X3 = RNG.standard_normal((3, 17, 2))
_DIMS = [(F64, d) for d in (None, 0, 1, 2, (0, 2), (1, 2), (0, 1, 2))] + [(F32, 1), (F32, (0, 2))]


@pytest.mark.parametrize("dt,dim", _DIMS, ids=[f"{dt}-{d}" for dt, d in _DIMS])
def test_sum_mean_amax_amin(device, dt, dim):
    K = device.kernels()
    x = X3.astype(dt)
    dx = device.to_device(x)
    nd = None if dim is None else dim
    for fn, ref in ((K.reduce.sum, np.sum), (K.reduce.mean, np.mean), (K.reduce.amax, np.max),
                    (K.reduce.amin, np.min)):
        got = device.to_host(fn(dx, dim))
        np.testing.assert_allclose(got, ref(x, axis=nd), **tol(dt))
        assert got.dtype == dt


def test_keepdim_prod_and_strided_input(device):
    K = device.kernels()
    x = RNG.uniform(0.5, 1.5, (3, 4, 5))
    v = dev_view(device, x, permute=(2, 0, 1))  # a transposed view: no copy on the device
    assert not v.is_contiguous()
    xt = x
    got = device.to_host(K.reduce.sum(v, (0, 2), keepdim=True))
    np.testing.assert_allclose(got, xt.sum(axis=(0, 2), keepdims=True), **tol(F64))
    got = device.to_host(K.reduce.prod_(v, 1))
    np.testing.assert_allclose(got, xt.prod(axis=1), **tol(F64))
    # a broadcast (stride-0) view: sum over the expanded dim
    b = RNG.standard_normal((1, 7))
    e = dev_view(device, b).expand((9, 7))
    np.testing.assert_allclose(device.to_host(K.reduce.sum(e, 0)), 9 * b[0], **tol(F64))


def test_integer_and_bool_sums_accumulate_in_int64(device):
    K = device.kernels()
    xi = RNG.integers(-50, 50, (6, 19)).astype(np.int32)
    got = device.to_host(K.reduce.sum(device.to_device(xi), 1))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, xi.sum(1, dtype=np.int64))
    xb = RNG.random((3, 21)) < 0.5
    got = device.to_host(K.reduce.sum(device.to_device(xb)))
    assert got.dtype == np.int64 and int(got) == int(xb.sum())


@pytest.mark.parametrize("dt", [F32, F64, np.dtype(np.int64)])
def test_max_min_with_indices(device, dt):
    K = device.kernels()
    x = (RNG.standard_normal((5, 19)) * 10).astype(dt)
    x[2, 15] = x[2, 4] = x[2].max() + 1  # a tie: the first index wins
    dx = device.to_device(x)
    for fn, vref, iref in ((K.reduce.max_dim, np.max, np.argmax),
                           (K.reduce.min_dim, np.min, np.argmin)):
        v, i = fn(dx, 1)
        np.testing.assert_array_equal(device.to_host(v), vref(x, 1))
        np.testing.assert_array_equal(device.to_host(i), iref(x, 1))
        v, i = fn(dx, 0, keepdim=True)
        np.testing.assert_array_equal(device.to_host(i), iref(x, 0)[None])
    assert int(device.to_host(K.reduce.argmax(dx))) == int(np.argmax(x))
    assert int(device.to_host(K.reduce.argmin(dx))) == int(np.argmin(x))


def test_max_propagates_nan_like_pytorch(device):
    K = device.kernels()
    x = RNG.standard_normal((3, 20))
    x[1, 7] = x[1, 12] = np.nan
    dx = device.to_device(x)
    v, i = K.reduce.max_dim(dx, 1)
    v, i = device.to_host(v), device.to_host(i)
    assert np.isnan(v[1]) and i[1] == 7  # torch.max: NaN, at the first NaN
    assert v[0] == x[0].max() and v[2] == x[2].max()
    assert np.isnan(device.to_host(K.reduce.amin(dx, 1))[1])
    assert np.isnan(device.to_host(K.reduce.sum(dx, 1))[1])


# ----------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("dt", [F32, F64])
def test_matmul_2d_partial_tiles(device, dt):
    K = device.kernels()
    a, b = RNG.standard_normal((5, 7)).astype(dt), RNG.standard_normal((7, 6)).astype(dt)
    got = device.to_host(K.matmul.matmul(device.to_device(a), device.to_device(b)))
    assert got.dtype == dt
    np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dt == F32 else 1e-12, atol=1e-5)


def test_matmul_batched_broadcast_and_transposed(device):
    K = device.kernels()
    a = RNG.standard_normal((2, 1, 3, 5))
    b = RNG.standard_normal((3, 5, 4))
    got = device.to_host(K.matmul.matmul(device.to_device(a), device.to_device(b)))
    np.testing.assert_allclose(got, a @ b, **tol(F64))
    # g @ w.T with w stored (4, 5): a transposed View, no copy
    g = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((5, 4))
    wt = dev_view(device, w).transpose(0, 1)
    got = device.to_host(K.matmul.matmul(device.to_device(g), wt))
    np.testing.assert_allclose(got, g @ w.T, **tol(F64))


def test_matmul_empty_inner_dim_is_zeros(device):
    K = device.kernels()
    a, b = np.zeros((3, 0)), np.zeros((0, 2))
    got = device.to_host(K.matmul.matmul(device.to_device(a), device.to_device(b)))
    np.testing.assert_array_equal(got, np.zeros((3, 2)))


# ----------------------------------------------------------------------------- softmax


def _np_softmax(x, d):
    m = np.max(x, axis=d, keepdims=True)
    e = np.exp(x - m)  # PyTorch's rule: shifted by the max even when infinite (row with +inf: NaN)
    return e / e.sum(axis=d, keepdims=True)


_SM = [(F64, 0), (F64, 1), (F64, -1), (F32, 1)]


@pytest.mark.parametrize("dt,dim", _SM, ids=[f"{dt}-{d}" for dt, d in _SM])
def test_softmax_log_softmax_any_dim(device, dt, dim):
    K = device.kernels()
    x = (RNG.standard_normal((2, 17, 3)) * 3).astype(dt)
    dx = device.to_device(x)
    want = _np_softmax(x.astype(np.float64), dim)
    np.testing.assert_allclose(device.to_host(K.softmax.softmax(dx, dim)), want, **tol(dt))
    np.testing.assert_allclose(device.to_host(K.softmax.log_softmax(dx, dim)), np.log(want),
                               **tol(dt))


def test_softmax_special_rows(device):
    K = device.kernels()
    x = RNG.standard_normal((4, 9))
    x[0, :] = -np.inf  # all -inf: NaN, as the CPU kernel gives
    x[1, 3] = np.nan
    x[2, 5] = np.inf
    x[3, :4] = -np.inf
    with np.errstate(all="ignore"):
        want = _np_softmax(x, 1)
    got = device.to_host(K.softmax.softmax(device.to_device(x), 1))
    np.testing.assert_allclose(got, want, equal_nan=True, **tol(F64))


@pytest.mark.parametrize("dim", [0, 2])
def test_softmax_backward(device, dim):
    K = device.kernels()
    x = RNG.standard_normal((2, 3, 17))
    g = RNG.standard_normal((2, 3, 17))
    y = _np_softmax(x, dim)
    want = y * (g - (g * y).sum(dim, keepdims=True))
    got = K.softmax.softmax_backward(device.to_device(y), device.to_device(g), dim)
    np.testing.assert_allclose(device.to_host(got), want, **tol(F64))
    ly = np.log(y)
    want = g - np.exp(ly) * g.sum(dim, keepdims=True)
    got = K.softmax.log_softmax_backward(device.to_device(ly), device.to_device(g), dim)
    np.testing.assert_allclose(device.to_host(got), want, **tol(F64))


# ----------------------------------------------------------------------------- indexing


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_and_its_vjp_scatter_add(device, dim):
    K = device.kernels()
    x = RNG.standard_normal((3, 4, 5))
    d = dim % 3
    ishape = list(x.shape)
    ishape[d] = 7  # more picks than the dim holds: repeated indices
    idx = RNG.integers(-x.shape[d], x.shape[d], ishape)
    got = device.to_host(K.index.gather(device.to_device(x), dim, device.to_device(idx)))
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx % x.shape[d], axis=d))
    g = RNG.standard_normal(ishape)
    dst = device.zeros(x.shape, np.float64)
    K.index.scatter_add(dst, dim, device.to_device(idx), device.to_device(g))
    want = np.zeros_like(x)
    coords = list(np.indices(idx.shape, sparse=True))
    coords[d] = idx % x.shape[d]
    np.add.at(want, tuple(coords), g)
    np.testing.assert_allclose(device.to_host(dst), want, **tol(F64))


def test_index_select_and_index_add_embedding_backward(device):
    K = device.kernels()
    table = RNG.standard_normal((6, 5)).astype(np.float32)
    ids = np.array([3, 0, 3, 5, -1, 2, 3])
    got = K.index.index_select(device.to_device(table), 0, device.to_device(ids))
    np.testing.assert_array_equal(device.to_host(got), table[ids])
    g = RNG.standard_normal((7, 5)).astype(np.float32)
    dst = device.zeros((6, 5), np.float32)
    K.index.index_add(dst, 0, device.to_device(ids), device.to_device(g), alpha=2.0)
    want = np.zeros((6, 5), np.float32)
    np.add.at(want, ids % 6, 2 * g)
    np.testing.assert_allclose(device.to_host(dst), want, **tol(F32))
    got = K.index.index_select(device.to_device(table), 1, device.to_device(np.array([4, 0])))
    np.testing.assert_array_equal(device.to_host(got), table[:, [4, 0]])


def test_integer_scatter_add(device):
    K = device.kernels()
    idx = np.array([0, 2, 2, 1, 2])
    dst = device.zeros(3, np.int64)
    K.index.scatter_add(dst, 0, device.to_device(idx), device.to_device(np.arange(5)))
    np.testing.assert_array_equal(device.to_host(dst), [0, 3, 1 + 2 + 4])


# ----------------------------------------------------------------------------- layout/backend


def test_contiguous_of_views_with_cast(device):
    K = device.kernels()
    x = RNG.standard_normal((3, 4, 5))
    v = dev_view(device, x, permute=(1, 2, 0))
    assert not v.is_contiguous()
    got = device.to_host(K.layout.contiguous(v, np.float32))
    np.testing.assert_array_equal(got, x.astype(np.float32))
    b = dev_view(device, x[:, :1, :].copy()).expand((3, 4, 5))
    got = device.to_host(K.layout.contiguous(b))
    np.testing.assert_array_equal(got, np.broadcast_to(x[:, :1, :], (3, 4, 5)))
    got = device.to_host(K.layout.contiguous(device.to_device(x), np.bool_))
    np.testing.assert_array_equal(got, x != 0)


def test_full_zeros_make_no_transfer(device):
    device.reset_stats()
    z = device.zeros((5, 7), np.float32)
    f = device.full(9, 2.5, np.float64)
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    np.testing.assert_array_equal(device.to_host(z), np.zeros((5, 7), np.float32))
    np.testing.assert_array_equal(device.to_host(f), np.full(9, 2.5))
    assert device.stats.d2h == 2 and device.stats.d2h_bytes == 5 * 7 * 4 + 9 * 8


def test_chained_kernels_make_no_host_round_trip(device):
    """forward + backward of a tiny linear-softmax model entirely on the device: exactly the
    transfers asked for (2 uploads, 1 download)."""
    K = device.kernels()
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 5)).astype(np.float32)
    device.reset_stats()
    dx, dw = device.to_device(x), device.to_device(w)
    logits = K.matmul.matmul(dx, dw)
    y = K.softmax.log_softmax(logits, 1)
    loss_rows = K.reduce.sum(y, 1)
    g = device.full((4,), 1.0, np.float32)
    from jitgrad.backends.cuda_kernels import View
    gy = K.layout.contiguous(View(g, (4, 5), (1, 0)))  # broadcast back
    glogits = K.softmax.log_softmax_backward(y, gy, 1)
    gw = K.matmul.matmul(K.as_view(dx).transpose(0, 1), glogits)
    assert device.stats.h2d == 2 and device.stats.d2h == 0
    host = device.to_host(gw)
    assert device.stats.d2h == 1
    assert device.stats.launches >= 6
    ylog = np.log(_np_softmax((x @ w).astype(np.float64), 1))
    want = x.T.astype(np.float64) @ (1 - np.exp(ylog) * 5)
    np.testing.assert_allclose(host, want, rtol=1e-5, atol=1e-5)
    assert loss_rows.shape == (4,)


def test_launch_refuses_host_arrays(device):
    from jitgrad.ops import elementwise  # noqa: F401
    from jitgrad.ops.elementwise_call import _forward_spec
    from jitgrad.ops.registry import OPS
    op = OPS["neg"]
    mod = device.module_for(("neg", "f", ("a",)), lambda: _forward_spec(op, ("a",)))
    assert device.module_for(("neg", "f", ("a",)), lambda: None) is mod  # memoized
    out = device.empty(3, np.float32)
    with pytest.raises(TypeError, match="host"):
        device.launch(mod, 3, [np.ones(3, np.float32), out])
    device.launch(mod, 3, [device.to_device(np.ones(3, np.float32)), out])
    np.testing.assert_array_equal(device.to_host(out), -np.ones(3, np.float32))
