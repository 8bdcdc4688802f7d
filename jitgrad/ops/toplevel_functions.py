"""Small top-level functions with PyTorch's names and rules: ``torch.dist``, ``torch.fill``,
``torch.typename``, the deprecated end-inclusive ``torch.range``, ``torch.asarray`` and
``torch.frombuffer``.

``asarray`` shares memory wherever PyTorch does: a Tensor is returned itself (same object)
when no dtype/device change or copy is asked for, a NumPy array (any strides) or a buffer is
viewed without a copy when its dtype is kept; ``copy=False`` where a copy is needed is
PyTorch's ValueError. ``frombuffer`` views the buffer; a read-only one (``bytes``) gives a
read-only tensor here, where PyTorch writes into the immutable object anyway.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from . import inplace
from .parser_errors import parser_type_name

__all__ = ["dist", "fill", "typename", "range", "asarray", "frombuffer"]


def _need_tensor(x, name, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


# ----------------------------------------------------------------------------- dist, fill

def dist(input, other, p=2):
    """``norm(input - other, p)`` as one node (DistBackward0), in the promoted dtype."""
    _need_tensor(input, "dist", "input", 1)
    _need_tensor(other, "dist", "other", 2)
    p = p.item() if isinstance(p, Tensor) else p
    dt = D.result_type(input, other)
    if not dt.is_floating_point:
        raise RuntimeError("norm(): input dtype should be either floating point or complex. Got "
                           f"{D.scalar_name(dt)} instead.")
    from .. import linalg
    from .composite import record_composition
    return record_composition("DistBackward0", (input, other),
                              lambda a, b: linalg.vector_norm(a - b, p))


def fill(input, value):
    """Out-of-place ``fill_``: a new tensor like ``input`` holding ``value`` (FillBackward0; a
    0-d tensor ``value`` gets the summed gradient, FillBackward1)."""
    if not isinstance(input, Tensor) or not isinstance(value, (Tensor, numbers.Number,
                                                                np.number, np.bool_)):
        from .toplevel_inplace import OVERLOADS, overload_error
        sigs = tuple(s.replace("fill_", "fill") for s in OVERLOADS["fill_"])
        raise overload_error("fill", sigs, (input, value), {})
    from .composite import record
    with grad_mode.no_grad():
        out = input.clone().fill_(value)
    if isinstance(value, Tensor):
        return record("FillBackward1", (input, value), out._data, inplace._fill_value_backward)
    return record("FillBackward0", (input,), out._data, inplace._zero_grads)


def typename(obj, /) -> str:
    """PyTorch's ``torch.typename``: a tensor's legacy type name, else module + qualified name
    of the object (a class or function) or of its type."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


# ----------------------------------------------------------------------------- range

_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).")
_MISSING = object()


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def range(start=0, end=_MISSING, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """End-inclusive ``[start, end]``: ATen's range_out (``int((end - start) / step + 1)``
    elements, ``start + step * i`` in double, or int64 for integer dtypes); the default dtype
    unless ``dtype`` is given; PyTorch's deprecation UserWarning."""
    if end is _MISSING:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    dt = D.to_dtype(dtype) if dtype is not None else (
        out.dtype if out is not None else D.get_default_dtype())
    # ATen's accumulate type: double for float32/float64, float for float16, int64 otherwise
    acc = np.float32 if dt is D.float16 else np.float64 if dt.is_floating_point else np.int64
    xs, xe, st = (acc(_scalar(v)) for v in (start, end, step))
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(float(xs)) and math.isfinite(float(xe))):
        raise RuntimeError(f"unsupported range: {float(xs):g} -> {float(xe):g}")
    if not ((st > 0 and xe >= xs) or (st < 0 and xe <= xs)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if acc is np.int64:
        n = int(abs(int(xe) - int(xs)) // abs(int(st))) + 1
    else:
        n = int((xe - xs) / st + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        values = (xs + st * np.arange(n, dtype=acc)).astype(dt.np)
    from .basic import tensor
    r = tensor(values, dtype=dt, device=device)
    if out is not None:
        from .tensor_extras import resize_
        resize_(out, n)
        out.copy_(r)
        r = out
    if requires_grad:
        r.requires_grad_(True)
    return r


# ----------------------------------------------------------------------------- asarray

_ASARRAY_GRAD_WARNING = (
    "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
    "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
    "warning.")
_warned_grad = [False]


def _alias_error(src, dt):
    return ValueError(f"can't alias tensor with dtype '{D.scalar_name(src)}' into dtype "
                      f"'{D.scalar_name(dt)}'.")


def _from_tensor(obj, dt, device, copy):
    from .._size import check_device
    same_device = device is None or check_device(device) == obj.device
    if dt is obj.dtype and same_device:
        return obj.clone() if copy else obj  # (clone is recorded: CloneBackward0)
    if copy is False:
        raise _alias_error(obj.dtype, dt)
    return obj.to(dtype=dt, device=device)  # (ToCopyBackward0)


def _is_buffer(obj) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    dt = D.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        if requires_grad is None and obj.requires_grad and not _warned_grad[0]:
            _warned_grad[0] = True  # PyTorch: TORCH_WARN_ONCE
            warnings.warn(_ASARRAY_GRAD_WARNING, UserWarning, stacklevel=2)
        r = _from_tensor(obj, dt or obj.dtype, device, copy)
        if requires_grad is False and r.requires_grad:
            # PyTorch sets the flag on what it returns: obj itself when nothing was copied
            r = r.requires_grad_(False) if r._grad_fn is None else r.detach()
    else:
        if isinstance(obj, np.ndarray):
            from .basic import from_numpy
            base = from_numpy(obj)
        elif _is_buffer(obj) and not isinstance(obj, np.generic):
            base = frombuffer(obj, dtype=dt or D.get_default_dtype())
        else:
            if copy is False:
                raise ValueError("can't alias arbitrary sequence into a tensor.")
            from .basic import tensor
            base = tensor(obj, dtype=dt, device=device)
            copy = None
        r = _from_tensor(base, dt or base.dtype, device, copy)
    if requires_grad:
        r.requires_grad_(True)
    return r


# ----------------------------------------------------------------------------- frombuffer

_READ_ONLY_WARNING = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
    "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
    "may want to copy the buffer to protect its data or make it writable before converting it to "
    "a tensor. This type of warning will be suppressed for the rest of this program.")
_warned_read_only = [False]


def frombuffer(buffer, *, dtype=_MISSING, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor viewing ``buffer``'s bytes from ``offset`` (``count`` elements, -1: all)."""
    if dtype is _MISSING:
        raise TypeError('frombuffer() missing 1 required positional arguments: "dtype"')
    dt = D.to_dtype(dtype)
    if not _is_buffer(buffer):
        raise ValueError("object does not implement Python buffer protocol.")
    nbytes = memoryview(buffer).nbytes
    if memoryview(buffer).readonly and not _warned_read_only[0]:
        _warned_read_only[0] = True  # PyTorch: once per program
        warnings.warn(_READ_ONLY_WARNING, UserWarning, stacklevel=2)
    size = dt.itemsize
    if nbytes <= 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % size:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (nbytes - offset) // size
    elif offset + count * size > nbytes:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({nbytes} bytes)")
    data = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    t = Tensor._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t
