"""Indexing: ``x[key]`` (ints, slices with steps, None, Ellipsis, int/bool tensors), ``x[key] =
v`` recorded as CopySlices, gather, scatter, index_select, masked_fill.

Reading ``x[key]`` and "embedding g into zeros at key" are each other's VJPs, so gradients of any
order flow through indexing.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..autograd.node import Ctx, FunctionNode, node_class
from ..tensor import Tensor
from . import inplace as _inplace
from .composite import record
from .index_rules import check_range

__all__ = ["getitem", "setitem", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "index_copy", "index_fill", "take", "put", "masked_fill",
           "masked_select", "nonzero", "scatter_into_zeros", "index_add", "take_along_dim",
           "index_put", "argwhere"]


def _cuda():
    """The CUDA half of indexing (``index_cuda``), imported on first use."""
    from . import index_cuda
    return index_cuda


# ----------------------------------------------------------------------------- keys


_SEQUENCE_KEY_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
    "a different result (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/python_variable_indexing.cpp:349.)")
_UINT8_KEY_WARNING = (
    "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead. "
    "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/IndexingUtils.h:37.)")
_INDEX_DTYPE_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


def sequence_key(key: list):
    """PyTorch (and old NumPy) read a short list holding sequences, tensors, slices, None or
    Ellipsis as a tuple of indices (with a deprecation warning); other lists are one index."""
    if len(key) < 32:
        for e in key:
            if e is None or e is Ellipsis or isinstance(
                    e, (list, tuple, slice, str, Tensor, np.ndarray, range)):
                import warnings
                warnings.warn(_SEQUENCE_KEY_WARNING, UserWarning, stacklevel=3)
                return tuple(key)
    return key


def _bad_key(k):
    t = type(k)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
    if isinstance(k, str):
        return TypeError(f"new(): invalid data type '{name}'")
    return IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                      f"Variables are valid indices (got {name})")


def _uint8_mask(data):
    import warnings
    warnings.warn(_UINT8_KEY_WARNING, UserWarning, stacklevel=4)
    return data.astype(bool) if data.__class__ is np.ndarray else data.astype(np.bool_)


def _normalize_key(key):
    """Turn a user key into a tuple of (kind, value) components with NumPy-ready values."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            kd = k._data.dtype
            if kd.kind == "f" or kd == np.int8 or kd == np.int16:
                raise IndexError(_INDEX_DTYPE_ERROR)
            if k._data.__class__ is not np.ndarray and k.ndim != 0:
                # CUDA index/mask tensors stay on the device ("d" kinds: no host bounds check)
                if kd == np.uint8:
                    out.append(("dmask", _uint8_mask(k._data)))
                else:
                    out.append(("dmask" if kd == np.bool_ else "darray", k._data))
                continue
            if kd == np.bool_:
                out.append(("mask", k._data))
            elif kd == np.uint8:
                out.append(("mask", _uint8_mask(k._host())))
            elif k.ndim == 0:
                out.append(("int", int(k)))
            else:
                out.append(("array", k._data.astype(np.int64, copy=False)))
        elif isinstance(k, bool):
            out.append(("mask", np.asarray(k)))
        elif isinstance(k, (int, np.integer)):
            out.append(("int", int(k)))
        elif isinstance(k, slice):
            for v in (k.start, k.stop, k.step):
                if v is not None and not isinstance(v, (int, np.integer, Tensor)):
                    raise TypeError("slice indices must be integers or None or have an "
                                    "__index__ method")
            step = 1 if k.step is None else int(k.step)
            if step <= 0:
                raise ValueError("slice step cannot be zero" if step == 0 else
                                 "step must be greater than zero")
            out.append(("slice", slice(None if k.start is None else int(k.start),
                                       None if k.stop is None else int(k.stop), step)))
        elif k is None:
            out.append(("none", None))
        elif k is Ellipsis:
            out.append(("ellipsis", Ellipsis))
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray(k)
            if arr.dtype == np.bool_:
                out.append(("mask", arr))
            elif arr.dtype == np.uint8 and isinstance(k, np.ndarray):
                out.append(("mask", _uint8_mask(arr)))
            elif arr.dtype.kind in "iu" or arr.size == 0:
                if arr.ndim == 0:
                    out.append(("int", int(arr)))
                else:
                    out.append(("array", arr.astype(np.int64)))
            else:
                raise IndexError(_INDEX_DTYPE_ERROR)
        else:
            raise _bad_key(k)
    return out


