"""Shape ops: views (reshape, view, transpose, permute, expand, squeeze, unsqueeze) and
cat/stack/split/chunk. Views share storage and the version counter with their base."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._storage import as_strided, elem_strides, shares_memory, view_strides
from ..tensor import Tensor
from .composite import record
from .out import write_out

__all__ = ["reshape", "view", "flatten", "unflatten", "squeeze", "unsqueeze", "expand",
           "expand_as", "broadcast_to", "permute", "transpose", "swapaxes", "swapdims", "t",
           "cat", "concat", "concatenate", "stack", "split", "split_with_sizes", "chunk",
           "tensor_split", "hsplit", "vsplit", "dsplit", "unbind", "contiguous", "movedim",
           "moveaxis", "flip", "fliplr", "flipud", "repeat", "broadcast_tensors", "tile",
           "view_as", "reshape_as", "hstack", "vstack", "row_stack", "dstack", "column_stack",
           "narrow", "select", "atleast_1d", "atleast_2d", "atleast_3d", "roll", "ravel",
           "diagonal", "unfold", "numpy_T", "matrix_T", "matrix_H", "H", "adjoint"]


def _int(v, fn, what):
    """An int argument: PyTorch rejects floats and bools (TypeError); 0-d integer tensors and
    NumPy integers pass (``__index__``)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, Tensor) and v._data.dtype.kind in "iu" and v._data.ndim == 0:
        return int(v)
    raise TypeError(f"{fn}(): argument '{what}' must be int, not {type(v).__name__}")


def _wrap(dim, ndim, fn="dim"):
    if isinstance(dim, Tensor) and dim._data.dtype.kind in "iu" and dim._data.ndim == 0:
        dim = int(dim)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}(): argument 'dim' must be int, not {type(dim).__name__}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return int(dim) % max(ndim, 1)


def _wrap_nonscalar(dim, ndim, fn="dim", say_wrapped=False):
    """``_wrap`` for ops that need a real dimension (unbind, roll): a 0-d tensor has none."""
    d = _wrap(dim, ndim, fn)
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d if say_wrapped else dim} but tensor has no "
                         "dimensions")
    return d


def _dup_check(dims):
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)


_NOT_GIVEN = object()


def _int_list(args, fn, what, kw=_NOT_GIVEN, allow_empty=False):
    """A size/dims argument given as varargs ints, one tuple/list/Size, or keyword ``what``."""
    if kw is not _NOT_GIVEN:
        if args:
            raise TypeError(f"{fn}() got multiple values for argument '{what}'")
        args = (kw,)
    if not args and not allow_empty:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{what}"')
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], Tensor) and args[0]._data.ndim == 1:
        args = tuple(args[0].tolist())
    out = []
    for i, a in enumerate(args):
        try:
            out.append(_int(a, fn, what))
        except TypeError:
            raise TypeError(f"{fn}(): argument '{what}' must be tuple of ints, but found element "
                            f"of type {type(a).__name__} at pos {i}") from None
    return tuple(out)


def _infer_shape(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                                   f"{_fmt(shape)}")
            known *= s
    if neg:
        if known == 0:
            if numel == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {_fmt(shape)} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous")
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        if numel % known:
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


_strided = as_strided  # the names this module's callers use
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
    shape = _infer_shape(_int_list(args, "reshape", "shape", shape), input._data.size)
    x = input._data
    data = x.reshape(shape)
    if data.size and not _shares(data, x):
        name = "UnsafeViewBackward0"  # a copy (PyTorch: clone + _unsafe_view)
    else:
        # a view: PyTorch's reshape is a plain view of a contiguous input, else _reshape_alias
        name = "ViewBackward0" if x.flags.c_contiguous else "ReshapeAliasBackward0"
    return _view_like(input, data, name)


def ravel(input):
    """``torch.ravel``: ``contiguous().view(-1)``."""
    return view(contiguous(input), -1)


