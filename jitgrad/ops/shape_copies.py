"""Shape ops that always copy: flip/fliplr/flipud, roll, repeat/tile (C-contiguous results,
never views, as in PyTorch)."""
from __future__ import annotations

import numpy as np

from .._storage import shares_memory as _shares
from .composite import record
from .parser_errors import input_type_error, parser_errors
from .shape_args import _NOT_GIVEN, _dup_check, _fmt, _int_list, _wrap, _wrap_nonscalar
from .shape_views import reshape


def _flip_backward(node, g):
    return (flip(g, node.ctx.attrs["dims"]),)


def flip(input, *args, dims=_NOT_GIVEN):
    nd = input._data.ndim
    dims = tuple(_wrap(d, nd, "flip") for d in _int_list(args, "flip", "dims", dims))
    _dup_check(dims)
    if nd == 0:
        dims = ()
    x = input._data
    live = tuple(d for d in dims if x.shape[d] > 1)
    if x.__class__ is not np.ndarray:
        # CUDA: the same reversed (negative-stride) view, materialized by the layout copy
        # kernel; the negative strides only live in this temporary View
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        if not live or not x.size:
            data = x.copy()
        else:
            st, off = list(x.st), x.offset
            for d in live:
                off += (x.shape[d] - 1) * st[d]
                st[d] = -st[d]
            v = B.kernels().View(x.buf, x.shape, st, off)
            data = CudaArray.wrap(B.kernels().layout.contiguous(v))
        return record("FlipBackward0", (input,), data, _flip_backward, attrs={"dims": dims})
    # always a C-contiguous copy, like torch.flip (negative strides never escape)
    data = np.array(np.flip(x, live) if live else x, order="C", copy=True)
    return record("FlipBackward0", (input,), data, _flip_backward, attrs={"dims": dims})


def fliplr(input):
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


def _roll_backward(node, g):
    a = node.ctx.attrs
    return (roll(g, tuple(-s for s in a["shifts"]), a["dims"]),)


@parser_errors
def roll(input, shifts, dims=None):
    """``torch.roll``: NumPy's roll on the CPU; on CUDA one strided copy per rolled piece
    (``layout.copy_into``), no transfer. ``dims=None`` rolls the flattened tensor (one
    RollBackward0 node, as PyTorch)."""
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError, before the shifts'
        x = input._data
    except AttributeError:
        raise input_type_error("roll", (input,), {}) from None
    shifts = _int_list((shifts,), "roll", "shifts", allow_empty=True)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        if x.__class__ is np.ndarray:
            data = np.roll(x, shifts[0])  # flattened in C order, reshaped back: C-contiguous
        else:
            flat = _device_roll(x.reshape(-1), shifts[0], 0)
            data = (flat if flat is not x else x.copy()).reshape(x.shape)
        return record("RollBackward0", (input,), data, _roll_backward,
                      attrs={"shifts": shifts, "dims": None})
    dims = _int_list((dims,), "roll", "dims", allow_empty=True)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    nd = x.ndim
    dims = tuple(_wrap_nonscalar(d, nd, "roll") for d in dims)
    if x.__class__ is np.ndarray:
        data = np.ascontiguousarray(np.roll(x, shifts, dims))
    else:
        data = x
        for s, d in zip(shifts, dims):
            data = _device_roll(data, s, d)
        if data is x:
            data = x.copy()
    return record("RollBackward0", (input,), data, _roll_backward,
                  attrs={"shifts": shifts, "dims": dims})


def _device_roll(x, shift, d):
    """``np.roll(x, shift, d)`` for CUDA storage: two slice copies into a fresh array."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    n = x.shape[d]
    k = shift % n if n else 0
    if k == 0:
        return x
    out = CudaArray.empty(x.shape, x.dtype)
    lead = (slice(None),) * d
    cp = B.kernels().layout.copy_into
    cp(out[lead + (slice(k, None),)].kview(), x[lead + (slice(0, n - k),)].kview())
    cp(out[lead + (slice(0, k),)].kview(), x[lead + (slice(n - k, None),)].kview())
    return out


def _repeat_backward(node, g):
    from .reduce_sums import sum as rsum
    a = node.ctx.attrs
    inter, rdims = a["inter"], a["rdims"]
    if rdims:
        g = rsum(reshape(g, inter), rdims)
    return (reshape(g, a["shape"]),)


def repeat(input, *args, repeats=_NOT_GIVEN):
    """``Tensor.repeat``: one RepeatBackward0 node; the data is the padded input broadcast
    over interleaved unit dims and copied (C-contiguous, never a view)."""
    sizes = _int_list(args, "repeat", "repeats", repeats)
    x = input._data
    nd = x.ndim
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shp = (1,) * (len(sizes) - nd) + tuple(x.shape)
    final = tuple(r * s for r, s in zip(sizes, shp))
    neg = [f for f in final if f < 0]
    if neg:
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg[0]}: "
                           f"{_fmt(final)}")
    inter, target = [], []
    for r, s in zip(sizes, shp):
        inter += [1, s]
        target += [r, s]
    v = x.reshape(tuple(inter))
    if v.__class__ is np.ndarray:
        data = np.broadcast_to(v, tuple(target)).reshape(final)
        data = np.array(data, order="C", copy=True) if _shares(data, x) or \
            not data.flags.c_contiguous else data
    else:
        data = v.broadcast_to(tuple(target)).reshape(final)
        if data.size and (data.buf is x.buf or not data.is_contiguous()):
            data = data.copy()
    return record("RepeatBackward0", (input,), data, _repeat_backward,
                  attrs={"inter": tuple(target), "rdims": tuple(range(0, 2 * len(sizes), 2)),
                         "shape": tuple(x.shape)})


def tile(input, *args, dims=_NOT_GIVEN):
    dims = _int_list(args, "tile", "dims", dims)
    if len(dims) < input._data.ndim:
        dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)
