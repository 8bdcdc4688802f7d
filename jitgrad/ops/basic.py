"""Factories, dtype casts, clone, and small helpers the engine needs."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as D
from .._size import check_device
from ..tensor import Tensor
from .composite import record

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye", "arange",
    "linspace", "logspace", "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn",
    "randint", "rand_like", "randn_like", "randint_like", "randperm", "manual_seed", "cast",
    "clone", "accumulate_", "where_any", "is_tensor", "numel", "scalar_tensor",
]


def _infer_dtype(data):
    """The dtype torch.tensor infers from nested Python data (int64 / float32 / bool)."""
    kinds = set()
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, np.ndarray):
            kinds.add(D.from_numpy_dtype(x.dtype) if x.ndim else _scalar_kind(x.item()))
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            kinds.add(_scalar_kind(x))
    if not kinds:
        return D.get_default_dtype()
    result = None
    for k in kinds:
        result = k if result is None else D.promote_types(result, k)
    return result


def _scalar_kind(x):
    if isinstance(x, (bool, np.bool_)):
        return D.bool_
    if isinstance(x, (numbers.Integral,)):
        return D.int64
    if isinstance(x, np.floating):
        return D.from_numpy_dtype(x.dtype)
    if isinstance(x, numbers.Real):
        return D.get_default_dtype()
    raise TypeError(f"Could not infer dtype of {type(x).__name__}")


def _to_array(data):
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return np.array([_to_array(x) if isinstance(x, (Tensor, list, tuple)) else x
                         for x in data]) if any(isinstance(x, Tensor) for x in data) \
            else np.array(data)
    return np.asarray(data)


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


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor copying ``data`` (nested lists, scalars, NumPy arrays, Tensors)."""
    dev = check_device(device)
    if isinstance(data, Tensor):
        dt = D.to_dtype(dtype) if dtype is not None else data.dtype
        src = data._data
        if src.__class__ is not np.ndarray:
            if dev.type == "cuda":
                return _finish(src.astype(dt.np, copy=True), requires_grad)
            src = src.to_host()
        return _finish(src.astype(dt.np, copy=True), requires_grad, dev)
    dt = D.to_dtype(dtype) if dtype is not None else (
        D.from_numpy_dtype(data.dtype) if isinstance(data, np.ndarray) else _infer_dtype(data))
    return _finish(np.array(_to_array(data), dtype=dt.np, copy=True), requires_grad, dev)


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
        return Tensor._make(data if data.dtype == dt.np else data.astype(dt.np))
    return tensor(data, dtype=dtype)


def from_numpy(a: np.ndarray) -> Tensor:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.from_numpy_dtype(a.dtype)  # raises PyTorch's error for unsupported dtypes
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


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


def _factory_dtype(dtype, default=None):
    return D.to_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())


