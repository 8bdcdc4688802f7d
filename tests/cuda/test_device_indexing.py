"""Indexing and scatter ops on CUDA tensors, forward and backward, against the CPU path (which
runs NumPy: an independent implementation) and, for nonzero, against NumPy directly.

Run on the simulator in its own process (tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_indexing.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.ops.shape_copies import roll

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4, 5))
V = RNG.standard_normal(5)
I3 = np.array([2, -1, 2, 0])                 # negative and repeated; in range for sizes 3..5
I3P = np.array([2, 3, 2, 0])                 # repeated, non-negative (index_select refuses -1)
IB = np.array([[0, -1], [3, 3]])             # broadcasts against J
J = np.array([4, -5])
M2 = RNG.random((3, 4)) > 0.5
M3 = A > 0.3
NONE3 = np.zeros(3, bool)
EMPTY = np.zeros(0, np.int64)
SIDX = RNG.integers(0, 4, (2, 3, 5))         # scatter/gather index along dim 1 (size 4)
SIDX_UNIQ = np.stack([np.stack([RNG.permutation(4)[:3] for _ in range(5)], 1)
                      for _ in range(2)])    # no repeats along dim 1: scatter is deterministic


def _adv_set(x, v, m):
    y = x * 1
    y[jg.tensor([2, 0], device=x.device), 1:3] = v * 2          # tensor value, broadcast
    y[m] = -0.5                                                 # scalar through a mask
    y[0, [3, 1]] = x[1, :2] + 1                                 # list key, differentiable value
    return y


def _basic_set(x, v):
    y = x * 1
    y[1, :2] = v
    y[0, 0, 0] = 3.0
    y[..., 4] = y[..., 0] * 2
    return y


def _view_inplace(x, v):
    y = x * 1
    r = y[1]                      # a view made by indexing: writes go to the base (CopySlices)
    r.mul_(3)
    r[[2, 0]] = v * 4             # advanced setitem on the view
    y[2, :, 1:3] += 1.5
    return y


CASES = {
    # advanced reads
    "int_tensor": (lambda x, i: x[i], (A, I3)),
    "int_tensor_dim1": (lambda x, i: x[:, i], (A, I3)),
    "list": (lambda x: x[[1, -1, 1]], (A,)),
    "broadcast_pair": (lambda x, i, j: x[:, i, j], (A, IB, J)),
    "pair_slices_between": (lambda x, i, j: x[i[0], 1:3, j], (A, IB, J)),  # B goes first
    "int_and_array": (lambda x, j: x[0, :, j], (A, J)),                        # ints count
    "none_and_array": (lambda x, i: x[i, None, 1:4:2], (A, I3)),
    "ellipsis_array": (lambda x, j: x[..., j], (A, J)),
    "strided_input": (lambda x, i: x.transpose(0, 2)[i, 1], (A, I3)),
    "mask_full": (lambda x, m: x[m], (A, M3)),
    "mask_leading": (lambda x, m: x[m], (A, M2)),
    "mask_and_slice": (lambda x, m: x[1:, m[0]], (A, M2)),
    "mask_and_array": (lambda x, m, j: x[m, j[:1]], (A, M2, J)),
    "mask_empty": (lambda x, m: x[m], (A, NONE3)),
    "index_empty": (lambda x, e: x[:, e], (A, EMPTY)),
    "host_keys_on_cuda": (lambda x: x[jg.tensor(M2)].sum(0) + x[np.array([0, 1])][:, 0], (A,)),
    # writes (CopySlices on the device)
    "setitem_advanced": (_adv_set, (A, V, M3)),
    "setitem_basic": (_basic_set, (A, V)),
    "inplace_on_views": (_view_inplace, (A, V)),
    # scatter family
    "scatter_tensor": (lambda x, i, s: x.scatter(1, i, s * 2), (A[:2], SIDX_UNIQ, A[:2, :3])),
    "scatter_value": (lambda x, i: x.scatter(1, i, 1.25), (A[:2], SIDX_UNIQ)),
    "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s.exp()), (A[:2], SIDX, A[:2, :3])),
    "scatter_reduce_sum": (lambda x, i, s: jg.scatter_reduce(x, 1, i, s, "sum"),
                           (A[:2], SIDX, A[:2, :3])),
    "index_add": (lambda x, s: x.index_add(2, jg.tensor([1, 4, 1], device=x.device), s,
                                           alpha=2), (A, A[..., :3])),
    "index_select": (lambda x, i: x.index_select(1, i), (A, I3P)),
    "masked_fill": (lambda x, m: x.masked_fill(m, 2.0) * x, (A, M3)),
    "masked_fill_bcast": (lambda x, m: x.masked_fill(m[0, 0], -1.0), (A, M3)),
    "masked_fill_inplace": (lambda x, m: (x * 1).masked_fill_(m, 0.0), (A, M3)),
    "masked_select": (lambda x, m: x.masked_select(m), (A, M3)),
    "masked_select_bcast": (lambda x, m: x.masked_select(m[0, 0]), (A, M3)),
    # copies and views
    "flip": (lambda x: x.flip((0, 2)) * 1, (A,)),
    "flip_strided": (lambda x: x[:, 1:, ::2].t().flip(-1) if x.ndim == 2 else
                     x[:, 1:, ::2].transpose(0, 2).flip(1), (A,)),
    "roll": (lambda x: roll(x, (1, -2), (0, 2)), (A,)),
    "roll_flat": (lambda x: roll(x, 7), (A,)),
    "repeat": (lambda x: x.repeat(2, 1, 1, 2), (A,)),
    "tile": (lambda x: x[0].tile((2,)), (A,)),
    "split": (lambda x: jg.cat([p * (i + 1) for i, p in enumerate(x.split(2, 2))], 2), (A,)),
    "split_sizes_partial": (lambda x: x.split([1, 3], 1)[1] * 2, (A,)),
    "chunk_unbind": (lambda x: jg.stack(x.chunk(2, 1)[0].unbind(1) + x.unbind(1)[3:], 0),
                     (A,)),
}

F32_CASES = ("int_tensor", "broadcast_pair", "mask_full", "setitem_advanced", "scatter_add",
             "index_add", "masked_fill", "flip", "roll")
PARAMS = [pytest.param(n, jg.float64, id=f"{n}-f64") for n in sorted(CASES)] + [
    pytest.param(n, jg.float32, id=f"{n}-f32") for n in F32_CASES]


def _run(fn, arrays, dev, dtype):
    ts = [jg.tensor(a, device=dev, dtype=dtype if a.dtype.kind == "f" else None,
                    requires_grad=a.dtype.kind == "f") for a in arrays]
    y = fn(*ts)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), [t.grad.cpu().numpy() if t.grad is not None else None
                                      for t in ts]


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_forward_and_backward_match_cpu(device, name, dtype):
    fn, arrays = CASES[name]
    yc, gc = _run(fn, arrays, "cpu", dtype)
    yd, gd = _run(fn, arrays, "cuda", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-12, atol=1e-12)
    assert yd.dtype == yc.dtype and yd.shape == yc.shape
    np.testing.assert_allclose(yd, yc, **tol)
    for a, b in zip(gc, gd):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, **tol)


def test_double_backward_through_indexing(device):
    """create_graph through x[idx], x[mask] and index_select: the gradient graph (index_put,
    its take, index_add) runs on the device too."""
    def run(dev):
        x = jg.tensor(A, device=dev, requires_grad=True)
        i = jg.tensor(I3, device=dev)
        m = jg.tensor(M3, device=dev)
        ip = jg.tensor(I3P[:3] + 1, device=dev)  # index_select refuses negatives
        y = (x[i] ** 2).sum() + (x[m] ** 3).sum() + (x.index_select(2, ip) ** 2).sum()
        (g,) = jg.autograd.grad(y, x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        return g.detach().cpu().numpy(), gg.cpu().numpy()
    for a, b in zip(run("cpu"), run("cuda")):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_nonzero_and_where_match_numpy(device):
    for arr in (A > 0.2, (A * 3).astype(np.int64)[0], np.zeros((2, 3)), A[0, 0]):
        t = jg.tensor(arr, device="cuda")
        nz = jg.nonzero(t)
        assert nz.is_cuda and nz.dtype is jg.int64
        np.testing.assert_array_equal(nz.cpu().numpy(), np.argwhere(arr))
        for got, want in zip(jg.where(t if t.dtype is jg.bool else t != 0), np.nonzero(arr)):
            assert got.is_cuda
            np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_integer_and_bool_tensors(device):
    x = (A * 4).astype(np.int64)
    for fn in (lambda t: t[jg.tensor(I3, device=t.device)], lambda t: t[t > 0],
               lambda t: t.flip(1), lambda t: t.masked_fill(t < 0, 7),
               lambda t: (t > 0)[:, [1, 1]]):
        np.testing.assert_array_equal(fn(jg.tensor(x, device="cuda")).cpu().numpy(),
                                      fn(jg.tensor(x)).numpy())
    y, yc = jg.tensor(x, device="cuda"), jg.tensor(x)
    for t in (y, yc):
        t[t < 0] = 0
        t[0, [1, 2], 0] = jg.tensor([5, 6], device=t.device)
    np.testing.assert_array_equal(y.cpu().numpy(), yc.numpy())


def test_split_chunk_unbind_are_views(device):
    x = jg.tensor(A, device="cuda")
    for parts in (x.split(2, 2), x.chunk(3, 1), x.unbind(0)):
        for p in parts:
            assert p._data.buf is x._data.buf and p._base is x  # no copy
    x.split(2, 2)[1].mul_(0)  # writes through the view into x
    ref = A.copy()
    ref[..., 2:4] = 0
    np.testing.assert_array_equal(x.cpu().numpy(), ref)


def test_gradients_stay_on_device(device):
    """Index/mask reads and writes, scatter/index_add, flip/roll/repeat, forward and backward:
    no host upload at all, and exactly one 8-byte device->host read per CUDA mask (its count)."""
    x = jg.tensor(A, device="cuda", requires_grad=True)
    i = jg.tensor(I3, device="cuda")
    m = jg.tensor(M3, device="cuda")
    s = jg.tensor(SIDX[:, :, :5], device="cuda")
    ip = jg.tensor(I3P, device="cuda")  # index_add refuses -1 (PyTorch's rule)
    device.reset_stats()
    y = x[i].sum() + x[:, i, 1:].sum() + x[m].sum() * 2 + x.masked_fill(m, 1.0).sum()
    z = x * 1
    z[i, 1] = x[0, 0]
    z[m] = 0.0
    y = y + z.sum() + x[:2].scatter_add(1, s, x[:2, :3] * 3).sum() + x.flip(1).sum()
    y = y + x.index_add(1, ip, x[:, :4]).sum() + roll(x, 2, 1).sum() + x.repeat(1, 2, 1).sum()
    y.backward()
    assert x.grad.is_cuda
    assert device.stats.h2d == 0
    assert device.stats.d2h == 2 and device.stats.d2h_bytes == 16  # x[m] and z[m] = 0
    assert device.stats.launches > 0


def test_errors(device):
    c = jg.tensor(A, device="cuda")
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        c[jg.tensor([0.0, 1.0], device="cuda")]
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same "
                                           "device"):
        jg.tensor(A)[jg.tensor([0, 1], device="cuda")]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        c[[0, 5]]  # a host key is checked on the host, for free
    with pytest.raises(IndexError, match="The shape of the mask"):
        c[jg.tensor(np.ones((3, 3), bool), device="cuda")]
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        c[jg.tensor([0, 1], device="cuda")] = jg.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        c.masked_fill(jg.tensor(M3), 0.0)
