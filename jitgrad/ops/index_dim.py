"""Ops that index one dimension with a 1-D index (index_select, index_add, index_copy,
index_fill) and the flat-index pair take / put, CPU and CUDA.

Each names its ``index_rules`` rule (PyTorch's dtype and range errors differ per op:
``index_fill``, ``take`` and ``put`` read negative indices from the end, the others refuse
them). The CUDA paths are the gather/scatter kernels over a 1-D index broadcast along the other
dims (``cuda_kernels.index``), so they check indices on the device the same way.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .gather_scatter import _dst, _fresh_copy, _is_cuda, _kernels, gather_data, scatter_data
from .gather_scatter import wrap_dim as _wrap_dim
from .index_rules import check_range, device_check, dtype_word, index_data
from .parser_errors import argument_type_error, is_int, parser_errors, with_keyword_defaults

__all__ = ["index_select", "index_add", "index_copy", "index_fill", "take", "put",
           "empty_self_checks"]


def _same_device(*ts):
    if _is_cuda(*(t._data for t in ts if isinstance(t, Tensor))):
        from .elementwise_call import check_same_device
        check_same_device(tuple(t for t in ts if isinstance(t, Tensor)))


def _size(x, d):
    return x.shape[d] if x.ndim else 1


def _zeros(shape, like):
    if like.__class__ is np.ndarray:
        return np.zeros(shape, like.dtype)
    from .factory_args import _device_full
    return _device_full(tuple(shape), 0, like.dtype)


def _along(shape, d, n):
    """The index's 1-D positions broadcast over ``shape`` with ``n`` entries along ``d``."""
    return tuple(n if i == d else s for i, s in enumerate(shape))


def _write_along(data, d, idx, src, rule, add=False):
    """``data[..., idx, ...] = src`` (or ``+=`` with repeated indices summed) along ``d`` in
    place: NumPy slicing on the CPU (after the rule's range check), the scatter kernels over the
    broadcast index on CUDA."""
    if _is_cuda(data, idx):
        shape = _along(data.shape, d, idx.size)
        s = src if not hasattr(src, "shape") or tuple(src.shape) in (shape, ()) else \
            src.reshape(shape)
        scatter_data(data, d, _broadcast_index(idx, shape, d), s, "add" if add else "set", rule)
        return
    target = data.reshape(1) if data.ndim == 0 else data
    if target.size == 0 and target.shape[d]:
        return  # PyTorch iterates over no element: nothing is checked
    idx = check_range(idx, target.shape[d], d, rule)
    key = (slice(None),) * d + (idx,)
    if np.ndim(src) and np.shape(src) != target[key].shape:
        src = np.reshape(src, target[key].shape)
    if add:
        np.add.at(target, key, src)
    else:
        target[key] = src


def _broadcast_index(idx, shape, d):
    """A 1-D CPU/CUDA index as an index tensor of ``shape`` varying along ``d`` only."""
    if not shape:
        return idx.reshape(())
    view = [1] * len(shape)
    view[d] = -1
    i = idx.reshape(tuple(view)) if idx.__class__ is np.ndarray else idx.reshape(view)
    return np.broadcast_to(i, shape) if i.__class__ is np.ndarray else i.broadcast_to(shape)


# ----------------------------------------------------------------------------- index_select


def empty_self_checks(idx, shape, d) -> bool:
    """PyTorch's index_select (and embedding) on an empty tensor of 2+ dims: its own errors,
    and True when the result is empty without looking further. (A CUDA index is only checked
    for the empty dim there: its values would need a device->host read for an empty result.)"""
    if len(shape) < 2 or not idx.size or int(np.prod(shape)) != 0:
        return False
    size = shape[d]
    if size == 0:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if idx.__class__ is np.ndarray:
        bad = idx[(idx < 0) | (idx >= size)]
        if bad.size:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(bad[0])} "
                               f"axis_dim={size}")
    return True


def _index_select_backward(node, g):
    a = node.ctx.attrs
    return (index_add(Tensor._make(_zeros(a["shape"], g._data)), a["dim"],
                      Tensor._make(a["index"]), g),)


@parser_errors
def index_select(input, dim, index, *, _index_position=3):
    if dim.__class__ is not int and not is_int(dim):  # (not a tuple index error further in)
        raise argument_type_error("index_select", "dim", _index_position - 1, "int", dim)
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    idx = index_data(index, "index_select", _index_position)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    _same_device(input, index)
    idx = idx.reshape(-1)
    if x.ndim == 0 and idx.size > 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    rule = "index_select_dim1" if x.ndim > 1 and d == 1 else "index_select"
    if empty_self_checks(idx, x.shape, d):
        data = _zeros(_along(x.shape, d, idx.size), x)
    elif _is_cuda(x, idx):
        from .._cuda_array import CudaArray
        src = x.reshape((1,)) if x.ndim == 0 else x
        data = CudaArray.wrap(_kernels().index.index_select(
            src.kview(), d, idx.kview(), device_check(rule, d)))
        if x.ndim == 0:
            data = data.reshape(())
    else:  # np.take along d (a broadcast gather would be ~50x slower)
        data = np.take(x, check_range(idx, _size(x, d), d, rule), axis=d) if x.ndim else \
            gather_data(x, 0, idx, rule)
        if x.ndim == 0:
            data = data.reshape(())
    return record("IndexSelectBackward0", (input,), data, _index_select_backward,
                  attrs={"shape": tuple(x.shape), "dim": d, "index": idx})


