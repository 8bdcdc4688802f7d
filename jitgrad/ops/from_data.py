"""``torch.tensor`` and its relatives: a tensor built from Python data (nested sequences,
scalars, NumPy arrays, Tensors) with PyTorch's dtype inference, its per-element checks and
warnings; ``as_tensor``/``from_numpy`` share memory instead of copying; is_tensor, numel."""
from __future__ import annotations

import collections.abc
import numbers
import operator
import warnings

import numpy as np

from .. import _dtype as D
from .._size import check_device
from ..tensor import Tensor
from .factory_args import _finish
from .parser_errors import input_type_error, parser_type_name

_MAX_DIMS = 64
_COPY_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).")
_NDARRAY_LIST_WARNING = (
    "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider "
    "converting the list to a single numpy.ndarray with numpy.array() before converting to a "
    "tensor. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:252.)")
_NOT_WRITABLE_WARNING = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
    "This means writing to this tensor will result in undefined behavior. You may want to copy "
    "the array to protect its data or make it writable before converting it to a tensor. This "
    "type of warning will be suppressed for the rest of this program. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:213.)")


def _is_sequence(x) -> bool:
    """PySequence_Check as PyTorch's data walk sees it (a Tensor is a scalar there)."""
    t = type(x)
    if t is list or t is tuple:
        return True
    return not isinstance(x, (Tensor, dict)) and isinstance(
        x, (collections.abc.Sequence, np.ndarray))


def _compute_sizes(data):
    """PyTorch's compute_sizes: the shape read along the first elements."""
    sizes = []
    seq = data
    while _is_sequence(seq):
        n = len(seq)
        sizes.append(n)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(seq).__name__}'")
        if n == 0:
            break
        seq = seq[0]
    return sizes


def _infer_dtype(data):
    """The dtype torch.tensor infers from nested Python data (PyTorch's infer_scalar_type)."""
    result = None
    stack = [data]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is float:
            k = D.get_default_dtype()
        elif t is int:
            k = D.int64
        elif t is bool:
            k = D.bool_
        elif t is list or t is tuple:
            if x:
                stack.extend(x)
                continue
            k = D.get_default_dtype()  # an empty sequence counts as the default dtype
        elif isinstance(x, Tensor):
            k = x.dtype
        elif isinstance(x, (np.ndarray, np.generic)):
            k = D.from_numpy_dtype(x.dtype)
        else:
            k = _scalar_kind(x, sequences=True)
            if k is None:
                if len(x):
                    stack.extend(x)
                    continue
                k = D.get_default_dtype()
        result = k if result is None else (k if k is result else D.promote_types(result, k))
    return result


def _scalar_kind(x, sequences=False):
    if isinstance(x, (bool, np.bool_)):
        return D.bool_
    if isinstance(x, np.generic):
        return D.from_numpy_dtype(x.dtype)
    if isinstance(x, numbers.Integral):
        return D.int64
    if isinstance(x, numbers.Real):
        return D.get_default_dtype()
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if sequences and _is_sequence(x):
        return None
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _overflow(dt):
    return RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


def _check_integral(arr, dt):
    """PyTorch's checked conversion of Python numbers into an integer dtype."""
    kind = arr.dtype.kind
    info = np.iinfo(dt.np)
    if kind == "O" or arr.dtype == np.uint64:
        raise ValueError("Overflow when unpacking long long")
    if not arr.size:
        return
    if kind == "f":
        if not np.isfinite(arr).all() or arr.min() < info.min or arr.max() > info.max:
            raise _overflow(dt)
    elif kind in "iu":
        lo = -int(info.max) if info.min == 0 else int(info.min)  # unsigned: wraps from -max
        if int(arr.min()) < lo or int(arr.max()) > int(info.max):
            raise _overflow(dt)


def _store(data, sizes, dt):
    """PyTorch's recursive_store: every element checked (the errors PyTorch raises for ragged
    or malformed data), each leaf converted as a Python scalar."""
    flat = []
    ndim = len(sizes)
    conv = float if dt.is_floating_point else (bool if dt is D.bool_ else operator.index)

    def rec(obj, dim):
        if dim == ndim:
            if conv is operator.index and isinstance(obj, float):
                flat.append(obj)  # range-checked below
            else:
                flat.append(conv(obj))
            return
        if not _is_sequence(obj):
            raise TypeError("not a sequence")
        n = sizes[dim]
        if len(obj) != n:
            raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(obj)})")
        for item in obj:
            rec(item, dim + 1)

    rec(data, 0)
    if dt.is_floating_point or dt is D.bool_:
        arr = np.array(flat, dtype=dt.np)
    else:
        arr = np.array(flat)
        _check_integral(arr, dt)
        arr = arr.astype(dt.np)
    return arr.reshape(sizes)


