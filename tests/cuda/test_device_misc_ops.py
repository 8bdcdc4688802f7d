"""Issue 13's misc ops on CUDA tensors: forward and backward against the CPU path (itself
checked against PyTorch in tests/test_*), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_misc_ops.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(21)
A = RNG.standard_normal((3, 5))
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0, 0.5], [0.0, 0.0, 3.0, 1.0, 2.0],
                  [2.0, -1.0, 0.7, 0.0, 1.1]])
TIES = np.array([[1.0, 3.0, 3.0, 0.0, 3.0], [2.0, 2.0, 1.0, 2.0, 2.0],
                 [np.nan, 1.0, np.nan, 5.0, -np.inf]])
NAN = np.where(RNG.random((3, 5)) < 0.3, np.nan, A)
UNIT = RNG.uniform(-0.9, 0.9, (3, 5))
LONG = RNG.standard_normal((2, 19))  # longer than a simulator block: the scan carries chunks

CASES = {
    "asinh": (lambda x: x.asinh(), A),
    "acosh": (lambda x: (x.abs() + 1.1).acosh(), A),
    "atanh": (lambda x: x.atanh(), UNIT),
    "atan2": (lambda x: jg.atan2(x, x.flip(0)), A),
    "erfc": (lambda x: jg.erfc(x), A),
    "erfinv": (lambda x: x.erfinv(), UNIT),
    "tril": (lambda x: x.tril(-1) + x.triu(2), A),
    "diag": (lambda x: jg.diag(x, 1).sum() + jg.diag(x[0], -1), A),
    "diag_embed": (lambda x: jg.diag_embed(x, 1, 0, 2), A),
    "diagflat": (lambda x: x.diagflat(), A[:2, :2]),
    "meshgrid": (lambda x: jg.stack(jg.meshgrid(x[0], x[1], indexing="xy")), A),
    "repeat_interleave_int": (lambda x: x.repeat_interleave(2, dim=1), A),
    "repeat_interleave_tensor": (lambda x: x.repeat_interleave(jg.tensor([1, 0, 2]), dim=0), A),
    "cumprod": (lambda x: x.cumprod(1), A),
    "cumprod_zeros": (lambda x: x.cumprod(-1), ZEROS),
    "cumprod_long": (lambda x: x.cumprod(1), LONG * 0.2 + 1),
    "cummax": (lambda x: jg.cat([x.cummax(1).values, x.cummax(0).indices.double()]), TIES),
    "cummin": (lambda x: jg.cat([x.cummin(1).values, x.cummin(1).indices.double()]), TIES),
    "cummax_long": (lambda x: x.cummax(1).values, LONG),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), A),
    "logcumsumexp_long": (lambda x: x.logcumsumexp(1), LONG),
    "trapezoid": (lambda x: jg.trapezoid(x) + jg.trapezoid(x, dx=0.5, dim=0).sum(), A),
    "trapezoid_x": (lambda x: jg.trapezoid(x, x[0].detach().cumsum(0).exp()), A),
    "cumulative_trapezoid": (lambda x: jg.cumulative_trapezoid(x, dim=0), A),
    "nansum": (lambda x: jg.cat([x.nansum(1), x.nansum().reshape(1)]), NAN),
    "nanmean": (lambda x: x.nanmean(0), NAN),
}
F32_CASES = ("erfinv", "cumprod_zeros", "logcumsumexp", "cummax")
PARAMS = [pytest.param(n, jg.float64, id=f"{n}-f64") for n in sorted(CASES)] + [
    pytest.param(n, jg.float32, id=f"{n}-f32") for n in F32_CASES]


def _run(fn, array, dev, dtype):
    x = jg.tensor(array, device=dev, dtype=dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = fn(x)
        assert y.device.type == ("cuda" if dev == "cuda" else "cpu")
        if y.requires_grad:
            w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
            (y * w).sum().backward()
    return y.detach().cpu().numpy(), None if x.grad is None else x.grad.cpu().numpy()


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_forward_and_backward_match_cpu(device, name, dtype):
    fn, array = CASES[name]
    yc, gc = _run(fn, array, "cpu", dtype)
    yd, gd = _run(fn, array, "cuda", dtype)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-12, atol=1e-12)
    assert yd.dtype == yc.dtype and yd.shape == yc.shape
    np.testing.assert_allclose(yd, yc, **tol)
    assert (gc is None) == (gd is None)
    if gc is not None:
        np.testing.assert_allclose(gd, gc, **tol)


def test_integer_ops_match_cpu(device):
    ints = RNG.integers(-20, 20, (3, 6))
    counts = RNG.integers(-2, 70, (3, 6))
    b = np.array([-5.0, 0.0, 2.5, 7.0])
    for fn in (lambda t, c: t << c, lambda t, c: t >> c, lambda t, c: t.to(jg.int8) << 3,
               lambda t, c: 7 >> t.abs(), lambda t, c: t.cumprod(1), lambda t, c: t.cummax(0)[1],
               lambda t, c: t.cummin(1)[0], lambda t, c: t.tril(), lambda t, c: t.nansum(0),
               lambda t, c: jg.bucketize(t, jg.tensor(b, device=t.device)),
               lambda t, c: jg.searchsorted(jg.tensor(b, device=t.device), t, right=True),
               lambda t, c: jg.histc(t.double(), 5, -10, 10),
               lambda t, c: jg.repeat_interleave(c.abs()[0] % 3)):
        cpu = fn(jg.tensor(ints), jg.tensor(counts))
        dev = fn(jg.tensor(ints, device="cuda"), jg.tensor(counts, device="cuda"))
        assert dev.is_cuda and dev.dtype is cpu.dtype and dev.shape == cpu.shape
        np.testing.assert_array_equal(dev.cpu().numpy(), cpu.numpy())


def test_create_graph_on_the_device(device):
    """Second derivatives of the scans (their backwards are themselves differentiable)."""
    def second(dev, fn, a):
        x = jg.tensor(a, device=dev, requires_grad=True)
        (g,) = jg.autograd.grad((fn(x) ** 2).sum(), x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        return gg.cpu().numpy()
    for fn, a in ((lambda x: x.cumprod(1), ZEROS), (lambda x: x.logcumsumexp(1), A),
                  (lambda x: x.cummax(1).values, A), (lambda x: x.tril(), A)):
        np.testing.assert_allclose(second("cuda", fn, a), second("cpu", fn, a), rtol=1e-10,
                                   atol=1e-12)