# ----------------------------------------------------------------------------- index_add / copy


def _source_checks(input, d, idx, source, op):
    """index_add_/index_copy_'s checks of the source against self and the index."""
    x, s = input._data, source._data
    if op == "index_add":
        if source.dtype is not input.dtype:
            raise RuntimeError(f"index_add_(): self ({dtype_word(input.dtype)}) and source "
                               f"({dtype_word(source.dtype)}) must have the same scalar type")
        ns = s.shape[d] if s.ndim else 1
        if idx.size != ns:
            raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                               f"source.size(dim): ({ns}), for dim: {d}")
        if max(x.ndim, 1) != max(s.ndim, 1) or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, s.shape)) if i != d):
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                               f"specified dimension. Got self.shape = {list(x.shape)} "
                               f"source.shape = {list(s.shape)}")
        return
    ns = s.shape[d] if s.ndim else 1
    if idx.size != ns:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({ns})")
    xs = [v for i, v in enumerate(x.shape) if i != d]
    ss = [v for i, v in enumerate(s.shape) if i != d]
    if xs != ss:
        bad = next((i for i, (a, b) in enumerate(zip(xs, ss)) if a != b), 0)
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {xs[bad] if xs else 1} at dimension "
                           f"{bad} and source slice shape: {ss[bad] if ss else 1} at dimension "
                           f"{bad}.")
    if source.dtype is not input.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {dtype_word(input.dtype)} and (source) "
                           f"{dtype_word(source.dtype)}")


# x.index_select(0, i): the method's positions count from self (index is position 2)
index_select_method = parser_errors(with_keyword_defaults(index_select.__wrapped__,
                                                          _index_position=2))


def _index_add_backward(node, g):
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    gsrc = None
    if need_src:
        gsrc = index_select(g, a["dim"], Tensor._make(a["index"]))
        if a["alpha"] != 1:
            gsrc = gsrc * a["alpha"]
        if a["src_shape"] != tuple(gsrc.shape):
            gsrc = gsrc.reshape(a["src_shape"])
    return (g if need_self else None, gsrc)


def index_add(input, dim, index, source, *, alpha=1):
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    idx = index_data(index, "index_add")
    if idx.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{idx.ndim} with type: {dtype_word(index.dtype)} and size: "
                         f"{list(idx.shape)}")
    idx = idx.reshape(-1)
    _source_checks(input, d, idx, source, "index_add")
    _same_device(input, index, source)
    data = _fresh_copy(x)
    rule = "index_add" if (x.ndim > 1 and d in (0, x.ndim - 1) and alpha == 1 and
                           index.dtype is D.int64) else "index_add_loop"
    if x.size == 0 and x.ndim > 1:
        pass  # PyTorch returns before looking at the indices
    elif _is_cuda(x, idx):
        if data.ndim == 0:  # no 0-d kernel: the CPU loop on host copies (ops/host_staged.py)
            from .host_staged import host_inplace

            def add_on_host(dst, i, src):
                _write_along(dst, d, i, src * alpha if alpha != 1 else src, rule, add=True)
            host_inplace(add_on_host, data, idx, source._data)
        else:
            _kernels().index.index_add(_dst(data), d, idx.kview(), source._data.kview(),
                                       alpha, device_check(rule, d))
    else:
        _write_along(data, d, idx, source._data * alpha if alpha != 1 else source._data, rule,
                     add=True)
    return record("IndexAddBackward0", (input, source), data, _index_add_backward,
                  attrs={"dim": d, "index": idx, "alpha": alpha,
                         "src_shape": tuple(source._data.shape)})


def _index_copy_backward(node, g):
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    it = Tensor._make(a["index"])
    gs = index_fill(g, a["dim"], it, 0) if need_self else None
    gsrc = index_select(g, a["dim"], it).reshape(a["src_shape"]) if need_src else None
    return (gs, gsrc)


def index_copy(input, dim, index, source):
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    idx = index_data(index, "index_copy")
    if idx.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    idx = idx.reshape(-1)
    _source_checks(input, d, idx, source, "index_copy")
    _same_device(input, index, source)
    data = _fresh_copy(x)
    _write_along(data, d, idx, source._data, "index_copy")
    return record("IndexCopyBackward0", (input, source), data, _index_copy_backward,
                  attrs={"dim": d, "index": idx, "src_shape": tuple(source._data.shape)})


