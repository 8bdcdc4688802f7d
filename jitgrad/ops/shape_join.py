"""Joining tensors and slicing them apart again: cat/stack (and the h/v/d/column stacks,
atleast_nd), split/chunk/tensor_split/h/v/dsplit/unbind, narrow/select (the views cat's and
stack's gradients are made of)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .out import write_out
from .parser_errors import input_type_error, parser_errors, parser_type_name, sequence_type_error
from .shape_args import _NOT_GIVEN, _int, _int_list, _wrap, _wrap_nonscalar, parser_overloads
from .shape_views import reshape, unsqueeze


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
                        f"{parser_type_name(tensors)}")
    error = sequence_type_error(tensors)  # (the general path only: the fast one checked)
    if error is not None:
        raise error
    return list(tensors)


def _plain_arrays(tensors, dim, stacked):
    """(arrays, dim wrapped, dtype) when ``tensors`` is a list/tuple of CPU tensors of one
    dtype and rank >= 1 (0 allowed for stack), ``dim`` a Python int in range, and the shapes
    agree (off ``dim`` for cat, wholly for stack): then no check of cat's/stack's can fail, no
    operand needs a cast and none is a legacy empty 1-D tensor to skip. None otherwise: the
    general path decides (and raises PyTorch's errors). Per-op overhead: cat of a few small
    tensors is common."""
    if tensors.__class__ is not list and tensors.__class__ is not tuple or not tensors or \
            dim.__class__ is not int:
        return None
    t0 = tensors[0]
    if not isinstance(t0, Tensor):
        return None
    a0 = t0._data
    if a0.__class__ is not np.ndarray or not (a0.ndim or stacked):
        return None
    shape, npdt = a0.shape, a0.dtype
    nd = len(shape) + stacked
    if not -nd <= dim < nd:
        return None
    d = dim % nd
    arrays = []
    for t_ in tensors:
        if not isinstance(t_, Tensor):
            return None
        a = t_._data
        if a.__class__ is not np.ndarray or a.dtype != npdt:
            return None
        if a.shape != shape and (stacked or len(a.shape) != len(shape) or any(
                n != m for k, (n, m) in enumerate(zip(a.shape, shape)) if k != d)):
            return None
        arrays.append(a)
    dt = t0.dtype
    return (arrays, d, dt) if dt.np == npdt else None


@parser_errors
def cat(tensors, dim=0, *, out=None):
    plain = _plain_arrays(tensors, dim, 0) if out is None else None
    if plain is not None:
        arrays, d, dt = plain
        return record("CatBackward0", list(tensors), np.concatenate(arrays, axis=d),
                      _cat_backward, attrs={"dim": d, "sizes": [a.shape[d] for a in arrays],
                                            "dtypes": [dt] * len(arrays)})
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
        f"{D.scalar_name(out.dtype)}"), iterator=False)


concat = cat
concatenate = cat


def _stack_backward(node, g):
    a = node.ctx.attrs
    return tuple(select(g, a["dim"], i) for i in range(a["n"]))


@parser_errors
def stack(tensors, dim=0, *, out=None):
    plain = _plain_arrays(tensors, dim, 1) if out is None else None
    if plain is not None:
        # np.stack's own steps (a unit axis on each, one concatenate): the same copy, less
        # Python around it
        arrays, d, _ = plain
        unit = (slice(None),) * d + (None,)
        return record("StackBackward0", list(tensors),
                      np.concatenate([a[unit] for a in arrays], axis=d), _stack_backward,
                      attrs={"dim": d, "n": len(arrays)})
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
    return write_out("stack", res, out, tensors, iterator=False)


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
    if split_size_or_sections is _NOT_GIVEN:  # (torch.split is Python: Python's words)
        raise TypeError("split() missing 1 required positional argument: "
                        "'split_size_or_sections'")
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


def split_method(self, split_size=_NOT_GIVEN, dim=0):
    """``Tensor.split`` (Python in PyTorch too, so Python's words for a missing size)."""
    if split_size is _NOT_GIVEN:
        raise TypeError("Tensor.split() missing 1 required positional argument: 'split_size'")
    return split(self, split_size, dim)


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


@parser_errors
def chunk(input, chunks, dim=0):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError, before the chunks'
        nd = input._data.ndim
    except AttributeError:
        raise input_type_error("chunk", (input,), {}) from None
    chunks = _int(chunks, "chunk", "chunks")
    if nd == 0:
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
    datas = [input._data[(slice(None),) * d + (i, ...)] for i in range(shp[d])]  # 0-d views
    return record("UnbindBackward0", (input,), datas, _unbind_backward, view_of=input,
                  attrs={"dim": d, "shape": shp, "dtype": input.dtype})


def _narrow(input, dim, start, length):
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


_NARROW_SIGNATURES = ("Tensor input, int dim, Tensor start, int length",
                      "Tensor input, int dim, int start, int length")
narrow = parser_overloads("narrow", _NARROW_SIGNATURES)(_narrow)
narrow_method = parser_overloads("narrow", _NARROW_SIGNATURES, method=True)(_narrow)


@parser_errors
def select(input, dim, index):
    from .index import getitem
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        nd = input._data.ndim
    except AttributeError:
        raise input_type_error("select", (input,), {}) from None
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd, "select")
    index = _int(index, "select", "index")
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    return getitem(input, (slice(None),) * d + (index,))
