"""Resampling: ``interpolate`` (every mode PyTorch has but lanczos/antialias), the legacy
``upsample*`` names, ``pixel_shuffle`` / ``pixel_unshuffle``.

``interpolate``'s argument handling is PyTorch's Python, ported. Credit: it follows
``torch/nn/functional.py`` (https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook,
Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause license; its terms apply to the
ported parts.

The modes are ``ops/pool.resample`` over per-dim :class:`Taps` built the way ATen's CPU
kernels build their index/weight tables (``UpSample.h``: ``area_pixel_compute_scale``,
``area_pixel_compute_source_index``, ``guard_index_and_lambda`` with its ``floorf``, the cubic
coefficients with A = -0.75), in the input's opmath type, so indices and weights agree with
PyTorch's. ``area`` is ``adaptive_avg_pool``, as in PyTorch.
"""
from __future__ import annotations

import functools
import math
import numbers
import warnings

import numpy as np

from ... import _dtype as D
from ...ops import pool as P
from ...ops.composite import record_composition
from ...tensor import Tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_NODE = {"nearest": "UpsampleNearest{}D", "nearest-exact": "UpsampleNearestExact{}D",
         "linear": "UpsampleLinear{}D", "bilinear": "UpsampleBilinear{}D",
         "bicubic": "UpsampleBicubic{}D", "trilinear": "UpsampleTrilinear{}D"}
_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _opmath(dtype) -> np.dtype:
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _scale(n_in, n_out, align_corners, scale, T):
    """ATen's ``area_pixel_compute_scale`` in the opmath type ``T``."""
    if align_corners:
        return T(n_in - 1) / T(n_out - 1) if n_out > 1 else T(0)
    if scale is not None and scale > 0:
        return T(1.0 / scale)
    return T(n_in) / T(n_out)


def _source(s, i, align_corners, cubic, T):
    """``area_pixel_compute_source_index`` for output indices ``i`` (an array)."""
    if align_corners:
        return s * i
    src = s * (i + T(0.5)) - T(0.5)
    return src if cubic else np.where(src < 0, T(0), src).astype(T)


def _floorf(v):
    """C's ``floorf``: the argument is rounded to float32 first (ATen calls it on doubles)."""
    return np.floor(np.asarray(v, dtype=np.float32)).astype(np.int64)


def _guard(real, n_in, T):
    idx = np.minimum(_floorf(real), n_in - 1)
    lam = np.minimum(np.maximum(real - idx.astype(T), T(0)), T(1)).astype(T)
    return idx, lam


def _cubic1(x, a):
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic2(x, a):
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


@functools.lru_cache(maxsize=512)
def _interp_taps(mode, n_in, n_out, scale, align_corners, opmath, shortcut=False) -> P.Taps:
    """One dim's taps for ``mode``. ``shortcut`` (nearest only): ATen's ``nearest_idx``,
    which copies where the output is as long as the input and reads ``o >> 1`` where it is
    exactly twice as long, whatever scale_factor gave that length (1.03, 2.1 ...)."""
    T = np.dtype(opmath).type
    i = np.arange(n_out).astype(T)
    s = _scale(n_in, n_out, align_corners, scale, T)
    if mode == "nearest" and shortcut and n_out in (n_in, 2 * n_in):
        idx = np.arange(n_out) if n_out == n_in else np.arange(n_out) >> 1
        return P.Taps(idx[:, None], np.ones((n_out, 1)), np.ones(n_out), n_in)
    if mode == "nearest":
        idx = np.minimum(_floorf(s * i), n_in - 1)
        return P.Taps(idx[:, None], np.ones((n_out, 1)), np.ones(n_out), n_in)
    if mode == "nearest-exact":
        real = _source(s, i, False, False, T)
        idx = np.minimum(_floorf(real + T(0.5)), n_in - 1)
        return P.Taps(idx[:, None], np.ones((n_out, 1)), np.ones(n_out), n_in)
    if mode == "linear":
        if n_in == n_out:
            idx0 = np.arange(n_out)
            idx1, lam1 = idx0, np.zeros(n_out, T)
        else:
            idx0, lam1 = _guard(_source(s, i, align_corners, False, T), n_in, T)
            idx1 = idx0 + (idx0 < n_in - 1)
        lam0 = (T(1) - lam1).astype(T)
        index = np.stack([idx0, idx1], 1)
        weight = np.stack([lam0, lam1], 1).astype(np.float64)
        return P.Taps(index, weight, np.ones(n_out), n_in)
    # cubic
    idx, t = _guard(_source(s, i, align_corners, True, T), n_in, T)
    a = T(-0.75)
    one = T(1)
    coeffs = [_cubic2(t + one, a), _cubic1(t, a), _cubic1(one - t, a), _cubic2(one - t + one, a)]
    index = np.stack([np.clip(idx - 1 + j, 0, n_in - 1) for j in range(4)], 1)
    weight = np.stack([c.astype(T) for c in coeffs], 1).astype(np.float64)
    return P.Taps(index, weight, np.ones(n_out), n_in)