def _is_basic(comps):
    return all(kind in ("int", "slice", "none", "ellipsis") for kind, _ in comps)


def _mask_ndim(kind, v):
    return v.ndim if kind == "dmask" else np.asarray(v).ndim


def _post_basic_shape(comps, shape):
    """The shape PyTorch indexes with tensors after applying the key's ints/slices/Nones, and
    for each component its position there (None for ints)."""
    nd = len(shape)
    consumed = sum(1 for k, _ in comps if k in ("int", "slice", "array", "darray")) + \
        sum(_mask_ndim(k, v) for k, v in comps if k in ("mask", "dmask"))
    out, pos, dim = [], [], 0
    for kind, v in comps:
        pos.append(len(out))
        if kind == "ellipsis":
            n = nd - consumed
            out += shape[dim:dim + n]
            dim += n
        elif kind == "none":
            out.append(1)
        elif kind == "int":
            pos[-1] = None
            dim += 1
        elif kind == "slice":
            out.append(len(range(*v.indices(shape[dim]))))
            dim += 1
        elif kind in ("mask", "dmask"):
            m = _mask_ndim(kind, v)
            out += shape[dim:dim + m]
            dim += m
        else:
            out.append(shape[dim])
            dim += 1
    return out + list(shape[dim:]), pos


def _check_bounds(comps, shape, arrays=True):
    """PyTorch's IndexError for out-of-range integer indices (NumPy words it differently);
    ``arrays=False``: leave index arrays to the second step of a key mixing basic components
    (PyTorch checks them against the basic-indexed view)."""
    nd = len(shape)
    empty = 0 in shape  # PyTorch checks index values only when there is an element to read
    if not shape:
        for k, _ in comps:
            if k == "int":
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in "
                                 "Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor "
                                 "to a number")
            if k == "slice":
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = adv = 0
    n_consumed = sum(1 for kind, v in comps if kind in ("int", "slice", "array", "darray")) + \
        sum(_mask_ndim(kind, v) for kind, v in comps if kind in ("mask", "dmask"))
    if n_consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    for i, (kind, v) in enumerate(comps):
        if kind == "ellipsis":
            dim += nd - n_consumed
            continue
        if kind == "none":
            continue
        if kind == "int":
            size = shape[dim]
            if not -size <= v < size:
                raise IndexError(f"index {v} is out of bounds for dimension {dim} with size "
                                 f"{size}")
        elif kind == "array":
            size = shape[dim]
            if not arrays:
                pass
            elif empty:
                if size == 0 and _broadcast_size(comps):
                    raise IndexError("index is out of bounds for dimension with size 0")
            else:  # PyTorch numbers the dimension among the index tensors
                check_range(v, size, adv, "advanced")
            adv += 1
        elif kind in ("mask", "dmask"):
            m = v if kind == "dmask" else np.asarray(v)
            if m.ndim and tuple(m.shape) != tuple(shape[dim:dim + m.ndim]):
                _mask_error(comps, shape, m, i, dim)
            dim += m.ndim
            adv += m.ndim
            continue
        elif kind == "darray":
            adv += 1
        dim += 1


def _broadcast_size(comps) -> int:
    try:
        bshape = np.broadcast_shapes(*(v.shape for k, v in comps if k == "array"))
    except ValueError:
        return 1  # the broadcast error comes later, in PyTorch's words
    return int(np.prod(bshape))


def _valid_on_empty(comps, shape):
    """Index arrays into an empty tensor PyTorch does not look at: zeros for NumPy (which would
    range-check them), same shapes."""
    if 0 not in shape:
        return comps
    return [(k, np.zeros(v.shape, np.int64)) if k == "array" else (k, v) for k, v in comps]


def _mask_error(comps, shape, m, i, d0):
    """PyTorch's message: the mask's first mismatching dim, the shape indexed by tensors (after
    ints, slices and Nones are applied) and the position there."""
    post, pos = _post_basic_shape(comps, list(shape))
    j = next(j for j in range(m.ndim) if m.shape[j] != shape[d0 + j])
    raise IndexError(f"The shape of the mask {list(m.shape)} at index {j} does not match the "
                     f"shape of the indexed tensor {post} at index {pos[i] + j}")


def _advanced_broadcast_error(comps, err):
    shapes = [list(v.shape) if k == "array" else [int(np.count_nonzero(v))]
              for k, v in comps if k in ("array", "mask") and np.ndim(v)]
    return IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                      f"shapes {', '.join(str(sh) for sh in shapes)}")


