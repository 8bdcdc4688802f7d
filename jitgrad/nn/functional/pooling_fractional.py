"""``fractional_max_pool2d/3d`` (and their ``_with_indices`` forms): ATen's CPU kernels
(``FractionalMaxPool2d.cpp``, ``FractionalMaxPool3d.cpp``, ``FractionalMaxPooling.h``) with
PyTorch's Python wrappers, checks and messages.

Each (sample, channel) plane has its own windows: per spatial dim, window ``o`` starts at
``int((o + u) * alpha) - int(u * alpha)`` (the last at ``input - kernel``), ``u`` the plane's
random sample and ``alpha = (input - kernel) / (output - 1)``, all in the input's dtype as
ATen's ``generate_intervals<scalar_t>`` computes them (float16 rounds after every op, as
``c10::Half`` does). Without ``_random_samples`` the samples are drawn as PyTorch draws them,
``torch.rand(n_batch, C, nsp)`` in the input's dtype, so seeded results are PyTorch's.

The windows differ per plane, so the pool is written in tensor ops on either device: the flat
input index of every window element, one gather, then ATen's max rule (a value replaces the
running max when greater or NaN: the first maximum wins, or the last NaN). One node records it
(``FractionalMaxPool2DBackward0`` / ``3D``), saving the input as PyTorch does; its backward adds
the gradient at the chosen indices (``ops.pool.scatter_planes``, whose own backward gathers:
``FractionalMaxPool2DBackwardBackward0``).

Credit: the interval rule, checks and wrappers follow PyTorch (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

import numbers

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops import pool as P
from ...ops.basic import arange, full, rand
from ...ops.composite import record
from ...ops.shape_join import cat

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]

# ATen's meta checks differ between the two ops (message prefix, strict or not, order)
_META = {
    2: {"name": "fractional_max_pool2d", "prefix": "fractional_max_pool2d(): ",
        "words": "Ints", "dims": ("H", "W"), "order": ("height", "width"), "strict": False},
    3: {"name": "fractional_max_pool3d", "prefix": "fractional_max_pool3d_out(): ",
        "words": "three Ints", "dims": ("T", "H", "W"), "order": ("time", "width", "height"),
        "strict": True},
}
_DIM_WORD = {"T": "time", "H": "height", "W": "width"}
# which column of a plane's samples drives which spatial dim (2-D: W then H; 3-D: T, H, W)
_SAMPLE_COLUMN = {2: (1, 0), 3: (0, 1, 2)}


def _ntuple(v, n):
    """torch.nn.modules.utils._pair/_triple: an iterable stays as it is."""
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


def _int_list(v, n):
    """An ``int[n]`` argument as ATen's parser takes it: an int repeats, a sequence stays."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return [int(v)] * n
    return [int(e) for e in v]