def _size_error(in_sp, out_sp):
    names = ("D", "H", "W")[3 - len(in_sp):]
    fmt = ", ".join

    def desc(v):
        return fmt(f"{n}: {x}" for n, x in zip(names, v))
    sep = " and" if len(in_sp) == 1 else ""
    return RuntimeError("Input and output sizes should be greater than 0, but got input "
                        f"({desc(in_sp)}){sep} output ({desc(out_sp)})")


def _resample_mode(input, mode, out_sp, scales, align_corners):
    nsp = input.ndim - 2
    in_sp = tuple(input.shape[2:])
    if min(in_sp) <= 0 or min(out_sp) <= 0:
        raise _size_error(in_sp, out_sp)
    name = _NODE[mode].format(nsp)
    if not input.dtype.is_floating_point:
        if mode.startswith("nearest") and input.dtype == D.uint8:
            out = _resample_mode(input.detach().to(D.float32), mode, out_sp, scales,
                                 align_corners)
            return out.to(D.uint8)
        kernel = "compute_indices_weights_" + ("nearest" if mode.startswith("nearest") else
                                               "linear" if "linear" in mode else "cubic")
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")
    op = str(_opmath(input._data.dtype))
    kind = mode if mode.startswith("nearest") else ("cubic" if mode == "bicubic" else "linear")

    def taps(shortcut):
        return [_interp_taps(kind, n, o, None if scales is None else scales[d],
                             bool(align_corners), op, shortcut)
                for d, (n, o) in enumerate(zip(in_sp, out_sp))]
    # PyTorch's CPU nearest kernels: 2-D uses ``nearest_idx``'s same/double-size shortcut
    # forward and backward; 1-D and 3-D use the scale forward but the shortcut backward (so
    # there the gradient is not the forward's transpose: kept, for PyTorch's numbers).
    vjp_taps = taps(True) if kind == "nearest" and nsp != 2 else None
    return P.resample(input, taps(kind == "nearest" and nsp == 2), f"{name}Backward0",
                      f"{name}BackwardBackward0", vjp_taps=vjp_taps)


def _is_integer(x):
    return isinstance(x, numbers.Integral) or (isinstance(x, Tensor) and not
                                               x.dtype.is_floating_point)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, "
                                "int] or Tuple[int, int, int], but got size with types "
                                f"{[type(x) for x in size]}")
            output_size = [int(x) for x in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [int(math.floor(float(input.shape[i + 2]) * scale_factors[i]))
                       for i in range(dim)]
        scale_factors = None
    if antialias:
        raise NotImplementedError("jitgrad: interpolate(antialias=True) is not implemented")
    if input.dim() not in (3, 4, 5) or mode not in _MODES.split(" | ") or mode == "lanczos":
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: {_MODES} (got {mode})")
    if output_size is None:  # ATen's compute_output_size: truncation of a double product
        output_size = [int(float(input.shape[i + 2]) * scale_factors[i]) for i in range(dim)]
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1](
            input, output_size[0] if dim == 1 else tuple(output_size))
    want = _RANK.get(mode)
    if want is not None and want != input.dim():
        if mode == "bicubic":  # PyTorch has no dedicated message for it
            raise NotImplementedError(
                f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                f"for the modes: {_MODES} (got {mode})")
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want}D "
                                  "input")
    return _resample_mode(input, mode, tuple(output_size), scale_factors, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- pixel shuffle


def pixel_shuffle(input, upscale_factor):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``: a reshape/permute/reshape shown as one
    ``PixelShuffleBackward0`` node (its backward is the inverse permutation)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c, h, w = input.shape[-3:]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           "divisible by the square of upscale_factor, but input.size(-3)="
                           f"{c} is not divisible by {r * r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    oc = c // (r * r)

    def build(x):
        y = x.reshape(lead + (oc, r, r, h, w))
        y = y.permute(tuple(range(n)) + tuple(n + a for a in (0, 3, 1, 4, 2)))
        return y.reshape(lead + (oc, h * r, w * r))
    return record_composition("PixelShuffleBackward0", (input,), build)


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)`` (``PixelUnshuffleBackward0``)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    c, h, w = input.shape[-3:]
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    oh, ow = h // r, w // r

    def build(x):
        y = x.reshape(lead + (c, oh, r, ow, r))
        y = y.permute(tuple(range(n)) + tuple(n + a for a in (0, 2, 4, 1, 3)))
        return y.reshape(lead + (c * r * r, oh, ow))
    return record_composition("PixelUnshuffleBackward0", (input,), build)
