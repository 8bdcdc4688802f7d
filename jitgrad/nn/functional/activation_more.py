"""The in-place functional spellings (``elu_``, ``leaky_relu_``, ``hardtanh_``), randomized
leaky ReLU (``rrelu`` / ``rrelu_``), ``gumbel_softmax``, ``channel_shuffle`` /
``native_channel_shuffle`` and the ``pdist`` alias. The random ones draw from the CPU
generator exactly as PyTorch's CPU kernels do, so seeded runs give PyTorch's samples."""
from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as D
from ...ops import functional as _F
from ...ops.composite import record
from ...ops.distances import pdist
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from .activation import _float_only, _inplace_named, _named, elu, leaky_relu

__all__ = ["elu_", "leaky_relu_", "hardtanh_", "rrelu", "rrelu_", "gumbel_softmax",
           "channel_shuffle", "native_channel_shuffle", "pdist"]


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """ATen's ``hardtanh_``: no ``min_val <= max_val`` check (that one is in the Python
    ``hardtanh``); with min > max every element becomes max_val, as ``clamp``."""
    from .activation import hardtanh
    if min_val <= max_val:
        return hardtanh(input, min_val, max_val, inplace=True)
    if not input.is_floating_point():
        input._data[...] = np.asarray(max_val).astype(input._data.dtype)
        input._vc.value += 1
        return input
    return _inplace_named(input, "HardtanhBackward0", lambda t: _F.clamp(t, min_val, max_val))


# ----------------------------------------------------------------------------- rrelu

def _rrelu_noise(input, lower, upper):
    """ATen's ``_rrelu_with_noise_train`` (CPU): walking the elements in C order, each one
    ``<= 0`` draws ``uniform_real_distribution<double>(lower, upper)`` (53 bits of one
    ``random64()``: two engine outputs, high word first; ``x * (to - from) + from`` without an
    FMA: Activation.cpp is not a vectorized kernel file) and its slope is that draw in the
    op-math type; every other element keeps slope 1 (NaN included). The bounds pass through
    the op-math type first (float32's 1/3 is not float64's)."""
    from ...random import default_generator
    opmath = np.float64 if input.dtype is D.float64 else np.float32
    lo, hi = float(opmath(lower)), float(opmath(upper))
    neg = (input.detach() <= 0).cpu().numpy().reshape(-1)
    n = int(neg.sum())
    raw = default_generator().random_raw(2 * n).astype(np.uint64)
    bits = ((raw[0::2] & np.uint64(0x1FFFFF)) << np.uint64(32)) | raw[1::2]
    draws = bits.astype(np.float64) * 2.0 ** -53 * (hi - lo) + lo
    noise = np.ones(neg.size, dtype=opmath)
    noise[neg] = draws.astype(opmath)
    return Tensor._make(noise.reshape(tuple(input.shape))).to(input.device)


def _rrelu(input, lower, upper, training, inplace):
    if not input.is_floating_point():
        _float_only(input, "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu")
    if not float(lower) <= float(upper):
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if training:
        noise = _rrelu_noise(input, lower, upper)
        if input.dtype in (D.float32, D.float64):
            def build(t):
                return t * noise
        else:  # half types: the product in float (op math), then rounded once
            def build(t):
                return (t.to(D.float32) * noise).to(t.dtype)
    else:  # eval: leaky_relu with the mean slope, still shown as the rrelu node
        def build(t):
            return _F.leaky_relu(t, (lower + upper) / 2)
    if inplace:
        return _inplace_named(input, "RreluWithNoiseBackward1", build)
    return _named("RreluWithNoiseBackward0", input, build)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each non-positive element gets a slope drawn from
    U(lower, upper) (the gradient is that slope), in eval the mean slope
    (RreluWithNoiseBackward0; RreluWithNoiseBackward1 in place)."""
    return _rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _rrelu(input, lower, upper, training, True)


# ----------------------------------------------------------------------------- gumbel softmax

def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """PyTorch's Python definition, op for op: Gumbel noise ``-log(Exp(1))`` drawn with
    ``exponential_`` (so seeded runs match), ``softmax((logits + g) / tau)``; ``hard`` returns
    the one-hot argmax with the soft sample's gradient (straight-through)."""
    from ...ops.factories import empty, zeros_like
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # legacy_contiguous_format: the noise is drawn in C order whatever the logits' strides
    noise = empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -noise.exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# ----------------------------------------------------------------------------- channel shuffle

def _shuffle_checks(input, groups):
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError("channel_shuffle(): argument 'groups' (position 2) must be int, not "
                        f"{parser_type_name(groups)}")
    if input.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes [{', '.join(str(s) for s in input.shape)}]")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")


def _shuffle(t, groups):
    """ATen's math: view (N, g, C/g, *), swap the two channel dims, back to the input shape."""
    shape = tuple(t.shape)
    split = (shape[0], groups, shape[1] // groups) + shape[2:]
    return t.reshape(split).transpose(1, 2).contiguous().reshape(shape)


def channel_shuffle(input, groups):
    """Rearrange the channels (N, g * k, ...) -> groups interleaved (ChannelShuffleBackward0)."""
    _shuffle_checks(input, groups)
    return _named("ChannelShuffleBackward0", input, lambda t: _shuffle(t, groups))


def _native_shuffle_backward(node, g):
    raise RuntimeError("derivative for aten::native_channel_shuffle is not implemented")


def native_channel_shuffle(input, groups):
    """The same values; PyTorch defines no derivative for it (a NotImplemented node whose
    backward raises)."""
    _shuffle_checks(input, groups)
    from ...autograd import grad_mode
    with grad_mode.no_grad():
        out = _shuffle(input, groups)
    return record("NotImplemented", (input,), out._data, _native_shuffle_backward)
