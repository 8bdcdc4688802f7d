"""The view-copy functions (``torch.t_copy``, ``torch.permute_copy``, ``torch.split_copy``, ...)
and the "unsafe" splits (``torch.unsafe_split``, ``unsafe_chunk``, ``unsafe_split_with_sizes``).

A ``*_copy`` function is its view op followed by a contiguous copy: the same checks and errors
(the view op raises them), fresh memory, and, as in PyTorch, ONE node named after the view's
node with ``_copy`` appended (``TBackward0_copy``, ``SqueezeBackward1_copy``); the node
differentiates the hidden view + copy (``record_composition``), so gradients of any order and
CUDA tensors come from the view ops. ``detach_copy`` has PyTorch's NotImplemented node and
``narrow_copy`` its own NarrowCopyBackward0.

The unsafe splits share the input's memory like ``split``/``chunk`` but are not views (no
version-counter or view tracking: PyTorch's point of them); their node is UnsafeSplitBackward0
/ UnsafeSplitWithSizesBackward0 with split's backward (the pieces concatenated)."""
from __future__ import annotations

from ..autograd import grad_mode
from ..tensor import Tensor
from . import shape, shape_join
from .composite import record, record_composition
from .parser_errors import parser_type_name

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "narrow_copy", "permute_copy", "select_copy", "slice_copy", "split_copy",
           "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
           "unfold_copy", "unsqueeze_copy", "view_copy", "values_copy", "unsafe_chunk",
           "unsafe_split", "unsafe_split_with_sizes"]

# the Tensor methods PyTorch has among them (the others are torch.* only)
METHODS = ("narrow_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes")


