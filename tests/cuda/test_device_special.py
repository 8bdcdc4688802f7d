"""lgamma/digamma/polygamma/mvlgamma/i0 and torch.special's new functions on CUDA tensors:
forward and backward against the CPU path (itself checked against PyTorch in
tests/test_special_functions.py), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_special.py

Float64 agrees with the CPU to 1e-12 (the same Math.h ports; lgamma is libdevice's / libm's).
Float32 to 1e-5 relative: on the device digamma's reflection term pi / tan(pi r) stays in
float32 (PyTorch's CPU and CUDA kernels compute it in double), and the simulator's float32
libm calls go through float64.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

GAMMA = np.array([[-3.5, -0.5, 0.3, 1.0, 1.5], [2.5, 7.7, 10.0, 12.3, 50.0]])
BESSEL = np.array([[-9.0, -3.0, -0.5, 0.0, 0.5], [3.0, 7.9, 8.1, 20.0, 60.0]])
UNIT = np.array([[0.01, 0.1, 0.3, 0.5, 0.7], [0.86, 0.9, 0.99, 0.999, 1e-9]])
POS = np.array([[0.1, 0.5, 1.0, 2.0, 3.0], [0.2, 0.7, 1.3, 4.0, 5.0]])

CASES = {
    "lgamma": (lambda x: x.lgamma(), GAMMA),
    "digamma": (lambda x: x.digamma(), GAMMA),
    "polygamma1": (lambda x: jg.polygamma(1, x), GAMMA),
    # n >= 2 on positive x: zeta's float32 sum cancels for negative x on the device (PyTorch's
    # CUDA kernel accumulates float in float too; its CPU kernel in double)
    "polygamma3": (lambda x: x.polygamma(3), POS),
    "mvlgamma": (lambda x: jg.mvlgamma(x.abs() + 1.5, 3), GAMMA),
    "i0": (lambda x: x.i0(), BESSEL),
    "i0e": (lambda x: jg.special.i0e(x), BESSEL),
    "i1": (lambda x: jg.special.i1(x), BESSEL),
    "i1e": (lambda x: jg.special.i1e(x), BESSEL),
    "ndtri": (lambda x: jg.special.ndtri(x), UNIT),
    "ndtr": (lambda x: jg.special.ndtr(x), BESSEL),
    "entr": (lambda x: jg.special.entr(x), POS),
    "erfcx": (lambda x: jg.special.erfcx(x * 20 - 3), UNIT),
    "log_ndtr": (lambda x: jg.special.log_ndtr(x * 6 - 4), UNIT),
    "xlog1py": (lambda x: jg.special.xlog1py(x, x.flip(1)) + jg.special.xlog1py(x, 0.5), POS),
    "zeta": (lambda x: jg.special.zeta(3.0, x) + jg.special.zeta(x.detach() + 2, x), POS),
}
PARAMS = [pytest.param(n, dt, id=f"{n}-{str(dt)[-7:]}") for n in sorted(CASES)
          for dt in (jg.float64, jg.float32)]


def _run(fn, array, dev, dtype):
    x = jg.tensor(array, device=dev, dtype=dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = fn(x)
        assert y.device.type == ("cuda" if dev == "cuda" else "cpu")
        w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
        (y * w).sum().backward()
    return y.detach().cpu().numpy(), x.grad.cpu().numpy()


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_forward_and_backward_match_cpu(device, name, dtype):
    fn, array = CASES[name]
    yc, gc = _run(fn, array, "cpu", dtype)
    yd, gd = _run(fn, array, "cuda", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-12, atol=1e-12)
    assert yd.dtype == yc.dtype and yd.shape == yc.shape
    np.testing.assert_allclose(yd, yc, **tol)
    np.testing.assert_allclose(gd, gc, **tol)


def test_special_values_and_in_place_on_the_device(device):
    x = np.array([-np.inf, -2.0, -0.0, 0.0, np.inf, np.nan])
    for fn in (lambda t: t.lgamma(), lambda t: t.digamma(), lambda t: t.polygamma(2),
               lambda t: t.i0(), lambda t: jg.special.i1e(t), lambda t: jg.special.ndtri(t),
               lambda t: jg.special.erfcx(t), lambda t: jg.special.log_ndtr(t),
               lambda t: t.clone().lgamma_(), lambda t: t.clone().polygamma_(1)):
        cpu, dev = fn(jg.tensor(x)), fn(jg.tensor(x, device="cuda"))
        assert dev.is_cuda
        np.testing.assert_array_equal(dev.cpu().numpy(), cpu.numpy())


def test_create_graph_on_the_device(device):
    def second(dev, fn, a):
        x = jg.tensor(a, device=dev, requires_grad=True)
        (g,) = jg.autograd.grad(fn(x).sum(), x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        return gg.cpu().numpy()
    for fn, a in ((lambda x: x.lgamma(), GAMMA[:1]), (lambda x: jg.special.i1(x), BESSEL[:1])):
        np.testing.assert_allclose(second("cuda", fn, a), second("cpu", fn, a), rtol=1e-10,
                                   atol=1e-12)