def _make(np_fn, size, dtype, device, requires_grad, **kw):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dev.type == "cuda":
        fill = {np.zeros: 0, np.ones: 1}.get(np_fn)
        return _finish(_device_full(_shape(size), fill, dt.np), requires_grad)
    return _finish(np_fn(_shape(size), dtype=dt.np, **kw), requires_grad)


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
    return _make(np.zeros, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False,
          layout=None, **kw):
    size = _size_kw(size, kw, "ones")
    return _make(np.ones, size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, layout=None,
          pin_memory=False, memory_format=None, **kw):
    size = _size_kw(size, kw, "empty")
    return _make(np.empty, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, layout=None):
    dev = check_device(device)
    if dtype is None:
        dtype = _scalar_kind(fill_value)
    dt = D.to_dtype(dtype)
    if dev.type == "cuda":
        return _finish(_device_full(_shape((size,)), fill_value, dt.np), requires_grad)
    return _finish(np.full(_shape((size,)), fill_value, dtype=dt.np), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    return _finish(np.eye(int(n), None if m is None else int(m), dtype=dt.np), requires_grad, dev)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, (int, np.integer)) for v in vals) \
            else D.get_default_dtype()
    dt = D.to_dtype(dtype)
    start, end, step = vals
    n = max(int(np.ceil((end - start) / step)), 0)
    # computed in float64 like PyTorch, then cast (so float32 aranges match torch's values)
    data = (start + np.arange(n, dtype=np.float64) * step) if dt.is_floating_point or \
        any(isinstance(v, float) for v in vals) else np.arange(start, end, step)
    return _finish(data.astype(dt.np), requires_grad, dev)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    check_device(device)
    dt = _factory_dtype(dtype)
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    # PyTorch fills the first half from start and the second half from end (symmetric rounding)
    if steps == 1:
        data = np.array([start], dtype=np.float64)
    else:
        step = (end - start) / (steps - 1)
        idx = np.arange(steps, dtype=np.float64)
        half = steps // 2
        data = np.where(idx < half, start + step * idx, end - step * (steps - 1 - idx))
    if dt.is_floating_point:
        if dt is D.float32:
            s32 = np.float32((end - start) / (steps - 1)) if steps > 1 else np.float32(0)
            idx = np.arange(steps, dtype=np.float32)
            half = steps // 2
            data = np.where(idx < half, np.float32(start) + s32 * idx,
                            np.float32(end) - s32 * (np.float32(steps - 1) - idx))
        return _finish(data.astype(dt.np), requires_grad)
    return _finish(data.astype(dt.np), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    lin = linspace(start, end, steps, dtype=D.float64)
    dt = _factory_dtype(dtype)
    return _finish((base ** lin._data).astype(dt.np), requires_grad)


def _like(t, dtype):
    return D.to_dtype(dtype) if dtype is not None else t.dtype


def _like_device(t, device):
    """The device a *_like factory allocates on (its argument's unless told), or None for the
    CPU (the fast path)."""
    if device is None:
        return None if t._data.__class__ is np.ndarray else t.device
    dev = check_device(device)
    return None if dev.type == "cpu" else dev


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    if _like_device(t, device) is not None:
        return _finish(_device_full(t._data.shape, 0, _like(t, dtype).np), requires_grad)
    return _finish(np.zeros(t._data.shape, dtype=_like(t, dtype).np), requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    if _like_device(t, device) is not None:
        return _finish(_device_full(t._data.shape, 1, _like(t, dtype).np), requires_grad)
    return _finish(np.ones(t._data.shape, dtype=_like(t, dtype).np), requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    if _like_device(t, device) is not None:
        return _finish(_device_full(t._data.shape, None, _like(t, dtype).np), requires_grad)
    return _finish(np.empty(t._data.shape, dtype=_like(t, dtype).np), requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    if _like_device(t, device) is not None:
        return _finish(_device_full(t._data.shape, fill_value, _like(t, dtype).np),
                       requires_grad)
    return _finish(np.full(t._data.shape, fill_value, dtype=_like(t, dtype).np), requires_grad)


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


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    size = _size_kw(size, kw, "rand")
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dev.type == "cuda":  # generated on the device (no upload)
        return _finish(_cuda_rng(generator).uniform(_shape(size), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).rand(_shape(size), dt.np), requires_grad, dev)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False,
          **kw):
    size = _size_kw(size, kw, "randn")
    dev = check_device(device)
    dt = _factory_dtype(dtype)
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).normal(_shape(size), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).randn(_shape(size), dt.np), requires_grad, dev)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    dev = check_device(device)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dt = _factory_dtype(dtype, D.int64)
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).randint(int(low), int(high), _shape((size,)),
                                                    dt.np), requires_grad)
    return _finish(_gen(generator).randint(int(low), int(high), _shape((size,)), dt.np),
                   requires_grad, dev)


def rand_like(t, dtype=None, device=None, requires_grad=False):
    return rand(tuple(t.shape), dtype=_like(t, dtype), requires_grad=requires_grad,
                device=t.device if device is None else device)


def randn_like(t, dtype=None, device=None, requires_grad=False):
    return randn(tuple(t.shape), dtype=_like(t, dtype), requires_grad=requires_grad,
                 device=t.device if device is None else device)


def randint_like(t, low=0, high=None, dtype=None, device=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(t.shape), dtype=_like(t, dtype),
                   device=t.device if device is None else device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    check_device(device)
    dt = _factory_dtype(dtype, D.int64)
    return _finish(_gen(generator).randperm(int(n), dt.np), requires_grad)


def manual_seed(seed):
    from .. import random as R
    return R.manual_seed(seed)


# ----------------------------------------------------------------------------- casts, clone


def _cast_backward(node, g):
    return (g,)  # the engine casts the gradient back to the input's dtype


def cast(t: Tensor, dt) -> Tensor:
    """``t.to(dtype)``: a copy in the new dtype, recorded as ToCopyBackward0."""
    dt = D.to_dtype(dt)
    data = t._data.astype(dt.np)
    if not dt.is_floating_point:
        return Tensor._make(data)
    return record("ToCopyBackward0", (t,), data, _cast_backward)


def _clone_backward(node, g):
    return (g,)


def clone(t: Tensor, memory_format=None) -> Tensor:
    d = t._data
    return record("CloneBackward0", (t,),
                  np.array(d, copy=True) if d.__class__ is np.ndarray else d.copy(),
                  _clone_backward)


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
