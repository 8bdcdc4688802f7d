"""Reading ``x[key]``: the nodes PyTorch records (Select/Slice/Unsqueeze/Alias/Index
Backward0, one per view-making component), and its VJP ``index_embed`` (``g`` embedded into
zeros at the key, IndexPutBackward0), whose own VJP is a read again, so gradients of any order
flow through indexing."""
from __future__ import annotations

import numpy as np

from .._layout import getitem_geometry, note_getitem
from .._storage import as_strided
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor
from .composite import record
from .index_keys import (
    _FULL,
    _advanced_broadcast_error,
    _check_bounds,
    _cuda,
    _drop_noop_slices,
    _is_basic,
    _mixes_basic,
    _normalize_key,
    _np_key,
    _one_ellipsis,
    _split_keys,
    _valid_on_empty,
    bare_key,
    sequence_key,
)
from .index_layout import aten_layout, note_empty_index, plain_key

# ----------------------------------------------------------------------------- getitem


def _getitem_backward(node, g):
    a = node.ctx.attrs
    return (index_embed(g, a["shape"], a["key"], a["basic"]),)


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


def _plain_getitem(x, key):
    """``x[key]`` for a basic key made only of Python ints (in range), slices of Python ints with
    a positive step, None and at most one Ellipsis, naming at most ``x.dim()`` dims: the common
    ``x[0]``, ``x[1:3]``, ``x[:, 0]``, ``x[i, j]``, ``x[..., 0]``, ``x[None]``. The general
    path's steps (normalise, drop a tuple key's whole-dim slices, name the node) in one walk,
    minus the checks such a key cannot fail (per-op overhead: ``x[0]`` is common in loops).
    None for any other key: the general path then normalises it and raises PyTorch's errors
    (bools, floats, NumPy scalars, lists, tensors, out-of-range ints all go there)."""
    tuple_key = key.__class__ is tuple
    keys = key if tuple_key else (key,)
    named = 0  # dims the key names (ints and slices)
    ellipsis = False
    for k in keys:
        c = k.__class__
        if c is int or c is slice:  # (bool is not int here: a bool key is a mask)
            named += 1
        elif k is Ellipsis:
            if ellipsis:  # several: _one_ellipsis' reading
                return None
            ellipsis = True
        elif k is not None:
            return None
    shape = x._data.shape
    nd = len(shape)
    if named > nd:
        return None
    comps, dim, name, views, extra = [], 0, "AliasBackward0", 0, ellipsis
    for k in keys:  # name: the node of the first view-making component (_name_for)
        c = k.__class__
        if c is int:
            size = shape[dim]
            if not -size <= k < size:
                return None
            comps.append(("int", k))
            dim += 1
            if not views:
                name = "SelectBackward0"
            views += 1
        elif c is slice:
            start, stop, step = k.start, k.stop, k.step
            if (start is not None and start.__class__ is not int) or (
                    stop is not None and stop.__class__ is not int):
                return None
            if step is None:
                step = 1
            elif step.__class__ is not int or step <= 0:
                return None
            if tuple_key and step == 1 and (start is None or start == 0) and (
                    stop is None or stop >= shape[dim]):
                comps.append(("slice", _FULL))  # keeps the whole dim: no node (_drop_noop_slices)
            else:
                comps.append(("slice", slice(start, stop, step)))
                if not views:
                    name = "SliceBackward0"
                views += 1
            dim += 1
        elif k is None:
            comps.append(("none", None))
            extra = True
            if not views:
                name = "UnsqueezeBackward0"
            views += 1
        else:
            comps.append(("ellipsis", Ellipsis))
            dim += nd - named
    npkey = tuple([v for _, v in comps])
    if views > 1 and _grad_state.enabled and x._requires_grad:
        return _remember_view_key(_plain_chain(x, comps, extra), x, npkey)
    # one view, or a chain recording no node: its intermediate views are then unobservable
    # (the result's base, version counter, creation mode and replay are x's either way) and
    # one NumPy view of the whole key has the chain's layout (None strides: ATen's walk)
    return _one_view(x, name, npkey, extra)


