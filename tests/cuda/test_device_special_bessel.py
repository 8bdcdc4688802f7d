"""torch.special's Airy/Bessel functions and orthogonal polynomials on CUDA tensors against the
CPU path (itself compared with PyTorch bit for bit in tests/test_special_bessel_polynomials.py),
results staying on the device.

Simulator run (own process, tiny shapes, a few kernels)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_special_bessel.py

The points reach every branch of the kernels picked. Float64 agrees with the CPU to 1e-13 (the
same port; the device's sin/cos/log are libdevice's, the simulator's NumPy's, not libm's),
float32 to 1e-5 (the device's fma contraction is its compiler's).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

X = np.array([-3.0, -0.4, 0.0, 1e-6, 0.3, 1.5, 2.5, 5.5, 9.0, np.nan, np.inf])
TOL = {"float64": dict(rtol=1e-13, atol=1e-14), "float32": dict(rtol=1e-5, atol=1e-6)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["airy_ai", "bessel_y1", "modified_bessel_k0"])
def test_unary_match_cpu(device, name, dtype):
    fn = getattr(jg.special, name)
    want = fn(jg.tensor(X, dtype=getattr(jg, dtype))).numpy()
    got = fn(jg.tensor(X, dtype=getattr(jg, dtype), device="cuda"))
    assert got.is_cuda and str(got.dtype) == f"torch.{dtype}"
    np.testing.assert_allclose(got.cpu().numpy(), want, **TOL[dtype])


@pytest.mark.parametrize("name", ["chebyshev_polynomial_v", "hermite_polynomial_h"])
def test_polynomials_match_cpu(device, name):
    fn = getattr(jg.special, name)
    x = np.array([[-1.0], [-0.6], [0.2], [1.0], [1.7]])
    n = np.array([-1.0, 0.0, 1.0, 3.0, 9.0, 12.0, np.nan])
    want = fn(jg.tensor(x), jg.tensor(n)).numpy()
    got = fn(jg.tensor(x, device="cuda"), jg.tensor(n, device="cuda"))
    assert got.is_cuda and got.shape == (5, 7)
    np.testing.assert_allclose(got.cpu().numpy(), want, **TOL["float64"])
    # a Python number for n, promoted as on the CPU
    got = fn(jg.tensor(x, device="cuda", dtype=jg.float32), 4)
    np.testing.assert_allclose(got.cpu().numpy(), fn(jg.tensor(x, dtype=jg.float32), 4).numpy(),
                               **TOL["float32"])


def test_out_and_float16_on_the_device(device):
    x = jg.tensor([0.5, 2.0], device="cuda")
    o = jg.empty(2, device="cuda", dtype=jg.float64)
    assert jg.special.bessel_j1(x, out=o) is o and o.is_cuda
    np.testing.assert_allclose(o.cpu().numpy(), jg.special.bessel_j1(x.cpu()).numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match='"bessel_j1_cuda" not implemented for .Half.'):
        jg.special.bessel_j1(x.half())
