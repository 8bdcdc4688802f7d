"""Pooling and resampling on CUDA (ops/pool.py over backends/cuda_kernels/pool.py): values,
indices and gradients against the CPU path (itself tested against PyTorch in tests/nn), and no
host<->device transfer in forward + backward once a geometry's tables are on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_pool.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(5)
TOL = {np.float64: dict(rtol=1e-12, atol=1e-13), np.float32: dict(rtol=1e-5, atol=1e-6),
       np.float16: dict(rtol=1e-3, atol=1e-3), np.int64: dict(rtol=0, atol=0),
       np.uint8: dict(rtol=0, atol=0)}


def _host(t):
    return t.detach().cpu().numpy()


def run(device, fn, x, grad=True):
    """``fn`` on the CPU and on CUDA: outputs (all of a tuple) and input gradients agree; the
    second CUDA call (tables cached) moves nothing between host and device."""
    results = {}
    w = None
    for dev in ("cpu", "cuda", "cuda"):
        t = jg.tensor(x, device=dev, requires_grad=grad)
        if w is None:
            probe = fn(jg.tensor(x))
            first = probe[0] if isinstance(probe, tuple) else probe
            w = RNG.standard_normal(tuple(first.shape)).astype(x.dtype)
        wt = jg.tensor(w, device=dev)
        device.reset_stats()
        out = fn(t)
        outs = out if isinstance(out, tuple) else (out,)
        if grad:
            (outs[0] * wt).sum().backward()
        moved = device.stats.h2d + device.stats.d2h
        results[dev] = (outs, t.grad, moved)
    (oc, gc, _), (od, gd, moved) = results["cpu"], results["cuda"]
    assert moved == 0, device.stats
    tol = TOL[x.dtype.type]
    for a, b in zip(oc, od):
        assert b.is_cuda and tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
        np.testing.assert_allclose(_host(b), _host(a), **tol)
    if grad:
        assert gd.is_cuda
        np.testing.assert_allclose(_host(gd), _host(gc), **tol)
        assert od[0].grad_fn.name() == oc[0].grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_max_pool2d(device, dt):
    x = RNG.integers(0, 4, (1, 2, 5, 4)).astype(dt)  # ties: same index rule as the CPU
    run(device, lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x)


def test_max_pool_1d_3d_dilated_adaptive(device):
    run(device, lambda t: F.max_pool1d(t, 3, 2, 1, 2, True), RNG.standard_normal((1, 2, 9)))
    run(device, lambda t: F.max_pool3d(t, 2, 1, 1, return_indices=True),
        RNG.standard_normal((1, 1, 3, 3, 2)))
    run(device, lambda t: F.adaptive_max_pool2d(t, (2, 3), True),
        RNG.standard_normal((1, 2, 4, 5)))


def test_max_pool_nan_and_float16(device):
    x = RNG.standard_normal((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    run(device, lambda t: F.max_pool2d(t, 2, 1, return_indices=True), x, grad=False)
    run(device, lambda t: F.max_pool2d(t, 2), RNG.standard_normal((1, 2, 4, 4)).astype(
        np.float16), grad=False)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_avg_pools(device, dt):
    x = RNG.standard_normal((1, 2, 5, 4)).astype(dt)
    run(device, lambda t: F.avg_pool2d(t, 3, 2, 1, True, False), x)
    run(device, lambda t: F.adaptive_avg_pool2d(t, (2, 3)), x)


def test_avg_pool_3d_divisor_and_float16(device):
    run(device, lambda t: F.avg_pool3d(t, 2, 1, 1, divisor_override=3),
        RNG.standard_normal((1, 1, 3, 2, 3)))
    run(device, lambda t: F.avg_pool1d(t, 2), RNG.standard_normal((1, 2, 6)).astype(np.float16),
        grad=False)


@pytest.mark.parametrize("mode,kw", [("nearest", dict(scale_factor=2)),
                                     ("nearest-exact", dict(size=(3, 5))),
                                     ("bilinear", dict(scale_factor=1.5, align_corners=True)),
                                     ("bicubic", dict(size=(4, 3)))])
def test_interpolate(device, mode, kw):
    run(device, lambda t: F.interpolate(t, mode=mode, **kw), RNG.standard_normal((1, 2, 3, 4)))


def test_interpolate_1d_3d(device):
    run(device, lambda t: F.interpolate(t, scale_factor=2, mode="linear"),
        RNG.standard_normal((1, 2, 4)).astype(np.float32))
    run(device, lambda t: F.interpolate(t, size=(2, 3, 3), mode="trilinear"),
        RNG.standard_normal((1, 1, 2, 2, 2)))


def test_double_backward_on_device(device):
    x = RNG.standard_normal((1, 1, 4, 4))
    grads = []
    for dev in ("cpu", "cuda"):
        t = jg.tensor(x, device=dev, requires_grad=True)
        (g,) = jg.autograd.grad(F.max_pool2d(t, 2, 1).pow(2).sum() +
                                F.avg_pool2d(t, 2).pow(2).sum(), t, create_graph=True)
        g.pow(2).sum().backward()
        grads.append(_host(t.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_max_unpool_and_pixel_shuffle(device):
    x = RNG.standard_normal((1, 2, 4, 4))
    _, idx = F.max_pool2d(jg.tensor(x), 2, return_indices=True)
    small = RNG.standard_normal((1, 2, 2, 2))
    outs = []
    for dev in ("cpu", "cuda"):
        t = jg.tensor(small, device=dev, requires_grad=True)
        u = F.max_unpool2d(t, idx.to(dev), 2)
        (u * u).sum().backward()
        outs.append((_host(u), _host(t.grad), u.grad_fn.name()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]
    run(device, lambda t: F.pixel_shuffle(t, 2), RNG.standard_normal((1, 8, 2, 2)))


def test_integer_pools_and_uint8_nearest(device):
    x = RNG.integers(-20, 20, (1, 2, 5, 4))
    run(device, lambda t: F.max_pool2d(t, 2, 1, 1, return_indices=True), x, grad=False)
    run(device, lambda t: F.avg_pool2d(t, 3, 2, 1), x, grad=False)  # truncated as ATen
    u = RNG.integers(0, 255, (1, 2, 3, 3)).astype(np.uint8)
    run(device, lambda t: F.interpolate(t, scale_factor=1.5), u, grad=False)


def test_nearest_same_or_double_size_shortcut(device):
    # PyTorch's CPU nearest tables (2-D: ``nearest_idx`` forward and backward; 1-D/3-D: only
    # backward), checked against PyTorch in tests/nn/test_upsampling.py: the same on CUDA
    for shape, scale in (((1, 2, 3, 3), 1.2), ((1, 2, 5, 7), (1.528, 2.131)),
                         ((1, 2, 4), 2.1), ((1, 1, 2, 3, 4), (1.03, 2.1, 1.2))):
        run(device, lambda t, s=scale: F.interpolate(t, scale_factor=s),
            RNG.standard_normal(shape))


def test_pool_backward_records_through_input_on_device(device):
    for fn in (lambda t: F.max_pool2d(t, 2), lambda t: F.avg_pool2d(t, 3, 1, 1)):
        x = jg.tensor(RNG.standard_normal((1, 2, 6, 6)), device="cuda", requires_grad=True)
        (g,) = jg.autograd.grad(fn(x).sum(), x, create_graph=True)
        assert g.requires_grad and g.is_cuda
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        assert gg.is_cuda and not _host(gg).any()
