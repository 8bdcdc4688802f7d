"""select_scatter, slice_scatter, diagonal_scatter: a copy of ``input`` with one view of it
(``select``/``slice``/``diagonal``) overwritten by ``src``, as ATen builds them (clone, take the
view with its own checks and errors, compare sizes, ``copy_``). One node each
(SelectScatterBackward0, SliceScatterBackward0, DiagonalScatterBackward0); their gradients are
the pieces: ``g`` with the view zeroed for ``input`` (the same op over ``g``), the view of ``g``
for ``src``, so gradients of any order and CUDA tensors come from the view ops."""
from __future__ import annotations

from ..autograd import grad_mode
from .composite import record

__all__ = ["select_scatter", "slice_scatter", "diagonal_scatter"]


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


def method(fn):
    """The Tensor method: ``src`` is argument 1 in its TypeError."""
    def m(self, src, *args, **kwargs):
        return fn(self, src, *args, _pos=1, **kwargs)
    m.__name__ = m.__qualname__ = fn.__name__
    return m