def _from_data(data, dt):
    """The array torch.tensor builds from nested sequences / scalars (``dt`` None: inferred)."""
    sizes = _compute_sizes(data)
    if dt is None:
        dt = _infer_dtype(data)
    n = 1
    for s in sizes:
        n *= s
    if n == 0:
        return np.zeros(sizes, dtype=dt.np)  # PyTorch stores nothing (and checks nothing)
    if sizes and type(data) is list and isinstance(data[0], np.ndarray):
        warnings.warn(_NDARRAY_LIST_WARNING, UserWarning, stacklevel=3)
    integral = not dt.is_floating_point and dt is not D.bool_
    try:
        with np.errstate(all="ignore"):
            arr = np.array(data) if integral else np.array(data, dtype=dt.np)
    except (ValueError, TypeError, OverflowError, RuntimeError):
        arr = None
    if arr is None or arr.shape != tuple(sizes) or arr.dtype.kind == "O":
        return _store(data, sizes, dt)
    if integral:
        if dt is not D.int64 or arr.dtype.kind not in "ib":
            _check_integral(arr, dt)
        arr = arr.astype(dt.np, copy=False)
    return arr


def _check_dtype_arg(dtype, fn="tensor"):
    if dtype is not None and not isinstance(dtype, D.dtype) and dtype not in (float, int, bool):
        raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not "
                        f"{parser_type_name(dtype)}")
    return None if dtype is None else D.to_dtype(dtype)


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor copying ``data`` (nested lists, scalars, NumPy arrays, Tensors)."""
    dev = check_device(device)
    dt = _check_dtype_arg(dtype)
    if isinstance(data, Tensor):
        warnings.warn(_COPY_WARNING, UserWarning, stacklevel=2)
        dt = dt or data.dtype
        src = data._data
        if src.__class__ is not np.ndarray:
            if dev.type == "cuda":
                return _finish(src.astype(dt.np, copy=True), requires_grad)
            src = src.to_host()
        return _finish(src.astype(dt.np, copy=True), requires_grad, dev)
    if isinstance(data, np.ndarray):
        ndt = D.from_numpy_dtype(data.dtype)  # PyTorch's error for unsupported dtypes
        arr = np.array(data, dtype=(dt or ndt).np, copy=True)
    elif isinstance(data, np.generic):
        arr = np.array(data, dtype=(dt or D.from_numpy_dtype(data.dtype)).np)
    elif isinstance(data, str):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    else:
        arr = _from_data(data, dt)
    return _finish(arr, requires_grad, dev)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a NumPy array / Tensor when no cast is needed."""
    dev = check_device(device) if device is not None else None
    if isinstance(data, Tensor):
        if dev is not None and dev != data.device:
            data = data.to(dev)
        return data if dtype is None else data.to(dtype)
    if dev is not None and dev.type == "cuda":
        return tensor(data, dtype=dtype, device=dev)
    if isinstance(data, np.ndarray):
        dt = D.to_dtype(dtype) if dtype is not None else D.from_numpy_dtype(data.dtype)
        if data.dtype != dt.np:
            return Tensor._make(data.astype(dt.np))
        _warn_not_writable(data)
        return Tensor._make(data)
    return tensor(data, dtype=dtype)


_warned_not_writable = [False]


def _warn_not_writable(a):
    if not a.flags.writeable and not _warned_not_writable[0]:
        _warned_not_writable[0] = True  # PyTorch: once per program
        warnings.warn(_NOT_WRITABLE_WARNING, UserWarning, stacklevel=3)


def from_numpy(a: np.ndarray) -> Tensor:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.from_numpy_dtype(a.dtype)  # raises PyTorch's error for unsupported dtypes
    _warn_not_writable(a)
    return Tensor._make(a)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(t) -> int:
    try:  # (free until raised) a non-Tensor: PyTorch's TypeError
        return t.numel()
    except AttributeError:
        raise input_type_error("numel", (t,), {}) from None
