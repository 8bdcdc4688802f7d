"""Ops without a CUDA kernel, staged through the host (``jitgrad/ops/host_staged.py``): on CUDA
tensors they give the CPU path's values bit for bit (the same host code runs on a host copy),
its dtypes and grad_fn names, results on the device, gradients computed on the device (equal
to the CPU's to rounding: device matmuls against the CPU's BLAS), the CPU path's errors, and
one counted host round trip.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_host_staged_ops.py
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg

F = jg.nn.functional
L = jg.linalg
RNG = np.random.default_rng(5)
M = RNG.standard_normal((4, 3))
SQ = RNG.standard_normal((3, 3))
SYM = SQ + SQ.T + 4 * np.eye(3)
BATCH = RNG.standard_normal((2, 3, 3))
ROWS = np.round(RNG.standard_normal((3, 6)) * 1.5)
NANROWS = np.where(RNG.random((3, 5)) < 0.3, np.nan, RNG.standard_normal((3, 5)))
LP = RNG.standard_normal((5, 2, 4))


def _ctc(lp, red, **kw):
    targets = jg.tensor([[1, 2, 2], [3, 0, 0]], device=lp.device)
    return F.ctc_loss(lp.log_softmax(2), targets, [5, 4], [3, 1], reduction=red, **kw)


# (id, function of the tensors, input arrays, differentiate?)
CASES = [
    ("qr", lambda a: tuple(L.qr(a)), (M,), True),
    ("qr_complete", lambda a: tuple(L.qr(a, mode="complete")), (SQ,), True),
    ("qr_r", lambda a: L.qr(a, mode="r").R, (M,), False),
    ("eigh", lambda a: tuple(L.eigh(a)), (SYM,), True),
    ("eigvalsh_U", lambda a: L.eigvalsh(a, UPLO="U"), (BATCH,), True),
    ("svd", lambda a: tuple(L.svd(a, full_matrices=False)), (M,), True),
    ("svd_full", lambda a: L.svd(a).S, (BATCH,), True),
    ("svdvals", lambda a: L.svdvals(a), (M.T,), True),
    ("pinv", lambda a: L.pinv(a), (M,), True),
    ("pinv_hermitian", lambda a: L.pinv(a, hermitian=True), (SYM,), True),
    ("matrix_rank", lambda a: L.matrix_rank(a), (BATCH,), False),
    ("lstsq", lambda a, b: tuple(L.lstsq(a, b, driver="gelsd")), (M, M[:, :2]), True),
    ("lstsq_vector", lambda a, b: L.lstsq(a, b).solution, (M, M[:, 0]), True),
    ("matrix_norm_2", lambda a: L.matrix_norm(a, 2), (BATCH,), True),
    ("matrix_norm_nuc", lambda a: L.matrix_norm(a, "nuc"), (M,), True),
    ("cond", lambda a: L.cond(a), (SQ,), True),
    ("torch_svd", lambda a: tuple(jg.svd(a)), (M,), True),
    ("pinverse", lambda a: jg.pinverse(a), (M,), True),
    ("matrix_exp", lambda a: L.matrix_exp(a), (SQ / 3,), True),
    ("geqrf", lambda a: tuple(jg.geqrf(a)), (M,), False),
    ("householder_product", lambda a, t: L.householder_product(a, t), (M, M[0, :2]), True),
    ("ldl_factor", lambda a: tuple(L.ldl_factor(a)), (SYM,), False),
    ("ldl_solve", lambda a, b: L.ldl_solve(*L.ldl_factor(a), b), (SYM, M[:3]), False),
    ("lu_rectangular", lambda a: tuple(L.lu(a)), (M,), True),
    ("lu_factor_rectangular", lambda a: tuple(L.lu_factor(a.mT)), (M,), True),
    ("kthvalue", lambda x: tuple(jg.kthvalue(x, 2, 1)), (ROWS,), True),
    ("kthvalue_keepdim", lambda x: tuple(x.kthvalue(3, 0, keepdim=True)), (ROWS,), True),
    ("median", lambda x: jg.median(x), (ROWS,), True),
    ("median_dim", lambda x: tuple(jg.median(x, -1)), (ROWS,), True),
    ("nanmedian", lambda x: jg.nanmedian(x), (NANROWS,), True),
    ("nanmedian_dim", lambda x: tuple(x.nanmedian(1, keepdim=True)), (NANROWS,), True),
    ("mode", lambda x: tuple(jg.mode(x, 1)), (ROWS,), True),
    ("unique", lambda x: jg.unique(x, return_inverse=True, return_counts=True), (ROWS,), False),
    ("unique_dim", lambda x: jg.unique(x.long(), dim=1, return_inverse=True), (ROWS,), False),
    ("unique_consecutive", lambda x: jg.unique_consecutive(x, return_counts=True), (ROWS,),
     False),
    ("standard_gamma_grad", lambda a, x: jg._standard_gamma_grad(a.abs() + 0.5, x.abs()),
     (ROWS, ROWS[:, ::-1] + 0.25), False),
    ("dirichlet_grad", lambda x, a: jg._dirichlet_grad(x.abs() / 9, a.abs() + 0.5,
                                                       a.abs() + 4), (ROWS, ROWS[::-1]), False),
    ("ctc_mean", lambda lp: _ctc(lp, "mean"), (LP,), True),
    ("ctc_sum", lambda lp: _ctc(lp, "sum"), (LP,), True),
    ("ctc_none_zero_infinity", lambda lp: _ctc(lp, "none", zero_infinity=True), (LP,), True),
]


# outputs with device arithmetic after the staged part (a device matmul, sum or mean): equal
# to rounding on a GPU (its kernels may contract to FMAs), not necessarily bit for bit
DEVICE_ARITHMETIC = {"householder_product", "matrix_norm_nuc", "ctc_mean", "ctc_sum"}


def _flat(r):
    return [t for t in (r if isinstance(r, (tuple, list)) else (r,)) if isinstance(t, jg.Tensor)]


def _run(fn, arrays, dev, grad):
    xs = [jg.tensor(a, device=dev, requires_grad=grad) for a in arrays]
    outs = _flat(fn(*xs))
    grads = None
    if grad:
        diff = [o for o in outs if o.grad_fn is not None and o.dtype.is_floating_point]
        w = np.random.default_rng(1)
        loss = sum((o * jg.tensor(w.standard_normal(tuple(o.shape)), device=dev)).sum()
                   for o in diff)
        grads = jg.autograd.grad(loss, xs, allow_unused=True)
    return outs, grads


@pytest.mark.parametrize("name,fn,arrays,grad", CASES, ids=[c[0] for c in CASES])
def test_matches_the_cpu_path(device, name, fn, arrays, grad):
    cpu, cpu_grads = _run(fn, arrays, "cpu", grad)
    dev, dev_grads = _run(fn, arrays, "cuda", grad)
    assert len(dev) == len(cpu)
    for d, c in zip(dev, cpu):
        assert d.device.type == "cuda" and d.dtype is c.dtype and d.shape == c.shape
        assert (d.grad_fn is None) == (c.grad_fn is None)
        if c.grad_fn is not None:
            assert d.grad_fn.name() == c.grad_fn.name()
        if name in DEVICE_ARITHMETIC:
            np.testing.assert_allclose(d.detach().cpu().numpy(), c.detach().numpy(),
                                       rtol=1e-12, atol=1e-14)
        else:  # the same host code computed both: bit for bit (NaN where NaN)
            np.testing.assert_array_equal(d.detach().cpu().numpy(), c.detach().numpy())
    if grad:
        for gd, gc in zip(dev_grads, cpu_grads):
            assert (gd is None) == (gc is None)
            if gc is not None:
                assert gd.device.type == "cuda" and gd.dtype is gc.dtype
                np.testing.assert_allclose(gd.cpu().numpy(), gc.numpy(), rtol=1e-9, atol=1e-11)


def test_grad_fn_names_are_pytorchs(device):
    a = jg.tensor(M, device="cuda", requires_grad=True)
    t = torch.tensor(M, requires_grad=True)
    for f in (lambda L_, x: L_.qr(x).Q, lambda L_, x: L_.svd(x).U, lambda L_, x: L_.pinv(x),
              lambda L_, x: L_.lstsq(x, x).solution,
              lambda L_, x: L_.eigh(x[:3] + x[:3].mT).eigenvectors):
        assert f(L, a).grad_fn.name() == f(torch.linalg, t).grad_fn.name()
    for f in (lambda T, x: T.kthvalue(x, 2).values, lambda T, x: T.median(x),
              lambda T, x: T.nanmedian(x, 0).values, lambda T, x: T.mode(x, 0).values):
        assert f(jg, a).grad_fn.name() == f(torch, t).grad_fn.name()


def test_double_backward_runs_on_the_device(device):
    """create_graph through a staged node: its backward is recorded device ops."""
    res = []
    for dev in ("cpu", "cuda"):
        a = jg.tensor(M, device=dev, requires_grad=True)
        (g,) = jg.autograd.grad(L.pinv(a).pow(2).sum(), a, create_graph=True)
        (gg,) = jg.autograd.grad(g.sum(), a)
        assert g.device.type == dev and gg.device.type == dev
        res.append(gg.cpu().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-9, atol=1e-11)


def test_one_host_round_trip(device):
    """One counted download per CUDA input, one upload per output (a synchronization)."""
    a = jg.tensor(M, device="cuda", requires_grad=True)
    d2h, h2d = device.stats.d2h, device.stats.h2d
    q, r = L.qr(a)
    assert (device.stats.d2h - d2h, device.stats.h2d - h2d) == (1, 2)
    d2h, h2d = device.stats.d2h, device.stats.h2d
    (q.sum() + r.sum()).backward()  # the VJP is device ops: nothing read back
    assert device.stats.d2h == d2h
    assert a.grad.device.type == "cuda"


@pytest.mark.parametrize("call", [
    lambda x: L.qr(x[0, 0]),
    lambda x: L.eigh(x, UPLO="X"),
    lambda x: L.svd(x * float("nan")),
    lambda x: L.lstsq(x, x[..., :2, 0]),
    lambda x: jg.kthvalue(x, 7),
    lambda x: jg.median(x, 4),
    lambda x: jg.unique(x[0, 0, 0], dim=0),
    lambda x: L.ldl_solve(x, x[..., 0], x),
    lambda x: L.matrix_exp(x[0, 0]),
    lambda x: F.ctc_loss(x.log_softmax(2), jg.tensor([[1, 5]]), [2], [2]),
])
def test_errors_are_the_cpu_paths(device, call):
    with pytest.raises(Exception) as ec:
        call(jg.tensor(BATCH))
    with pytest.raises(Exception) as ed:
        call(jg.tensor(BATCH, device="cuda"))
    assert type(ed.value) is type(ec.value) and str(ed.value) == str(ec.value)


def test_mixed_devices_raise_pytorchs_error(device):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, "
                                           "but found at least two devices, cuda:0 and cpu!"):
        L.lstsq(jg.tensor(M, device="cuda"), jg.tensor(M))


def test_ctc_targets_may_stay_on_the_cpu(device):
    """ATen moves CPU targets to the device for the user; lengths may be CUDA tensors."""
    lp = jg.tensor(LP, device="cuda").log_softmax(2)
    kw = dict(input_lengths=jg.tensor([5, 4], device="cuda"), target_lengths=[3, 1])
    kw["target_lengths"] = jg.tensor(kw["target_lengths"], device="cuda")
    a = F.ctc_loss(lp, jg.tensor([[1, 2, 2], [3, 0, 0]]), **kw)
    b = F.ctc_loss(lp.cpu(), jg.tensor([[1, 2, 2], [3, 0, 0]]), [5, 4], [3, 1])
    assert a.device.type == "cuda"
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


def test_misuse_is_loud(device):
    """A staged primitive that records on a host tensor derived from its input (a host
    composition) would lose the gradient: it raises instead."""
    from jitgrad.ops.composite import record
    from jitgrad.ops.host_staged import host_staged

    @host_staged
    def bad(x):
        y = x * 2  # a host node over the twin
        return record("BadBackward0", (y,), y._data.copy(), lambda node, g: (g,))

    with pytest.raises(RuntimeError, match="host-staged op bad records BadBackward0"):
        bad(jg.ones(2, device="cuda", requires_grad=True))
    assert bad(jg.ones(2)).device.type == "cpu"


def test_lu_without_pivoting_still_refuses(device):
    with pytest.raises(NotImplementedError, match="pivot=False"):
        L.lu(jg.tensor(SQ, device="cuda"), pivot=False)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_in_place_array_staging(device):
    """``host_inplace``: scatter with a multiplying reduction (no float atomic multiply) and
    index_add/scatter into a 0-d tensor (no 0-d kernel), gradients included."""
    res = []
    for dev in ("cpu", "cuda"):
        x = jg.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
        s = jg.tensor([2.0, 3.0, 4.0, 5.0], device=dev, requires_grad=True)
        i = jg.tensor([0, 1, 0, 2], device=dev)
        y = jg.scatter_reduce(x, 0, i, s, "prod", include_self=False)
        (y * jg.tensor([1.0, 2.0, 3.0], device=dev)).sum().backward()
        z = jg.scatter(x.detach(), 0, i, s.detach(), reduce="multiply")
        zero_d = jg.tensor(1.5, device=dev)
        a = zero_d.index_add(0, jg.tensor([0, 0], device=dev), jg.tensor([2.0, 4.0], device=dev),
                             alpha=2)
        b = jg.scatter(zero_d, 0, jg.tensor(0, device=dev), 5.0)
        outs = (y, x.grad, s.grad, z, a, b)
        assert all(t.device.type == dev for t in outs) and y.grad_fn.name() == \
            "ScatterReduceBackward0"
        res.append([t.detach().cpu().numpy() for t in outs])
    for d, c in zip(res[1], res[0]):
        np.testing.assert_array_equal(d, c)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size"):
        jg.scatter(jg.ones(3, device="cuda"), 0, jg.tensor([5], device="cuda"), 2.0,
                   reduce="multiply")


def test_embedding_scale_grad_by_freq_on_the_device(device):
    """Each occurrence's gradient divided by its index's count (counted on the device),
    against PyTorch."""
    w0 = np.arange(12.0).reshape(4, 3)
    idx, g = [[0, 1, 2, 1], [1, 1, 3, 0]], np.arange(24.0).reshape(2, 4, 3)
    w = jg.tensor(w0, device="cuda", requires_grad=True)
    y = F.embedding(jg.tensor(idx, device="cuda"), w, padding_idx=3, scale_grad_by_freq=True)
    (y * jg.tensor(g, device="cuda")).sum().backward()
    wt = torch.tensor(w0, requires_grad=True)
    yt = torch.nn.functional.embedding(torch.tensor(idx), wt, padding_idx=3,
                                       scale_grad_by_freq=True)
    (yt * torch.tensor(g)).sum().backward()
    assert y.grad_fn.name() == yt.grad_fn.name() and w.grad.device.type == "cuda"
    np.testing.assert_array_equal(y.detach().cpu().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(w.grad.cpu().numpy(), wt.grad.numpy())


def test_init_eye_on_the_device(device):
    w = jg.empty(3, 5, device="cuda")
    version = w._version
    assert jg.nn.init.eye_(w) is w and w._version == version + 1
    np.testing.assert_array_equal(w.cpu().numpy(), torch.nn.init.eye_(torch.empty(3, 5)))
