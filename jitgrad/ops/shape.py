"""Shape ops: views (reshape, view, transpose, permute, expand, squeeze, unsqueeze) and
cat/stack/split/chunk. Views share storage and the version counter with their base."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .composite import record

__all__ = ["reshape", "view", "flatten", "unflatten", "squeeze", "unsqueeze", "expand",
           "expand_as", "broadcast_to", "permute", "transpose", "swapaxes", "t", "cat", "concat",
           "stack", "split", "chunk", "unbind", "contiguous", "movedim", "flip", "repeat",
           "broadcast_tensors", "tile", "view_as", "reshape_as", "hstack", "vstack", "narrow",
           "select", "atleast_1d", "roll"]


def _wrap(dim, ndim):
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, (int, np.integer)) or not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return int(dim) % max(ndim, 1)


def _infer_shape(shape, numel):
    shape = list(shape)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = list(shape[0])
    shape = [int(s) for s in shape]
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _reshape_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _shares(a, b) -> bool:
    if a.__class__ is not np.ndarray:
        return a.shares_memory(b)
    return np.shares_memory(a, b)


def _reshape_to(shape):
    """The replay of a reshape-like view (view/reshape/flatten/squeeze/unsqueeze): the same
    elements in the same order, so a reshape to the view's shape (``composite.record``)."""
    shape = tuple(shape)
    return lambda b: reshape(b, shape)


def _view_like(x, data, name):
    return record(name, (x,), data, _reshape_backward,
                  view_of=x if _shares(data, x._data) else None,
                  attrs={"shape": tuple(x._data.shape)}, view_fn=_reshape_to(data.shape))


def reshape(input, *shape):
    shape = _infer_shape(shape, input._data.size)
    data = input._data.reshape(shape)
    shares = _shares(data, input._data) if data.size else True
    return _view_like(input, data, "ViewBackward0" if shares else "UnsafeViewBackward0")


def view(input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        from .. import _dtype as D
        dt = D.to_dtype(shape[0])
        if dt.itemsize != input._data.itemsize:
            raise RuntimeError("view(dtype) with a different element size is not supported")
        return Tensor._make(input._data.view(dt.np))
    shape = _infer_shape(shape, input._data.size)
    if input._data.__class__ is not np.ndarray:
        st = input._data.view_strides(shape)
        if st is None:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return _view_like(input, input._data.strided(shape, st, input._data.offset),
                          "ViewBackward0")
    try:
        data = input._data.view()
        data.shape = shape  # raises when a copy would be needed, like torch.view
    except AttributeError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None
    return _view_like(input, data, "ViewBackward0")


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, 1)
    s, e = _wrap(start_dim, nd), _wrap(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (-1,) + shp[e + 1:])


def unflatten(input, dim, sizes):
    shp = input._data.shape
    d = _wrap(dim, len(shp))
    return reshape(input, shp[:d] + tuple(sizes) + shp[d + 1:])


def _squeeze_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def squeeze(input, dim=None):
    shp = input._data.shape
    if dim is None:
        dims, name = tuple(i for i, s in enumerate(shp) if s == 1), "SqueezeBackward0"
    elif isinstance(dim, (tuple, list)):
        dims, name = tuple(_wrap(d, len(shp)) for d in dim), "SqueezeBackward2"
        dims = tuple(d for d in dims if shp[d] == 1)
    else:
        d = _wrap(dim, len(shp))
        dims, name = ((d,) if shp and shp[d] == 1 else ()), "SqueezeBackward1"
    data = input._data.reshape(tuple(s for i, s in enumerate(shp) if i not in dims))
    return record(name, (input,), data, _squeeze_backward, view_of=input,
                  attrs={"shape": shp}, view_fn=_reshape_to(data.shape))


