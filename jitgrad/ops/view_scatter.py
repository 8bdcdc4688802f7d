"""select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter: a copy of ``input``
with one view of it (``select``/``slice``/``diagonal``/``as_strided``) overwritten by ``src``,
as ATen builds them (clone, take the view with its own checks and errors, compare sizes,
``copy_``). One node each (SelectScatterBackward0, SliceScatterBackward0,
DiagonalScatterBackward0, AsStridedScatterBackward0); their gradients are the pieces: ``g``
with the view zeroed for ``input`` (the same op over ``g``), the view of ``g`` for ``src``, so
gradients of any order and CUDA tensors come from the view ops. as_strided_scatter works on
storage positions as ``as_strided`` does (CPU only; its own backward, see there)."""
from __future__ import annotations

from ..autograd import grad_mode
from .composite import record

__all__ = ["select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"]


def _sizes(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _view_scatter(name, node, view, input, src, args, pos):
    from .functional_args import _need_tensor
    _need_tensor(input, name, 1)
    _need_tensor(src, name, pos, "src")
    if grad_mode.is_grad_enabled() and src.requires_grad and not input.dtype.is_floating_point:
        from .. import _dtype as D
        raise RuntimeError(f"Autograd not support dtype: {D.scalar_name(input.dtype)}")
    with grad_mode.no_grad():
        out = input.detach().clone()
        piece = view(out, *args)
        if tuple(piece.shape) != tuple(src.shape):
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                               f"size = {_sizes(src.shape)}, slice size = {_sizes(piece.shape)}")
        piece.copy_(src.detach())

    def backward(nd, g):
        from .basic import zeros
        need_self, need_src = nd.ctx.needs_input_grad
        gv = view(g, *args)
        gi = globals()[name](g, zeros(tuple(gv.shape), dtype=g.dtype, device=g.device),
                             *args) if need_self else None
        return (gi, gv if need_src else None)
    return record(node, (input, src), out._data, backward)


def _select(t, dim, index):
    return t.select(dim, index)


def _slice(t, dim, start, end, step):
    from .reduce_args import _wrap
    d = _wrap(dim, t.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return t[(slice(None),) * d + (slice(start, end, step),)]


def _diagonal(t, offset, dim1, dim2):
    return t.diagonal(offset, dim1, dim2)


def select_scatter(input, src, dim, index, *, _pos=2):
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    return _view_scatter("select_scatter", "SelectScatterBackward0", _select, input, src,
                         (dim, index), _pos)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, *, _pos=2):
    """``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    return _view_scatter("slice_scatter", "SliceScatterBackward0", _slice, input, src,
                         (dim, start, end, step), _pos)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1, *, _pos=2):
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    return _view_scatter("diagonal_scatter", "DiagonalScatterBackward0", _diagonal, input, src,
                         (offset, dim1, dim2), _pos)


def _as_strided_scatter_backward(node, g):
    """The output's gradient with the scattered storage positions zeroed (input) and read at
    them (src), through the storage map saved by the forward: tensor ops (a mask product and an
    index), so differentiable again. PyTorch 2.13's formula returns the scattered slice for the
    input instead (and reads src's from grad.contiguous()): jitgrad gives the derivative."""
    from .basic import tensor, zeros
    from .shape_join import cat
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    keep = tensor(a["keep"], dtype=g.dtype, device=g.device)
    gi = g * keep if need_self else None
    gs = None
    if need_src:
        flat = cat([g.reshape(-1), zeros(1, dtype=g.dtype, device=g.device)])
        gs = flat[tensor(a["src_from"], device=g.device)]
    return gi, gs


def as_strided_scatter(input, src, size, stride, storage_offset=None, *, _pos=2):
    """``input`` with the elements of its storage at ``as_strided(size, stride, offset)``
    replaced by ``src``, as ATen's: the whole storage is copied (clone_preserve_strides: the
    result keeps ``input``'s strides and offset; an input with internal overlap is cloned
    contiguous), so the positions are storage positions. CPU only, as ``as_strided``."""
    import numpy as np

    from .._storage import as_strided as strided
    from ..tensor import Tensor
    from .functional_args import _need_tensor
    from .shape_as_strided import _flat_storage, _indices, as_strided
    _need_tensor(input, "as_strided_scatter", 1)
    _need_tensor(src, "as_strided_scatter", _pos, "src")
    if grad_mode.is_grad_enabled() and input.requires_grad and not input.is_contiguous():
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous "
                           "inputs")
    shape, strides = tuple(input.shape), tuple(input.stride())
    flat, offset = _flat_storage(input)
    out_pos = _indices(shape, strides, offset)
    if len(np.unique(out_pos)) < out_pos.size:  # internal overlap: a contiguous clone
        flat, offset = np.ascontiguousarray(input._data).reshape(-1), 0
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
        out_pos = _indices(shape, strides, 0)
    buf = Tensor._make(flat.copy())
    with grad_mode.no_grad():
        piece = as_strided(buf, size, stride, offset if storage_offset is None
                           else storage_offset)
        if tuple(piece.shape) != tuple(src.shape):
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                               f"size = {_sizes(src.shape)}, slice size = "
                               f"{_sizes(piece.shape)}")
        piece.copy_(src.detach())
    out = strided(buf._data, shape, strides, offset) if input.numel() else \
        np.empty(shape, buf._data.dtype)
    attrs = {}
    if grad_mode.is_grad_enabled() and (input.requires_grad or src.requires_grad):
        piece_pos = _indices(tuple(piece.shape), tuple(int(s) for s in stride),
                             offset if storage_offset is None else int(storage_offset))
        n = int(max(out_pos.max(initial=-1), piece_pos.max(initial=-1))) + 1
        written = np.zeros(n, bool)
        written[piece_pos.reshape(-1)] = True
        where = np.full(n, out_pos.size, np.int64)  # storage position -> output element
        where[out_pos.reshape(-1)] = np.arange(out_pos.size)
        attrs = {"keep": (~written[out_pos]).astype(np.float64),
                 "src_from": where[piece_pos]}
    return record("AsStridedScatterBackward0", (input, src), out,
                  _as_strided_scatter_backward, attrs=attrs)


def method(fn):
    """The Tensor method: ``src`` is argument 1 in its TypeError."""
    def m(self, src, *args, **kwargs):
        return fn(self, src, *args, _pos=1, **kwargs)
    m.__name__ = m.__qualname__ = fn.__name__
    return m
