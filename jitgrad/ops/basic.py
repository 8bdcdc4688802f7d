"""Factories, dtype casts, clone, and small helpers the engine needs."""
from __future__ import annotations

import collections.abc
import numbers
import operator
import warnings

import numpy as np

from .. import _dtype as D
from .._size import check_device
from ..tensor import Tensor
from .composite import record

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye", "arange",
    "linspace", "logspace", "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn",
    "randint", "rand_like", "randn_like", "randint_like", "randperm", "manual_seed", "cast",
    "empty_strided",
    "clone", "accumulate_", "where_any", "is_tensor", "numel", "scalar_tensor",
]


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


def _finish(data: np.ndarray, requires_grad: bool, dev=None) -> Tensor:
    if dev is not None and dev.type == "cuda":
        # host generation + one upload (random numbers, arange, eye, nested lists)
        from .._cuda_array import CudaArray
        data = CudaArray.from_host(data)
    t = Tensor._make(data)
    if requires_grad:
        t._set_requires_grad(True, "Only Tensors of floating point and complex dtype can "
                             "require gradients")
    return t


def _check_dtype_arg(dtype, fn="tensor"):
    if dtype is not None and not isinstance(dtype, D.dtype) and dtype not in (float, int, bool):
        raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
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
    return t.numel()


def _size_kw(size, kw, name):
    """Factories accept the shape positionally or as ``size=`` (PyTorch allows both); it is
    required (``zeros(())`` is the 0-d tensor, ``zeros()`` PyTorch's TypeError)."""
    if "size" in kw:
        if size:
            raise TypeError("got the size both positionally and as size=")
        size = (kw.pop("size"),)
    elif not size:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    if kw:
        raise TypeError(f"unexpected keyword arguments {sorted(kw)}")
    return size


def check_storage(shape, dtype) -> None:
    """PyTorch's error for a tensor whose byte size overflows int64 (NumPy's would be a
    ValueError), and its allocator's RuntimeError for one too large to allocate."""
    n = 1
    for s in shape:
        n *= int(s)
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes >= 2 ** 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if nbytes >= 2 ** 47:  # beyond any address space NumPy can map: NumPy's MemoryError
        raise _alloc_error(nbytes)


def _alloc_error(nbytes) -> RuntimeError:
    return RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                        f"can't allocate memory: you tried to allocate {int(nbytes)} bytes. "
                        "Error code 12 (Cannot allocate memory)")


def _host_alloc(fn, shape, *args, dtype):
    """``fn(shape, *args, dtype=dtype)`` with NumPy's MemoryError as PyTorch's RuntimeError."""
    try:
        return fn(shape, *args, dtype=dtype)
    except MemoryError:
        raise _alloc_error(int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize) \
            from None


def _shape(size, name="empty", dtype=None):
    """The shape of a factory's ``*size`` (ints, or one tuple/list/Size), with PyTorch's
    errors for non-integers, negative sizes and (given the ``dtype``) overflowing ones."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        shape = tuple(map(operator.index, size))
    except TypeError:
        _size_type_error(size, name)
    if shape and min(shape) < 0:
        if name == "zeros":
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    if dtype is not None:
        check_storage(shape, dtype)
    return shape


def _size_type_error(size, name):
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    for i, s in enumerate(size):
        try:
            operator.index(s)
        except TypeError:
            if len(size) == 1:
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, "
                                f"not {type(s).__name__}") from None
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"") from None


def _factory_dtype(dtype, default=None):
    return D.to_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())


def _make(np_fn, size, dtype, device, requires_grad, name):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dev.type == "cuda":
        fill = {np.zeros: 0, np.ones: 1}.get(np_fn)
        return _finish(_device_full(_shape(size, name, dt.np), fill, dt.np), requires_grad)
    return _finish(_host_alloc(np_fn, _shape(size, name, dt.np), dtype=dt.np), requires_grad)


def _device_full(shape, value, npdt):
    """A CUDA storage filled on the device (no transfer); ``value=None``: uninitialized."""
    from .._cuda_array import CudaArray
    out = CudaArray.empty(shape, npdt)
    if value is not None and out.size:
        from ..backends.cuda_kernels.layout import fill
        fill(out.buf, value)
    return out


def zeros(*size, dtype=None, device=None, requires_grad=False,
          layout=None, **kw):
    size = _size_kw(size, kw, "zeros")
    return _make(np.zeros, size, dtype, device, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False,
          layout=None, **kw):
    size = _size_kw(size, kw, "ones")
    return _make(np.ones, size, dtype, device, requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False, layout=None,
          pin_memory=False, memory_format=None, **kw):
    size = _size_kw(size, kw, "empty")
    return _make(np.empty, size, dtype, device, requires_grad, "empty")


def _fill_scalar(fill_value, name="full"):
    """A fill value as PyTorch's Number argument takes it (a 0-d Tensor not requiring grad is
    read as its Python number)."""
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim == 0 and not fill_value._requires_grad:
            return fill_value.item()
    elif isinstance(fill_value, (numbers.Number, np.bool_)) and \
            not isinstance(fill_value, complex):
        return fill_value
    raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not "
                    f"{type(fill_value).__name__}")


def _checked_fill(fill_value, dt):
    """The fill value converted to ``dt`` with PyTorch's overflow check (Scalar.to<T>)."""
    if dt.is_floating_point or dt is D.bool_:
        return fill_value
    v = fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    info = np.iinfo(dt.np)
    if isinstance(v, float):
        ok = v == v and info.min - 1 < v < info.max + 1
    else:
        v = int(v)
        lo = -int(info.max) if info.min == 0 else int(info.min)
        ok = lo <= v <= int(info.max)
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[dt.name]} without "
                           "overflow")
    return int(v) if info.min != 0 or v >= 0 else int(v) % (int(info.max) + 1)


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                "int64": "int64_t"}


