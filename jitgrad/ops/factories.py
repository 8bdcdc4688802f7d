"""Fill and range factories: zeros/ones/empty/full/eye/empty_strided, arange/linspace/logspace
and the *_like factories (host arrays, or CUDA storages filled on the device)."""
from __future__ import annotations

import math
import numbers
import operator
from functools import partial

import numpy as np

from .. import _dtype as D
from .._cuda_array import CudaArray
from .._memory_format import (
    CHANNELS_LAST_RANK,
    dense_strided,
    format_strides,
    keeps_numpy_layout,
    new_host,
    record_if_empty,
)
from .._size import check_device
from ..tensor import Tensor
from .factory_args import (
    NOT_GIVEN,
    _device_full,
    _factory_dtype,
    _finish,
    _host_alloc,
    _like,
    _shape,
    _size_kw,
    arange_args,
    check_storage,
    linspace_steps,
)
from .parser_errors import input_type_error, parser_type_name


def _make(np_fn, size, dtype, device, requires_grad, name):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dev.type == "cuda":
        fill = {np.zeros: 0, np.ones: 1}.get(np_fn)
        return _finish(_device_full(_shape(size, name, dt.np), fill, dt.np), requires_grad)
    return _finish(_host_alloc(np_fn, _shape(size, name, dt.np), dtype=dt.np), requires_grad)


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
    if memory_format in CHANNELS_LAST_RANK:
        dt = _factory_dtype(dtype)
        shape = _shape(size, "empty", dt.np)
        if check_device(device).type == "cuda":  # the same strides, kept by the storage
            return _finish(CudaArray.empty_strided(
                shape, format_strides(shape, None, memory_format), dt.np), requires_grad)
        data = new_host(partial(_host_alloc, np.empty), shape, dt.np, memory_format)
        return record_if_empty(_finish(data, requires_grad), memory_format)
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
                    f"{parser_type_name(fill_value)}")


# PyTorch's C++ names of the floating types a double Scalar can overflow (float64 cannot)
_C_FLOAT_NAMES = {"float16": "c10::Half", "float32": "float"}


def _checked_fill(fill_value, dt, scalar_fill=False):
    """The fill value converted to ``dt`` with PyTorch's overflow check (c10's ``overflows`` in
    Scalar.to<T>): finite values beyond a float16/float32 range are refused (infinities and NaN
    pass), integers must fit the integer type (negative ones wrap into unsigned types).
    ``scalar_fill``: a fill_ of one CPU element, which ATen writes through its unchecked
    float16 conversion (``full((1,), 7e4, dtype=float16)`` is inf, ``full((2,), ...)`` raises)."""
    if dt.name in _C_FLOAT_NAMES and isinstance(fill_value, (numbers.Real, np.floating)) and \
            not (scalar_fill and dt is D.float16):
        v = float(fill_value)
        if float(np.finfo(dt.np).max) < abs(v) < float("inf"):
            raise RuntimeError(f"value cannot be converted to type {_C_FLOAT_NAMES[dt.name]} "
                               "without overflow")
        return fill_value
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


def _one_cpu_element(shape, dev):
    """ATen's fill_ takes its scalar_fill shortcut (see ``_checked_fill``) here."""
    return dev.type == "cpu" and math.prod(shape) == 1


def full(size, fill_value, dtype=None, device=None, requires_grad=False, layout=None):
    dev = check_device(device)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{parser_type_name(size)}")
    fill_value = _fill_scalar(fill_value)
    dt = D.to_dtype(dtype) if dtype is not None else (
        D.bool_ if isinstance(fill_value, bool) else  # (a NumPy bool reads as a float)
        D.int64 if isinstance(fill_value, numbers.Integral) else D.get_default_dtype())
    shape = _shape((size,), "full", dt.np)
    fill_value = _checked_fill(fill_value, dt, _one_cpu_element(shape, dev))
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
                            f"must be int, not {parser_type_name(v)}")
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


def arange(*args, **kwargs):
    """``arange(end)`` / ``arange(start, end[, step])``, with ``dtype``, ``device`` and
    ``requires_grad`` by keyword (the parser needs to see how each argument came)."""
    start, end, step = arange_args(args, kwargs)
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    requires_grad = kwargs.get("requires_grad", False)
    dev = check_device(device)
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
    if np.ceil((fe - fs) / float(step)) > 9.223372036854775807e18:  # ATen's size in double
        raise RuntimeError("invalid size, possible overflow?")
    if dt.is_floating_point:
        n = int(np.ceil((fe - fs) / float(step)))
        check_storage((n,), dt.np)
        # ATen's vectorized loop, bit for bit (its parallel chunks: our thread count)
        from .._settings import get_num_threads
        from ._range_kernels import float_arange, half_arange
        data = half_arange(fs, step, n, get_num_threads()) if dt is D.float16 else \
            float_arange(fs, float(step), n, dt.np, get_num_threads())
        return _finish(data, requires_grad, dev)
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