def _view_dtype(input, dt):
    x = input._data
    if dt.itemsize != x.itemsize:
        src, dst = D.scalar_name(input.dtype), D.scalar_name(dt)
        what = f"to view {src} as {dst} (different element sizes)"
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if x.shape[-1] != 1 and x.strides[-1] != x.itemsize:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{x.strides[-1] // x.itemsize}")
        if dt.itemsize > x.itemsize:
            k = dt.itemsize // x.itemsize
            if x.shape[-1] % k:
                raise RuntimeError(f"self.size(-1) must be divisible by {k} {what}, but got "
                                   f"{x.shape[-1]}")
    from .composite import wrap
    return wrap(x.view(dt.np), view_of=input)  # not differentiable, as in PyTorch


def view(input, *args, size=_NOT_GIVEN, dtype=None):
    if dtype is not None and not args and size is _NOT_GIVEN:
        return _view_dtype(input, D.to_dtype(dtype))
    if len(args) == 1 and not isinstance(args[0], (tuple, list, int, np.integer, Tensor)):
        return _view_dtype(input, D.to_dtype(args[0]))
    shape = _infer_shape(_int_list(args, "view", "size", size), input._data.size)
    x = input._data
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
    return _view_like(input, data, "ViewBackward0")


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


def flatten(input, start_dim=0, end_dim=-1):
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


def squeeze(input, dim=None):
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
    data = input._data.reshape(tuple(s for i, s in enumerate(shp) if i not in dims))
    return record(name, (input,), data, _squeeze_backward, view_of=input,
                  attrs={"dims": tuple(sorted(dims))}, view_fn=_reshape_to(data.shape))


def unsqueeze(input, dim):
    x = input._data
    nd = x.ndim
    d = _wrap(dim, nd + 1, "unsqueeze")
    shape, st = list(x.shape), list(_elem_strides(x))
    # PyTorch's stride for the new dim: the extent of the dims after it (1 at the end)
    st.insert(d, shape[d] * st[d] if d < nd else 1)
    shape.insert(d, 1)
    data = _strided(x, shape, st)
    return record("UnsqueezeBackward0", (input,), data, _unsqueeze_backward, view_of=input,
                  attrs={"dim": d}, view_fn=_reshape_to(data.shape))


def _expand_backward(node, g):
    return (g,)  # the engine sums the gradient back to the input's shape


def expand(input, *args, size=_NOT_GIVEN):
    sizes = _int_list(args, "expand", "size", size)
    shp = input._data.shape
    if len(sizes) < len(shp):
        from ..autograd.node import _tensor_type_name
        raise RuntimeError(f"expand({_tensor_type_name(input)}{{{list(shp)}}}, size="
                           f"{list(sizes)}): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur})"
                    f" at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                    f"sizes: {list(shp)}")
            target.append(s)
    x = input._data
    data = np.broadcast_to(x, tuple(target)) if x.__class__ is np.ndarray else \
        x.broadcast_to(tuple(target))
    return record("ExpandBackward0", (input,), data, _expand_backward, view_of=input)


def expand_as(input, other):
    return expand(input, tuple(other.shape))


def broadcast_to(input, size):
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    from .elementwise_call import broadcast_shapes
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    # as PyTorch (expand_outplace): a tensor that already has the shape is returned itself
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def _permute_backward(node, g):
    inv = np.argsort(node.ctx.attrs["dims"])
    return (permute(g, tuple(int(i) for i in inv)),)


def permute(input, *args, dims=_NOT_GIVEN):
    dims = _int_list(args, "permute", "dims", dims)
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return record("PermuteBackward0", (input,), input._data.transpose(dims), _permute_backward,
                  view_of=input, attrs={"dims": dims}, view_fn=lambda b: permute(b, dims))


def _transpose_backward(node, g):
    a = node.ctx.attrs
    return (transpose(g, a["d0"], a["d1"]),)


def transpose(input, dim0, dim1):
    nd = input._data.ndim
    d0, d1 = _wrap(dim0, nd, "transpose"), _wrap(dim1, nd, "transpose")
    x = input._data
    if nd == 0:
        data = x[()] if x.__class__ is not np.ndarray else x.view()
    else:
        data = np.swapaxes(x, d0, d1) if x.__class__ is np.ndarray else x.swapaxes(d0, d1)
    return record("TransposeBackward0", (input,), data,
                  _transpose_backward, view_of=input, attrs={"d0": d0, "d1": d1},
                  view_fn=lambda b: transpose(b, d0, d1))


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


def movedim(input, source, destination):
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


moveaxis = movedim


def _t_backward(node, g):
    return (t(g),)


def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return record("TBackward0", (input,), input._data.T, _t_backward, view_of=input,
                  view_fn=t)


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
    if x.flags.c_contiguous:
        return input
    data = np.ascontiguousarray(x) if x.__class__ is np.ndarray else x.contiguous()
    return record("CloneBackward0", (input,), data, _clone_backward)


def _concat(parts, d, tensors):
    """``np.concatenate(parts, axis=d)``; on CUDA one strided copy kernel per part into slices
    of a fresh device array."""
    if all(p.__class__ is np.ndarray for p in parts):
        return np.concatenate(parts, axis=d)
    from .elementwise_call import check_same_device
    check_same_device(tensors)
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    shape = list(parts[0].shape)
    shape[d] = sum(p.shape[d] for p in parts)
    out = CudaArray.empty(shape, parts[0].dtype)
    start = 0
    for p in parts:
        k = p.shape[d]
        if k:
            dst = out[(slice(None),) * d + (slice(start, start + k),)]
            B.kernels().layout.copy_into(dst.kview(), p.kview())
        start += k
    return CudaArray(out.buf, out.shape)


def _cat_backward(node, g):
    from .basic import zeros
    a = node.ctx.attrs
    out, start = [], 0
    for size, dt in zip(a["sizes"], a["dtypes"]):
        if size is None:  # a skipped legacy empty 1-D tensor: its gradient is empty too
            out.append(zeros(0, dtype=dt, device=g.device))
            continue
        out.append(narrow(g, a["dim"], start, size))
        start += size
    return tuple(out)


def _tensor_list(tensors, fn):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    return list(tensors)


def cat(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    dt = D.result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    ref = next((t for t in tensors if t._data.ndim > 0 and t._data.size > 0), tensors[0])
    nd = ref._data.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap(dim, nd, "cat")
    parts, sizes = [], []
    for i, t_ in enumerate(tensors):
        a = t_._data
        if a.ndim == 1 and a.size == 0 and nd != 1:
            sizes.append(None)  # legacy: empty 1-D tensors are skipped by torch.cat
            continue
        if a.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{a.ndim}")
        for k in range(nd):
            if k != d and a.shape[k] != ref._data.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[k]} but got size {a.shape[k]} for tensor number {i} in "
                    "the list.")
        parts.append(a.astype(dt.np, copy=False))
        sizes.append(a.shape[d])
    data = _concat(parts, d, tensors)
    res = record("CatBackward0", tensors, data, _cat_backward,
                 attrs={"dim": d, "sizes": sizes, "dtypes": [t_.dtype for t_ in tensors]})
    return res if out is None else write_out("cat", res, out, tensors, cast_error=TypeError(
        f"torch.cat(): input types can't be cast to the desired output type "
        f"{D.scalar_name(out.dtype)}"))


concat = cat
concatenate = cat


def _stack_backward(node, g):
    a = node.ctx.attrs
    return tuple(select(g, a["dim"], i) for i in range(a["n"]))


def stack(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    for i, t_ in enumerate(tensors):
        if t_._data.shape != shp:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shp)} "
                               f"at entry 0 and {list(t_._data.shape)} at entry {i}")
    dt = D.result_type(*tensors)
    d = _wrap(dim, len(shp) + 1, "stack")
    parts = [t_._data.astype(dt.np, copy=False) for t_ in tensors]
    if any(p.__class__ is not np.ndarray for p in parts):
        data = _concat([p.expand_dims(d) if p.__class__ is not np.ndarray else p
                        for p in parts], d, tensors)
    else:
        data = np.stack(parts, axis=d)
    res = record("StackBackward0", tensors, data, _stack_backward,
                 attrs={"dim": d, "n": len(tensors)})
    return write_out("stack", res, out, tensors)


