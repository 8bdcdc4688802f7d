"""Indexing keys: a user key (ints, slices, None, Ellipsis, lists, NumPy arrays, int/bool
tensors) normalised to (kind, value) components, classified (basic or advanced, mixed), split
into PyTorch's two steps, and bounds-checked with PyTorch's errors; ``_cuda`` loads indexing's
CUDA half (``index_cuda``) on first use."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .index_rules import check_range


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


def _one_ellipsis(comps, nd):
    """``comps`` with at most one Ellipsis. PyTorch reads every Ellipsis as skipping the dims
    the key leaves unnamed, so when the key names all dims, or nothing but Ellipsis follows,
    the later ones skip nothing (``x[..., 0, ...]`` is ``x[:, 0]``). The others run past the
    last dim and fail there (PyTorch's error for an index tensor; an int, out of bounds)."""
    if sum(1 for k, _ in comps if k == "ellipsis") < 2:
        return comps
    named = sum(_mask_ndim(k, v) if k in ("mask", "dmask") else 1
                for k, v in comps if k in ("int", "slice", "array", "darray", "mask", "dmask"))
    first = next(i for i, (k, _) in enumerate(comps) if k == "ellipsis")
    out = comps[:first + 1]
    for i in range(first + 1, len(comps)):
        k = comps[i][0]
        if k != "ellipsis":
            out.append(comps[i])
        elif named < nd and any(c != "ellipsis" for c, _ in comps[i + 1:]):
            dots = sum(1 for c, _ in comps if c == "ellipsis")
            raise IndexError(f"too many indices for tensor of dimension {nd} (got "
                             f"{named + (nd - named) * dots})")
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


def bare_key(key) -> bool:
    """A key PyTorch's ``__getitem__``/``__setitem__`` take before its tuple walk: one Python or
    NumPy int (not bool) or one slice. Only these get the 0-dim tensor's own errors; any other
    key naming a dim of a 0-dim tensor is "too many indices"."""
    return key.__class__ is slice or (isinstance(key, (int, np.integer)) and
                                      not isinstance(key, (bool, np.bool_)))


def _check_bounds(comps, shape, arrays=True, bare=False):
    """PyTorch's IndexError for out-of-range integer indices (NumPy words it differently);
    ``arrays=False``: leave index arrays to the second step of a key mixing basic components
    (PyTorch checks them against the basic-indexed view); ``bare``: the key was ``bare_key``."""
    nd = len(shape)
    empty = 0 in shape  # PyTorch checks index values only when there is an element to read
    if not shape and bare:
        k, v = comps[0]
        if k == "int" and v == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in "
                             "Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor "
                             "to a number")
        if k == "int":  # ATen's applySelect on no sizes
            raise IndexError(f"index {v} is out of bounds for dimension 0 with size 0")
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
                # ATen's applySelect names the index's position in the key (its real_dim),
                # not the tensor dim: x[None, 0, 5] of a (2, 3) tensor says "dimension 2"
                raise IndexError(f"index {v} is out of bounds for dimension {i} with size "
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



_FULL = slice(None, None, 1)


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


def _mixes_basic(comps, bools=False) -> bool:
    """An advanced key with ints, None or real slices: PyTorch applies those first and the index
    tensors to the result (x[0, :, [1, 2]] has shape (3, 2); NumPy's would be (2, 3)).
    ``bools``: a 0-dim bool (``_bool_key``) counts too, as for getitem; setitem still writes it
    as a 0-dim mask in one step (where its overlap checks are)."""
    return any(k in ("int", "none") or (k == "slice" and v != _FULL) or (bools and _bool_key(k, v))
               for k, v in comps)


def _bool_key(kind, v) -> bool:
    """A 0-dim boolean index (True/False, a 0-dim bool or uint8 tensor or array): PyTorch's
    applySlicing reads it as an unsqueeze at its place (UnsqueezeBackward0) and then indexes
    that new unit dim with [0] (True) or [] (False), IndexBackward0 on top."""
    return kind == "mask" and v.__class__ is np.ndarray and v.ndim == 0


def _split_keys(comps, bools=False):
    """(basic key, advanced key): the two steps PyTorch indexes an advanced key in (with
    ``bools``, a 0-dim bool is an unsqueeze in the first and [0] or [] in the second)."""
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
        elif bools and _bool_key(kind, v):
            bkey.append(None)
            akey.append(Tensor._make(np.zeros(1 if v else 0, np.int64)))
        else:
            if kind in ("mask", "dmask"):
                bkey += [_FULL] * _mask_ndim(kind, v)
            else:
                bkey.append(_FULL)
            # index tensors stay tensors: a NumPy array would be re-read as a new (contiguous)
            # index and lose the strides ATen orders the result by (index_layout)
            akey.append(Tensor._make(v) if kind in ("darray", "dmask", "array") else v)
    return tuple(bkey), tuple(akey)