def _np_key(comps):
    return tuple(v for _, v in comps)


# ----------------------------------------------------------------------------- getitem


def _getitem_backward(node, g):
    a = node.ctx.attrs
    return (index_embed(g, a["shape"], a["key"], a["basic"]),)


_FULL = slice(None, None, 1)


def _name_for(comps, tuple_key=True):
    """The node PyTorch records for a key with at most one view-making component."""
    for k, _ in comps:
        if k in ("array", "mask", "darray", "dmask"):
            return "IndexBackward0"
    for k, v in comps:
        if k == "none":
            return "UnsqueezeBackward0"
        if k == "int":
            return "SelectBackward0"
        if k == "slice" and (v != _FULL or not tuple_key):
            return "SliceBackward0"
    return "AliasBackward0"


def _drop_noop_slices(comps, shape):
    """PyTorch skips the slices of a tuple key that keep a whole dimension (start 0, step 1,
    stop >= size): they record no node."""
    if all(k != "slice" or v == _FULL or v.step != 1 or v.start not in (None, 0)
           for k, v in comps):
        return comps
    nd = len(shape)
    consumed = sum(1 for k, _ in comps if k in ("int", "slice"))
    out, dim = [], 0
    for kind, v in comps:
        if kind == "ellipsis":
            dim += nd - consumed
        elif kind == "slice":
            if v.step == 1 and v.start in (None, 0) and (v.stop is None or v.stop >= shape[dim]):
                kind, v = "slice", _FULL
            dim += 1
        elif kind == "int":
            dim += 1
        out.append((kind, v))
    return out


def getitem(x: Tensor, key) -> Tensor:
    if type(key) is list:
        key = sequence_key(key)
    comps = _normalize_key(key)
    _check_bounds(comps, x._data.shape, arrays=not _mixes_basic(comps))
    comps = _valid_on_empty(comps, x._data.shape)
    basic = _is_basic(comps)
    tuple_key = type(key) is tuple
    if basic:
        if tuple_key:
            comps = _drop_noop_slices(comps, x._data.shape)
        if sum(1 for k, v in comps if k in ("int", "none") or (
                k == "slice" and (v != _FULL or not tuple_key))) > 1:
            # PyTorch records one node per component (x[0, 1:3] is SliceBackward0 <-
            # SelectBackward0)
            return _remember_view_key(_getitem_chain(x, comps), x, _np_key(comps))
    elif _mixes_basic(comps):
        return _split_advanced(x, comps)
    if not basic and (x._data.__class__ is not np.ndarray or any(
            k in ("darray", "dmask") for k, _ in comps)):
        return _cuda().device_getitem(x, comps)
    npkey = _np_key(comps)
    if basic and not any(k == "ellipsis" for k, _ in comps):
        # a trailing Ellipsis makes NumPy return a 0-d *view* instead of a scalar copy for
        # x[i] on a 1-D array: PyTorch's x[0] aliases x
        data = x._data[npkey + (Ellipsis,)]
    elif basic:
        data = x._data[npkey]
    else:
        try:
            data = x._data[npkey]
        except IndexError as e:
            if "shape mismatch" not in str(e):
                raise
            raise _advanced_broadcast_error(comps, e) from None
        data = np.array(data, copy=True) if np.shares_memory(data, x._data) else data
    out = record(_name_for(comps, tuple_key), (x,), np.asarray(data) if not basic else data,
                 _getitem_backward, view_of=x if basic else None,
                 attrs={"shape": tuple(x._data.shape), "key": npkey, "basic": basic},
                 view_fn=(lambda b: getitem(b, npkey)) if basic else None)
    return _remember_view_key(out, x, npkey) if basic else out


def _split_advanced(x, comps):
    bkey, akey = _split_keys(comps)
    return getitem(getitem(x, bkey), akey)


def _mixes_basic(comps) -> bool:
    """An advanced key with ints, None or real slices: PyTorch applies those first and the index
    tensors to the result (x[0, :, [1, 2]] has shape (3, 2); NumPy's would be (2, 3))."""
    return any(k in ("int", "none") or (k == "slice" and v != _FULL) for k, v in comps)


def _split_keys(comps):
    """(basic key, advanced key): the two steps PyTorch indexes an advanced key in."""
    bkey, akey = [], []
    for kind, v in comps:
        if kind == "int":
            bkey.append(v)
        elif kind in ("slice", "none"):
            bkey.append(v)
            akey.append(_FULL)
        elif kind == "ellipsis":
            bkey.append(Ellipsis)
            akey.append(Ellipsis)
        else:
            if kind in ("mask", "dmask"):
                bkey += [_FULL] * _mask_ndim(kind, v)
            else:
                bkey.append(_FULL)
            akey.append(Tensor._make(v) if kind in ("darray", "dmask") else v)
    return tuple(bkey), tuple(akey)


