"""Host staging: ops without a CUDA kernel run their CPU implementation on host copies of their
CUDA inputs, and their results go back to the device, with the autograd graph PyTorch records.

``@host_staged`` wraps such an op's *primitive* (the function that reads its inputs' arrays,
computes them with NumPy/LAPACK/Numba and calls ``composite.record``). With no CUDA tensor among
its arguments it is the plain call. Otherwise each CUDA tensor argument is copied to the host
once (a *twin*: a CPU tensor with the original's dtype, values and requires_grad), the primitive
runs on the twins exactly as on CPU tensors — so its argument checks and errors are the CPU
path's, word for word — and while it runs a scope is active that ``record`` consults:

* the node it records takes the *original* CUDA tensors as its inputs (edges, saved inputs),
* its output arrays are uploaded to the device before they are wrapped, so the outputs and
  the outputs the node saves are CUDA tensors.

The grad_fn is therefore the CPU path's own node (same name, same saved slots), and its
backward — a composition of registered ops in most ops — runs on the device. What the
primitive returns besides (index tensors, counts, ranks: tensors made without ``record``) is
uploaded when it returns. Backward functions that call a host routine themselves stage their
arrays with ``to_host`` / ``like_device``.

This is a host round trip: one device->host copy per CUDA input (a synchronization, which
also raises any pending device-side index error) and one host->device copy per output, as a
PyTorch build without MAGMA/cuSOLVER pays for small matrices. Both are counted in
``backends.cuda.stats``; under a CUDA graph tape they mark the step as not graphable.

Misuse is loud, never a silent loss of gradient: inside the scope, a node recorded on a host
tensor that requires grad but is not a twin (a host composition over the twins) raises, and so
does a returned host tensor that has a grad_fn; such an op must be staged at its primitives.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..tensor import Tensor

__all__ = ["host_staged", "host_arrays", "host_inplace", "to_host", "like_device",
           "active_scope"]

_state = threading.local()


def active_scope():
    """The innermost staging scope of this thread, or None (also when suspended)."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


def _is_cuda_tensor(v) -> bool:
    return isinstance(v, Tensor) and v._data.__class__ is not np.ndarray


def to_host(x) -> np.ndarray:
    """The values of a Tensor or array as a NumPy array: a counted device->host copy for CUDA
    data, the array itself on the CPU."""
    data = x._data if isinstance(x, Tensor) else x
    if data.__class__ is np.ndarray:
        return data
    if isinstance(data, np.generic):
        return np.asarray(data)
    return data.to_host()


def _upload(a):
    from .._cuda_array import CudaArray
    return CudaArray.from_host(np.asarray(a))


def like_device(array, tensor):
    """``array`` (a host or device array) on ``tensor``'s device: uploaded (counted) when the
    tensor is a CUDA tensor and the array a host one; otherwise unchanged."""
    if tensor._data.__class__ is np.ndarray or not isinstance(array, (np.ndarray, np.generic)):
        return array
    return _upload(array)


class _Scope:
    """One staged call: its twins (``id`` -> (twin, original)) and the rules ``record``
    applies while the call runs."""

    __slots__ = ("twins", "name")

    def __init__(self, name):
        self.twins = {}
        self.name = name

    def twin(self, t: Tensor) -> Tensor:
        tw = Tensor._make(t._data.to_host(), t._requires_grad)
        self.twins[id(tw)] = (tw, t)
        return tw

    def original(self, t):
        if isinstance(t, Tensor):
            hit = self.twins.get(id(t))
            if hit is not None and hit[0] is t:
                return hit[1]
        return t

    def _is_host_derived(self, t) -> bool:
        return (isinstance(t, Tensor) and t._data.__class__ is np.ndarray
                and t._requires_grad and self.original(t) is t)

    def rehome(self, node_name, inputs, save, outputs):
        """``record``'s arguments as the device op records them (see the module docstring)."""
        inputs = [self.original(t) for t in inputs]
        if any(self._is_host_derived(t) for t in inputs):
            raise RuntimeError(
                f"jitgrad internal error: the host-staged op {self.name} records {node_name} on "
                "a host tensor computed from its inputs; stage the op at its primitives")
        staged_save = []
        for name, t in save:
            t = self.original(t)
            if isinstance(t, Tensor) and t._data.__class__ is np.ndarray:
                # a host intermediate the backward reads: it must be beside the gradients
                t = Tensor._make(_upload(t._data))
            staged_save.append((name, t))
        if isinstance(outputs, (list, tuple)):
            outputs = [self._device(o) for o in outputs]
        else:
            outputs = self._device(outputs)
        return inputs, staged_save, outputs

    @staticmethod
    def _device(a):
        return _upload(a) if isinstance(a, (np.ndarray, np.generic)) else a

    def finish(self, result):
        """The primitive's result with twins replaced by their originals and host tensors
        uploaded."""
        if isinstance(result, Tensor):
            original = self.original(result)
            if original is not result or result._data.__class__ is not np.ndarray:
                return original
            if result._grad_fn is not None:
                raise RuntimeError(
                    f"jitgrad internal error: the host-staged op {self.name} returned a host "
                    f"tensor with grad_fn {result._grad_fn.name()}; stage the op at its "
                    "primitives")
            return Tensor._make(_upload(result._data))
        if isinstance(result, (list, tuple)):
            items = [self.finish(r) for r in result]
            return type(result)(items) if type(result) in (list, tuple) else type(result)(*items)
        return result


