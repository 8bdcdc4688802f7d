"""Scalars converted into a tensor's dtype as PyTorch converts them (c10's ``overflows`` in
``Scalar.to<T>``: fills and clamp bounds beyond float16/float32/integer ranges are refused,
infinities and NaN pass), clamp's NaN bounds (NaN everywhere, zero gradient), and float16's
own nextafter grid, all checked against PyTorch."""
import numpy as np
import pytest
import torch

import jitgrad
from tests._parity import agree

nan, inf = float("nan"), float("inf")

FILLS = [
    "T.full((2,), {v}, dtype=T.{dt})",
    "T.zeros(2, dtype=T.{dt}).fill_({v})",
    "T.zeros(2, dtype=T.{dt}).masked_fill(T.tensor([True, False]), {v})",
    "T.zeros(2, dtype=T.{dt}).index_fill(0, T.tensor([0]), {v})",
    "T.clamp(T.ones(3, dtype=T.{dt}), max={v})",
    "T.clamp(T.ones(3, dtype=T.{dt}), min=-({v}))",
    "T.ones(3, dtype=T.{dt}).clamp_(0, {v})",
    "T.clamp_min(T.ones(3, dtype=T.{dt}), {v})",
    "T.ones(3, dtype=T.{dt}).clip(max={v})",
]
VALUES = {"float16": ["65504.", "65504.5", "65520.", "70000", "1e5", "inf", "float('nan')"],
          "float32": ["3.4028234663852886e38", "3.5e38", "1e40", "-1e40", "inf"],
          "float64": ["1e308", "inf"],
          "int8": ["127", "128", "-129", "300"],
          "uint8": ["255", "256", "-1", "-256"],
          "int64": ["2**63 - 1", "-2**63"]}


@pytest.mark.parametrize("code", FILLS)
@pytest.mark.parametrize("dt,v", [(dt, v) for dt, vs in VALUES.items() for v in vs])
def test_scalar_conversion_overflow_as_pytorch(code, dt, v):
    """Same values, or the same RuntimeError ("value cannot be converted to type c10::Half
    without overflow", ...)."""
    src = code.format(dt=dt, v=v)
    agree(lambda T: eval(src, {"T": T}))


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("code", [
    "T.zeros({n}, dtype=T.{dt}).fill_({v})", "T.full(({n},), {v}, dtype=T.{dt})",
    "T.full_like(T.zeros({n}, dtype=T.{dt}), {v})", "T.zeros({n}, 3, dtype=T.{dt})[:, 0].fill_({v})",
    "T.zeros({n}, dtype=T.{dt}).new_full(({n},), {v})",
    "T.zeros({n}, dtype=T.{dt}).masked_fill(T.ones({n}, dtype=T.bool), {v})"])
@pytest.mark.parametrize("dt,v", [("float16", "65519.9"), ("float16", "7e4"), ("float16", "1e300"),
                                  ("float32", "1e300"), ("int8", "300")])
def test_one_element_cpu_fill_skips_the_float16_check(n, code, dt, v):
    """ATen's fill_ of a single CPU element (scalar_fill) converts to float16 unchecked and
    rounds (65519.9 -> 65504, 7e4 -> inf); more or fewer elements, masked_fill and every other
    dtype check."""
    src = code.format(n=n, dt=dt, v=v)
    agree(lambda T: eval(src, {"T": T}))


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kw", [dict(max=nan), dict(min=nan), dict(min=0.0, max=nan),
                                dict(min=nan, max=3.0), dict(min=2.0, max=1.0),
                                dict(min=-1.0, max=3.0)])
def test_clamp_scalar_bounds_nan_and_gradient(dt, kw):
    """A NaN bound makes every element NaN (ATen's vectorized minimum/maximum), with a zero
    gradient; 20 elements reach ATen's vector loop, so PyTorch is not following its scalar
    tail here."""
    def run(T):
        x = (T.arange(20.0) - 5).to(getattr(T, dt)).requires_grad_()
        y = T.clamp(x, **kw)
        y.sum().backward()
        return y, x.grad, type(y.grad_fn).__name__
    agree(run)


def test_clamp_nan_bound_on_integers_promotes():
    agree(lambda T: T.clamp(T.arange(5), max=nan))
    agree(lambda T: T.clamp_max(T.arange(3.0), nan))


def test_clamp_zero_dim_tensor_bound_is_not_checked():
    """A 0-d tensor bound takes PyTorch's Tensor overload, which converts without a check."""
    agree(lambda T: T.clamp(T.tensor([1.0, 2.0]), max=T.tensor(1e40, dtype=T.float64)))


def _all_half_pairs():
    xs = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16).view(np.float16)
    rng = np.random.default_rng(0)
    ys = rng.permutation(xs)
    ys[::7] = xs[::7]
    ys[::11] = 0
    ys[::13] = np.float16(np.inf)
    return xs, ys


def test_nextafter_float16_every_value_and_gradient():
    """Every float16 bit pattern stepped towards a random partner, equal inputs, zeros and
    infinities: bitwise PyTorch's results (NaN payloads aside), its node and its gradients."""
    xs, ys = _all_half_pairs()
    got = {}
    for T in (torch, jitgrad):
        a = T.tensor(xs, requires_grad=True)
        b = T.tensor(ys, requires_grad=True)
        y = T.nextafter(a, b)
        y.float().sum().backward()
        got[T.__name__] = (y.detach().numpy().copy(), type(y.grad_fn).__name__,
                           a.grad.numpy().copy(), b.grad.numpy().copy())
    t, j = got["torch"], got["jitgrad"]
    t_nan = np.isnan(t[0])
    np.testing.assert_array_equal(np.isnan(j[0]), t_nan)
    np.testing.assert_array_equal(j[0][~t_nan].view(np.int16), t[0][~t_nan].view(np.int16))
    assert j[1] == t[1] == "NextafterBackward0"
    np.testing.assert_array_equal(j[2], t[2])
    np.testing.assert_array_equal(j[3], t[3])


@pytest.mark.parametrize("code", [
    "T.nextafter(T.tensor([1.0, -1.0, 0.0], dtype=T.float16), T.tensor(2.0))",
    "T.nextafter(T.tensor([1.0], dtype=T.float16), T.tensor([2.0]))",
    "T.nextafter(T.tensor([[1.0], [-0.0]], dtype=T.float16), "
    "T.tensor([0.0, 5.0], dtype=T.float16))",
])
def test_nextafter_float16_promotion_and_broadcasting(code):
    agree(lambda T: eval(code, {"T": T}))


def test_nextafter_inplace_float16():
    def run(T):
        a = T.tensor([1.0, -1.0, 0.0, 65504.0], dtype=T.float16)
        return a.nextafter_(T.tensor([2.0, 0.0, -1.0, inf], dtype=T.float16))
    agree(run)