def _with_indices(nsp, input, kernel_size, output_size, output_ratio, _random_samples):
    name = _META[nsp]["name"]
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nsp == 2 and len(output_ratio) > 2:  # (a float here raises len()'s TypeError, too)
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single "
                             "Int or tuple of Ints.")
        ratio = _ntuple(output_ratio, nsp)
        output_size = [int(input.size(d - nsp) * ratio[d]) for d in range(nsp)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == nsp + 1 else input.size(0)
        _random_samples = rand(n_batch, input.size(-nsp - 1), nsp, dtype=input.dtype,
                               device=input.device)
    return _fractional_max_pool(nsp, input, kernel_size, output_size, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _with_indices(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _with_indices(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                  output_ratio, return_indices, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                  output_ratio, return_indices, _random_samples)
    return (out, idx) if return_indices else out


# ----------------------------------------------------------------------------- the ATen op

def _check(nsp, input, pool, out, samples):
    """ATen's meta function, then fractional_max_pool_check_shape, then its dtype dispatch."""
    meta = _META[nsp]
    name, prefix = meta["name"], meta["prefix"]
    if len(pool) != nsp:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of "
                           f"{meta['words']}")
    if len(out) != nsp:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of "
                           f"{meta['words']}")
    shape = list(input.shape)
    if len(shape) not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{prefix}Expected {nsp + 1}D or {nsp + 2}D tensor, but got: {shape}")
    for i in range(1, len(shape)):
        if shape[i] <= 0:
            raise RuntimeError(f"{prefix}Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{shape} with dimension {i} being empty.")
    sizes = dict(zip(meta["dims"], shape[-nsp:]))
    pools = dict(zip(meta["dims"], pool))
    outs = dict(zip(meta["dims"], out))
    for word in meta["order"]:
        d = next(k for k, v in _DIM_WORD.items() if v == word)
        fits = outs[d] + pools[d] - 1
        if (fits >= sizes[d]) if meta["strict"] else (fits > sizes[d]):
            raise RuntimeError(f"{prefix}pool {word} {pools[d]} too large relative to input "
                               f"{word} {sizes[d]}")
    full_out = shape[:-nsp] + list(out)
    if any(s < 0 for s in full_out):
        neg = next(s for s in full_out if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {full_out}")
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch, channels = (1, shape[0]) if len(shape) == nsp + 1 else (shape[0], shape[1])
    n, c, d = samples.shape
    if n < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if c != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if d != nsp:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nsp}; got {d}.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_out_frame" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _intervals(u, n_in, n_out, k):
    """``generate_intervals<scalar_t>`` for every plane at once: ``u`` is the planes' samples
    ``(B, C)``; returns the window starts ``(B, C, n_out)`` (int64)."""
    last = full(tuple(u.shape) + (1,), n_in - k, dtype=D.int64, device=u.device)
    if n_out <= 1:
        return last[..., :n_out]
    np_dt = u.dtype.np
    # alpha as scalar_t: a float16 quotient rounds to half, as c10::Half's operator/ does
    alpha = float(np_dt.type(n_in - k) / np_dt.type(n_out - 1))
    i = arange(n_out - 1, dtype=u.dtype, device=u.device)
    starts = ((i + u.unsqueeze(-1)) * alpha).to(D.int64) - (u * alpha).to(D.int64).unsqueeze(-1)
    return cat([starts, last], -1)


def _fractional_max_pool(nsp, input, kernel_size, output_size, samples):
    pool = _int_list(kernel_size, nsp)
    out = _int_list(output_size, nsp)
    _check(nsp, input, pool, out, samples)
    node = f"FractionalMaxPool{nsp}DBackward0"
    back = f"FractionalMaxPool{nsp}DBackwardBackward0"
    unbatched = input.dim() == nsp + 1
    x = input.unsqueeze(0) if unbatched else input
    batch = x.shape[0]
    in_sp = tuple(x.shape[2:])
    with grad_mode.no_grad():
        vals, idx = _pool_planes(x.detach(), samples[:batch], nsp, in_sp, pool, out)
    if unbatched:
        vals, idx = vals.squeeze(0), idx.squeeze(0)
    idx = idx.contiguous()
    result = record(node, (input, samples), vals.contiguous()._data, _backward,
                    save=(("self", input),),
                    attrs={"idx": idx._data, "in_shape": tuple(input.shape), "nsp": nsp,
                           "back": back})
    return result, idx


def _pool_planes(x, samples, nsp, in_sp, pool, out):
    """Values and flat per-plane indices ``(B, C, *out)`` of the pool of ``x`` ``(B, C,
    *in_sp)``."""
    batch, channels = x.shape[0], x.shape[1]
    plane = int(np.prod(in_sp))
    strides = [int(np.prod(in_sp[d + 1:])) for d in range(nsp)]
    # the flat index of window element (k_1..k_n) of output (o_1..o_n), laid out as
    # (B, C, o_1..o_n, k_1..k_n): the kernel's loop order, so the first max is ATen's
    flat = None
    for d in range(nsp):
        starts = _intervals(samples[:, :, _SAMPLE_COLUMN[nsp][d]], in_sp[d], out[d], pool[d])
        ks = arange(max(pool[d], 0), dtype=D.int64, device=x.device)
        shape_o = [batch, channels] + [1] * (2 * nsp)
        shape_o[2 + d] = out[d]
        shape_k = [1, 1] + [1] * (2 * nsp)
        shape_k[2 + nsp + d] = max(pool[d], 0)
        term = (starts.reshape(shape_o) + ks.reshape(shape_k)) * strides[d]
        flat = term if flat is None else flat + term
    window = int(np.prod([max(k, 0) for k in pool]))
    out_shape = (batch, channels) + tuple(out)
    if window == 0 or 0 in out_shape:
        # no window element: ATen's initial -inf, at the window's first position
        start = _window_starts(samples, nsp, in_sp, pool, out, strides, batch, channels)
        return full(out_shape, float("-inf"), dtype=x.dtype, device=x.device), start
    flat = flat.reshape(out_shape + (window,))
    vals = x.reshape(batch, channels, plane).gather(
        2, flat.reshape(batch, channels, -1)).reshape(out_shape + (window,))
    # ATen's rule: the first maximum, unless the window holds a NaN: then the last NaN
    first_max = (vals == vals.amax(-1, keepdim=True)).to(D.int64).argmax(-1, keepdim=True)
    is_nan = vals != vals
    rank = arange(1, window + 1, dtype=D.int64, device=x.device)
    last_nan = (is_nan.to(D.int64) * rank).argmax(-1, keepdim=True)
    pick = last_nan.where(is_nan.any(-1, keepdim=True), first_max)
    return vals.gather(-1, pick).squeeze(-1), flat.gather(-1, pick).squeeze(-1)


def _window_starts(samples, nsp, in_sp, pool, out, strides, batch, channels):
    """The flat index of every window's first position (kernel sizes <= 0: no elements)."""
    flat = None
    for d in range(nsp):
        starts = _intervals(samples[:, :, _SAMPLE_COLUMN[nsp][d]], in_sp[d], out[d], pool[d])
        shape_o = [batch, channels] + [1] * nsp
        shape_o[2 + d] = out[d]
        term = starts.reshape(shape_o) * strides[d]
        flat = term if flat is None else flat + term
    return flat


def _backward(node, g):
    if node.ctx._saved:
        node.saved("self")  # PyTorch's version check on the saved input
    a = node.ctx.attrs
    return (P.scatter_planes(g, a["idx"], a["in_shape"], a["nsp"], a["back"],
                             pooled=node.saved("self")), None)

