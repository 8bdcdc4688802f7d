"""CPU launchers: run LoopSpec kernels through the kernel cache (serial or prange)."""
from __future__ import annotations

import math
import os
import sys
import threading
import time

import numpy as np

from .. import _storage
from ..codegen import kcache
from ..codegen.loops import render_cpu

# prange pays off from ~1e5-1e6 elements here (NUMBA_NOTES.md); below, serial is as fast.
PARALLEL_THRESHOLD = int(os.environ.get("JITGRAD_PARALLEL_THRESHOLD", 1 << 18))

_DUMP_SOURCE = "source" in os.environ.get("JITGRAD_DEBUG", "").replace(",", " ").split()


class LaunchStats:
    """Counters read by ``jitgrad.autograd.profile`` and the tests.

    ``cache_hits``: kernel specializations loaded as machine code from Numba's on-disk cache;
    ``cache_misses``: specializations compiled; ``compile_seconds``: wall time of the launches
    that had to load or compile their specialization first.
    """

    __slots__ = ("launches", "cache_hits", "cache_misses", "compile_seconds")

    def __init__(self):
        self.launches = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.compile_seconds = 0.0


stats = LaunchStats()
_modules = {}
_disk_hits_seen = {}  # dispatcher -> its disk-cache hits already accounted for


def module_for(key, build_spec):
    """The compiled-module handle for a spec identified by ``key`` (built on first use)."""
    mod = _modules.get(key)
    if mod is None:
        spec = build_spec()
        source = render_cpu(spec, cache=kcache.disk_cache_enabled())
        if _DUMP_SOURCE:
            print(f"[jitgrad source] kernel {kcache.key_of(source, 'cpu')} for {key!r}:\n{source}",
                  file=sys.stderr)
        mod = kcache.load(source, "cpu")
        _modules[key] = mod
    return mod


def launch(mod, n, args):
    stats.launches += 1
    fn = mod.parallel if n >= PARALLEL_THRESHOLD else mod.serial
    overloads = fn.overloads  # the dispatcher's own dict: grows when a call compiles or loads
    known = len(overloads)
    t0 = _perf_counter()
    fn(n, *args)
    if len(overloads) != known:  # this call loaded or compiled a specialization
        stats.compile_seconds += _perf_counter() - t0
        hits = sum(fn._cache_hits.values())
        if hits > _disk_hits_seen.get(fn, 0):
            _disk_hits_seen[fn] = hits
            stats.cache_hits += 1
        else:
            stats.cache_misses += 1


_perf_counter = time.perf_counter


# ----------------------------------------------------------------------------- output buffers
# Measured (4M float32 = 16 MiB, 2-core VM): a kernel writing into memory already mapped takes
# ~1.8 ms; into freshly faulted pages ~3.7 ms. glibc hands a freed 16 MiB block straight back
# when one array comes and goes, but once several large arrays are alive together (a forward
# pass keeps its intermediates for backward) and are freed together, the heap top is trimmed
# and every new array faults again. ``empty`` keeps large arrays in a small pool and reuses one
# as soon as nothing references it any more (CPython reference counts: any live view of the
# array holds a reference to it), like PyTorch's caching allocator on the GPU. Pooled arrays
# own their memory (``base is None``), so a leaf may adopt one as its ``.grad`` without a copy.
# 128 KiB is glibc's initial mmap threshold: arrays above it are where faults start (the MLP
# step's 512 KiB activations and GEMM outputs faulted every step: 7.9 -> 6.6 ms/step pooled,
# 1 thread). Smaller arrays: plain np.empty (malloc reuses them without faults).
POOL_MIN_BYTES = 1 << 17
POOL_MAX_BYTES = int(os.environ.get("JITGRAD_POOL_BYTES", 1 << 30))  # 0 disables the pool


class _Pool:
    __slots__ = ("arrays", "held", "lock", "reused", "allocated")

    def __init__(self):
        self.arrays = {}  # (shape, dtype) -> [ndarray]
        self.held = 0
        self.lock = threading.Lock()
        self.reused = 0
        self.allocated = 0


pool = _Pool()
_getrefcount = sys.getrefcount
_prod = math.prod


# Pooled arrays start on a 64-byte boundary (a cache line; glibc's mmap'd blocks start 16 bytes
# past a page): MKL's sgemm writing into an aligned C ran ~5% faster (256x784 @ 784x512: 1.09 ->
# 1.03 ms; the MLP step's GEMMs are ~80% of it). The array is a view of a slightly larger byte
# buffer, registered with ``_storage`` so that it still counts as a whole allocation.
_ALIGN = 64


def _aligned_empty(shape, dtype, nbytes):
    raw = np.empty(nbytes + _ALIGN, np.uint8)
    off = -raw.__array_interface__["data"][0] % _ALIGN
    a = raw[off:off + nbytes].view(dtype).reshape(shape)
    _storage.register_whole(a)
    return a


def _unused(a):
    """Nothing but the pool references pooled array ``a`` nor a view of it. References to
    ``a``: the pool's list, the caller's loop variable, this parameter, getrefcount's argument;
    to its byte buffer (every view's ``base``): ``a``'s and getrefcount's argument."""
    return _getrefcount(a) == 4 and _getrefcount(a.base) == 2


def empty(shape, dtype):
    """An uninitialized C-contiguous array, from the pool when large (see above).

    Pooled arrays own their memory (``base is None``), so a leaf may adopt one as its ``.grad``
    without a copy; the pool hands it out again only once nothing references it."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    nbytes = _prod(shape) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES or POOL_MAX_BYTES <= 0:
        return np.empty(shape, dtype)
    key = (shape, dtype)
    with pool.lock:
        arrays = pool.arrays.get(key)
        if arrays is None:
            arrays = pool.arrays[key] = []
        for a in arrays:
            if _unused(a):
                pool.reused += 1
                return a
        if pool.held + nbytes > POOL_MAX_BYTES:
            return np.empty(shape, dtype)
        a = _aligned_empty(shape, dtype, nbytes)
        arrays.append(a)
        pool.held += nbytes
        pool.allocated += 1
    return a


def empty_cache() -> int:
    """Free the pooled blocks nothing uses; returns the bytes released."""
    freed = 0
    with pool.lock:
        for arrays in pool.arrays.values():
            keep = []
            for a in arrays:
                if _unused(a):
                    freed += a.nbytes
                else:
                    keep.append(a)
            arrays[:] = keep
        pool.held -= freed
    return freed