def _plain_chain(x, comps, extra=False):
    """``_getitem_chain`` for ``_plain_getitem``'s components: one view per int, None or real
    slice, each recorded as the recursive ``getitem`` would record it (the whole-dimension
    slices before it are that key's no-op components, the ints were range-checked on ``x``'s
    dims), without normalising each step's key again."""
    dim = 0
    y = x
    if extra:
        nd = x._data.ndim
        named = sum(1 for k, _ in comps if k == "int" or k == "slice")
    for kind, v in comps:
        if kind == "int":
            y = _one_view(y, "SelectBackward0", (_FULL,) * dim + (v,))
        elif kind == "slice":
            if v != _FULL:
                y = _one_view(y, "SliceBackward0", (_FULL,) * dim + (v,))
            dim += 1
        elif kind == "none":
            y = _one_view(y, "UnsqueezeBackward0", (_FULL,) * dim + (None,), True)
            dim += 1
        else:  # Ellipsis: the dims the key leaves unnamed
            dim += nd - named
    return y


def _one_view(x, name, npkey, extra=False):
    """The view ``x[npkey]`` (a basic key of ints, normalised slices and, with ``extra``, None
    and one Ellipsis, at most one of them making a view) recorded as node ``name``, remembering
    its key as ``getitem`` does."""
    if not extra:
        data = x._data[npkey + (Ellipsis,)]  # a 0-d view, not a scalar copy (see getitem)
    elif name == "UnsqueezeBackward0" and (data := _unsqueezed(x._data, npkey)) is not None:
        pass  # x[None], x[:, None], x[..., None]: one unit dim inserted, nothing else changed
    else:
        data = x._data[npkey] if Ellipsis in npkey else x._data[npkey + (Ellipsis,)]
        if None in npkey and data.size and data.__class__ is np.ndarray:
            data = _aten_new_dims(x, npkey, data)  # a new dim's stride: ATen's unsqueeze rule
    out = record(name, (x,), data, _getitem_backward, view_of=x,
                 attrs={"shape": tuple(x._data.shape), "key": npkey, "basic": True},
                 view_fn=lambda b: getitem(b, npkey))
    if x._base is None:
        out._view_key = npkey
    if not data.size:  # NumPy's empty slice forgets PyTorch's offset/strides (_layout)
        note_getitem(out, x, npkey)
    return out


def _unsqueezed(d, npkey):
    """``d[npkey]`` for a key of one None, whole-dim slices and at most one Ellipsis on a
    non-empty host array: ``d`` reshaped with a unit dim where the None stands, when NumPy's
    reshape gives it ATen's unsqueeze stride (its right neighbour's extent, the itemsize at the
    end). None for any other key or layout (the general steps then)."""
    if d.__class__ is not np.ndarray or not d.size:
        return None
    shape, st = d.shape, d.strides
    named = len(npkey) - 1 - (Ellipsis in npkey)  # the whole-dim slices
    p, dim = None, 0
    for k in npkey:
        if k is None:
            if p is not None:
                return None
            p = dim  # the new dim's place in the result
        elif k is Ellipsis:
            dim += len(shape) - named
        elif k == _FULL:
            dim += 1
        else:
            return None
    if p is None:
        return None
    want = st[:p] + ((shape[p] * st[p]) if p < len(shape) else d.itemsize,) + st[p:]
    out = d.reshape(shape[:p] + (1,) + shape[p:])
    return out if out.strides == want and out.base is not None else None  # (a view, no copy)


