"""The two driver adapters under ``cuda_alloc.CachingAllocator``: a GPU through numba-cuda, and
numba-cuda's simulator. Both answer the same questions, so the pool (its size classes, reuse,
statistics, out-of-memory retry) is the same code on the hardware and under the simulator, and
the simulator tests exercise it.

Why not numba-cuda's External Memory Management plugin (``cuda.set_memory_manager`` with a
``HostOnlyCUDAMemoryManager`` subclass)? It would see every numba allocation, but (1) the
simulator has no EMM at all (``numba.cuda.set_memory_manager`` does not exist under
``NUMBA_ENABLE_CUDASIM=1``; its ``device_array`` is ``np.empty``), so the pool could never be
tested without a GPU; (2) a plugin is process-wide and must be installed before numba's context
exists, so it would take over the memory of user code and libraries that use numba.cuda next to
jitgrad, and could not be installed at all once they had. A pool in jitgrad's storage layer
owns exactly jitgrad's buffers and runs the same in both places; on the hardware it still
allocates its blocks through ``Context.memalloc``, i.e. through whatever memory manager numba
is configured with (an RMM plugin, say).

**Hardware.** A block is the ``OwnedPointer`` that ``Context.memalloc`` returns (numba frees it
when the block is dropped), kept with its context and address (``_Segment``). Each lease is a
numba ``AutoFreePointer`` over the block's address whose finalizer queues the block back to
the pool; the ``DeviceNDArray`` built over it (and
every slice, reshape or view numba derives from it: ``MemoryPointer.view`` takes an
``OwnedPointer`` reference) holds that pointer's reference count, and the finalizer runs when
the count drops to zero, exactly as numba frees its own allocations. The lease pointer itself is
kept alive by this module until then (numba's views hold it only through a weak proxy, as its
own ``allocations`` table does). Out of memory is numba's ``CudaAPIError`` with
``CUDA_ERROR_OUT_OF_MEMORY`` (numba's own manager has already flushed its deferred frees and
retried once by then).

**Simulator.** A block is a host ``uint8`` buffer (the simulator's "device memory"). A lease is
a small object exposing ``__array_interface__`` over the block; the NumPy array made from it,
wrapped in the simulator's ``FakeCUDAArray``, has the lease as its base, and NumPy collapses
the base of every later view to that first non-array owner, so the lease dies with the last
view and its ``weakref.finalize`` queues the block back. A reused block keeps the bytes of its
previous owner, as on a GPU.
"""
from __future__ import annotations

import functools
import itertools
import weakref

import numpy as np

from .cuda_alloc import DriverOutOfMemory

__all__ = ["NumbaDriver", "SimulatorDriver", "make_driver"]


def _c_strides(shape, itemsize) -> tuple:
    if len(shape) == 1:
        return (itemsize,)
    st, acc = [], itemsize
    for s in reversed(shape):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))


