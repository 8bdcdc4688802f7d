"""Views that reshape or reorder dims: reshape/view/flatten/unflatten, squeeze/unsqueeze,
permute/transpose/movedim/t and the .T/.mT/.H properties, contiguous
(expand/broadcast_to live in ``shape_expand``). Views share storage and the version counter
with their base."""
from __future__ import annotations

from math import prod as _prod

import numpy as np

from .. import _dtype as D
from .._layout import note_permute, note_squeeze, note_unsqueeze, note_view
from .._storage import as_strided, elem_strides, shares_memory, view_strides
from ..tensor import Tensor
from .composite import record
from .parser_errors import input_type_error, parser_errors
from .shape_args import (
    _NOT_GIVEN,
    _dup_check,
    _fmt,
    _infer_shape,
    _int_list,
    _size_list,
    _size_list_error,
    _wrap,
    parser_overloads,
)
from .shape_expand import broadcast_tensors, broadcast_to, expand, expand_as  # noqa: F401 (re-exported)

_strided = as_strided  # the short names unsqueeze uses
_elem_strides = elem_strides


def _reshape_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


_shares = shares_memory


def _reshape_to(shape):
    """The replay of a reshape-like view (view/reshape/flatten/squeeze/unsqueeze): the same
    elements in the same order, so a reshape to the view's shape (``composite.record``)."""
    shape = tuple(shape)
    return lambda b: reshape(b, shape)


def _view_like(x, data, name):
    return record(name, (x,), data, _reshape_backward,
                  view_of=x if _shares(data, x._data) else None,
                  attrs={"shape": tuple(x._data.shape)}, view_fn=_reshape_to(data.shape))


def reshape(input, *args, shape=_NOT_GIVEN):
    if args and shape is _NOT_GIVEN:
        fast = _contiguous_view(input, args)  # (reshape's general path finds the same view)
        if fast is not None:
            return fast
    shape = _infer_shape(_size_list(args, "reshape", "shape", shape), input._data.size)
    x = input._data
    data = x.reshape(shape)
    if data.size and not _shares(data, x):
        name = "UnsafeViewBackward0"  # a copy (PyTorch: clone + _unsafe_view)
    else:
        # a view: PyTorch's reshape is a plain view of a contiguous input, else _reshape_alias
        name = "ViewBackward0" if x.flags.c_contiguous else "ReshapeAliasBackward0"
    out = _view_like(input, data, name)
    if not out._data.size:
        note_view(out, input)
    return out


def ravel(input):
    """``torch.ravel``: ``contiguous().view(-1)``."""
    return view(contiguous(input), -1)


def _view_dtype(input, dt):
    x = input._data
    if dt.itemsize != x.itemsize:
        # ATen's view_dtype checks, in its order, on the tensor's strides and offset (CUDA
        # storage reinterprets with exactly these rules: CudaArray.view)
        src, dst = D.scalar_name(input.dtype), D.scalar_name(dt)
        what = f"to view {src} as {dst} (different element sizes)"
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        st = input.stride()
        if st[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
        if dt.itemsize > x.itemsize:
            k = dt.itemsize // x.itemsize
            if x.shape[-1] % k:
                raise RuntimeError(f"self.size(-1) must be divisible by {k} {what}, but got "
                                   f"{x.shape[-1]}")
            off = input.storage_offset()
            if off % k:
                raise RuntimeError(f"self.storage_offset() must be divisible by {k} {what}, "
                                   f"but got {off}")
            for i, s in enumerate(st[:-1]):
                if s % k:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {k} {what}, "
                                       f"but got {s}")
    from .composite import wrap
    return wrap(x.view(dt.np), view_of=input, differentiable=False)  # as in PyTorch


