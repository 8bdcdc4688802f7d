"""torch.signal.windows' functions, ported op for op from PyTorch 2.13 (torch/signal/windows/
windows.py): each is a ``linspace`` (with the factory's requires_grad, so the window carries
the grad_fn PyTorch's does) followed by exp/sin/cos/i0 of it. The linspace is ATen's CPU
kernel's rounding (ops/histogram.aten_linspace), so bartlett and kaiser are PyTorch's bit for
bit; the others also go through jitgrad's exp/sin/cos, which can round an ulp away from
PyTorch's SLEEF ones."""
from __future__ import annotations

from collections.abc import Iterable
from math import pi, sqrt

from ... import _dtype as D
from ...ops.histogram import aten_linspace
from ...tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    from ... import strided
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (D.float32, D.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _dtype(dtype):
    from ... import get_default_dtype
    return get_default_dtype() if dtype is None else dtype


def _linspace(start, end, M, dtype, device, requires_grad):
    from ...ops.from_data import tensor
    if isinstance(start, Tensor):
        start = start.item()
    if isinstance(end, Tensor):
        end = end.item()
    return tensor(aten_linspace(float(start), float(end), M, dtype.np), device=device,
                  requires_grad=requires_grad)


def _empty(M, dtype, device, requires_grad):
    from ...ops.factories import empty, ones
    return (empty if M == 0 else ones)((M,), dtype=dtype, device=device,
                                       requires_grad=requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    dtype = _dtype(dtype)
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _linspace(-center * constant, (-center + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return (-k.abs()).exp()


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    start = 0.5
    constant = pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return k.sin()


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * sqrt(2))
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    from ...ops.from_data import tensor
    from ...ops.functional import minimum
    dtype = _dtype(dtype)
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    beta = tensor(beta, dtype=dtype, device=device)  # as PyTorch: no NaN from a double beta
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = minimum(beta, start + (M - 1) * constant)
    k = _linspace(start, end, M, dtype, device, requires_grad)
    return (beta * beta - k.pow(2)).sqrt().i0() / beta.i0()


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _linspace(start, start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - k.abs()


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    from ...ops.factories import arange
    from ...ops.from_data import tensor
    dtype = _dtype(dtype)
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                 requires_grad=requires_grad)
    i = arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
               requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