def full(size, fill_value, dtype=None, device=None, requires_grad=False, layout=None):
    dev = check_device(device)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    fill_value = _fill_scalar(fill_value)
    dt = D.to_dtype(dtype) if dtype is not None else (
        D.bool_ if isinstance(fill_value, bool) else  # (a NumPy bool reads as a float)
        D.int64 if isinstance(fill_value, numbers.Integral) else D.get_default_dtype())
    fill_value = _checked_fill(fill_value, dt)
    shape = _shape((size,), "full", dt.np)
    if dev.type == "cuda":
        return _finish(_device_full(shape, fill_value, dt.np), requires_grad)
    with np.errstate(over="ignore"):
        return _finish(_host_alloc(np.full, shape, fill_value, dtype=dt.np), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    for name, v in (("n", n), ("m", m)):
        if v is None:
            continue
        if not isinstance(v, (int, np.integer, Tensor)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' (position {1 if name == 'n' else 2}) "
                            f"must be int, not {type(v).__name__}")
        if int(v) < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {int(v)}")
    check_storage((int(n), int(n if m is None else m)), dt.np)
    return _finish(np.eye(int(n), None if m is None else int(m), dtype=dt.np), requires_grad, dev)


def empty_strided(size, stride, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False):
    """An uninitialized tensor with the given strides (a view of a large enough buffer)."""
    shape = _shape((size,), "empty_strided")
    stride = tuple(map(operator.index, stride))
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality "
                           f"of strides ({len(stride)})")
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    n = 1 + sum((a - 1) * b for a, b in zip(shape, stride)) if all(shape) else 0
    buf = np.empty(n, dtype=dt.np)
    data = np.lib.stride_tricks.as_strided(
        buf, shape, tuple(b * buf.itemsize for b in stride)) if n else np.empty(shape, dt.np)
    return _finish(data, requires_grad, dev)


def _fmt_num(v):
    return repr(v) if isinstance(v, int) else format(v, "g")