def _plain_shape(args, numel):
    """The shape ``view(*args)`` asks for when ``args`` are plain ints (or one tuple/list of
    them) describing a valid shape for ``numel`` elements; None otherwise (the general path
    then checks them and raises PyTorch's errors)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    known, neg = 1, False
    for s in args:
        if s.__class__ is not int:
            return None
        if s >= 0:
            known *= s
        elif s == -1 and not neg:
            neg = True
        else:
            return None
    if not neg:
        return tuple(args) if known == numel else None
    if known == 0 or numel % known:
        return None
    shape = list(args)
    shape[shape.index(-1)] = numel // known
    return tuple(shape)


def _contiguous_view(input, args):
    """``view(*args)`` / ``reshape(*args)`` of a non-empty contiguous host tensor with plain
    ints (the common call), or None. ATen's stride rule always has a view of a contiguous
    tensor, and NumPy's reshape of a C-contiguous array is always a view (so it shares memory):
    the general paths find ViewBackward0 over a view of ``input`` for such a call too, after
    checks that cannot fail here."""
    x = input._data
    if x.__class__ is np.ndarray and x.size and x.flags.c_contiguous:
        shape = _plain_shape(args, x.size)
        if shape is not None:
            return record("ViewBackward0", (input,), x.reshape(shape), _reshape_backward,
                          view_of=input, attrs={"shape": x.shape}, view_fn=_reshape_to(shape))
    return None


def view(input, *args, size=_NOT_GIVEN, dtype=None):
    if args and size is _NOT_GIVEN and dtype is None:
        fast = _contiguous_view(input, args)
        if fast is not None:
            return fast
    x = input._data
    if dtype is not None and not args and size is _NOT_GIVEN:
        return _view_dtype(input, D.to_dtype(dtype))
    if len(args) == 1 and not isinstance(args[0], (tuple, list, int, np.integer, Tensor)):
        if args[0] is None or isinstance(args[0], (float, str, complex)):
            # neither a dtype nor a size (PyTorch's parser takes no dtype names)
            raise _size_list_error(args, "view", "size")
        return _view_dtype(input, D.to_dtype(args[0]))
    shape = _infer_shape(_size_list(args, "view", "size", size), input._data.size)
    st = view_strides(x.shape, elem_strides(x), shape)
    if st is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    if x.__class__ is np.ndarray:
        data = x.reshape(shape)  # NumPy's own view (a normal .base) where it finds one
        if not np.may_share_memory(data, x):
            data = as_strided(x, shape, st)
    else:
        data = as_strided(x, shape, st)
    out = _view_like(input, data, "ViewBackward0")
    if not out._data.size:
        note_view(out, input)
    return out


def view_as(input, other):
    try:  # (free until raised) PyTorch's TypeError for a non-Tensor other (an ndarray too)
        shape = other._data.shape
    except AttributeError:
        raise input_type_error("view_as", (other,), {}, arg="other") from None
    return view(input, tuple(shape))


def reshape_as(input, other):
    try:  # (free until raised) PyTorch's TypeError for a non-Tensor other (an ndarray too)
        shape = other._data.shape
    except AttributeError:
        raise input_type_error("reshape_as", (other,), {}, arg="other") from None
    return reshape(input, tuple(shape))


def flatten(input, start_dim=0, end_dim=-1):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        x = input._data
    except AttributeError:
        raise input_type_error("flatten", (input,), {}) from None
    if start_dim.__class__ is int and end_dim.__class__ is int and x.__class__ is np.ndarray \
            and x.size and x.flags.c_contiguous:
        # a non-empty contiguous host tensor: the view reshape's fast path (_contiguous_view)
        # makes of the shape the general path asks for, with the -1 resolved here
        nd = x.ndim
        if -nd <= start_dim < nd and -nd <= end_dim < nd:
            s, e = start_dim % nd, end_dim % nd
            if s < e:
                shp = x.shape
                shape = shp[:s] + (_prod(shp[s:e + 1]),) + shp[e + 1:]
                return record("ViewBackward0", (input,), x.reshape(shape), _reshape_backward,
                              view_of=input, attrs={"shape": shp}, view_fn=_reshape_to(shape))
    nd = input._data.ndim
    s, e = _wrap(start_dim, nd, "flatten"), _wrap(end_dim, nd, "flatten")
    if nd == 0:
        return reshape(input, 1)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (-1,) + shp[e + 1:])


def unflatten(input, dim, sizes):
    shp = input._data.shape
    if len(shp) == 0:
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as "
                           f"{dim} but tensor has no dimensions")
    d = _wrap(dim, len(shp), "unflatten")
    sizes = _int_list((sizes,), "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    bad = [i for i, s in enumerate(sizes) if s < -1]
    if bad:
        raise RuntimeError(f"unflatten got an unexpected error:\ninvalid shape dimension "
                           f"{sizes[bad[0]]} at index {bad[0]} of shape {_fmt(sizes)}")
    if sum(1 for s in sizes if s == -1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    n = shp[d]
    ok = (known != 0 and n % known == 0) if -1 in sizes else known == n
    if not ok:
        raise RuntimeError(f"unflatten: Provided sizes {_fmt(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return view(input, shp[:d] + sizes + shp[d + 1:])  # always a view (splits one dim)


def _squeeze_backward(node, g):
    # PyTorch's ``unsqueeze_to``: the removed dims come back one ``unsqueeze`` each (so a
    # create_graph gradient's nodes are UnsqueezeBackward0, as PyTorch's)
    for d in node.ctx.attrs["dims"]:
        g = g.unsqueeze(d)
    return (g,)


def _unsqueeze_backward(node, g):
    return (g.squeeze(node.ctx.attrs["dim"]),)  # PyTorch's: SqueezeBackward1 under create_graph


def _squeezed(x, dims, shape):
    """``x`` without its unit dims ``dims``: ATen keeps the other dims' strides. NumPy's
    reshape is that view (and cheap) unless x keeps other unit dims, which NumPy re-strides:
    then as_strided with ATen's strides."""
    data = x.reshape(shape)
    if x.__class__ is np.ndarray and x.size:
        st = x.strides
        want = tuple(s for i, s in enumerate(st) if i not in dims) if dims else st
        if data.strides != want:
            data = as_strided(x, shape, [s // x.itemsize for s in want])
    return data


def squeeze(input, dim=None):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        x = input._data
    except AttributeError:
        raise input_type_error("squeeze", (input,), {}) from None
    if dim.__class__ is int and x.__class__ is np.ndarray and x.size:
        # the common call (one int dim, non-empty host tensor in range): the general
        # path's steps below
        shp = x.shape
        nd = len(shp)
        if -nd <= dim < nd:
            d = dim % nd
            if shp[d] == 1:
                dims, shape = (d,), shp[:d] + shp[d + 1:]
                st = x.strides
                st = st[:d] + st[d + 1:]
            else:
                dims, shape, st = (), shp, x.strides
            data = x.reshape(shape)
            if data.strides != st and x.size:  # (see _squeezed)
                data = as_strided(x, shape, [s // x.itemsize for s in st])
            return record("SqueezeBackward1", (input,), data, _squeeze_backward, view_of=input,
                          attrs={"dims": dims}, view_fn=_reshape_to(shape))
    shp = input._data.shape
    if dim is None:
        dims, name = tuple(i for i, s in enumerate(shp) if s == 1), "SqueezeBackward0"
    elif isinstance(dim, (tuple, list)):
        dims, name = tuple(_wrap(d, len(shp), "squeeze") for d in dim), "SqueezeBackward2"
        _dup_check(dims)
        dims = tuple(d for d in dims if shp and shp[d] == 1)
    else:
        d = _wrap(dim, len(shp), "squeeze")
        dims, name = ((d,) if shp and shp[d] == 1 else ()), "SqueezeBackward1"
    data = _squeezed(input._data, dims, tuple(s for i, s in enumerate(shp) if i not in dims))
    out = record(name, (input,), data, _squeeze_backward, view_of=input,
                 attrs={"dims": tuple(sorted(dims))}, view_fn=_reshape_to(data.shape))
    if not out._data.size:
        note_squeeze(out, input, dims)
    return out


def squeeze_method(input, *dims, **kwargs):
    """``Tensor.squeeze``: PyTorch's method also takes the dims as varargs
    (``x.squeeze(0, 2)`` is ``x.squeeze((0, 2))``; ``torch.squeeze(x, 0, 2)`` is a TypeError)."""
    if len(dims) > 1 and not kwargs:
        return squeeze(input, dims)
    return squeeze(input, *dims, **kwargs)


@parser_errors
def unsqueeze(input, dim):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        x = input._data
    except AttributeError:
        raise input_type_error("unsqueeze", (input,), {}) from None
    nd = x.ndim
    if dim.__class__ is int and x.__class__ is np.ndarray and -nd - 1 <= dim <= nd and x.size:
        # The common call, without as_strided's ~4 us: NumPy's reshape inserting a unit dim is a
        # view with the same strides as ATen's whenever x has no other unit dims (NumPy re-strides
        # those), which the comparison below confirms, else the general path's as_strided.
        d = dim % (nd + 1)
        shp, st = x.shape, x.strides
        shape = shp[:d] + (1,) + shp[d:]
        data = x.reshape(shape)
        if data.strides == st[:d] + ((shp[d] * st[d]) if d < nd else x.itemsize,) + st[d:]:
            return record("UnsqueezeBackward0", (input,), data, _unsqueeze_backward,
                          view_of=input, attrs={"dim": d}, view_fn=_reshape_to(shape))
    d = _wrap(dim, nd + 1, "unsqueeze")
    shape, st = list(x.shape), list(_elem_strides(x))
    # PyTorch's stride for the new dim: the extent of the dims after it (1 at the end)
    st.insert(d, shape[d] * st[d] if d < nd else 1)
    shape.insert(d, 1)
    data = _strided(x, shape, st)
    out = record("UnsqueezeBackward0", (input,), data, _unsqueeze_backward, view_of=input,
                 attrs={"dim": d}, view_fn=_reshape_to(data.shape))
    if not out._data.size:
        note_unsqueeze(out, input, d)
    return out


def _permute_backward(node, g):
    inv = np.argsort(node.ctx.attrs["dims"])
    return (permute(g, tuple(int(i) for i in inv)),)


def _permute_fn(dims):
    return lambda b: permute(b, dims)


def permute(input, *args, dims=_NOT_GIVEN):
    x = input._data
    if args and dims is _NOT_GIVEN and x.__class__ is np.ndarray and x.size:
        # the common call (plain ints in range, no repeats, non-empty host tensor): the
        # general path's view without its argument checks
        p = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        nd = x.ndim
        if len(p) == nd:
            w = []
            for d in p:
                if d.__class__ is not int or not -nd <= d < nd:
                    break
                w.append(d % nd)
            else:
                w = tuple(w)
                if len(set(w)) == nd:
                    return record("PermuteBackward0", (input,), x.transpose(w),
                                  _permute_backward, view_of=input, attrs={"dims": w},
                                  view_fn=_permute_fn(w))
    dims = _size_list(args, "permute", "dims", dims)
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = record("PermuteBackward0", (input,), input._data.transpose(dims), _permute_backward,
                 view_of=input, attrs={"dims": dims}, view_fn=lambda b: permute(b, dims))
    if not out._data.size:
        note_permute(out, input, dims)
    return out


def _transpose_backward(node, g):
    a = node.ctx.attrs
    return (transpose(g, a["d0"], a["d1"]),)


@parser_errors
def transpose(input, dim0, dim1):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        x = input._data
    except AttributeError:
        raise input_type_error("transpose", (input,), {}) from None
    if dim0.__class__ is int and dim1.__class__ is int and x.__class__ is np.ndarray and x.size:
        nd = x.ndim  # the common call: the general path's view without its argument checks
        if -nd <= dim0 < nd and -nd <= dim1 < nd:
            d0, d1 = dim0 % nd, dim1 % nd
            return record("TransposeBackward0", (input,), x.swapaxes(d0, d1),
                          _transpose_backward, view_of=input, attrs={"d0": d0, "d1": d1},
                          view_fn=lambda b: transpose(b, d0, d1))
    nd = input._data.ndim
    d0, d1 = _wrap(dim0, nd, "transpose"), _wrap(dim1, nd, "transpose")
    x = input._data
    if nd == 0:
        data = x[()] if x.__class__ is not np.ndarray else x.view()
    else:
        data = np.swapaxes(x, d0, d1) if x.__class__ is np.ndarray else x.swapaxes(d0, d1)
    out = record("TransposeBackward0", (input,), data,
                 _transpose_backward, view_of=input, attrs={"d0": d0, "d1": d1},
                 view_fn=lambda b: transpose(b, d0, d1))
    if nd and not x.size:
        order = list(range(nd))
        order[d0], order[d1] = d1, d0
        note_permute(out, input, order)
    return out


@parser_errors
def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    return transpose(input, dim0, dim1)


def _alias_backward(node, g):
    return (g,)


def _alias(input):
    x = input._data
    data = x.view() if x.__class__ is np.ndarray else x[()]
    return record("AliasBackward0", (input,), data, _alias_backward, view_of=input,
                  view_fn=_alias)


def _movedim(input, source, destination):
    nd = input._data.ndim
    one = isinstance(source, (int, np.integer, Tensor))
    if one != isinstance(destination, (int, np.integer, Tensor)):
        raise TypeError("movedim() received an invalid combination of arguments: source and "
                        "destination must both be ints or both be tuples of ints")
    src = _int_list((source,), "movedim", "source", allow_empty=True)
    dst = _int_list((destination,), "movedim", "destination", allow_empty=True)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({_fmt(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({_fmt(dst)} dims)")
    ws = [_wrap(d, nd, "movedim") for d in src]
    wd = [_wrap(d, nd, "movedim") for d in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({_fmt(src)})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({_fmt(dst)})")
    if nd == 0:
        return _alias(input)
    order = [-1] * nd
    for s, d in zip(ws, wd):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in ws)
    order = [o if o != -1 else next(rest) for o in order]
    return permute(input, tuple(order))


_MOVEDIM_SIGNATURES = ("Tensor input, int source, int destination",
                       "Tensor input, tuple of ints source, tuple of ints destination")
movedim = parser_overloads("movedim", _MOVEDIM_SIGNATURES)(_movedim)
moveaxis = parser_overloads("moveaxis", _MOVEDIM_SIGNATURES)(_movedim)
movedim_method = parser_overloads("movedim", _MOVEDIM_SIGNATURES, method=True)(_movedim)
moveaxis_method = parser_overloads("moveaxis", _MOVEDIM_SIGNATURES, method=True)(_movedim)


def _t_backward(node, g):
    return (t(g),)


def t(input):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        nd = input._data.ndim
    except AttributeError:
        raise input_type_error("t", (input,), {}) from None
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    out = record("TBackward0", (input,), input._data.T, _t_backward, view_of=input,
                 view_fn=t)
    if not input._data.size:
        note_permute(out, input, tuple(range(nd))[::-1])
    return out


_T_WARNED = []


def numpy_T(input):  # noqa: N802 - Tensor.T
    """``x.T``: all dims reversed (PermuteBackward0 at any rank), PyTorch's deprecation
    warning (once) on tensors that are not 2-D."""
    nd = input._data.ndim
    if nd != 2 and not _T_WARNED:
        import warnings
        _T_WARNED.append(True)
        if nd == 0:
            msg = ("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                   "these cases.")
        else:
            msg = ("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                   "shape is deprecated and it will throw an error in a future release. "
                   "Consider `x.mT` to transpose batches of matrices or `x.permute(*torch."
                   "arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.")
        warnings.warn(msg, UserWarning, stacklevel=3)
    return permute(input, tuple(range(nd - 1, -1, -1)))


def _matrix_check(input, what):
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.{what} is only supported on matrices or batches of "
                           f"matrices. Got {nd}-D tensor.")


def matrix_T(input):  # noqa: N802 - Tensor.mT
    _matrix_check(input, "mT")
    return transpose(input, -2, -1)


def matrix_H(input):  # noqa: N802 - Tensor.mH (real dtypes: mT)
    _matrix_check(input, "mH")
    return transpose(input, -2, -1)


def adjoint(input):
    _matrix_check(input, "adjoint()")
    return transpose(input, -2, -1)


def H(input):  # noqa: N802 - Tensor.H (real dtypes: the transpose of a matrix)
    nd = input._data.ndim
    if nd != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D "
                           "tensor." + (" For batches of matrices, consider using tensor.mH"
                                        if nd > 2 else ""))
    return transpose(input, 0, 1)


def _clone_backward(node, g):
    return (g,)


def contiguous(input, memory_format=None):
    """The tensor itself when C-contiguous, else a C-contiguous copy (CloneBackward0)."""
    x = input._data
    if memory_format == "channels_last" or memory_format == "channels_last_3d":
        # ATen: self when is_contiguous(memory_format), else clone(memory_format) (rank checked;
        # host and CUDA alike: _memory_format)
        if input.is_contiguous(memory_format):
            return input
        from .copies import clone
        return clone(input, memory_format)
    if x.flags.c_contiguous:
        return input
    data = np.ascontiguousarray(x) if x.__class__ is np.ndarray else x.contiguous()
    return record("CloneBackward0", (input,), data, _clone_backward)
