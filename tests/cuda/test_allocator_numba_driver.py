"""The caching allocator's GPU adapter (``cuda_alloc_drivers.NumbaDriver``) with numba-cuda's
real device-array and pointer classes, in the main (non-simulator) process, without a GPU.

Building a ``DeviceNDArray`` over given memory, slicing it and reshaping it are pointer
arithmetic and reference counting in numba-cuda (no driver call), so the lifetime rule the
adapter relies on — a block goes back to the pool when the last array or view over it dies — is
checked here with numba's own classes at made-up addresses, never dereferenced. The context is a
stand-in that hands out those addresses and can fail as the driver does
(``CUDA_ERROR_OUT_OF_MEMORY``). What this cannot check: real ``cuMemAlloc``/``cuMemFree``,
kernels reading the leased memory, timing.

    python -m pytest tests/cuda/test_allocator_numba_driver.py
"""
from __future__ import annotations

import gc
import types

import numpy as np
import pytest


@pytest.fixture(scope="module")
def numba_driver(cuda_state):
    installed, sim, _ = cuda_state
    if not installed:
        pytest.skip("numba-cuda is not installed (pip install -e '.[cuda-test]')")
    if sim:
        pytest.skip("the simulator replaces numba-cuda's device arrays: this file runs in the "
                    "main process (python -m pytest tests/cuda/test_allocator_numba_driver.py)")
    from numba.cuda.cudadrv import driver
    return driver


class FakeContext:
    """Hands out made-up device addresses as numba ``MemoryPointer``s (as ``memalloc`` does);
    ``oom`` makes the next calls fail with the driver's out-of-memory error."""

    def __init__(self, driver):
        self.driver = driver
        self.next_address = 0x7F0000000000
        self.oom = 0
        self.flushed = 0
        self.memory_manager = types.SimpleNamespace(
            deallocations=types.SimpleNamespace(clear=self._flush))

    def _flush(self):
        self.flushed += 1

    def memalloc(self, size):
        d = self.driver
        if self.oom:
            self.oom -= 1
            raise d.CudaAPIError(d.binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY, "out of memory")
        address = self.next_address
        self.next_address += size + 4096
        return d.MemoryPointer(self, d.binding.CUdeviceptr(address), size)

    def get_memory_info(self):
        return types.SimpleNamespace(free=1 << 20, total=80 << 30)


def _fake_cuda(driver):
    ctx = FakeContext(driver)
    return types.SimpleNamespace(current_context=lambda: ctx, synchronize=lambda: None), ctx


def _slice(arr, item):
    """``arr[item]`` minus its ``@require_context`` wrapper (which needs a driver): numba-cuda's
    ``DeviceNDArray.__getitem__`` is exactly ``_do_getitem`` after that check."""
    return arr._do_getitem(item)


def _address(arr) -> int:
    return int(arr.device_ctypes_pointer.value)


def test_block_returns_when_the_last_numba_view_dies(numba_driver):
    from jitgrad.backends.cuda_alloc import Block
    from jitgrad.backends.cuda_alloc_drivers import NumbaDriver
    cuda, ctx = _fake_cuda(numba_driver)
    drv = NumbaDriver(cuda)
    block = Block(512, ctx.memalloc(512))
    released = []
    arr = drv.lease(block, (4, 8), np.dtype(np.float32), released.append)
    base = _address(arr)
    assert arr.shape == (4, 8) and arr.strides == (32, 4) and arr.dtype == np.float32
    row = _slice(arr, slice(1, 3))  # MemoryPointer.view: an OwnedPointer reference
    flat = arr.reshape(32)  # shares gpu_data
    col = _slice(arr, (slice(None), 2))  # a strided view
    assert _address(row) == base + 32
    del arr
    gc.collect()
    assert released == []
    del flat, col
    gc.collect()
    assert released == []
    sub = _slice(row, slice(1, None))  # a view of a view
    del row
    gc.collect()
    assert released == [] and _address(sub) == base + 64
    del sub
    gc.collect()
    assert released == [block]
    assert drv._leases == {}


def test_pool_over_numba_arrays_reuses_addresses(numba_driver):
    from jitgrad.backends.cuda_alloc import CachingAllocator
    from jitgrad.backends.cuda_alloc_drivers import NumbaDriver
    cuda, ctx = _fake_cuda(numba_driver)
    pool = CachingAllocator(NumbaDriver(cuda))
    a = pool.empty((1000,), np.float32)
    address = _address(a)
    view = _slice(a, slice(10, None))
    del a
    b = pool.empty((1000,), np.float32)  # a's block is still held by the view
    assert _address(b) != address
    del view
    c = pool.empty((900,), np.float32)   # the same 4096-byte class: a's block again
    assert _address(c) == address
    stats = pool.memory_stats()
    assert stats["num_device_alloc"] == 2
    assert stats["allocated_bytes.all.current"] == 2 * 4096
    del b
    pool.empty_cache()
    assert ctx.flushed == 1  # numba's deferred cuMemFree queue flushed
    assert pool.memory_stats()["reserved_bytes.all.current"] == 4096
    del c


def test_driver_out_of_memory_becomes_pytorchs_error(numba_driver):
    from jitgrad import OutOfMemoryError
    from jitgrad.backends.cuda_alloc import CachingAllocator
    from jitgrad.backends.cuda_alloc_drivers import NumbaDriver
    cuda, ctx = _fake_cuda(numba_driver)
    pool = CachingAllocator(NumbaDriver(cuda))
    pool.empty((10,), np.float32)  # one cached block
    ctx.oom = 1
    pool.empty((1000,), np.float32)  # the retry after empty_cache succeeds
    assert pool.memory_stats()["num_alloc_retries"] == 1 and ctx.flushed == 1
    ctx.oom = 2
    with pytest.raises(OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate "
                       r"4\.00 MiB\. GPU 0 has a total capacity of 80\.00 GiB of which "
                       r"1024\.00 KiB is free\. Of the allocated memory 0 bytes is allocated "
                       r"by jitgrad, and 0 bytes is reserved by jitgrad but unallocated\.$"):
        pool.empty((1 << 20,), np.float32)


def test_other_driver_errors_propagate(numba_driver):
    from jitgrad.backends.cuda_alloc_drivers import NumbaDriver
    cuda, ctx = _fake_cuda(numba_driver)
    d = numba_driver

    def fail(size):
        raise d.CudaAPIError(d.binding.CUresult.CUDA_ERROR_INVALID_VALUE, "invalid value")

    ctx.memalloc = fail
    with pytest.raises(d.CudaAPIError):
        NumbaDriver(cuda).malloc(512)
