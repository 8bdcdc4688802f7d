"""Writing ``x[key] = value`` (recorded as CopySlices on ``x`` or on its base, or as
copy_/fill_/index_put_ of ``x`` itself, with PyTorch's in-place checks and errors) and
``torch.index_put`` (``accumulate``: repeated indices sum)."""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..autograd.node import Ctx, FunctionNode, SavedTensor, node_class
from ..autograd.view_requires_grad import follow_base
from ..tensor import Tensor
from . import inplace as _inplace
from .composite import record
from .index_getitem import _take, getitem
from .index_keys import (
    _check_bounds,
    _cuda,
    _drop_noop_slices,
    _is_basic,
    _mask_ndim,
    _mixes_basic,
    _normalize_key,
    _np_key,
    _one_ellipsis,
    _split_keys,
    _valid_on_empty,
    bare_key,
    sequence_key,
)
from .parser_errors import parser_type_name


def _broadcast_error(tgt, src, cause=None, value=None):
    """copy_'s error for a value of shape ``src`` that does not expand to ``tgt`` (``value``: the
    tensor written, named when it has more dims than the target once its leading 1s go)."""
    src = _unprefixed(src)  # (x[key] = v drops the value's leading size-1 dims)
    if len(src) > len(tgt):
        from ..autograd.node import _tensor_type_name
        kind = _tensor_type_name(value, legacy=True) if isinstance(value, Tensor) else "Tensor"
        raise RuntimeError(f"expand({kind}{{{src}}}, size={list(tgt)}): the number of sizes "
                           f"provided ({len(tgt)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(src)})") from cause
    dim = next((len(tgt) - 1 - i for i, (a, b) in enumerate(
        zip(reversed(tgt), reversed(src))) if a != b and b != 1), 0)
    raise RuntimeError(
        f"The expanded size of the tensor ({tgt[dim] if tgt else 1}) must match the "
        f"existing size ({src[dim - len(tgt) + len(src)] if src else 1}) at non-singleton "
        f"dimension {dim}.  Target sizes: {tgt}.  Tensor sizes: {src}") from cause


# ----------------------------------------------------------------------------- setitem


def _zero_written(g, keep):
    """``g`` with the written elements (``keep`` 0) set to zero, not multiplied by it: a NaN or
    inf gradient there (from a value computed after the write) must still give 0, as
    ATen's ``index_put_(indices, 0)`` does."""
    from .. import where
    return where(keep != 0, g, 0.0)


def _copy_slices_backward(node, g):
    """Gradients of ``base[keys[0]][keys[1]]... = value``: zero where written for the old base,
    the written region for the value."""
    keys = node.ctx.attrs["keys"]
    for saved in node.ctx.attrs.get("index_tensors", ()):
        saved.check(node)  # an index tensor written in place since: PyTorch's version error
    need_self, need_value = node.ctx.needs_input_grad
    if node.ctx.attrs.get("view_fn") is not None:
        return _replayed_view_backward(node.ctx.attrs["view_fn"], keys[-1], g, need_self,
                                       need_value)
    gs = gv = None
    if need_self and g._data.__class__ is not np.ndarray:
        from .factory_args import _device_full
        mask = _device_full(g._data.shape, 1, g._data.dtype)
        region = mask
        for k in keys[:-1]:
            region = region[k]
        _cuda().device_zero_at(region, keys[-1])
        gs = _zero_written(g, Tensor._make(mask))
    elif need_self:
        mask = np.ones(g._data.shape, dtype=bool)
        region = mask
        for k in keys[:-1]:
            region = region[k]  # basic view keys: still a view into mask
        region[keys[-1]] = False
        gs = _zero_written(g, Tensor._make(mask))
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
        gs = _zero_written(g, Tensor._make(mask.reshape(g._data.shape)))
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
    if not isinstance(value, (Tensor, int, float, np.number, np.bool_, np.ndarray)):
        # PyTorch assigns Tensors and Numbers only (a list is not read as data)
        from ..autograd.node import _tensor_type_name
        raise TypeError(f"can't assign a {type(value).__name__} to a "
                        f"{_tensor_type_name(x, legacy=True)}")
    if key is False:
        return  # PyTorch: x[False] = v does nothing
    if type(key) is list:
        key = sequence_key(key)
    comps = _one_ellipsis(_normalize_key(key), x._data.ndim)
    split = not _is_basic(comps) and _mixes_basic(
        _drop_noop_slices(comps, x._data.shape) if type(key) is tuple else comps)
    _check_bounds(comps, x._data.shape, arrays=not split, bare=bare_key(key))
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
            tgt = list(np.shape(x._data[npkey]))
            if not _is_basic(comps):  # index_put_'s wording (x[idx] = v runs it)
                raise _put_shape_error(_unprefixed(np.shape(vdata)), tgt) from e
            _broadcast_error(tgt, list(np.shape(vdata)), e, value)
    x._vc.value += 1
    if not recording:
        return
    ctx = Ctx()
    # the index tensors as IndexPutBackward0 saves them: the write's keys hold their arrays,
    # so writing into one afterwards must fail the backward as PyTorch's version check does
    index_tensors = [SavedTensor(k) for k in (key if type(key) is tuple else (key,))
                     if isinstance(k, Tensor)]
    ctx.attrs = {"keys": keys, "view_fn": view_fn, "index_tensors": index_tensors}
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
    if "_views" in target.__dict__:  # views made before it required grad now do (PyTorch)
        follow_base(target)
    if target is not x:
        fresh = getitem(target, keys[0]) if view_fn is None else view_fn(target)
        x._grad_fn, x._output_nr, x._requires_grad = fresh._grad_fn, 0, True


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
            gs = _zero_written(g, mask)
    if need_values:
        gv = getitem(g, key)
    return (gs, gv)


