"""The CUDA half of ``ops/index.py``: advanced keys on device tensors, setitem, scatter and
nonzero on the device (the kernels are ``backends/cuda_kernels/advanced.py`` and ``index.py``).

An advanced key on a CUDA tensor becomes a ``cuda_kernels.advanced.AdvancedIndex``: one int64
device array over the broadcast index shape, built once and reused by the forward, the gradient
(index_put with accumulate), CopySlices and double backward. Device index tensors are
bounds-checked by the linearization kernel and reported at the next synchronizing point
(``cuda_kernels.bounds``, docs/cuda-tensors.md); host keys (lists, NumPy, CPU tensors) were
checked by ``index_keys._check_bounds`` and are uploaded once (a counted h2d, as PyTorch copies
them too); a CUDA bool mask costs one 8-byte device->host read of its count
(``nonzero_positions``).
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .composite import record
from .index_getitem import _getitem_backward
from .index_keys import _is_basic, _mask_ndim, _np_key
from .index_layout import aten_layout
from .index_setitem import (
    _broadcast_error,
    _put_shape_error,
    _unprefixed,
    raise_after_shape_check,
)

__all__ = ["device_plan", "device_getitem", "device_take", "device_value", "device_setitem",
           "device_zero_at", "device_nonzero"]


def device_plan(x, comps):
    if x._data.__class__ is np.ndarray:
        raise RuntimeError("indices should be either on cpu or on the same device as the "
                           "indexed tensor (cpu)")
    from ..backends import cuda as B
    K = B.kernels()
    nd = x._data.ndim
    consumed = sum(1 for k, _ in comps if k in ("int", "slice", "array", "darray")) + sum(
        _mask_ndim(k, v) for k, v in comps if k in ("mask", "dmask"))
    entries = []
    for kind, v in comps:
        if kind == "ellipsis":
            entries += [("slice", slice(None))] * (nd - consumed)
            consumed = nd
        elif kind == "array":
            entries.append(("index", B.to_device(v)))
        elif kind == "darray":
            entries.append(("index", v.kview()))
        elif kind in ("mask", "dmask"):
            if _mask_ndim(kind, v) == 0:
                raise NotImplementedError("jitgrad: indexing with a 0-d bool is not "
                                          "implemented for device 'cuda:0' yet")
            pos = (K.advanced.nonzero_positions(v.kview()) if kind == "dmask"
                   else B.to_device(np.flatnonzero(v)))
            entries.append(("positions", (pos, v.ndim)))
        else:
            entries.append((kind, v))
    entries += [("slice", slice(None))] * (nd - consumed)
    from .index_rules import RULES
    return K.advanced.AdvancedIndex(x._data.shape, entries, RULES["advanced"].bounds_error)


def device_getitem(x, comps):
    return device_take(x, device_plan(x, comps), comps)


def device_take(x, plan, comps=None):
    """``x[plan]`` recorded as IndexBackward0; with the key's ``comps``, in ATen's layout
    (``index_layout``)."""
    from .._cuda_array import CudaArray
    data = CudaArray.wrap(plan.take(x._data.kview()))
    if comps is not None:
        data = aten_layout(x._data, comps, data)
    return record("IndexBackward0", (x,), data, _getitem_backward,
                  attrs={"shape": tuple(x._data.shape), "key": plan, "basic": False})


def device_value(value, dtype):
    """A kernel-readable View of a setitem/scatter value: CUDA tensors as they are, Python/NumPy
    scalars and 0-d CPU tensors as a 1-element device array filled by a kernel (no transfer)."""
    if isinstance(value, Tensor):
        if value._data.__class__ is not np.ndarray:
            return value._data.kview()
        if value.ndim != 0:
            from .._cuda_array import device_error
            raise device_error("cuda:0", "cpu")
        value = value.item()
    if isinstance(value, (list, tuple, np.ndarray)):  # host data: one counted upload
        from ..backends import cuda as B
        a = np.asarray(value, dtype=dtype)
        return B.kernels().View(B.to_device(a.reshape(-1)), a.shape) if a.ndim else \
            device_value(a.item(), dtype)
    from ..backends.cuda_kernels.advanced import scalar_view
    return scalar_view(value, dtype)


def device_setitem(x, comps, value, dtype_err=None):
    """``x[key] = value`` on CUDA storage; returns the key CopySlices needs (the basic NumPy key,
    or the AdvancedIndex). ``dtype_err``: index_put_'s dtype error, raised after the shape
    check (as PyTorch orders them)."""
    src = device_value(value, x._data.dtype)
    if _is_basic(comps):
        key = _np_key(comps)
        dst = x._data[key].kview()
        write = lambda: _copy_into(dst, src)  # noqa: E731
        tgt = dst.shape
    else:
        key = device_plan(x, comps)
        write = lambda: key.put(x._data.kview(), src)  # noqa: E731
        tgt = key.out_shape()
        if dtype_err is not None:
            raise_after_shape_check(dtype_err, tgt, src.shape)
    try:
        write()
    except ValueError:
        if not _is_basic(comps):  # index_put_'s wording (x[idx] = v runs it)
            raise _put_shape_error(_unprefixed(src.shape), tgt) from None
        _broadcast_error(list(tgt), list(src.shape), value=value)
    return key


def _copy_into(dst, src):
    from ..backends import cuda as B
    B.kernels().layout.copy_into(dst, src)


def device_zero_at(region, key):
    """Write 0 at ``key`` of the CUDA storage ``region`` (CopySlices' gradient mask)."""
    from ..backends.cuda_kernels.advanced import AdvancedIndex, scalar_view
    zero = scalar_view(0, region.dtype)
    if isinstance(key, AdvancedIndex):
        key.put(region.kview(), zero)
    else:
        _copy_into(region[key].kview(), zero)


def device_nonzero(input, as_tuple):
    """Stream compaction on the device; the count is one 8-byte device->host read. A 0-d
    tensor is read as a 1-element one: (1, 0) or (0, 0) coordinates, as PyTorch."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    A = B.kernels().advanced
    x = input._data.reshape((1,)) if input.ndim == 0 else input._data
    pos = A.nonzero_positions(x.kview())
    if input.ndim == 0:
        if as_tuple:
            return (Tensor._make(CudaArray.wrap(B.zeros((int(pos.shape[0]),), np.int64))),)
        return Tensor._make(CudaArray(B.empty((0,), np.int64), (int(pos.shape[0]), 0)))
    coords = CudaArray.wrap(A.unravel(pos, input.shape))
    if as_tuple:
        return tuple(Tensor._make(coords[:, d].contiguous()) for d in range(input.ndim))
    return Tensor._make(coords)