def _tensors(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))
        elif isinstance(v, Tensor):
            yield v


def _check_one_device(args, kwargs):
    from .._cuda_array import device_error
    devices = {t._data.__class__ is np.ndarray for t in _tensors(args, kwargs)}
    if len(devices) > 1:
        raise device_error("cuda:0", "cpu")


def host_staged(fn=None, *, same_device=True):
    """Decorate an op's primitive so that CUDA tensor arguments are staged through the host
    (module docstring). ``same_device=False``: CPU tensor arguments beside CUDA ones are
    accepted (ctc_loss's targets, as ATen's); otherwise they raise PyTorch's device error."""
    if fn is None:
        return functools.partial(host_staged, same_device=same_device)

    @functools.wraps(fn)
    def staged(*args, **kwargs):
        if not any(_is_cuda_tensor(t) for t in _tensors(args, kwargs)):
            if active_scope() is None:
                return fn(*args, **kwargs)
            return _run(None, fn, args, kwargs)  # a nested call on host twins stays on host
        if same_device:
            _check_one_device(args, kwargs)
        scope = _Scope(fn.__name__.lstrip("_"))

        def host(v):
            if _is_cuda_tensor(v):
                return scope.twin(v)
            if isinstance(v, (list, tuple)) and any(_is_cuda_tensor(t) for t in v):
                return type(v)(host(t) for t in v)
            return v
        args = tuple(host(v) for v in args)
        kwargs = {k: host(v) for k, v in kwargs.items()}
        return scope.finish(_run(scope, fn, args, kwargs))
    return staged


def _run(scope, fn, args, kwargs):
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(scope)
    try:
        return fn(*args, **kwargs)
    finally:
        stack.pop()


def host_arrays(fn):
    """The array-level form, for kernels chosen per device (``_impl(A).lu_factor_info(...)``):
    ``fn`` (a host routine over NumPy arrays) called with every device array argument copied to
    the host, and every array it returns (alone or in a tuple) uploaded."""
    from .._cuda_array import CudaArray

    @functools.wraps(fn)
    def staged(*args):
        host = [a.to_host() if isinstance(a, CudaArray) else a for a in args]
        res = fn(*host)
        if isinstance(res, tuple):
            return tuple(_upload(r) if isinstance(r, np.ndarray) else r for r in res)
        return _upload(res) if isinstance(res, np.ndarray) else res
    return staged


def host_inplace(fn, dst, *args, **kwargs):
    """``fn(dst, *args, **kwargs)``, a host routine writing into the array ``dst`` in place,
    for a device ``dst``: run on host copies of ``dst`` and of every device array argument,
    then ``dst``'s new values copied back into it on the device. Returns ``dst``."""
    from .._cuda_array import CudaArray
    from ..backends.cuda_kernels.layout import copy_into
    host = np.array(dst.to_host(), copy=True)
    args = [a.to_host() if isinstance(a, CudaArray) else a for a in args]
    fn(host, *args, **kwargs)
    if dst.size:
        copy_into(dst.kview(), _upload(host).kview())
    return dst