def _remember_view_key(view, x, npkey):
    """A view made by indexing a non-view remembers its key, so in-place writes into the view
    can be recorded on the base (CopySlices), as PyTorch does."""
    if x._base is None:
        view._view_key = npkey
    return view


def _getitem_chain(x, comps):
    """Apply basic components one at a time so each records its own node."""
    nd = x._data.ndim
    consumed = sum(1 for k, _ in comps if k in ("int", "slice"))
    dim = 0
    y = x
    for kind, v in comps:
        if kind == "ellipsis":
            dim += nd - consumed
            continue
        if kind == "none":
            y = getitem(y, (slice(None),) * dim + (None,))
            dim += 1
        elif kind == "int":
            y = getitem(y, (slice(None),) * dim + (v,))
        else:
            if v == slice(None, None, 1):
                dim += 1
                continue
            y = getitem(y, (slice(None),) * dim + (v,))
            dim += 1
    return y


def _embed_backward(node, g):
    a = node.ctx.attrs
    return (getitem(g, a["key"]) if a["basic"] else _take(g, a["key"]),)


def _take(g, npkey):
    # differentiable advanced read used by the embed VJP (npkey: an AdvancedIndex on CUDA)
    if g._data.__class__ is not np.ndarray:
        return _cuda().device_take(g, npkey)
    return record("IndexBackward0", (g,), np.asarray(g._data[npkey]), _getitem_backward,
                  attrs={"shape": tuple(g._data.shape), "key": npkey, "basic": False})


def index_embed(g: Tensor, shape, npkey, basic) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at ``npkey`` (repeated indices accumulate)."""
    if g._data.__class__ is not np.ndarray:
        from .basic import _device_full
        data = _device_full(shape, 0, g._data.dtype)
        if basic:
            from ..backends import cuda as B
            B.kernels().layout.copy_into(data[npkey].kview(), g._data.kview())
        else:  # index_put_(accumulate=True): atomics, repeated indices sum
            npkey.put(data.kview(), g._data.kview(), accumulate=True)
        return record("IndexPutBackward0", (g,), data, _embed_backward,
                      attrs={"key": npkey, "basic": basic})
    data = np.zeros(shape, dtype=g._data.dtype)
    if basic:
        data[npkey] = g._data
    else:
        np.add.at(data, npkey, g._data)
    return record("IndexPutBackward0", (g,), data, _embed_backward,
                  attrs={"key": npkey, "basic": basic})


def _broadcast_error(tgt, src, cause=None):
    dim = next((len(tgt) - 1 - i for i, (a, b) in enumerate(
        zip(reversed(tgt), reversed(src))) if a != b and b != 1), 0)
    raise RuntimeError(
        f"The expanded size of the tensor ({tgt[dim] if tgt else 1}) must match the "
        f"existing size ({src[dim - len(tgt) + len(src)] if src else 1}) at non-singleton "
        f"dimension {dim}.  Target sizes: {tgt}.  Tensor sizes: {src}") from cause


# ----------------------------------------------------------------------------- setitem


def _copy_slices_backward(node, g):
    """Gradients of ``base[keys[0]][keys[1]]... = value``: zero where written for the old base,
    the written region for the value."""
    keys = node.ctx.attrs["keys"]
    need_self, need_value = node.ctx.needs_input_grad
    if node.ctx.attrs.get("view_fn") is not None:
        return _replayed_view_backward(node.ctx.attrs["view_fn"], keys[-1], g, need_self,
                                       need_value)
    gs = gv = None
    if need_self and g._data.__class__ is not np.ndarray:
        from .basic import _device_full
        mask = _device_full(g._data.shape, 1, g._data.dtype)
        region = mask
        for k in keys[:-1]:
            region = region[k]
        _cuda().device_zero_at(region, keys[-1])
        gs = g * Tensor._make(mask)
    elif need_self:
        mask = np.ones(g._data.shape, dtype=bool)
        region = mask
        for k in keys[:-1]:
            region = region[k]  # basic view keys: still a view into mask
        region[keys[-1]] = False
        gs = g * Tensor._make(mask.astype(g._data.dtype))
    if need_value:
        gv = g
        for k in keys:
            gv = getitem(gv, k) if isinstance(k, tuple) or gv._data.__class__ is np.ndarray \
                else _take(gv, k)
    return (gs, gv)


def _replayed_view_backward(view_fn, key, g, need_self, need_value):
    """CopySlices' gradients for ``view_fn(base)[key] = value`` (a view made by reshape,
    transpose, ...): which base elements were written is found by replaying the view on the
    base's element numbers, so it holds whatever the view's strides (and whether the replay
    copies); the value's gradient is the replayed view of ``g``, differentiably."""
    gs = gv = None
    if need_self:
        n = g._data.size
        numbers = Tensor._make(np.arange(n).reshape(g._data.shape))
        written = np.asarray(view_fn(numbers)._data[key]).reshape(-1)
        mask = np.ones(n, dtype=g._data.dtype)
        mask[written] = 0
        gs = g * Tensor._make(mask.reshape(g._data.shape))
    if need_value:
        gv = getitem(view_fn(g), key)
    return (gs, gv)