def getitem(x: Tensor, key) -> Tensor:
    if key.__class__ is int:  # x[i] in range: the commonest key, straight to its node
        shape = x._data.shape
        if shape and -shape[0] <= key < shape[0]:
            return _one_view(x, "SelectBackward0", (key,))
    out = _plain_getitem(x, key)
    if out is not None:
        return out
    if type(key) is list:
        key = sequence_key(key)
    comps = _one_ellipsis(_normalize_key(key), x._data.ndim)
    # (CUDA: a 0-d bool still raises NotImplementedError in device_plan; split, two layouts of
    # unit/empty dims came out unlike ATen's on the simulator)
    host = x._data.__class__ is np.ndarray
    mixes = _mixes_basic(comps, bools=host)
    _check_bounds(comps, x._data.shape, arrays=not mixes, bare=bare_key(key))
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
    elif mixes:
        return _split_advanced(x, comps, host)
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
    elif (axis := _take_axis(x._data, comps)) is not None:
        # one C-contiguous index tensor on a C-contiguous x: ATen's result is C-contiguous,
        # np.take's too (NumPy's x[:, idx] is not: it would cost a second copy)
        data = np.take(x._data, comps[axis[0]][1], axis=axis[1])
    else:
        try:
            data = x._data[npkey]
        except IndexError as e:
            if "shape mismatch" not in str(e):
                raise
            raise _advanced_broadcast_error(comps, e) from None
        data = np.array(data, copy=True) if np.shares_memory(data, x._data) else data
        data = aten_layout(x._data, comps, data)
    if basic and data.size and data.__class__ is np.ndarray and any(k is None for k in npkey):
        data = _aten_new_dims(x, npkey, data)
    out = record(_name_for(comps, tuple_key), (x,), np.asarray(data) if not basic else data,
                 _getitem_backward, view_of=x if basic else None,
                 attrs={"shape": tuple(x._data.shape), "key": npkey, "basic": basic},
                 view_fn=(lambda b: getitem(b, npkey)) if basic else None)
    if not data.size and data.__class__ is np.ndarray:
        if basic:
            note_getitem(out, x, npkey)
        else:
            note_empty_index(out, x, comps)
    return _remember_view_key(out, x, npkey) if basic else out


def _take_axis(data, comps):
    """``(position in comps, dim of x)`` of the one index tensor of a ``plain_key`` (else
    None): the gather ``np.take`` does in ATen's layout."""
    if data.__class__ is not np.ndarray or not plain_key(data, comps):
        return None
    where = [i for i, (k, _) in enumerate(comps) if k == "array"]
    if len(where) != 1:
        return None
    dim = 0
    for k, _ in comps[:where[0]]:
        dim += data.ndim - (len(comps) - 1) if k == "ellipsis" else 1
    return where[0], dim


def _aten_new_dims(x, npkey, data):
    """``data`` (NumPy's ``x[npkey]``, a key with None) with ATen's strides: NumPy gives a new
    dim stride 0, PyTorch the unsqueeze rule (``x[:, None]`` of a (4, 5) tensor: 5)."""
    d = x._data
    want = _new_dim_strides(npkey, d.ndim, data)
    if want is None:  # an int or a real slice after a None: ATen's walk, component by component
        isz = d.itemsize  # (x is not empty: its array's strides are its own)
        _, st, _ = getitem_geometry(d.shape, [s // isz for s in d.strides], 0, npkey)
        want = tuple([s * isz for s in st])
    if data.strides == want:
        return data
    # NumPy's reshape inserting the unit dims into the view without them gives ATen's strides
    # in the common case (x[:, None]), ~4 us cheaper than as_strided; checked, else as_strided
    rest = tuple([k for k in npkey if k is not None])
    out = d[rest if Ellipsis in rest else rest + (Ellipsis,)].reshape(data.shape)
    if out.strides == want:
        return out
    return as_strided(data, data.shape, [s // data.itemsize for s in want])


def _new_dim_strides(npkey, nd, data):
    """ATen's byte strides for ``data`` when nothing after the key's first None changes a dim
    (only ``:``, None, Ellipsis follow it): each new dim's stride is then its right neighbour's
    extent in the result (the itemsize at the end), as unsqueeze gives it. None otherwise."""
    consumed = 0
    for k in npkey:
        if k is not None and k is not Ellipsis:
            consumed += 1
    new, pos, seen = [], 0, False
    for k in npkey:
        if k is None:
            new.append(pos)
            pos += 1
            seen = True
        elif k is Ellipsis:
            pos += nd - consumed
        elif k.__class__ is slice:
            if seen and k != _FULL:
                return None
            pos += 1
        elif seen:
            return None
    shape, want = data.shape, list(data.strides)
    last = len(shape) - 1
    for i in reversed(new):
        want[i] = shape[i + 1] * want[i + 1] if i < last else data.itemsize
    return tuple(want)


def _split_advanced(x, comps, bools):
    bkey, akey = _split_keys(comps, bools)
    return getitem(getitem(x, bkey), akey)


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
        from .factory_args import _device_full
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
