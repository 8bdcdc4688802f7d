"""grid_sample / affine_grid on CUDA (nn/functional/sampling.py: the kernels of
_sampling_kernels.py rendered for numba-cuda, input gradients by atomic adds): values, grid and
input gradients against the CPU path (itself tested against PyTorch in tests/nn), no host <->
device transfer in forward + backward.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_grid_sample.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(12)
TOL = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=1e-5, atol=1e-5)}


def _host(t):
    return t.detach().cpu().numpy()


def _grid(dt):
    g = RNG.uniform(-1.3, 1.3, (2, 2, 3, 2))
    g[0, 0, 0] = [-1.0, 1.0]  # borders exactly
    g[1, 1, 2] = [np.nan, 0.4]  # zeros padding: NaN output and grid gradient, no input taps
    return g.astype(dt)


@pytest.mark.parametrize("mode,pad,ac,dt", [
    ("bilinear", "zeros", False, np.float32), ("bilinear", "reflection", True, np.float64),
    ("nearest", "border", False, np.float64), ("bicubic", "zeros", True, np.float64),
    ("bicubic", "reflection", False, np.float32)])
def test_grid_sample(device, mode, pad, ac, dt):
    x = RNG.standard_normal((2, 2, 3, 4)).astype(dt)
    g = _grid(dt)
    if pad != "zeros":
        g[1, 1, 2, 0] = 0.25  # PyTorch's bilinear backward has no NaN rule there
    w = RNG.standard_normal((2, 2, 2, 3)).astype(dt)
    res = {}
    for dev in ("cpu", "cuda"):
        xt = jg.tensor(x, device=dev, requires_grad=True)
        gt = jg.tensor(g, device=dev, requires_grad=True)
        wt = jg.tensor(w, device=dev)
        device.reset_stats()
        out = F.grid_sample(xt, gt, mode=mode, padding_mode=pad, align_corners=ac)
        (out * wt).nansum().backward()
        moved = device.stats.h2d + device.stats.d2h
        res[dev] = (out, xt.grad, gt.grad, moved)
    (oc, xc, gc, _), (od, xd, gd, moved) = res["cpu"], res["cuda"]
    assert moved == 0, device.stats
    assert od.is_cuda and xd.is_cuda and gd.is_cuda and od.dtype == oc.dtype
    assert od.grad_fn.name() == oc.grad_fn.name() == "GridSampler2DBackward0"
    for a, b in ((oc, od), (xc, xd), (gc, gd)):
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])


def test_affine_grid_then_sample(device):
    """The spatial-transformer step on the device: theta's gradient through both."""
    x = RNG.standard_normal((2, 1, 4, 4))
    theta = np.array([[1, 0.1, 0], [-0.1, 1, 0.2]]) + 0.05 * RNG.standard_normal((2, 2, 3))
    grads = {}
    for dev in ("cpu", "cuda"):
        t = jg.tensor(theta, device=dev, requires_grad=True)
        grid = F.affine_grid(t, (2, 1, 3, 3), align_corners=False)
        out = F.grid_sample(jg.tensor(x, device=dev), grid, align_corners=False)
        out.sum().backward()
        grads[dev] = (_host(out), _host(t.grad))
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, **TOL[np.float64])


def test_device_mismatch_error(device):
    x = jg.zeros(1, 1, 2, 2, device="cuda")
    with pytest.raises(RuntimeError, match="expected input and grid to be on same device, "
                                           "but input is on cuda:0 and grid is on cpu"):
        F.grid_sample(x, jg.zeros(1, 1, 1, 2), align_corners=False)