def hstack(tensors):
    tensors = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors):
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2)


def column_stack(tensors):
    tensors = _tensor_list(tensors, "column_stack")
    return hstack([reshape(t_, t_.numel(), 1) if t_.ndim <= 1 else t_ for t_ in tensors])


def _atleast(tensors, one):
    """``torch.atleast_nd``: one tensor -> one result; several (or one list) -> a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(one(t_) for t_ in tensors[0])
    if len(tensors) == 1:
        return one(tensors[0])
    return tuple(one(t_) for t_ in tensors)


def _atleast_1d(t_):
    return reshape(t_, 1) if t_.ndim == 0 else t_


def _atleast_2d(t_):
    if t_.ndim == 0:
        return reshape(t_, 1, 1)
    return unsqueeze(t_, 0) if t_.ndim == 1 else t_


def _atleast_3d(t_):
    if t_.ndim == 0:
        return reshape(t_, 1, 1, 1)
    if t_.ndim == 1:
        return unsqueeze(unsqueeze(t_, 0), -1)
    return unsqueeze(t_, -1) if t_.ndim == 2 else t_


def atleast_1d(*tensors):
    return _atleast(tensors, _atleast_1d)


def atleast_2d(*tensors):
    return _atleast(tensors, _atleast_2d)


def atleast_3d(*tensors):
    return _atleast(tensors, _atleast_3d)


def _split_backward(node, *grads):
    from .basic import zeros
    a = node.ctx.attrs
    parts = []
    for g, size in zip(grads, a["sizes"]):
        if g is None:
            shp = list(a["shape"])
            shp[a["dim"]] = size
            dev = next(x for x in grads if x is not None).device
            g = zeros(tuple(shp), dtype=a["dtype"], device=dev)
        parts.append(g)
    return (cat(parts, a["dim"]),)


def split(tensor, split_size_or_sections=_NOT_GIVEN, dim=0, *, split_size=_NOT_GIVEN):
    """``torch.split(tensor, split_size_or_sections, dim)`` / ``Tensor.split(split_size, dim)``."""
    if split_size is not _NOT_GIVEN:
        split_size_or_sections = split_size
    if split_size_or_sections is _NOT_GIVEN:
        raise TypeError('split() missing 1 required positional arguments: "split_size"')
    sec = split_size_or_sections
    if isinstance(sec, (tuple, list)) or (isinstance(sec, Tensor) and sec._data.ndim == 1):
        return split_with_sizes(tensor, sec, dim)
    step = _int(sec, "split", "split_size")
    shp = tensor._data.shape
    if not shp:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap(dim, len(shp), "split")
    n = shp[d]
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0 and n > 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {n}")
    sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
    return _split(tensor, d, sizes, "SplitBackward0")


def split_with_sizes(input, split_sizes, dim=0):
    sizes = list(_int_list((split_sizes,), "split_with_sizes", "split_sizes", allow_empty=True))
    shp = input._data.shape
    if not shp:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap(dim, len(shp), "split_with_sizes")
    n = shp[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                           f"(input tensor's size at dimension {d}), but got split_sizes="
                           f"{sizes}")
    return _split(input, d, sizes, "SplitWithSizesBackward0")


def _split(tensor, d, sizes, name):
    shp = tensor._data.shape
    bounds = np.cumsum([0] + sizes)
    datas = [tensor._data[(slice(None),) * d + (slice(int(bounds[i]), int(bounds[i + 1])),)]
             for i in range(len(sizes))]
    return record(name, (tensor,), datas, _split_backward, view_of=tensor,
                  attrs={"dim": d, "sizes": sizes, "shape": shp, "dtype": tensor.dtype})


def chunk(input, chunks, dim=0):
    chunks = _int(chunks, "chunk", "chunks")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap(dim, input._data.ndim, "chunk")
    n = input._data.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:  # PyTorch keeps the number of (empty) chunks
        return split_with_sizes(input, [0] * chunks, d)
    return split(input, size, d)


def tensor_split(input, indices_or_sections, dim=0):
    """``torch.tensor_split``: views made by slicing (SliceBackward0 each, as PyTorch)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap(dim, nd, "tensor_split")
    n = input._data.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.tolist()
    if isinstance(ios, (tuple, list)):
        idx = list(_int_list((ios,), "tensor_split", "indices", allow_empty=True))
        bounds = [0] + idx + [n]
    else:
        k = _int(ios, "tensor_split", "sections")
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        lo, extra = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + lo + (1 if i < extra else 0))
    from .index import getitem
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = min(max(a + n if a < 0 else a, 0), n)
        b = min(max(b + n if b < 0 else b, 0), n)
        out.append(getitem(input, (slice(None),) * d + (slice(a, max(a, b)),)))
    return tuple(out)


