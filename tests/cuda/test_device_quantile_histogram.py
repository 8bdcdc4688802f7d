"""quantile/nanquantile, histogram/histogramdd, frexp and the window factories on CUDA
tensors: the same compositions as the CPU path (itself checked against PyTorch in
tests/test_quantile_mode.py and tests/test_histogram_windows.py), results on the device; mode
refuses CUDA tensors as kthvalue does.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_quantile_histogram.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(9)
A = RNG.standard_normal((3, 5))
A[1, 2] = np.nan


@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_quantile_matches_cpu(device, fn, mode):
    out = []
    for dev in ("cpu", "cuda"):
        x = jg.tensor(A, device=dev, requires_grad=True)
        q = jg.tensor([0.25, 0.5], dtype=jg.float64, device=dev)
        y = getattr(jg, fn)(x, q, dim=1, interpolation=mode)
        assert y.device.type == dev
        y.backward(jg.ones_like(y))
        out.append((y.detach().cpu().numpy(), x.grad.cpu().numpy(), type(y.grad_fn).__name__))
    (yc, gc, nc), (yd, gd, nd) = out
    assert nc == nd
    np.testing.assert_array_equal(yd, yc)
    np.testing.assert_array_equal(gd, gc)


def test_histogram_frexp_windows_match_cpu(device):
    x = RNG.standard_normal(40)
    w = RNG.random(40)
    for fn in (lambda T, d: jg.histogram(T, 6),
               lambda T, d: jg.histogram(T, jg.tensor([-1.0, 0.0, 0.5, 2.0], dtype=jg.float64, device=d),
                                         weight=jg.tensor(w, device=d), density=True),
               lambda T, d: jg.histogramdd(T.reshape(20, 2), [3, 4])):
        c, d = fn(jg.tensor(x), "cpu"), fn(jg.tensor(x, device="cuda"), "cuda")
        assert d.hist.device.type == "cuda"
        # density divides by the device's sum (the CPU path adds as ATen's CPU kernel does)
        np.testing.assert_allclose(d.hist.cpu().numpy(), c.hist.numpy(), rtol=1e-14)
        np.testing.assert_array_equal(d.bin_edges[0].cpu().numpy() if isinstance(
            d.bin_edges, tuple) else d.bin_edges.cpu().numpy(), c.bin_edges[0].numpy()
            if isinstance(c.bin_edges, tuple) else c.bin_edges.numpy())
    m, e = jg.frexp(jg.tensor(x * 1e3, device="cuda"))
    mc, ec = jg.frexp(jg.tensor(x * 1e3))
    assert m.device.type == "cuda" and e.dtype is jg.int32
    np.testing.assert_array_equal(m.cpu().numpy(), mc.numpy())
    np.testing.assert_array_equal(e.cpu().numpy(), ec.numpy())
    for name in ("bartlett_window", "kaiser_window", "hann_window"):
        wd = getattr(jg, name)(9, device="cuda")
        assert wd.device.type == "cuda"
        np.testing.assert_allclose(wd.cpu().numpy(), getattr(jg, name)(9).numpy(),
                                   rtol=1e-6, atol=1e-7)
    got, want = jg.mode(jg.tensor(x, device="cuda")), jg.mode(jg.tensor(x))  # host-staged
    assert got.values.device.type == "cuda"
    np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())
