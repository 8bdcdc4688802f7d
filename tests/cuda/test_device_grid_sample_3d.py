"""grid_sample on 5-D input on CUDA (nn/functional/_sampling3d_kernels.py rendered for
numba-cuda, input gradients by atomic adds): values, grid and input gradients against the CPU
path (itself tested against PyTorch in tests/nn/test_grid_sample_3d.py), NaN/inf coordinates,
no host <-> device transfer in forward + backward.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_grid_sample_3d.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(13)
TOL = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-5)}


def _host(t):
    return t.detach().cpu().numpy()


def _grid(dt):
    g = RNG.uniform(-1.3, 1.3, (2, 2, 2, 3, 3))
    g[0, 0, 0, 0] = [-1.0, 1.0, 1.0]  # borders exactly
    g[1, 1, 1, 2] = [np.nan, 0.4, 0.1]  # zeros: reads nothing; border/reflection: clipped
    g[1, 0, 1, 1] = [0.2, -np.inf, 0.3]
    g[0, 1, 0, 2] = [2.0 ** 32 + 1.5, 0.1, 0.2]  # reflection's int count out of range
    return g.astype(dt)


@pytest.mark.parametrize("mode,pad,ac,dt", [
    ("bilinear", "zeros", False, np.float32), ("bilinear", "reflection", True, np.float64),
    ("bilinear", "border", False, np.float64), ("nearest", "reflection", False, np.float64),
    ("nearest", "zeros", True, np.float32)])
def test_grid_sample_3d(device, mode, pad, ac, dt):
    x = RNG.standard_normal((2, 2, 3, 2, 4)).astype(dt)
    g = _grid(dt)
    w = RNG.standard_normal((2, 2, 2, 2, 3)).astype(dt)
    res = {}
    for dev in ("cpu", "cuda"):
        xt = jg.tensor(x, device=dev, requires_grad=True)
        gt = jg.tensor(g, device=dev, requires_grad=True)
        wt = jg.tensor(w, device=dev)
        device.reset_stats()
        out = F.grid_sample(xt, gt, mode=mode, padding_mode=pad, align_corners=ac)
        (out * wt).sum().backward()
        moved = device.stats.h2d + device.stats.d2h
        res[dev] = (out, xt.grad, gt.grad, moved)
    (oc, xc, gc, _), (od, xd, gd, moved) = res["cpu"], res["cuda"]
    assert moved == 0, device.stats
    assert od.is_cuda and xd.is_cuda and gd.is_cuda and od.dtype == oc.dtype
    assert od.grad_fn.name() == oc.grad_fn.name() == "GridSampler3DBackward0"
    for a, b in ((oc, od), (xc, xd), (gc, gd)):
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])


def test_affine_grid_then_sample_3d(device):
    """The volumetric spatial-transformer step on the device: theta's gradient through both."""
    x = RNG.standard_normal((2, 1, 3, 4, 4))
    theta = np.concatenate([np.eye(3), np.zeros((3, 1))], 1) + 0.05 * RNG.standard_normal(
        (2, 3, 4))
    grads = {}
    for dev in ("cpu", "cuda"):
        t = jg.tensor(theta, device=dev, requires_grad=True)
        grid = F.affine_grid(t, (2, 1, 2, 3, 3), align_corners=False)
        out = F.grid_sample(jg.tensor(x, device=dev), grid, align_corners=False)
        out.sum().backward()
        grads[dev] = (_host(out), _host(t.grad))
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, **TOL[np.float64])