def check_inplace(t: Tensor, others=()) -> None:
    """PyTorch's errors for in-place writes that would corrupt a graph (``inplace.check_inplace``:
    views made by split/chunk/unbind or under no_grad, views of leaves, leaves)."""
    _inplace.check_inplace(t, others)


class _NamedNode:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


class _DstView:
    """The view ``x[key]`` PyTorch writes into (never built here): what its errors name."""

    __slots__ = ("_grad_fn", "_output_nr")

    def __init__(self, op):
        self._grad_fn = None if op is None else _NamedNode(op + "Backward0")
        self._output_nr = 0


def _dst_view(comps, shape):
    """PyTorch's ``x[key] = v`` writes into ``x`` itself when the key makes no view (Ellipsis,
    full slices, index tensors: copy_/fill_/index_put_ on ``x``), otherwise into the view its
    last view-making component makes: returns that op's name (Select, Slice, Unsqueeze) or None.
    A slice is "full" as PyTorch's setitem sees it: start 0 (not -n), stop >= size, step 1."""
    nd = len(shape)
    consumed = sum(1 for k, _ in comps if k in ("int", "slice", "array", "darray")) + sum(
        _mask_ndim(k, v) for k, v in comps if k in ("mask", "dmask"))
    dim, op = 0, None
    for kind, v in comps:
        if kind == "ellipsis":
            dim += nd - consumed
        elif kind == "none":
            op = "Unsqueeze"
        elif kind in ("mask", "dmask"):
            m = _mask_ndim(kind, v)
            if m == 0:
                op = "Unsqueeze"
            dim += m
        elif kind == "int":
            op = "Select"
            dim += 1
        elif kind == "slice":
            if not (v.start in (None, 0) and v.step == 1 and
                    (v.stop is None or v.stop >= shape[dim])):
                op = "Slice"
            dim += 1
        else:
            dim += 1
    return op


def _check_setitem(x: Tensor, comps, value) -> None:
    """PyTorch's ``check_inplace`` on the tensor ``x[key] = value`` writes into (``_dst_view``),
    in its order: views made by multi-output ops / under no_grad, views of leaves, leaves."""
    op = _dst_view(comps, x._data.shape)
    if op is None:
        _inplace.check_inplace(x, (value,))
        return
    base = x._base
    if base is not None:
        creation = getattr(x, "_creation", None)
        if creation is not None:  # the new view inherits its parent's creation meta
            from .composite import view_rebase_error
            x_rg = x._requires_grad or base._requires_grad
            raise view_rebase_error(_DstView(op if x_rg else None), creation, indirect=False)
    root = x if base is None else base
    if root._requires_grad and root._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _writable_dst(x: Tensor, comps, npkey, lone_true) -> None:
    """``x`` is read-only (an expand view): PyTorch's overlap error when the elements written
    overlap (copy_/fill_ into the basic view; ``x[True]`` is ``x.unsqueeze(0)``), the index_put_
    deprecation warning for index keys into overlapping memory; otherwise give ``x`` a writable
    alias of the memory it views."""
    a = x._data
    if lone_true or _is_basic(comps):
        dst = a if lone_true else a[npkey]
        if isinstance(dst, np.ndarray) and _inplace._has_overlap(dst):
            raise RuntimeError(_inplace.OVERLAP_MESSAGE)
    else:
        key = []
        for kind, v in comps:
            if kind in ("array", "darray"):
                key.append(slice(None))
            elif kind in ("mask", "dmask"):
                m = _mask_ndim(kind, v)
                key += [slice(None)] * m if m else [None]
            else:
                key.append(v)
        if _inplace._has_overlap(a[tuple(key)]):
            import warnings
            warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() "
                          "the tensor before performing this operation. This also applies to "
                          "advanced indexing e.g. tensor[indices] = tensor", UserWarning,
                          stacklevel=3)
    _inplace._make_writable(x, False)