def unsqueeze(input, dim):
    nd = input._data.ndim
    d = _wrap(dim, nd + 1)
    x = input._data
    data = np.expand_dims(x, d) if x.__class__ is np.ndarray else x.expand_dims(d)
    return record("UnsqueezeBackward0", (input,), data, _squeeze_backward, view_of=input,
                  attrs={"shape": input._data.shape}, view_fn=_reshape_to(data.shape))


def _expand_backward(node, g):
    return (g,)  # the engine sums the gradient back to the input's shape


def expand(input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shp)}}}, size={list(sizes)}): the "
                           "number of sizes provided (%d) must be greater or equal to the number "
                           "of dimensions in the tensor (%d)" % (len(sizes), len(shp)))
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        s = int(s)
        if i < lead:
            if s < 0:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing "
                                   "dimension")
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
    from .elementwise_call import broadcast_shapes
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def _permute_backward(node, g):
    inv = np.argsort(node.ctx.attrs["dims"])
    return (permute(g, tuple(int(i) for i in inv)),)


def permute(input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return record("PermuteBackward0", (input,), input._data.transpose(dims), _permute_backward,
                  view_of=input, attrs={"dims": dims}, view_fn=lambda b: permute(b, dims))


def _transpose_backward(node, g):
    a = node.ctx.attrs
    return (transpose(g, a["d0"], a["d1"]),)


def transpose(input, dim0, dim1):
    nd = input._data.ndim
    d0, d1 = _wrap(dim0, nd), _wrap(dim1, nd)
    x = input._data
    return record("TransposeBackward0", (input,),
                  np.swapaxes(x, d0, d1) if x.__class__ is np.ndarray else x.swapaxes(d0, d1),
                  _transpose_backward, view_of=input, attrs={"d0": d0, "d1": d1},
                  view_fn=lambda b: transpose(b, d0, d1))


swapaxes = transpose


def movedim(input, source, destination):
    nd = input._data.ndim
    order = list(np.moveaxis(np.arange(nd), source, destination))
    return permute(input, tuple(int(i) for i in order))


def _t_backward(node, g):
    return (t(g),)


def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return record("TBackward0", (input,), input._data.T, _t_backward, view_of=input,
                  view_fn=t)


def contiguous(input, memory_format=None):
    if input._data.flags.c_contiguous:
        return input
    from .basic import clone
    return clone(input)


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
    a = node.ctx.attrs
    out, start = [], 0
    for size in a["sizes"]:
        out.append(narrow(g, a["dim"], start, size) if size is not None else None)
        start += size or 0
    return tuple(out)


def cat(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    from .. import _dtype as D
    dt = D.result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    ref = next((t for t in tensors if t._data.ndim > 0 and t._data.size > 0), tensors[0])
    nd = ref._data.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap(dim, nd)
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
    return record("CatBackward0", tensors, data, _cat_backward, attrs={"dim": d, "sizes": sizes})


concat = cat


def _stack_backward(node, g):
    a = node.ctx.attrs
    return tuple(select(g, a["dim"], i) for i in range(a["n"]))


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    for i, t_ in enumerate(tensors):
        if t_._data.shape != shp:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shp)} "
                               f"at entry 0 and {list(t_._data.shape)} at entry {i}")
    from .. import _dtype as D
    dt = D.result_type(*tensors)
    d = _wrap(dim, len(shp) + 1)
    parts = [t_._data.astype(dt.np, copy=False) for t_ in tensors]
    if any(p.__class__ is not np.ndarray for p in parts):
        data = _concat([p.expand_dims(d) if p.__class__ is not np.ndarray else p
                        for p in parts], d, tensors)
    else:
        data = np.stack(parts, axis=d)
    return record("StackBackward0", tensors, data, _stack_backward,
                  attrs={"dim": d, "n": len(tensors)})


def hstack(tensors):
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t_) for t_ in tensors], 0)


def atleast_1d(t_):
    return reshape(t_, 1) if t_.ndim == 0 else t_


def atleast_2d(t_):
    return reshape(t_, 1, -1) if t_.ndim < 2 else t_


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