def _per_thread_default_stream() -> bool:
    try:
        from numba.cuda.core import config
    except ImportError:  # older numba-cuda
        from numba.core import config
    return bool(getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", False))


class _Segment:
    """A block's memory on the GPU: numba's ``OwnedPointer`` from ``Context.memalloc`` (numba
    frees it when this is dropped), its context and address, read once."""

    __slots__ = ("owned", "context", "device_pointer")

    def __init__(self, owned):
        self.owned = owned
        self.context = owned.context          # a weak proxy of the context, as numba keeps it
        self.device_pointer = owned.device_pointer


class NumbaDriver:
    """A GPU through numba-cuda (see the module docstring)."""

    def __init__(self, cuda):
        self.cuda = cuda
        self._leases: dict = {}     # key -> AutoFreePointer, alive until its last view dies
        self._keys = itertools.count()
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        from numba.cuda.cudadrv.driver import AutoFreePointer
        self._array, self._pointer = DeviceNDArray, AutoFreePointer
        self._templates: dict = {}  # (shape, dtype) -> a fresh array's attributes but gpu_data

    def stream_ordered(self) -> bool:
        return not _per_thread_default_stream()

    def malloc(self, size):
        from numba.cuda.cudadrv.driver import CudaAPIError, binding
        try:
            return _Segment(self.cuda.current_context().memalloc(size))
        except CudaAPIError as e:
            if e.code == binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
                raise DriverOutOfMemory(str(e)) from e
            raise

    def free(self, handle) -> None:
        """Dropping the pool's reference is numba's free (a deferred ``cuMemFree``)."""

    def flush(self) -> None:
        """Run numba's deferred ``cuMemFree`` calls now (``empty_cache`` must reach the
        driver, so that other processes and libraries see the memory)."""
        pending = getattr(self.cuda.current_context().memory_manager, "deallocations", None)
        if pending is not None:
            pending.clear()

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def memory_info(self):
        try:
            info = self.cuda.current_context().get_memory_info()
        except Exception:  # noqa: BLE001 - the message is being built for another error
            return None
        return int(info.free), int(info.total)

    def empty_array(self, shape, dtype):
        return self.cuda.device_array(shape, dtype=dtype)

    def lease(self, block, shape, dtype, on_release):
        key = next(self._keys)
        seg = block.handle
        ptr = self._pointer(seg.context, seg.device_pointer, block.size,
                            finalizer=functools.partial(_release, self._leases, key, block,
                                                        on_release))
        self._leases[key] = ptr
        return self._device_array(shape, dtype, ptr.own())

    def _device_array(self, shape, dtype, gpu_data):
        """``DeviceNDArray(shape, C strides, dtype, gpu_data=gpu_data)``. Its constructor
        derives the same layout facts from (shape, dtype) every time (a dummy array, strides,
        size, allocation size): the first array of a (shape, dtype) is built by it and its
        attributes kept, later ones copy them and take their own allocation."""
        template = self._templates.get((shape, dtype))
        if template is None:
            arr = self._array(shape, _c_strides(shape, dtype.itemsize), dtype, gpu_data=gpu_data)
            if len(self._templates) < 4096 and set(arr.__dict__) == _ARRAY_FIELDS:
                self._templates[(shape, dtype)] = {k: v for k, v in arr.__dict__.items()
                                                   if k != "gpu_data"}
            return arr
        arr = self._array.__new__(self._array)
        arr.__dict__.update(template)
        arr.gpu_data = gpu_data
        return arr


#: what DeviceNDArray.__init__ sets (numba-cuda 0.30); another set (a numba-cuda that
#: constructs differently) keeps the constructor for every array
_ARRAY_FIELDS = frozenset({"ndim", "_dummy", "shape", "strides", "dtype", "size", "alloc_size",
                           "gpu_data", "stream"})


def _release(leases, key, block, on_release):
    leases.pop(key, None)
    on_release(block)


class _HostLease:
    """The base object of one simulated device array over a block (see the module docstring)."""

    __slots__ = ("__array_interface__", "block", "__weakref__")

    def __init__(self, block, shape, dtype):
        self.block = block
        self.__array_interface__ = {"data": (block.handle.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}


class SimulatorDriver:
    """numba-cuda's simulator: blocks are host buffers (see the module docstring)."""

    def __init__(self, cuda):
        self.cuda = cuda

    def stream_ordered(self) -> bool:
        return True  # the simulator runs every launch to completion before returning

    def malloc(self, size):
        try:
            return np.empty(size, np.uint8)
        except MemoryError as e:
            raise DriverOutOfMemory(str(e)) from e

    def free(self, handle) -> None:
        pass

    def flush(self) -> None:
        pass

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def memory_info(self):
        return None  # the simulator reports infinite memory

    def empty_array(self, shape, dtype):
        return self.cuda.device_array(shape, dtype=dtype)

    def lease(self, block, shape, dtype, on_release):
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        base = _HostLease(block, shape, dtype)
        weakref.finalize(base, on_release, block)
        return FakeCUDAArray(np.asarray(base))


def make_driver(cuda, simulator: bool):
    return SimulatorDriver(cuda) if simulator else NumbaDriver(cuda)