def arange(start=0, end=None, step=1, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, (int, np.integer)) for v in vals) \
            else D.get_default_dtype()
    dt = D.to_dtype(dtype)
    if dt is D.bool_:
        raise NotImplementedError('"arange_cpu" not implemented for \'Bool\'')
    if step == 0:
        raise RuntimeError("step must be nonzero")
    fs, fe = float(start), float(end)
    if not (np.isfinite(fs) and np.isfinite(fe)):
        raise RuntimeError(f"unsupported range: {_fmt_num(start)} -> {_fmt_num(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt.is_floating_point:
        n = int(np.ceil((fe - fs) / float(step)))
        # computed in float64 like PyTorch, then cast (so float32 aranges match torch's values)
        check_storage((n,), dt.np)
        data = fs + np.arange(n, dtype=np.float64) * float(step)
    else:
        # PyTorch casts start/end/step to the integer type first
        xs, xe, xst = int(start), int(end), int(step)
        if dt is D.int64:
            if xst == 0:
                raise ValueError("step must be nonzero")
            sgn = 1 if xst > 0 else -1
            n = (xe - xs + xst - sgn) // xst
        else:
            n = int(np.ceil((fe - fs) / float(step)))
        check_storage((max(n, 0),), dt.np)
        data = xs + np.arange(max(n, 0), dtype=np.int64) * xst
    return _finish(data.astype(dt.np), requires_grad, dev)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if not isinstance(steps, (int, np.integer, Tensor)) or isinstance(steps, bool):
        raise TypeError("linspace() received an invalid combination of arguments - got "
                        f"({type(start).__name__}, {type(end).__name__}, "
                        f"{type(steps).__name__}), but expected one of:")
    if dt is D.bool_:
        raise NotImplementedError('"linspace_cpu" not implemented for \'Bool\'')
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if isinstance(start, Tensor):
        start = start.item()
    if isinstance(end, Tensor):
        end = end.item()
    # PyTorch fills the first half from start and the second half from end (symmetric rounding)
    if steps <= 1:
        data = np.array([start] * steps, dtype=np.float64)
    elif dt is D.float32:
        s32 = np.float32((end - start) / (steps - 1))
        idx = np.arange(steps, dtype=np.float32)
        half = steps // 2
        data = np.where(idx < half, np.float32(start) + s32 * idx,
                        np.float32(end) - s32 * (np.float32(steps - 1) - idx))
    else:
        step = (end - start) / (steps - 1)
        idx = np.arange(steps, dtype=np.float64)
        half = steps // 2
        data = np.where(idx < half, start + step * idx, end - step * (steps - 1 - idx))
    with np.errstate(all="ignore"):
        return _finish(data.astype(dt.np), requires_grad, dev)  # computed on the host, uploaded


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    lin = linspace(start, end, steps, dtype=D.float64)
    dt = _factory_dtype(dtype)
    with np.errstate(all="ignore"):
        return _finish((base ** lin._data).astype(dt.np), requires_grad, dev)


def _like(t, dtype):
    return D.to_dtype(dtype) if dtype is not None else t.dtype


def _like_device(t, device, name):
    """The device a *_like factory allocates on (its argument's unless told), or None for the
    CPU (the fast path)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(t).__name__}")
    if device is None:
        return None if t._data.__class__ is np.ndarray else t.device
    dev = check_device(device)
    return None if dev.type == "cpu" else dev


def _like_host(np_like, np_new, t, dtype, memory_format, *fill):
    """A host array shaped as ``t``: PyTorch's preserve_format keeps a dense input's strides
    (a transposed input gives a transposed result), contiguous_format gives C order."""
    d = t._data
    if d.flags.c_contiguous or memory_format == "contiguous_format":
        return np_new(d.shape, *fill, dtype=_like(t, dtype).np)
    return np_like(d, *fill, dtype=_like(t, dtype).np, order="K")


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "zeros_like") is not None:
        return _finish(_device_full(t._data.shape, 0, _like(t, dtype).np), requires_grad)
    return _finish(_like_host(np.zeros_like, np.zeros, t, dtype, memory_format), requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "ones_like") is not None:
        return _finish(_device_full(t._data.shape, 1, _like(t, dtype).np), requires_grad)
    return _finish(_like_host(np.ones_like, np.ones, t, dtype, memory_format), requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "empty_like") is not None:
        return _finish(_device_full(t._data.shape, None, _like(t, dtype).np), requires_grad)
    return _finish(_like_host(np.empty_like, np.empty, t, dtype, memory_format), requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None):
    fill_value = _checked_fill(_fill_scalar(fill_value, "full_like"), _like(t, dtype))
    if _like_device(t, device, "full_like") is not None:
        return _finish(_device_full(t._data.shape, fill_value, _like(t, dtype).np),
                       requires_grad)
    return _finish(_like_host(np.full_like, np.full, t, dtype, memory_format, fill_value),
                   requires_grad)


# ----------------------------------------------------------------------------- random


def _gen(generator):
    from .. import random as R
    return generator._impl if generator is not None else R.default_generator()


def _cuda_rng(generator):
    """The CUDA generator module (device-side Philox, ``jitgrad._cuda_random``)."""
    if generator is not None:
        raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
    from .. import _cuda_random
    return _cuda_random


def _float_sampler_dtype(dtype, kernel):
    dt = _factory_dtype(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_name(dt)}\'')
    return dt


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    size = _size_kw(size, kw, "rand")
    dev = check_device(device)
    dt = _float_sampler_dtype(dtype, "check_uniform_bounds")
    if dev.type == "cuda":  # generated on the device (no upload)
        return _finish(_cuda_rng(generator).uniform(_shape(size, "rand", dt.np), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).rand(_shape(size, "rand", dt.np), dt.np), requires_grad, dev)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False,
          **kw):
    size = _size_kw(size, kw, "randn")
    dev = check_device(device)
    dt = _float_sampler_dtype(dtype, "normal_kernel_cpu")
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).normal(_shape(size, "randn", dt.np), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).randn(_shape(size, "randn", dt.np), dt.np), requires_grad, dev)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    dev = check_device(device)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{type(size).__name__}")
    dt = _factory_dtype(dtype, D.int64)
    shape = _shape((size,), "randint", dt.np)
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).randint(int(low), int(high), shape, dt.np),
                       requires_grad)
    return _finish(_gen(generator).randint(int(low), int(high), shape, dt.np), requires_grad,
                   dev)


def rand_like(t, *, generator=None, dtype=None, device=None, requires_grad=False,
              memory_format=None, layout=None):
    return rand(tuple(t.shape), generator=generator, dtype=_like(t, dtype),
                requires_grad=requires_grad, device=t.device if device is None else device)


def randn_like(t, *, generator=None, dtype=None, device=None, requires_grad=False,
               memory_format=None, layout=None):
    return randn(tuple(t.shape), generator=generator, dtype=_like(t, dtype),
                 requires_grad=requires_grad, device=t.device if device is None else device)


def randint_like(t, low=0, high=None, dtype=None, device=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(t.shape), dtype=_like(t, dtype),
                   device=t.device if device is None else device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    dt = _factory_dtype(dtype, D.int64)
    return _finish(_gen(generator).randperm(int(n), dt.np), requires_grad, dev)  # host draw


def manual_seed(seed):
    from .. import random as R
    return R.manual_seed(seed)


# ----------------------------------------------------------------------------- casts, clone


def _cast_backward(node, g):
    return (g,)  # the engine casts the gradient back to the input's dtype


def cast(t: Tensor, dt, memory_format=None) -> Tensor:
    """``t.to(dtype)``: a copy in the new dtype, recorded as ToCopyBackward0 (strides kept,
    PyTorch's preserve_format, unless ``memory_format=contiguous_format``)."""
    dt = D.to_dtype(dt)
    d = t._data
    data = d.astype(dt.np, order="C") if memory_format == "contiguous_format" and \
        d.__class__ is np.ndarray else d.astype(dt.np)
    if not dt.is_floating_point:
        return Tensor._make(data)
    return record("ToCopyBackward0", (t,), data, _cast_backward)


def _clone_backward(node, g):
    return (g,)


def clone(t: Tensor, memory_format=None) -> Tensor:
    d = t._data
    if d.__class__ is np.ndarray:
        if memory_format not in (None, "preserve_format", "contiguous_format"):
            _check_memory_format(memory_format, d.ndim)
        data = np.array(d, copy=True, order="C" if memory_format == "contiguous_format"
                        else "K")
    else:
        data = d.copy()
    return record("CloneBackward0", (t,), data, _clone_backward)


def _check_memory_format(memory_format, ndim):
    need = {"channels_last": 4, "channels_last_3d": 5}.get(memory_format)
    if need is not None and ndim != need:
        raise RuntimeError(f"required rank {need} tensor to use {memory_format} format")
    raise NotImplementedError(f"jitgrad does not support memory_format={memory_format}")


def _to_device_backward(node, g):
    return (g.to(node.ctx.attrs["device"]),)


def to_device(t: Tensor, dev) -> Tensor:
    """``t.to(device)``: one counted transfer, recorded as ToCopyBackward0 (the gradient goes
    back to ``t``'s device)."""
    d = t._data
    if dev.type == "cuda":
        from .._cuda_array import CudaArray
        data = CudaArray.from_host(d)
    else:
        data = d.to_host()
    if not t.dtype.is_floating_point:
        return Tensor._make(data)
    return record("ToCopyBackward0", (t,), data, _to_device_backward,
                  attrs={"device": t.device})


def accumulate_(dst: Tensor, g: Tensor) -> None:
    """``dst += g`` in place on the storage (gradient accumulation; not recorded)."""
    d = dst._data
    if d.__class__ is not np.ndarray:
        from .elementwise_call import device_add_into
        device_add_into(d, g._data)
    else:
        np.add(d, g._data, out=d, casting="unsafe")
    dst._vc.value += 1


def where_any(cond, a, b):
    """``where`` accepting Python scalars on either branch and a Python bool condition (the
    tensor-env ``select``: a condition on scalar operands is decided in Python)."""
    if not isinstance(cond, Tensor):
        return a if cond else b
    from .functional import where
    return where(cond, a, b)