def split(tensor, split_size_or_sections, dim=0):
    shp = tensor._data.shape
    d = _wrap(dim, len(shp))
    n = shp[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
        name = "SplitBackward0"
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
        name = "SplitWithSizesBackward0"
    bounds = np.cumsum([0] + sizes)
    datas = [tensor._data[(slice(None),) * d + (slice(bounds[i], bounds[i + 1]),)]
             for i in range(len(sizes))]
    return record(name, (tensor,), datas, _split_backward, view_of=tensor,
                  attrs={"dim": d, "sizes": sizes, "shape": shp, "dtype": tensor.dtype})


def chunk(input, chunks, dim=0):
    n = input._data.shape[_wrap(dim, input._data.ndim)]
    size = -(-n // int(chunks)) if n else 1
    return split(input, max(size, 1), dim)


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
    d = _wrap(dim, len(shp))
    datas = [input._data[(slice(None),) * d + (i,)] for i in range(shp[d])]
    return record("UnbindBackward0", (input,), datas, _unbind_backward, view_of=input,
                  attrs={"dim": d, "shape": shp, "dtype": input.dtype})


def narrow(input, dim, start, length):
    from .index import getitem
    d = _wrap(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (slice(int(start), int(start) + int(length)),))


def select(input, dim, index):
    from .index import getitem
    d = _wrap(dim, input._data.ndim)
    return getitem(input, (slice(None),) * d + (int(index),))


def _flip_backward(node, g):
    return (flip(g, node.ctx.attrs["dims"]),)


def flip(input, dims):
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    nd = input._data.ndim
    dims = tuple(_wrap(d, nd) for d in dims)
    x = input._data
    if x.__class__ is not np.ndarray:
        # CUDA: the same reversed (negative-stride) view, materialized by the layout copy
        # kernel; the negative strides only live in this temporary View
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        st, off = list(x.st), x.offset
        for d in dims:
            if x.shape[d] > 1:
                off += (x.shape[d] - 1) * st[d]
                st[d] = -st[d]
        v = B.kernels().View(x.buf, x.shape, st, off)
        data = CudaArray.wrap(B.kernels().layout.contiguous(v)) if x.size else x.copy()
        return record("FlipBackward0", (input,), data, _flip_backward, attrs={"dims": dims})
    # a copy, like torch.flip (negative strides never escape into user tensors)
    data = np.ascontiguousarray(np.flip(input._data, dims))
    return record("FlipBackward0", (input,), data, _flip_backward, attrs={"dims": dims})


def _roll_backward(node, g):
    a = node.ctx.attrs
    return (roll(g, tuple(-s for s in a["shifts"]), a["dims"]),)


def roll(input, shifts, dims=None):
    """``torch.roll``: NumPy's roll on the CPU; on CUDA one strided copy per rolled piece
    (``layout.copy_into``), no transfer. ``dims=None`` rolls the flattened tensor."""
    if dims is None:
        shp = tuple(input._data.shape)
        return reshape(roll(flatten(input), shifts, 0), shp)
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    nd = input._data.ndim
    dims = tuple(_wrap(d, nd) for d in dims)
    shifts = tuple(int(s) for s in shifts)
    x = input._data
    if x.__class__ is np.ndarray:
        data = np.roll(x, shifts, dims)
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


def repeat(input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    nd = input._data.ndim
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    x = reshape(input, (1,) * (len(sizes) - nd) + tuple(input._data.shape))
    # repeat = expand over interleaved unit dims, then reshape (differentiable through both)
    shp = x._data.shape
    inter = []
    for s in shp:
        inter += [1, s]
    y = reshape(x, tuple(inter))
    target = []
    for r, s in zip(sizes, shp):
        target += [int(r), s]
    y = expand(y, tuple(target))
    return reshape(y, tuple(int(r) * s for r, s in zip(sizes, shp)))


def tile(input, dims):
    dims = tuple(dims)
    if len(dims) < input._data.ndim:
        dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)