# ----------------------------------------------------------------------------- index_fill


def _index_fill_backward(node, g):
    a = node.ctx.attrs
    needs = node.ctx.needs_input_grad
    it = Tensor._make(a["index"])
    gs = index_fill(g, a["dim"], it, 0) if needs[0] else None
    if len(needs) == 1:
        return (gs,)
    gv = None
    if needs[1]:  # the sum of g over the filled elements (each counted once)
        gv = (g - index_fill(g, a["dim"], it, 0)).sum()
    return (gs, gv)


def index_fill(input, dim, index, value):
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    idx = index_data(index, "index_fill")
    if idx.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    tvalue = None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        tvalue = value
        value = value.item() if value._data.__class__ is np.ndarray or \
            x.__class__ is np.ndarray else value.detach()
    else:
        from .factories import _checked_fill  # PyTorch's Scalar.to<T> overflow check
        value = _checked_fill(value, input.dtype)
    _same_device(input, index)
    idx = idx.reshape(-1)
    data = _fresh_copy(x)
    _write_along(data, d, idx, value._data if isinstance(value, Tensor) else value,
                 "index_fill")
    name, inputs = ("IndexFillBackward0", (input,)) if tvalue is None else \
        ("IndexFillBackward1", (input, tvalue))
    return record(name, inputs, data, _index_fill_backward, attrs={"dim": d, "index": idx})


# ----------------------------------------------------------------------------- take / put


def _flat_index(input, index, rule):
    idx = index_data(index, rule)
    _same_device(input, index)
    if input._data.size == 0 and idx.size:
        raise IndexError(f"{rule}(): tried to take from an empty tensor" if rule == "take" else
                         "put_(): Tried to put elements into an empty tensor")
    return idx


def _take_backward(node, g):
    from .gather_scatter import scatter_into_zeros
    a = node.ctx.attrs
    n = int(np.prod(a["shape"]))
    flat = scatter_into_zeros(g.reshape(-1), (n,), 0, a["index"].reshape(-1))
    return (flat.reshape(a["shape"]),)


@parser_errors
def take(input, index):
    """``torch.take``: elements of the flattened input at ``index`` (negatives count from the
    end); the result has the index's shape (TakeBackward0)."""
    x = input._data
    idx = _flat_index(input, index, "take")
    flat = x.reshape(-1) if x.__class__ is np.ndarray else x.reshape((x.size,))
    i1 = idx.reshape(-1) if idx.__class__ is np.ndarray else idx.reshape((idx.size,))
    if not _is_cuda(x, idx):
        i1 = check_range(i1, x.size, 0, "take")
    data = gather_data(flat, 0, i1, "take")
    data = data.reshape(idx.shape) if data.__class__ is np.ndarray else \
        data.reshape(tuple(idx.shape))
    return record("TakeBackward0", (input,), data, _take_backward,
                  attrs={"shape": tuple(x.shape), "index": i1})


def _put_backward(node, g):
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    it = Tensor._make(a["index"])
    gs = gsrc = None
    if need_self:
        gs = g if a["accumulate"] else put(g, it, Tensor._make(_zeros(a["src_shape"],
                                                                       g._data)))
    if need_src:
        gsrc = take(g, it).reshape(a["src_shape"])
    return (gs, gsrc)


def put(input, index, source, accumulate=False):
    """``torch.put``: ``source``'s elements written (or, ``accumulate``, added) into the
    flattened input at ``index`` (negatives count from the end) (PutBackward0)."""
    x = input._data
    idx = _flat_index(input, index, "put")
    if source._data.size != idx.size:
        raise IndexError("put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source._data.size}, "
                           f"index.numel() = {idx.size}")
    if source.dtype is not input.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {dtype_word(input.dtype)} and source.dtype = "
                           f"{dtype_word(source.dtype)}")
    _same_device(input, index, source)
    data = _fresh_copy(x)
    n = int(idx.size)
    flat = data.reshape(-1) if data.__class__ is np.ndarray else data.reshape((data.size,))
    i1 = idx.reshape(-1) if idx.__class__ is np.ndarray else idx.reshape((n,))
    s1 = source._data.reshape(-1) if source._data.__class__ is np.ndarray else \
        source._data.reshape((n,))
    if data.__class__ is not np.ndarray:
        from .._cuda_array import CudaArray
        flat = CudaArray(data.buf, (data.size,))
    scatter_data(flat, 0, i1, s1, "add" if accumulate else "set", "put")
    return record("PutBackward0", (input, source), data, _put_backward,
                  attrs={"index": i1, "accumulate": accumulate,
                         "src_shape": tuple(source._data.shape)})
