"""``F.unfold`` (im2col) and ``F.fold`` (col2im): PyTorch's Im2ColBackward0 / Col2ImBackward0.

Both are the im2col/col2im of ``_conv_arrays`` (the convolutions' own), in PyTorch's
``(N, C * kh * kw, L)`` layout. Each is the other's adjoint, so each backward is the other op
(recorded), and gradients of any order follow.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...ops.composite import ieee_quiet, record
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from . import _conv_arrays as A

__all__ = ["unfold", "fold"]


def _pair(v, what):
    if isinstance(v, (tuple, list)):
        vals = tuple(int(e) for e in v)
    else:
        vals = (int(v), int(v))
    if len(vals) != 2:
        raise RuntimeError(f"It is expected {what} equals to 2, but got size {len(vals)}")
    return vals


def _check_params(kernel, dilation, padding, stride):
    for vals, what, key, ok in ((kernel, "kernel size should be greater than zero", "kernel",
                                 lambda v: v > 0),
                                (dilation, "dilation should be greater than zero", "dilation",
                                 lambda v: v > 0),
                                (padding, "padding should be non-negative", "pad",
                                 lambda v: v >= 0),
                                (stride, "stride should be greater than zero", "stride",
                                 lambda v: v > 0)):
        if not all(ok(v) for v in vals):
            raise RuntimeError(f"{what}, but got {key}_height: {vals[0]} {key}_width: {vals[1]}")


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((s + 2 * p - (d * (k - 1) + 1)) // st + 1 for s, k, d, p, st in
                 zip(size, kernel, dilation, padding, stride))


def _geometry(size, blocks, kernel, dilation, padding, stride):
    return A.Geometry((1,) + tuple(size), (1,) + tuple(blocks), (1,) + kernel, (1,) + stride,
                      (1,) + dilation, (0,) + padding, 1)


def _float_kernel(t, name):
    """ATen's im2col/col2im dispatch: floating types and bool."""
    if not (t.is_floating_point() or t.dtype == D.bool_):
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.scalar_name(t.dtype)}'")


def _compute(fn, a):
    if a.dtype == np.float16:
        return fn(a.astype(np.float32)).astype(np.float16)
    return fn(a)


def _unfold_backward(node, g):
    at = node.ctx.attrs
    return (_col2im(g, at["geo"], at["channels"], at["batched"]),)


def _fold_backward(node, g):
    at = node.ctx.attrs
    return (_im2col(g, at["geo"], at["batched"]),)


@ieee_quiet
def _im2col(x, geo, batched):
    """(N, C, H, W) -> (N, C * K, L) (or without N), one Im2ColBackward0 node."""
    d = x._data if batched else x._data[None]
    d = d.reshape(d.shape[:2] + (1,) + d.shape[2:])
    out = _compute(lambda a: A.unfold(a, geo), d)
    if not batched:
        out = out[0]
    c = x.shape[-3]
    return record("Im2ColBackward0", (x,), out, _unfold_backward,
                  attrs={"geo": geo, "channels": c, "batched": batched})


@ieee_quiet
def _col2im(cols, geo, c, batched):
    """(N, C * K, L) -> (N, C, H, W) (or without N), one Col2ImBackward0 node."""
    d = cols._data if batched else cols._data[None]
    out = _compute(lambda a: A.fold(a, geo, c), d)
    out = out.reshape(out.shape[:2] + out.shape[3:])
    if not batched:
        out = out[0]
    return record("Col2ImBackward0", (cols,), out, _fold_backward,
                  attrs={"geo": geo, "batched": batched})


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) tensor as columns:
    (N, C * kh * kw, L), PyTorch's ``F.unfold``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unfold(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if input.ndim not in (3, 4):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 2)")
    kernel = _pair(kernel_size, "kernel_size")
    dilation = _pair(dilation, "dilation")
    padding = _pair(padding, "padding")
    stride = _pair(stride, "stride")
    _check_params(kernel, dilation, padding, stride)
    _float_kernel(input, "im2col_out_cpu")
    size = tuple(input.shape[-2:])
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the "
                           f"array of sliding blocks as {blocks}, but its components must be "
                           "at least one.")
    geo = _geometry(size, blocks, kernel, dilation, padding, stride)
    return _im2col(input, geo, input.ndim == 4)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of ``unfold``: (N, C * kh * kw, L) columns summed into (N, C, H, W),
    PyTorch's ``F.fold``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fold(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    output_size = _pair(output_size, "output_size")
    kernel = _pair(kernel_size, "kernel_size")
    dilation = _pair(dilation, "dilation")
    padding = _pair(padding, "padding")
    stride = _pair(stride, "stride")
    _check_params(kernel, dilation, padding, stride)
    shape = tuple(input.shape)
    if input.ndim not in (2, 3) or any(s == 0 for s in shape[-2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    taps = kernel[0] * kernel[1]
    if shape[-2] % taps:
        raise RuntimeError(f"Expected size of input's dimension {input.ndim - 2} to be "
                           "divisible by the product of kernel_size, but got "
                           f"input.size({input.ndim - 2})={shape[-2]} and "
                           f"kernel_size={kernel}.")
    blocks = _blocks(output_size, kernel, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, calculated "
                           f"shape of the array of sliding blocks as {blocks}, but its "
                           "components must be at least one.")
    if shape[-1] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           f"size of input's dimension {input.ndim - 1} to match the calculated "
                           f"number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size({input.ndim - 1})="
                           f"{shape[-1]}.")
    _float_kernel(input, "col2im_out_cpu")
    geo = _geometry(output_size, blocks, kernel, dilation, padding, stride)
    return _col2im(input, geo, shape[-2] // taps, input.ndim == 3)