def _index_put_dtype_error(x: Tensor, comps, value):
    """PyTorch's index_put_ takes a value tensor of the destination's dtype only, except a 0-d
    value with one bool mask key (it runs masked_fill_, which casts): the error, or None."""
    if value.ndim == 0:
        adv = [i for i, (k, _) in enumerate(comps) if k not in ("int", "slice", "none",
                                                                  "ellipsis")]
        if len(adv) == 1 and comps[adv[0]][0] in ("mask", "dmask") and all(
                k == "int" for k, _ in comps[:adv[0]]):
            return None
    return RuntimeError("Index put requires the source and destination dtypes match, got "
                        f"{_inplace._word(x.dtype)} for the destination and "
                        f"{_inplace._word(value.dtype)} for the source.")


def raise_after_shape_check(err, tgt, vshape):
    """Raise ``err`` (index_put_'s dtype error), unless the value does not broadcast to the
    indexed shape ``tgt``: PyTorch checks the shapes first."""
    tgt, v = list(tgt), list(vshape)
    while v and v[0] == 1 and len(v) > len(tgt):
        v.pop(0)
    if len(v) > len(tgt) or any(a != b and a != 1 for a, b in zip(reversed(v), reversed(tgt))):
        _broadcast_error(tgt, list(vshape))
    raise err


