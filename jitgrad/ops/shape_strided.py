"""Strided views whose gradient scatters back: diagonal and unfold (windows), with their
differentiable adjoints (DiagonalBackwardBackward0, UnfoldBackwardBackward0)."""
from __future__ import annotations

import numpy as np

from .._storage import as_strided as _strided
from .._storage import elem_strides as _elem_strides
from ..tensor import Tensor
from .composite import record
from .shape_args import _int, _wrap

# ----------------------------------------------------------------------------- diagonal


def _diag_geometry(shape, st, offset, d1, d2):
    """(shape, element strides, storage offset) of ``diagonal(offset, d1, d2)`` of a tensor with
    ``shape``/``st``: PyTorch's as_strided formula (dims d1, d2 removed, the diagonal last)."""
    if offset >= 0:
        n = max(min(shape[d1], shape[d2] - offset), 0)
        off = offset * st[d2]
    else:
        n = max(min(shape[d1] + offset, shape[d2]), 0)
        off = -offset * st[d1]
    if n == 0:
        off = 0
    keep = [i for i in range(len(shape)) if i not in (d1, d2)]
    return (tuple(shape[i] for i in keep) + (n,), tuple(st[i] for i in keep) + (st[d1] + st[d2],),
            off)


def _diagonal_args(nd, offset, dim1, dim2):
    offset = _int(offset, "diagonal", "offset")
    d1, d2 = _wrap(dim1, nd, "diagonal"), _wrap(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return offset, d1, d2


def _diagonal_backward(node, g):
    a = node.ctx.attrs
    return (_diagonal_scatter(g, a["shape"], a["offset"], a["d1"], a["d2"]),)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """``torch.diagonal``: a strided view (shares storage and the version counter); its VJP
    writes the gradient into the diagonal of zeros (DiagonalBackwardBackward0, itself
    differentiable)."""
    x = input._data
    offset, d1, d2 = _diagonal_args(x.ndim, offset, dim1, dim2)
    shape, st, off = _diag_geometry(x.shape, _elem_strides(x), offset, d1, d2)
    out = record("DiagonalBackward0", (input,), _strided(x, shape, st, off),
                 _diagonal_backward, view_of=input,
                 attrs={"shape": tuple(x.shape), "offset": offset, "d1": d1, "d2": d2},
                 view_fn=lambda b: diagonal(b, offset, d1, d2))
    if not out._data.size and out._data.__class__ is np.ndarray:
        # an empty diagonal: PyTorch's strides (the input's, summed) and offset (_layout)
        from .._layout import layout, record_layout
        in_st, in_off = layout(input)
        _, st, off = _diag_geometry(x.shape, in_st, offset, d1, d2)
        record_layout(out, st, in_off + off)
    return out


def _diagonal_scatter_backward(node, gg):
    a = node.ctx.attrs
    return (diagonal(gg, a["offset"], a["d1"], a["d2"]),)


def _diagonal_scatter(g, shape, offset, d1, d2):
    """Zeros of ``shape`` with ``g`` written on the (offset, d1, d2) diagonal."""
    from .basic import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)._data
    dshape, st, off = _diag_geometry(shape, _elem_strides(out), offset, d1, d2)
    _write(_strided(out, dshape, st, off), g._data)
    return record("DiagonalBackwardBackward0", (g,), out, _diagonal_scatter_backward,
                  attrs={"offset": offset, "d1": d1, "d2": d2})


def _write(dst, src, add=False):
    """``dst[...] = src`` (or ``+=``) into a strided view of fresh storage, CPU or CUDA."""
    if not dst.size:
        return
    if dst.__class__ is np.ndarray:
        if add:
            dst += src
        else:
            dst[...] = src
        return
    from ..backends import cuda as B
    if add:
        from . import functional as F
        src = F.add(Tensor._make(dst), Tensor._make(src))._data
    B.kernels().layout.copy_into(dst.kview(), src.kview())


# ----------------------------------------------------------------------------- unfold


def _unfold_args(shape, dimension, size, step):
    nd = len(shape)
    d = _wrap(dimension, nd, "unfold")
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    n = shape[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return d, size, step, n


def _unfold_backward(node, g):
    a = node.ctx.attrs
    return (_unfold_scatter(g, a["shape"], a["d"], a["size"], a["step"]),)


def unfold(input, dimension, size, step):
    """``Tensor.unfold``: every ``size``-long window along ``dimension``, ``step`` apart, as a
    new last dim; a strided view (windows may overlap). VJP: the windows' gradients summed
    back (UnfoldBackwardBackward0, itself differentiable)."""
    x = input._data
    d, size, step, n = _unfold_args(x.shape, dimension, size, step)
    if x.ndim == 0:
        shape, st = (size,), (1,)
    else:
        st0 = _elem_strides(x)
        shape = list(x.shape)
        shape[d] = (n - size) // step + 1
        st = list(st0)
        st[d] = st0[d] * step
        shape, st = tuple(shape) + (size,), tuple(st) + (st0[d],)
    return record("UnfoldBackward0", (input,), _strided(x, shape, st), _unfold_backward,
                  view_of=input, attrs={"shape": tuple(x.shape), "d": d, "size": size,
                                        "step": step},
                  view_fn=lambda b: unfold(b, d, size, step))


def _unfold_scatter_backward(node, gg):
    a = node.ctx.attrs
    return (unfold(gg, a["d"], a["size"], a["step"]),)


def _unfold_scatter(g, shape, d, size, step):
    """The adjoint of unfold: zeros of ``shape`` plus each window's gradient at its place."""
    from .basic import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)._data
    gd = g._data
    if len(shape) == 0:
        if size:
            _write(out, gd.reshape(()), add=True)
    else:
        m = gd.shape[d]  # number of windows
        ost = _elem_strides(out)
        for k in range(size):
            # element k of every window: out[..., k + i*step, ...] += g[..., i, ..., k]
            if m == 0:
                break
            dst_shape = list(shape)
            dst_shape[d] = m
            dst_st = list(ost)
            dst_st[d] = ost[d] * step
            dst = _strided(out, dst_shape, dst_st, k * ost[d])
            src = gd[..., k]
            _write(dst, src, add=True)
    return record("UnfoldBackwardBackward0", (g,), out, _unfold_scatter_backward,
                  attrs={"d": d, "size": size, "step": step})