def _split_dir(input, indices_or_sections, fn, dim, need):
    nd = input._data.ndim
    if nd < need:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {nd} dimensions!")
    if not isinstance(indices_or_sections, (tuple, list, Tensor)):
        k = _int(indices_or_sections, fn, "sections")
        n = input._data.shape[dim]
        if k == 0 or n % k:
            raise RuntimeError(f"torch.{fn} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {n} is not divisible by the split_size "
                               f"{k}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, "hsplit",
                      1 if input._data.ndim >= 2 else 0, 1)


def vsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, "vsplit", 0, 2)


def dsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, "dsplit", 2, 3)


def _unbind_backward(node, *grads):
    from .basic import zeros
    a = node.ctx.attrs
    shp = list(a["shape"])
    del shp[a["dim"]]
    dev = next(x for x in grads if x is not None).device
    parts = [g if g is not None else zeros(tuple(shp), dtype=a["dtype"], device=dev)
             for g in grads]
    return (stack(parts, a["dim"]),)


def unbind(input, dim=0):
    shp = input._data.shape
    d = _wrap_nonscalar(dim, len(shp), "unbind", say_wrapped=True)
    datas = [input._data[(slice(None),) * d + (i,)] for i in range(shp[d])]
    return record("UnbindBackward0", (input,), datas, _unbind_backward, view_of=input,
                  attrs={"dim": d, "shape": shp, "dtype": input.dtype})