def _need_tensor(x, name, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _fresh(t):
    from .. import contiguous_format
    return t.clone(memory_format=contiguous_format)


def _copy_of(node_name, input, view):
    """``view(input)`` (a Tensor or a tuple of them) copied to fresh contiguous memory, shown
    as one node ``node_name``."""
    def build(x):
        v = view(x)
        return tuple(_fresh(p) for p in v) if isinstance(v, (tuple, list)) else _fresh(v)
    out = record_composition(node_name, (input,), build)
    return out


def alias_copy(input):
    _need_tensor(input, "alias_copy")
    return _copy_of("AliasBackward0_copy", input, lambda x: x)


def as_strided_copy(input, size, stride, storage_offset=None):
    _need_tensor(input, "as_strided_copy")
    from .shape_as_strided import as_strided
    return _copy_of("AsStridedBackward0_copy", input,
                    lambda x: as_strided(x, size, stride, storage_offset))


def _detach_copy_backward(node, g):
    raise RuntimeError("derivative for aten::detach_copy is not implemented")


def detach_copy(input):
    """A copy with PyTorch's NotImplemented node: its backward raises."""
    _need_tensor(input, "detach_copy")
    with grad_mode.no_grad():
        out = _fresh(input)
    if input.requires_grad and grad_mode.is_grad_enabled():
        return record("NotImplemented", (input,), out._data, _detach_copy_backward)
    return out


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    _need_tensor(input, "diagonal_copy")
    return _copy_of("DiagonalBackward0_copy", input, lambda x: x.diagonal(offset, dim1, dim2))


def expand_copy(input, size, *, implicit=False):
    _need_tensor(input, "expand_copy")
    return _copy_of("ExpandBackward0_copy", input, lambda x: x.expand(size))


def _narrow_copy_backward(node, g):
    from .basic import zeros
    a = node.ctx.attrs
    full = zeros(a["shape"], dtype=g.dtype, device=g.device)
    return (full.slice_scatter(g, a["dim"], a["start"], a["start"] + a["length"]),)


def narrow_copy(input, dim, start, length):
    """``narrow`` copied, with narrow_copy_dense_cpu's own checks (NarrowCopyBackward0: the
    gradient padded back with zeros)."""
    _need_tensor(input, "narrow_copy")
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim, start, length = int(dim), int(start), int(length)
    if dim < 0:
        from .reduce_args import _wrap
        dim = _wrap(dim, input.dim())
    elif dim >= input.dim():
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    cur = input.shape[dim]
    if not -cur <= start <= cur:
        raise IndexError(f"start out of range (expected to be in range of [{-cur}, {cur}], but "
                         f"got {start})")
    if start < 0:
        start += cur
    if length < 0 or start > cur - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({cur}).")
    with grad_mode.no_grad():
        out = _fresh(shape.narrow(input.detach(), dim, start, length))
    if not (input.requires_grad and grad_mode.is_grad_enabled()):
        return out
    return record("NarrowCopyBackward0", (input,), out._data, _narrow_copy_backward,
                  attrs={"shape": tuple(input.shape), "dim": dim, "start": start,
                         "length": length})


def permute_copy(input, dims):
    _need_tensor(input, "permute_copy")
    return _copy_of("PermuteBackward0_copy", input, lambda x: shape.permute(x, dims))


def select_copy(input, dim, index):
    _need_tensor(input, "select_copy")
    return _copy_of("SelectBackward0_copy", input, lambda x: shape.select(x, dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """``torch.slice_copy``: ``input[..., start:end:step]`` along ``dim``, copied."""
    _need_tensor(input, "slice_copy")
    from .view_scatter import _slice
    return _copy_of("SliceBackward0_copy", input, lambda x: _slice(x, dim, start, end, step))


def split_copy(input, split_size, dim=0):
    _need_tensor(input, "split_copy")
    if isinstance(split_size, (list, tuple)):  # ATen's split_copy takes one size only
        raise TypeError(f"split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{parser_type_name(split_size)}")
    return _copy_of("SplitBackward0_copy", input,
                    lambda x: shape.split(x, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    _need_tensor(input, "split_with_sizes_copy")
    return _copy_of("SplitWithSizesBackward0_copy", input,
                    lambda x: shape.split_with_sizes(x, split_sizes, dim))


_NO_DIM = object()


def squeeze_copy(input, dim=_NO_DIM):
    """Node named as the squeeze overload's: SqueezeBackward0 (no dim), 1 (an int), 2 (dims)."""
    _need_tensor(input, "squeeze_copy")
    if dim is _NO_DIM:
        return _copy_of("SqueezeBackward0_copy", input, lambda x: shape.squeeze(x))
    name = "SqueezeBackward2_copy" if isinstance(dim, (list, tuple)) else "SqueezeBackward1_copy"
    return _copy_of(name, input, lambda x: shape.squeeze(x, dim))


def t_copy(input):
    _need_tensor(input, "t_copy")
    return _copy_of("TBackward0_copy", input, lambda x: shape.t(x))


def transpose_copy(input, dim0, dim1):
    _need_tensor(input, "transpose_copy")
    return _copy_of("TransposeBackward0_copy", input, lambda x: shape.transpose(x, dim0, dim1))


def unbind_copy(input, dim=0):
    _need_tensor(input, "unbind_copy")
    return _copy_of("UnbindBackward0_copy", input, lambda x: shape.unbind(x, dim))


def unfold_copy(input, dimension, size, step):
    _need_tensor(input, "unfold_copy")
    return _copy_of("UnfoldBackward0_copy", input, lambda x: x.unfold(dimension, size, step))


def unsqueeze_copy(input, dim):
    _need_tensor(input, "unsqueeze_copy")
    return _copy_of("UnsqueezeBackward0_copy", input, lambda x: shape.unsqueeze(x, dim))


def view_copy(input, size):
    """``view`` copied; ``view_copy(x, dtype)`` reinterprets the bits (no node, as PyTorch)."""
    _need_tensor(input, "view_copy")
    from .. import _dtype as D
    if isinstance(size, D.dtype):
        with grad_mode.no_grad():
            return _fresh(input.detach().view(size))
    return _copy_of("ViewBackward0_copy", input, lambda x: x.view(size))


def values_copy(input):
    """A sparse tensor's values: every jitgrad tensor is strided, so PyTorch's error."""
    _need_tensor(input, "values_copy")
    raise RuntimeError("values expected sparse tensor layout but got Strided")


# ----------------------------------------------------------------------------- unsafe splits

def _unsafe(name, input, pieces, dim):
    """``pieces`` (split's views of ``input``) as tensors sharing its memory without being its
    views, under one ``name`` node with split's backward."""
    from .reduce_args import _wrap
    d = _wrap(dim, input.ndim)
    datas = [p._data for p in pieces]
    return record(name, (input,), datas, shape_join._split_backward,
                  attrs={"dim": d, "sizes": [p.shape[d] for p in pieces],
                         "shape": tuple(input._data.shape), "dtype": input.dtype})


def unsafe_split(input, split_size, dim=0):
    _need_tensor(input, "unsafe_split")
    with grad_mode.no_grad():
        pieces = shape.split(input.detach(), split_size, dim)
    name = ("UnsafeSplitWithSizesBackward0" if isinstance(split_size, (list, tuple))
            else "UnsafeSplitBackward0")
    return _unsafe(name, input, pieces, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    _need_tensor(input, "unsafe_split_with_sizes")
    with grad_mode.no_grad():
        pieces = shape.split_with_sizes(input.detach(), split_sizes, dim)
    return _unsafe("UnsafeSplitWithSizesBackward0", input, pieces, dim)


def unsafe_chunk(input, chunks, dim=0):
    """``chunk``'s pieces, unsafe (ATen: unsafe_split with chunk's size, so its node)."""
    _need_tensor(input, "unsafe_chunk")
    with grad_mode.no_grad():
        pieces = shape.chunk(input.detach(), chunks, dim)
    return _unsafe("UnsafeSplitBackward0", input, pieces, dim)


def install():
    """Bind the Tensor methods (``x.narrow_copy(...)``, ``x.unsafe_split(...)``)."""
    for name in METHODS:
        setattr(Tensor, name, globals()[name])