def linspace(start, end=NOT_GIVEN, steps=NOT_GIVEN, dtype=None, device=None, requires_grad=False):
    steps = linspace_steps(start, end, steps)
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dt is D.bool_:
        raise NotImplementedError('"linspace_cpu" not implemented for \'Bool\'')
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if isinstance(start, Tensor):
        start = start.item()
    if isinstance(end, Tensor):
        end = end.item()
    # PyTorch fills the first half from start and the second half from end (symmetric rounding)
    if steps <= 1:
        data = np.array([start] * steps, dtype=np.float64)
    elif dt in (D.float32, D.float64):
        # ATen: start/end converted to the dtype, the step computed in it, one fma per value
        from ._range_kernels import float_linspace
        data = float_linspace(start, end, steps, dt.np)
    elif not dt.is_floating_point:
        # ATen: start/end converted (checked) to the integer type, the step in double, each
        # double value truncated into the type
        from ._range_kernels import fill_linspace
        s, e = float(_checked_fill(start, dt)), float(_checked_fill(end, dt))
        data = np.empty(steps, np.float64)
        fill_linspace(s, e, (e - s) / (steps - 1), data)
    else:
        step = (end - start) / (steps - 1)
        idx = np.arange(steps, dtype=np.float64)
        half = steps // 2
        data = np.where(idx < half, start + step * idx, end - step * (steps - 1 - idx))
    with np.errstate(all="ignore"):
        return _finish(data.astype(dt.np), requires_grad, dev)  # computed on the host, uploaded


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """ATen's CPU logspace: start/end converted to the dtype, their difference taken in it, then
    ``pow(base, exponent)`` in double per value (``_range_kernels.fill_logspace``)."""
    from ._range_kernels import fill_logspace
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    data = np.empty(steps, np.float64)
    with np.errstate(all="ignore"):
        if steps == 1:
            data[0] = float(base) ** float(start)
        elif steps > 1:
            s, e = _checked_fill(start, dt), _checked_fill(end, dt)
            if dt.is_floating_point:
                s, e = dt.np.type(s), dt.np.type(e)
                diff = float(e - s)
            else:  # C++ promotes the two integers to int before subtracting
                diff = float(int(e) - int(s))
            fill_logspace(float(base), float(s), float(e), diff / (steps - 1), data)
        if dt is D.float16:  # double -> c10::Half goes through float
            data = data.astype(np.float32)
        return _finish(data.astype(dt.np), requires_grad, dev)


def _like_device(t, device, name):
    """The device a *_like factory allocates on (its argument's unless told), or None for the
    CPU (the fast path)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(t)}")
    if device is None:
        return None if t._data.__class__ is np.ndarray else t.device
    dev = check_device(device)
    return None if dev.type == "cpu" else dev


def _like_on_device(t, dtype, memory_format, fill, requires_grad):
    """A CUDA ``*_like`` result: the strides ``memory_format`` gives ``t`` on the host
    (preserve_format keeps a dense input's), filled on the device (None: uninitialized)."""
    st = format_strides(tuple(t._data.shape), t.stride(), memory_format)
    return _finish(CudaArray.empty_strided(t._data.shape, st, _like(t, dtype).np, fill),
                   requires_grad)


def _like_host(np_like, np_new, t, dtype, memory_format, *fill):
    """A host array shaped as ``t``: PyTorch's preserve_format keeps a dense input's strides
    (a transposed input gives a transposed result), contiguous_format gives C order."""
    d = t._data
    if memory_format in CHANNELS_LAST_RANK:
        return new_host(np_new, d.shape, _like(t, dtype).np, memory_format, *fill)
    if memory_format == "contiguous_format" or (d.flags.c_contiguous and 1 not in d.shape) or \
            keeps_numpy_layout(d):
        return np_new(d.shape, *fill, dtype=_like(t, dtype).np)
    # preserve_format: a dense input's exact strides (size-1 dims included), else NumPy's
    # order="K" (ATen's infer_dense_strides)
    data = dense_strided(np_new, d.shape, t.stride(), _like(t, dtype).np, *fill)
    if data is not None:
        return data
    return np_like(d, *fill, dtype=_like(t, dtype).np, order="K")


def _like_finish(data, t, memory_format, requires_grad):
    """The *_like result; an empty one gets the strides NumPy cannot keep: the channels-last
    ones asked for, or (preserve_format: ATen counts an empty tensor dense) its input's."""
    out = _finish(data, requires_grad)
    if data.size == 0:
        if memory_format in CHANNELS_LAST_RANK:
            record_if_empty(out, memory_format)
        elif memory_format != "contiguous_format":
            from .._layout import record_layout
            record_layout(out, t.stride(), 0)
    return out


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "zeros_like") is not None:
        return _like_on_device(t, dtype, memory_format, 0, requires_grad)
    data = _like_host(np.zeros_like, np.zeros, t, dtype, memory_format)
    return _like_finish(data, t, memory_format, requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "ones_like") is not None:
        return _like_on_device(t, dtype, memory_format, 1, requires_grad)
    data = _like_host(np.ones_like, np.ones, t, dtype, memory_format)
    return _like_finish(data, t, memory_format, requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    if _like_device(t, device, "empty_like") is not None:
        return _like_on_device(t, dtype, memory_format, None, requires_grad)
    data = _like_host(np.empty_like, np.empty, t, dtype, memory_format)
    return _like_finish(data, t, memory_format, requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None):
    try:  # (free until raised) a non-Tensor t: PyTorch's TypeError, before fill_value's
        shape = t._data.shape
    except AttributeError:
        raise input_type_error("full_like", (t,), {}) from None
    fill_value = _checked_fill(_fill_scalar(fill_value, "full_like"), _like(t, dtype),
                               _one_cpu_element(shape, check_device(device) if device
                                                is not None else t.device))
    if _like_device(t, device, "full_like") is not None:
        return _like_on_device(t, dtype, memory_format, fill_value, requires_grad)
    data = _like_host(np.full_like, np.full, t, dtype, memory_format, fill_value)
    return _like_finish(data, t, memory_format, requires_grad)