def narrow(input, dim, start, length):
    from .index import getitem
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd, "narrow")
    if isinstance(start, Tensor) and (start._data.ndim != 0 or start._data.dtype.kind not in "iu"):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start, length = _int(start, "narrow", "start"), _int(length, "narrow", "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    cur = input._data.shape[d]
    if not -cur <= start <= cur:
        raise IndexError(f"start out of range (expected to be in range of [{-cur}, {cur}], but "
                         f"got {start})")
    if start < 0:
        start += cur
    if start + length > cur:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({cur}).")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):
    from .index import getitem
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd, "select")
    index = _int(index, "select", "index")
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    return getitem(input, (slice(None),) * d + (index,))


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


def roll(input, shifts, dims=None):
    """``torch.roll``: NumPy's roll on the CPU; on CUDA one strided copy per rolled piece
    (``layout.copy_into``), no transfer. ``dims=None`` rolls the flattened tensor (one
    RollBackward0 node, as PyTorch)."""
    shifts = _int_list((shifts,), "roll", "shifts", allow_empty=True)
    if not shifts:
        raise RuntimeError("`shifts` required")
    x = input._data
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
    from .reduce import sum as rsum
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
    dims = _int_list(args, "tile", "dims", dims, allow_empty=True)
    if len(dims) < input._data.ndim:
        dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


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
    return record("DiagonalBackward0", (input,), _strided(x, shape, st, off),
                  _diagonal_backward, view_of=input,
                  attrs={"shape": tuple(x.shape), "offset": offset, "d1": d1, "d2": d2},
                  view_fn=lambda b: diagonal(b, offset, d1, d2))


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