def _node_name(x: Tensor, comps, value, is_t) -> str:
    """The node PyTorch records for ``x[key] = value`` on a non-view ``x``: CopySlices when it
    writes into a view of ``x``; index_put_ (IndexPutBackward0) for index keys; else copy_ /
    fill_ of ``x`` itself (FillBackward3 for a 0-d CPU value of another shape)."""
    shape = x._data.shape
    if _dst_view(comps, shape) is not None:
        return "CopySlices"
    if not _is_basic(comps):
        return "IndexPutBackward0"
    vshape = value._data.shape if is_t else np.shape(value)
    if tuple(vshape) == tuple(shape):
        return "CopyBackwards"
    on_cpu = (value._data.__class__ is np.ndarray) if is_t else \
        (x._data.__class__ is np.ndarray)
    return "FillBackward3" if len(vshape) == 0 and on_cpu else "CopyBackwards"


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value``. Inside a graph this records CopySlices on ``x`` (or, when ``x`` is a
    view made by indexing, on its base, and ``x`` becomes a view of the new base)."""
    if key is False:
        return  # PyTorch: x[False] = v does nothing
    if type(key) is list:
        key = sequence_key(key)
    comps = _normalize_key(key)
    split = not _is_basic(comps) and _mixes_basic(
        _drop_noop_slices(comps, x._data.shape) if type(key) is tuple else comps)
    _check_bounds(comps, x._data.shape, arrays=not split)
    if split:
        # as getitem: the index tensors write into the view the basic part makes (so the
        # value has PyTorch's layout, and the write is recorded through that view)
        bkey, akey = _split_keys(comps)
        return setitem(getitem(x, bkey), akey, value)
    comps = _valid_on_empty(comps, x._data.shape)
    npkey = _np_key(comps)
    is_t = isinstance(value, Tensor)
    vdata = value._data if is_t else value
    recording = False
    if grad_mode.is_grad_enabled():
        v_rg = is_t and value._requires_grad
        if x._requires_grad or v_rg or (x._base is not None and x._base._requires_grad):
            _check_setitem(x, comps, value)
        recording = x._requires_grad or v_rg
    dtype_err = _index_put_dtype_error(x, comps, value) if (
        is_t and value.dtype is not x.dtype and not _is_basic(comps)) else None
    a = x._data
    if a.__class__ is np.ndarray and not a.flags.writeable:
        _writable_dst(x, comps, npkey, key is True)
    target, keys, view_fn = x, (npkey,), None
    if recording and x._base is not None:
        view_key = getattr(x, "_view_key", None)
        if view_key is not None:
            target, keys = x._base, (view_key, npkey)
        else:
            view_fn = x._view_fn
            if view_fn is None and x._data.__class__ is np.ndarray:
                from .composite import view_replay
                view_fn = x._view_fn = view_replay(x)  # expand & co: replayed by gather
            if view_fn is None or x._data.__class__ is not np.ndarray:
                raise NotImplementedError(
                    "jitgrad records in-place writes into views made by indexing, reshape/"
                    "view/flatten, squeeze/unsqueeze, transpose/permute/t, expand (on CUDA: "
                    "indexing only); this tensor is a view made by another op. Write through "
                    "the base tensor, or apply the op out of place.")
            target = x._base
    if recording and not x.dtype.is_floating_point:
        raise RuntimeError("only floating point tensors can be written with values that "
                           "require grad")
    if x._data.__class__ is not np.ndarray:
        keys = keys[:-1] + (_cuda().device_setitem(x, comps, value, dtype_err),)
    else:
        if any(k in ("darray", "dmask") for k, _ in comps):
            _cuda().device_plan(x, comps)  # raises PyTorch's device error
        if dtype_err is not None:
            raise_after_shape_check(dtype_err, np.shape(x._data[npkey]), vdata.shape)
        try:
            x._data[npkey] = vdata
        except ValueError as e:
            if not x._data.flags.writeable:
                raise
            _broadcast_error(list(np.shape(x._data[npkey])), list(np.shape(vdata)), e)
    x._vc.value += 1
    if not recording:
        return
    ctx = Ctx()
    ctx.attrs = {"keys": keys, "view_fn": view_fn}
    old_edge = target._edge() if target._requires_grad else None
    v_edge = value._edge() if is_t and value._requires_grad else None
    ctx.needs_input_grad = (old_edge is not None, v_edge is not None)
    meta = ((tuple(target._data.shape), target.dtype) if old_edge else None,
            (tuple(value._data.shape), value.dtype) if v_edge else None)
    name = "CopySlices" if target is not x or x._base is not None else \
        _node_name(x, comps, value, is_t)
    node = node_class(name, FunctionNode)(
        (old_edge or (None, 0), v_edge or (None, 0)), meta, ctx, _copy_slices_backward)
    target._grad_fn = node
    target._output_nr = 0
    target._requires_grad = True
    if target is not x:
        fresh = getitem(target, keys[0]) if view_fn is None else view_fn(target)
        x._grad_fn, x._output_nr, x._requires_grad = fresh._grad_fn, 0, True


# ----------------------------------------------------------------------------- gather & co
# (ops/gather_scatter.py and ops/index_dim.py; re-exported here, where callers look for them)

from .gather_scatter import (  # noqa: E402
    gather,
    scatter,
    scatter_add,
    scatter_into_zeros,
    scatter_reduce,
    take_along_dim,
)
from .index_dim import index_add, index_copy, index_fill, index_select, put, take  # noqa: E402

# ----------------------------------------------------------------------------- masked & nonzero


def _masked_fill_backward(node, g):
    """MaskedFillBackward0/1: ``g`` with zeros where filled for the input; for a tensor value
    (MaskedFillBackward1) the sum of ``g`` over the filled elements."""
    from .functional import where
    mask = Tensor._make(node.ctx.attrs["mask"])
    needs = node.ctx.needs_input_grad
    gi = where(mask, 0.0, g) if needs[0] else None
    if len(needs) == 1:
        return (gi,)
    return (gi, where(mask, g, 0.0).sum() if needs[1] else None)


#: PyTorch's masked_fill_ names the mask's dtype by its C++ type
_C_TYPE_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                 "int32": "int", "int64": "long int", "float16": "c10::Half",
                 "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        got = _C_TYPE_NAMES.get(mask.dtype.name, mask.dtype.name) if isinstance(mask, Tensor) \
            else type(mask).__name__
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{got}")
    tvalue = None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        tvalue = value  # the Tensor overload: MaskedFillBackward1, the value gets a gradient
        if value._data.__class__ is np.ndarray or input._data.__class__ is np.ndarray:
            value = value.item()  # a 0-d CUDA value stays on the device (no host read)
        else:
            value = value.detach()
    name, inputs = ("MaskedFillBackward0", (input,)) if tvalue is None else \
        ("MaskedFillBackward1", (input, tvalue))
    shape = input._data.shape
    if mask._data.shape != shape:
        # PyTorch: expand_outplace(mask, self), so the mask may broadcast the result larger
        from .elementwise_call import broadcast_shapes
        shape = broadcast_shapes(mask._data.shape, shape)
    if input._data.__class__ is not np.ndarray or mask._data.__class__ is not np.ndarray:
        # the elementwise ``where`` kernel, cast back to input's dtype like the CPU path
        from .elementwise_call import check_same_device
        from .functional import where
        check_same_device((input, mask))
        with grad_mode.no_grad():
            data = where(mask, value, input.detach())._data.astype(input._data.dtype,
                                                                  copy=False)
        return record(name, inputs, data, _masked_fill_backward,
                      attrs={"mask": mask._data.broadcast_to(shape)})
    data = np.where(mask._data, np.asarray(value).astype(input._data.dtype), input._data)
    return record(name, inputs, data, _masked_fill_backward,
                  attrs={"mask": np.broadcast_to(mask._data, shape)})


def masked_select(input, mask):
    from .elementwise_call import broadcast_shapes
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._data.shape, input._data.shape)
    x = input.expand(shape) if tuple(input.shape) != shape else input
    m = mask._data
    return getitem(x, Tensor._make(np.broadcast_to(m, shape) if m.__class__ is np.ndarray
                                   else m.broadcast_to(shape)))


def argwhere(input):
    """``torch.argwhere``: ``nonzero(input)`` (a ``(n, ndim)`` int64 tensor)."""
    return nonzero(input)


def nonzero(input, *, as_tuple=False):
    if input._data.__class__ is not np.ndarray:
        return _cuda().device_nonzero(input, as_tuple)
    if input._data.ndim == 0:  # PyTorch reads a 0-d tensor as a 1-element one
        n = int(input._data != 0)
        return (Tensor._make(np.zeros(n, np.int64)),) if as_tuple else \
            Tensor._make(np.zeros((n, 0), np.int64))
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64)) for a in nz)
    return Tensor._make(np.stack(nz, axis=1).astype(np.int64) if nz else
                        np.zeros((0, 0), np.int64))


# ----------------------------------------------------------------------------- index_put


def _index_put_backward(node, g):
    a = node.ctx.attrs
    need_self, need_values = node.ctx.needs_input_grad
    key = tuple(Tensor._make(k) for k in a["indices"])
    gs = gv = None
    if need_self:
        if a["accumulate"]:
            gs = g
        else:
            from .basic import ones_like
            with grad_mode.no_grad():
                mask = ones_like(g)
                setitem(mask, key, 0.0)
            gs = g * mask
    if need_values:
        gv = getitem(g, key)
    return (gs, gv)


def index_put(input, indices, values, accumulate=False):
    """``torch.index_put``: ``input`` with ``values`` written (or, ``accumulate``, added:
    repeated indices sum) at the tensor indices ``indices``, as ``x[indices] = values``
    (negative indices count from the end) (IndexPutBackward0)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' (position 2) must be tuple of Tensors, "
                        f"not {type(indices).__name__}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(t).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError("index_put(): argument 'values' (position 3) must be Tensor, not "
                        f"{type(values).__name__}")
    key = tuple(indices)
    comps = _normalize_key(key)
    _check_bounds(comps, input._data.shape)
    comps = _valid_on_empty(comps, input._data.shape)
    if values.dtype is not input.dtype:
        err = _index_put_dtype_error(input, comps, values)
        if err is not None:
            raise err
        values = values.to(input.dtype)  # a 0-d value with one mask key: masked_fill_ casts
    out = Tensor._make(input._data.copy() if input._data.__class__ is np.ndarray else
                       _cuda_copy(input._data))
    if not accumulate:
        with grad_mode.no_grad():
            setitem(out, key, values.detach())
    elif out._data.__class__ is not np.ndarray or values._data.__class__ is not np.ndarray:
        plan = _cuda().device_plan(out, comps)
        tgt = plan.out_shape()
        try:
            plan.put(out._data.kview(), values._data.kview(), accumulate=True)
        except ValueError:
            raise _put_shape_error(values, tgt) from None
    else:
        npkey = _np_key(comps)
        tgt = np.shape(out._data[npkey])
        try:
            v = np.broadcast_to(values._data, tgt)
        except ValueError:
            raise _put_shape_error(values, tgt) from None
        np.add.at(out._data, npkey, v)
    idx = [v for k, v in comps]
    return record("IndexPutBackward0", (input, values), out._data, _index_put_backward,
                  attrs={"indices": idx, "accumulate": accumulate})


def _cuda_copy(data):
    from .._cuda_array import CudaArray
    c = data.copy()
    return CudaArray(c.buf, c.shape)


def _put_shape_error(values, tgt):
    return RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                        f"broadcast to indexing result of shape {list(tgt)}")
