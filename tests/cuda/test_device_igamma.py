"""igamma / igammac (and torch.special.gammainc / gammaincc) on CUDA tensors: forward, the
gradient w.r.t. ``other`` and the in-place / ``out=`` forms against the CPU path (itself checked
against PyTorch in tests/test_special_igamma.py), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_igamma.py

The points cover every branch of ATen's algorithm (both series, the continued fraction, the
asymptotic series for 20 < a < 200 and a > 200, the boundary values). Float64 agrees with the CPU
to 1e-13 (the same port; on the device the double-promoted comparisons of ATen's float code stay
in float32 and libdevice's functions differ from libm's by an ulp or so): float32 to 1e-5.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

A = np.array([[0.5, 1.0, 3.0, 25.0, 150.0, 250.0, 0.0, 2.0],
              [1e-3, 7.5, 0.7, 1.5, 50.0, np.inf, 1.0, -1.0]])
X = np.array([[0.3, 2.0, 1.05, 24.0, 160.0, 251.0, 1.0, 0.0],
              [1e-4, 30.0, 0.9, 0.6, 45.0, 1.0, np.inf, 1.0]])


def _lgamma(a):
    from math import lgamma
    return np.vectorize(lambda v: lgamma(v) if v > 0 and np.isfinite(v) else 0.0)(a)


def _run(name, dev, dtype):
    a = jg.tensor(A, device=dev, dtype=dtype)
    x = jg.tensor(X, device=dev, dtype=dtype, requires_grad=True)
    y = getattr(jg, name)(a, x)
    assert y.device.type == dev and y.grad_fn.name() == name.capitalize() + "Backward0"
    with warnings.catch_warnings():  # the simulator's NumPy scalars warn on 0 * inf
        warnings.simplefilter("ignore", RuntimeWarning)
        (g,) = jg.autograd.grad(y.sum(), x)
    assert g.device.type == dev
    return y.detach().cpu().numpy(), g.cpu().numpy()


@pytest.mark.parametrize("dtype", [jg.float64, jg.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_forward_and_grad_match_cpu(device, name, dtype):
    yc, gc = _run(name, "cpu", dtype)
    yd, gd = _run(name, "cuda", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(yd, yc, **tol)
    finite = np.isfinite(gc)
    assert (np.isfinite(gd) == finite).all()
    # the gradient is exp((a-1) log x - x - lgamma(a)): one rounding of each term (an ulp of
    # libdevice's lgamma against libm's) moves it by eps * (sum of the terms' magnitudes)
    # relative, 2.8e3 * eps at a = 250, x = 251 (seen on an H200: 1.2e-4 in float32)
    eps = np.finfo(np.float32 if dtype is jg.float32 else np.float64).eps
    with np.errstate(all="ignore"):
        terms = np.abs((A - 1) * np.log(X)) + np.abs(X) + np.abs(_lgamma(A))
    rtol = np.maximum(tol["rtol"], 8 * eps * np.nan_to_num(terms, posinf=0.0))
    np.testing.assert_array_less(np.abs(gd - gc)[finite],
                                 (tol["atol"] + rtol * np.abs(gc))[finite] * (1 + 1e-12))


def test_in_place_out_and_errors_on_the_device(device):
    a = jg.tensor(A[0], device="cuda")
    x = jg.tensor(X[0], device="cuda")
    want = jg.special.gammaincc(a.cpu(), x.cpu()).numpy()
    b = a.clone()
    assert b.igammac_(x) is b and b.is_cuda
    np.testing.assert_allclose(b.cpu().numpy(), want, rtol=1e-13)
    o = jg.empty(8, device="cuda", dtype=jg.float64)
    jg.igammac(a, x, out=o)
    np.testing.assert_allclose(o.cpu().numpy(), want, rtol=1e-13)
    with pytest.raises(NotImplementedError, match="igamma_cuda"):
        jg.igamma(a.long(), x.long())
    a.requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input'"):
        jg.igamma(a, x).sum().backward()