_INDEX_PUT_ARGS = ("indices", "values", "accumulate")


def _index_put_args(name, self, args, kwargs):
    """``(input, indices, values, accumulate)`` as PyTorch's parser binds an index_put call
    (``self``: the method form's tensor, None for ``torch.index_put``), with its TypeErrors:
    an argument's position is said when it was passed by position (counted without ``self``
    in the method form)."""
    names = _INDEX_PUT_ARGS if self is not None else ("input",) + _INDEX_PUT_ARGS
    if len(args) > len(names):
        lo = len(names) - 1
        raise TypeError(f"{name}() takes from {lo} to {len(names)} positional arguments but "
                        f"{len(args)} were given")
    for k in kwargs:
        if k not in names:
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
    given = dict(zip(names, args))
    given.update(kwargs)
    missing = [n for n in names[:-1] if n not in given]
    if missing:
        # (the parser's plural is the other way round: "1 ... arguments", "2 ... argument")
        word = "arguments" if len(missing) == 1 else "argument"
        raise TypeError(f"{name}() missing {len(missing)} required positional {word}: "
                        + ", ".join(f'"{n}"' for n in missing))
    base = 1 if self is not None else 2  # the position of ``indices``

    def where(arg):
        pos = names.index(arg)
        return f" (position {pos + base - (self is None)})" if pos < len(args) else ""
    input = self if self is not None else given["input"]
    indices, values = given["indices"], given["values"]
    accumulate = given.get("accumulate", False)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices'{where('indices')} must be tuple of "
                        f"Tensors, not {parser_type_name(indices)}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {base - 1}, but got "
                            f"{type(t).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values'{where('values')} must be Tensor, not "
                        f"{parser_type_name(values)}")
    if not isinstance(accumulate, bool):
        raise TypeError(f"{name}(): argument 'accumulate'{where('accumulate')} must be bool, "
                        f"not {parser_type_name(accumulate)}")
    return input, indices, values, accumulate


def index_put(*args, **kwargs):
    """``torch.index_put``: ``input`` with ``values`` written (or, ``accumulate``, added:
    repeated indices sum) at the tensor indices ``indices``, as ``x[indices] = values``
    (negative indices count from the end) (IndexPutBackward0)."""
    return _index_put(*_index_put_args("index_put", None, args, kwargs))


def index_put_method(self, *args, **kwargs):
    """``Tensor.index_put``."""
    return _index_put(*_index_put_args("index_put", self, args, kwargs))


def index_put_(self, *args, **kwargs):
    """``Tensor.index_put_``."""
    _, indices, values, accumulate = _index_put_args("index_put_", self, args, kwargs)
    return _inplace.apply_inplace(self, _index_put, indices, values, accumulate)


def _index_put(input, indices, values, accumulate):
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
        # (index_put_ takes no leading size-1 dims in the value, which x[key] = v drops)
        tgt = _index_result_shape(out, comps)
        if not _broadcasts(values.shape, tgt):
            raise _put_shape_error(values.shape, tgt)
        with grad_mode.no_grad():
            setitem(out, key, values.detach())
    elif out._data.__class__ is not np.ndarray or values._data.__class__ is not np.ndarray:
        plan = _cuda().device_plan(out, comps)
        tgt = plan.out_shape()
        try:
            plan.put(out._data.kview(), values._data.kview(), accumulate=True)
        except ValueError:
            raise _put_shape_error(values.shape, tgt) from None
    else:
        npkey = _np_key(comps)
        tgt = np.shape(out._data[npkey])
        try:
            v = np.broadcast_to(values._data, tgt)
        except ValueError:
            raise _put_shape_error(values.shape, tgt) from None
        np.add.at(out._data, npkey, v)
    idx = [v for k, v in comps]
    return record("IndexPutBackward0", (input, values), out._data, _index_put_backward,
                  attrs={"indices": idx, "accumulate": accumulate})


def _cuda_copy(data):
    from .._cuda_array import CudaArray
    c = data.copy()
    return CudaArray(c.buf, c.shape)


def _put_shape_error(vshape, tgt):
    """index_put_'s error for a value that does not broadcast to the indexing result."""
    return RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be "
                        f"broadcast to indexing result of shape {list(tgt)}")


def _unprefixed(vshape):
    """``vshape`` without its leading size-1 dims, as ``x[key] = v`` reads the value."""
    vshape = list(vshape)
    while vshape and vshape[0] == 1:
        vshape.pop(0)
    return vshape


def _broadcasts(vshape, tgt) -> bool:
    return len(vshape) <= len(tgt) and all(
        a == b or a == 1 for a, b in zip(reversed(tuple(vshape)), reversed(tuple(tgt))))


def _index_result_shape(x, comps):
    """The shape of ``x[key]`` for an index key, without gathering anything."""
    if x._data.__class__ is not np.ndarray:
        return tuple(_cuda().device_plan(x, comps).out_shape())
    probe = np.broadcast_to(np.empty((), np.int8), x._data.shape)  # (no memory per element)
    return probe[_np_key(comps)].shape
