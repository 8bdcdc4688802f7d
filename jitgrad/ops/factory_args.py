"""The argument rules and allocation every factory shares: the shape of ``*size`` / ``size=``
(PyTorch's errors for non-integers, negatives, overflowing byte counts), the default dtype,
host allocation with PyTorch's out-of-memory error, a CUDA storage filled on the device, and
``_finish`` (storage -> Tensor, uploaded and marked requiring grad when asked)."""
from __future__ import annotations

import operator

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .parser_errors import parser_type_name


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
                        f"{parser_type_name(size)}")
    if len(size) > 1 and isinstance(size[0], (tuple, list)) and name in ("zeros", "ones",
                                                                         "empty"):
        # a sequence first takes the whole size: what follows it is one argument too many
        raise TypeError(f"{name}() takes 1 positional argument but {len(size)} were given")
    for i, s in enumerate(size):
        try:
            operator.index(s)
        except TypeError:
            if len(size) == 1:
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, "
                                f"not {parser_type_name(s)}") from None
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{parser_type_name(s)}\"") from None


def _factory_dtype(dtype, default=None):
    return D.to_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())


def _device_full(shape, value, npdt):
    """A CUDA storage filled on the device (no transfer); ``value=None``: uninitialized."""
    from .._cuda_array import CudaArray
    out = CudaArray.empty(shape, npdt)
    if value is not None and out.size:
        from ..backends.cuda_kernels.layout import fill
        fill(out.buf, value)
    return out


def _like(t, dtype):
    return D.to_dtype(dtype) if dtype is not None else t.dtype


# ---------------------------------------------------------------- arange / linspace arguments
_TAIL = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
         "bool pin_memory = False, bool requires_grad = False)\n")
_ARANGE_OVERLOADS = (
    " * (Number end, *, Tensor out = None, " + _TAIL
    + " * (Number start, Number end, *, " + _TAIL
    + " * (Number start, Number end, Number step = 1, *, Tensor out = None, " + _TAIL)
_LINSPACE_OVERLOADS = "".join(
    f" * ({a} start, {b} end, int steps, *, Tensor out = None, " + _TAIL
    for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                 ("Number", "Number")))
NOT_GIVEN = object()  # arange's start/step and linspace's steps when not passed


def _is_number(v) -> bool:
    if isinstance(v, Tensor):
        return v._data.ndim == 0
    return isinstance(v, (int, float, np.number, np.bool_))


def invalid_combination(name, given, overloads, keywords=()):
    """PyTorch's parser error: the positional types, then the keywords as ``name=Type`` in
    reverse order of passing (each followed by ", " when nothing came positionally)."""
    got = [parser_type_name(v) for v in given]
    kws = [f"{k}={parser_type_name(v)}" for k, v in reversed(list(keywords))]
    listed = ", ".join(got + kws) if got or not kws else "".join(k + ", " for k in kws)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({listed}), but expected one of:\n{overloads}")


_RANGE_NAMES = ("start", "end", "step")
ARANGE_OPTIONS = ("dtype", "device", "requires_grad")


def arange_args(args, kwargs):
    """``(start, end, step)`` of ``arange(*args, **kwargs)`` as PyTorch's parser takes them:
    ``arange(end)``, ``arange(start, end[, step])``, any of them by keyword; anything but
    Numbers is a TypeError. One argument in all leaves ``arange(end)`` the only overload that
    could fit, so the parser names what it lacks (``arange(start=1)``: "end"); otherwise a call
    no overload takes is its "invalid combination"."""
    keywords = list(kwargs.items())

    def invalid():
        return invalid_combination("arange", args, _ARANGE_OVERLOADS, keywords)
    if len(args) + len(kwargs) == 1:  # only arange(end) takes one argument: its own errors
        end = args[0] if args else kwargs.get("end", NOT_GIVEN)
        if end is NOT_GIVEN:
            raise TypeError('arange() missing 1 required positional arguments: "end"')
        if not _is_number(end):
            where = " (position 1)" if args else ""
            raise TypeError(f"arange(): argument 'end'{where} must be Number, not "
                            f"{parser_type_name(end)}")
        return 0, end, 1
    if any(k not in _RANGE_NAMES and k not in ARANGE_OPTIONS for k in kwargs):
        raise invalid()
    given = {k: v for k, v in keywords if k in _RANGE_NAMES}
    if len(args) > 3:
        raise invalid()
    # a lone positional number is arange(end)'s, unless a range keyword makes it start
    names = ("end",) if len(args) == 1 and not given else _RANGE_NAMES
    for name, v in zip(names, args):
        if name in given:
            raise invalid()
        given[name] = v
    if not all(map(_is_number, given.values())) or "end" not in given or \
            ("start" in given) != (len(given) > 1):  # arange(end) or arange(start, end[, step])
        raise invalid()
    return given.get("start", 0), given["end"], given.get("step", 1)


def linspace_steps(start, end, steps):
    """``linspace``'s ``steps``: a required int (the overloads' only int)."""
    if end is NOT_GIVEN or steps is NOT_GIVEN or isinstance(steps, (bool, np.bool_)) or \
            not isinstance(steps, (int, np.integer, Tensor)):
        given = tuple(v for v in (start, end, steps) if v is not NOT_GIVEN)
        raise invalid_combination("linspace", given, _LINSPACE_OVERLOADS)
    return int(steps)
