"""``pow(tensor, scalar)`` on float32/float64 against PyTorch's CPU kernel, bit for bit.

PowKernel.cpp computes some scalar exponents without ``std::pow``: 2, 3 and -2 as products,
0.5/-0.5/-1 through the sqrt/rsqrt/reciprocal kernels, 1 as a copy and 0 as a fill; its
backward is ``grad * (exponent * self.pow(exponent - 1))`` through the same cases. Exponents
that reach ``std::pow``/SLEEF's vector pow are only bounded. Expected values are PyTorch's, run
on the same inputs in the same test."""
import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

# (exponent, forward exact, gradient exact); 2 and 2.0 both: an int and a float scalar
EXPONENTS = [(2, True, True), (2.0, True, True), (3, True, True), (3.0, True, True),
             (-1, True, True), (-2, True, False), (0.5, False, True), (-0.5, True, False),
             (1, True, True), (0, True, True), (4, False, True), (1.5, False, False),
             (2.5, False, False)]


def _same(a, b):
    return np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")) or \
        bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def _run(lib, x, g, e):
    t = lib.tensor(x, requires_grad=True)
    y = t.pow(e)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e, fwd_exact, grad_exact", EXPONENTS, ids=repr)
def test_pow_scalar_matches_pytorch(e, fwd_exact, grad_exact, dtype):
    rng = np.random.default_rng(7)
    # positive bases (the products are checked on signed bases below). x ** 0.5 is PyTorch's
    # sqrt kernel, MKL's vsSqrt: not correctly rounded (jitgrad's sqrt is), hence bounded
    x = (np.abs(rng.standard_normal(4099)) * 3 + 1e-3).astype(dtype)
    g = rng.standard_normal(4099).astype(dtype)
    yj, gj, node = _run(jitgrad, x, g, e)
    yt, gt, node_t = _run(torch, x, g, e)
    assert node == node_t == "PowBackward0"
    if fwd_exact:
        assert _same(yj, yt)
    else:
        np.testing.assert_allclose(yj, yt, rtol=4 * np.finfo(dtype).eps)
    if grad_exact:
        assert _same(gj, gt)
    else:
        np.testing.assert_allclose(gj, gt, rtol=8 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e", [2, 3, -1, -2])
def test_pow_products_on_signed_bases(e, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1000) * 5).astype(dtype)
    x[:4] = [0.0, -0.0, np.inf, -np.inf]
    g = rng.standard_normal(1000).astype(dtype)
    yj, gj, _ = _run(jitgrad, x, g, e)
    yt, gt, _ = _run(torch, x, g, e)
    assert _same(yj, yt)
    if e != -2:  # -2's gradient takes pow(x, -3): std::pow / SLEEF
        assert _same(gj, gt)


def test_pow_two_is_square_not_libm_pow():
    # x ** 2 of a value whose libm pow and product agree is not informative: check the
    # float32 case where PyTorch's product differs from a correctly rounded cube
    x = np.array([1.1, 1.3, 2.7, -3.3, 0.1], np.float32)
    want = x * x * x  # NumPy's float32 products, in PyTorch's order
    assert _same(jitgrad.tensor(x).pow(3).numpy(), want)
    assert _same((jitgrad.tensor(x) ** 3).numpy(), want)
