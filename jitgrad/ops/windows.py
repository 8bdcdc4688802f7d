"""Window factories: hann/hamming/blackman/bartlett/kaiser_window, written as ATen writes them
(TensorFactories.cpp): an ``arange`` in the requested dtype and device, then the same sequence
of scalar multiplies/adds and cos (kaiser: UnaryOpsKernel's per-element
``i0(beta * sqrt(|1 - ((n - alpha) / alpha)^2|)) / i0(beta)``), so the values round as
PyTorch's in float32 and float64, on either device. ``periodic`` computes a window one longer
and drops its last point."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._size import check_device
from ..autograd import grad_mode
from .factory_args import _factory_dtype
from .parser_errors import parser_type_name

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _options(dt, dev):
    """How ATen prints the TensorOptions in window_function_checks' error."""
    name = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "float16": "c10::Half"}.get(dt.name, dt.name)
    return (f"TensorOptions(dtype={name}, device={dev}, layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")


def _window(name, window_length, periodic, dtype, device, requires_grad, body):
    """window_function_checks, the 0/1-length cases, the periodic extension, then
    ``body(arange(n), n)``; the result is a leaf (requires_grad as asked)."""
    from .factories import arange, empty, ones
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{parser_type_name(window_length)}")
    if not isinstance(periodic, bool):
        raise TypeError(f"{name}(): argument 'periodic' (position 2) must be bool, not "
                        f"{parser_type_name(periodic)}")
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_options(dt, dev)}")
    n = int(window_length)
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={n}")
    if n <= 1:
        maker = empty if n == 0 else ones
        return maker(n, dtype=dt, device=device, requires_grad=requires_grad)
    if periodic:
        n += 1
    with grad_mode.no_grad():
        w = body(arange(n, dtype=dt, device=device), n)
        if periodic:
            w = w[: n - 1]
        w = w.contiguous() if w.is_contiguous() else w.clone()
    w = w.detach()
    if requires_grad:
        w.requires_grad_(True)
    return w


def _k(x, v):
    """A window's scalar factor: ATen's window functions on float16 multiply by factors rounded
    to half (measured: bartlett_window(5, dtype=float16) differs in one value otherwise), where
    Python's ``half_tensor * 0.4`` reads 0.4 as float (ops/elementwise_call's half_scalar
    rule); a 0-d half tensor gives the rounded factor."""
    if x.dtype is not D.float16:
        return v
    from .factories import full
    return full((), v, dtype=x.dtype, device=x.device)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """``alpha - beta * cos(2 pi n / (N - 1))``."""
    return _hamming("hamming_window", window_length, periodic, alpha, beta, dtype, device,
                    requires_grad)


def _hamming(name, window_length, periodic, alpha, beta, dtype, device, requires_grad):
    def body(x, n):
        return (x * _k(x, math.pi * 2.0 / float(n - 1))).cos() * _k(x, -float(beta)) + \
            _k(x, float(alpha))
    return _window(name, window_length, periodic, dtype, device, requires_grad, body)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """hamming_window with alpha = beta = 0.5 (ATen calls it so)."""
    return _hamming("hann_window", window_length, periodic, 0.5, 0.5, dtype, device,
                    requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """``0.08 cos(4 pi n / (N-1)) - 0.5 cos(2 pi n / (N-1)) + 0.42``, in ATen's order."""
    def body(x, n):
        w = x * _k(x, math.pi / float(n - 1))
        return (w * 4).cos() * _k(x, 0.08) - (w * 2).cos() * 0.5 + _k(x, 0.42)
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   body)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """``2n / (N-1)`` rising, ``2 - 2n / (N-1)`` past the middle."""
    def body(x, n):
        from .shape_join import cat
        w = x * _k(x, 2.0 / float(n - 1))
        half = ((n - 1) >> 1) + 1
        return cat([w[:half], w[half:] * -1 + 2])
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   body)


def _one_minus_square(t):
    """``1 - t*t`` rounded once, as ATen's compiled kernel gets it (the compiler contracts
    ``1 - pow(t, 2)`` into one fused multiply-add): t*t split exactly into p + e (Dekker), then
    1 - p with its rounding error (TwoSum), the two errors added back last."""
    split = 4097.0 if t.dtype is D.float32 else 134217729.0  # 2^12 + 1, 2^27 + 1
    p = t * t
    c = t * split
    hi = c - (c - t)
    lo = t - hi
    e = ((hi * hi - p) + hi * lo * 2) + lo * lo
    s = 1 - p
    bb = s - 1
    err = (1 - (s - bb)) + (-p - bb)
    return s + (err - e)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """``i0(beta * sqrt(|1 - ((n - alpha) / alpha)^2|)) / i0(beta)``, alpha = (N - 1) / 2, as
    ATen's scalar kernel computes it: in the dtype's opmath type (float for float16), the
    ``1 - t^2`` with one rounding (see _one_minus_square)."""
    def body(x, n):
        from .from_data import scalar_tensor
        half = x.dtype is D.float16
        if half:
            x = x.float()
        alpha = (n - 1) / 2.0
        t = (x - alpha) / alpha
        b = scalar_tensor(float(beta), dtype=x.dtype, device=x.device)
        # ATen's kernel calls std::sqrt (correctly rounded): pow(0.5) is that kernel here, while
        # the sqrt op runs MKL VML on the CPU (the sqrt op's bits, not kaiser_window's)
        w = (b * _one_minus_square(t).abs().pow(0.5)).i0() / b.i0()
        return w.half() if half else w
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   body)
