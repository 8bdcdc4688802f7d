"""masked_scatter, select/slice/diagonal_scatter, renorm, ldexp, nextafter, gcd/lcm, isposinf &
co. on CUDA tensors: forward and backward against the CPU path (itself checked against PyTorch in
tests/test_misc_functions_more.py), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_misc_functions_more.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(9)
A = RNG.standard_normal((3, 4))
MASK = np.array([[True, False, True, True], [False, False, True, False],
                 [True, True, False, False]])


def _t(a, dev):
    return jg.tensor(a, device=dev)


CASES = {
    # input-gradient cases: f(x) with x (3, 4) requiring grad
    "masked_scatter": lambda x: jg.masked_scatter(x, _t(MASK, x.device), (x * 3).flip(0)),
    "masked_scatter_row": lambda x: x.masked_scatter(_t(MASK[:1], x.device), x.flatten() * 2),
    "masked_scatter_": lambda x: (x * 1).masked_scatter_(_t(MASK, x.device), x.sin()),
    "select_scatter": lambda x: jg.select_scatter(x, x[2] * 5, 0, 1),
    "slice_scatter": lambda x: x.slice_scatter(x[:, :2].exp(), 1, 1, None, 2),
    "diagonal_scatter": lambda x: jg.diagonal_scatter(x, x[0, :3] ** 2, 1),
    "renorm": lambda x: jg.renorm(x, 2, 0, 1.0),
    "renorm_inf_": lambda x: (x * 1).renorm_(float("inf"), 1, 0.5),
    "ldexp_int": lambda x: jg.ldexp(x, _t(np.array([1, -2, 3, 0]), x.device)),
    "ldexp_float": lambda x: x.ldexp(x[0]),
    "ldexp_": lambda x: (x * 1).ldexp_(x[1].detach()),
    "nextafter": lambda x: jg.nextafter(x, x.flip(1)),
    "nextafter_": lambda x: (x * 1).nextafter_(x.detach().flip(0)),
}


def _run(fn, dev):
    x = jg.tensor(A, device=dev, requires_grad=True)
    y = fn(x)
    assert y.device.type == ("cuda" if dev == "cuda" else "cpu")
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), x.grad.cpu().numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(device, name):
    yc, gc, nc = _run(CASES[name], "cpu")
    yd, gd, nd = _run(CASES[name], "cuda")
    assert yd.shape == yc.shape and yd.dtype == yc.dtype and nd == nc
    np.testing.assert_allclose(yd, yc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gd, gc, rtol=1e-12, atol=1e-12)


def test_float32_kernels_match_cpu(device):
    a = np.array([0.0, 1.0, -2.5, np.inf, np.nan, 3.0, -np.inf], np.float32)
    b = np.array([0.0, 2.0, -3.0, 0.0, 1.0, 3.0, -1.0], np.float32)
    for fn in (lambda x, y: jg.nextafter(x, y), lambda x, y: jg.ldexp(x, y),
               lambda x, y: jg.isposinf(x), lambda x, y: jg.isneginf(x)):
        c, d = fn(_t(a, "cpu"), _t(b, "cpu")), fn(_t(a, "cuda"), _t(b, "cuda"))
        assert d.device.type == "cuda" and d.dtype is c.dtype
        np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())


def test_integer_functions_match_cpu(device):
    i = np.array([0, 6, -12, 7, 0, -9, 15])
    j = np.array([0, 4, 18, -3, 5, 0, -25])
    for dt in (jg.int64, jg.int32, jg.uint8):
        # (lcm of the uint8 values wraps around: NumPy scalars under the simulator warn there)
        for fn in ((jg.gcd, jg.lcm) if dt is not jg.uint8 else (jg.gcd,)) + (
                lambda x, y: x.clone().gcd_(y), lambda x, y: x.clone().lcm_(y[:1]), jg.ldexp,
                lambda x, y: jg.isreal(x), lambda x, y: jg.isposinf(x)):
            c = fn(_t(i, "cpu").to(dt), _t(j, "cpu").to(dt))
            d = fn(_t(i, "cuda").to(dt), _t(j, "cuda").to(dt))
            assert d.device.type == "cuda" and d.dtype is c.dtype
            np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())
    with pytest.raises(NotImplementedError, match='"gcd_cuda" not implemented for \'Float\''):
        jg.gcd(_t(A, "cuda").float(), _t(A, "cuda").float())
    assert jg.is_nonzero(_t(np.array([2.0]), "cuda"))


def test_masked_scatter_too_small_source_is_reported(device):
    # the device-side check (PyTorch's asynchronous assert), raised at the next sync point
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        jg.masked_scatter(_t(A, "cuda"), _t(MASK, "cuda"), _t(A[0, :2], "cuda")).cpu()
