"""The caching device allocator behind every CUDA tensor's storage (PyTorch's model, simplified).

Every device buffer jitgrad makes (``backends.cuda.empty`` / ``to_device``: kernel outputs,
uploads, scratch) comes from :class:`CachingAllocator`. A request of ``n`` bytes is served by a
*block* of its size class (:func:`round_size`); when the last array or view over a block dies,
the block goes back to a free list of its class instead of to ``cudaFree``, and the next request
of that class takes it without calling the driver. The driver is called only when the free list
of the class is empty; when it reports out of memory, every cached block is released
(``empty_cache``) and the request retried once, then :class:`OutOfMemoryError` is raised in
PyTorch's words.

**Size classes.** Up to 1 MiB (PyTorch's "small" pool), requests round up to a multiple of
512 bytes; above, to a multiple of 2 MiB. A block is reused only for its own class (exact
match, one dict lookup): blocks are never split or merged, so there is no fragmentation
bookkeeping, at the price of up to 2 MiB of rounding on a large tensor (PyTorch splits 2 MiB /
20 MiB segments instead and counts 512-byte-rounded sizes). ``allocated_bytes`` counts block
sizes, ``requested_bytes`` the bytes asked for.

**Ordering.** A block is handed out again only when the device work that used it is ordered
before any work the new owner enqueues. jitgrad issues every kernel and copy on numba's default
stream, which (the legacy default stream) executes in issue order and waits for earlier work:
a kernel that writes a reused block runs after every kernel that read or wrote it before it was
freed, so reuse needs no event and no synchronization, and a free costs nothing. When numba
uses per-thread default streams (``NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM=1``) that no longer
holds across threads, so freed blocks wait in a pending list until the next miss, which
synchronizes the device once (``num_sync_all_streams``) and then reuses them. Arrays handed to
code that runs on other streams (through ``__cuda_array_interface__``) are that code's to keep
alive until its work is done (jitgrad has no ``record_stream``).

**Lifetime.** The driver adapter (``cuda_alloc_drivers``) ties the block to the device array it
builds over it, so that views, reshapes and slices (numba's own reference counting on the
hardware; NumPy's base chain under the simulator) keep it alive, and the death of the last one
puts the block on a queue (a ``deque.append``: safe from a finalizer in any thread); the pool
takes the queue under its lock at its next call. So ``memory_allocated()`` after ``del x`` is
exact.

This module imports neither numba nor numba.cuda.
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict, deque

import numpy as np

__all__ = ["CachingAllocator", "OutOfMemoryError", "DriverOutOfMemory", "round_size",
           "format_size", "current", "get", "caching_enabled_by_env"]

#: PyTorch's kMinBlockSize, kSmallSize and kRoundLarge.
MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
ROUND_LARGE = 2 << 20


def round_size(nbytes: int) -> int:
    """The size class (block size in bytes) of a request of ``nbytes`` > 0."""
    if nbytes <= SMALL_SIZE:
        return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)
    return -(-nbytes // ROUND_LARGE) * ROUND_LARGE


def format_size(size: int) -> str:
    """PyTorch's ``format_size`` (CUDACachingAllocator.cpp): bytes, KiB, MiB, GiB."""
    if size <= 1024:
        return f"{int(size)} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


class OutOfMemoryError(RuntimeError):
    """The device has no memory for a request even after the cache was emptied (PyTorch's
    ``torch.OutOfMemoryError``, also ``torch.cuda.OutOfMemoryError``: a RuntimeError)."""


OutOfMemoryError.__module__ = "jitgrad"


class DriverOutOfMemory(Exception):
    """What a driver adapter's ``malloc`` raises when the device cannot hold the request."""


class Block:
    """One device allocation (``handle``: the driver's) of ``size`` bytes (its size class)."""

    __slots__ = ("size", "handle", "requested")

    def __init__(self, size, handle):
        self.size = size
        self.handle = handle
        self.requested = 0


# ----------------------------------------------------------------------------- statistics

#: PyTorch's ``memory_stats`` core statistics. No block is ever split here, so the
#: ``inactive_split`` ones stay 0; ``active`` is allocated plus freed-but-awaiting-a-sync.
STAT_NAMES = ("allocation", "allocated_bytes", "active", "active_bytes", "segment",
              "reserved_bytes", "requested_bytes", "inactive_split", "inactive_split_bytes")
POOLS = ("all", "large_pool", "small_pool")
COUNTERS = ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
            "num_device_free")


class _Stat:
    """One statistic: current value, peak, total increase (``allocated``), total decrease."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def change(self, amount: int) -> None:
        self.current += amount
        if amount > 0:
            self.allocated += amount
            if self.current > self.peak:
                self.peak = self.current
        else:
            self.freed -= amount


class _Use:
    """Blocks in use (in one pool, or all): count, bytes and requested bytes, three ``_Stat``
    objects. Written out by hand: it runs on every allocation and free."""

    __slots__ = ("count", "nbytes", "requested")

    def __init__(self):
        self.count, self.nbytes, self.requested = _Stat(), _Stat(), _Stat()

    def add(self, size: int, requested: int) -> None:
        c, b, r = self.count, self.nbytes, self.requested
        c.current += 1
        c.allocated += 1
        if c.current > c.peak:
            c.peak = c.current
        b.current += size
        b.allocated += size
        if b.current > b.peak:
            b.peak = b.current
        r.current += requested
        r.allocated += requested
        if r.current > r.peak:
            r.peak = r.current

    def sub(self, size: int, requested: int) -> None:
        c, b, r = self.count, self.nbytes, self.requested
        c.current -= 1
        c.freed += 1
        b.current -= size
        b.freed += size
        r.current -= requested
        r.freed += requested


class MemoryStats:
    """PyTorch's statistics: each core stat per pool (``all``, ``small_pool`` for blocks of at
    most 1 MiB, ``large_pool``) as current / peak / allocated / freed, plus event counters.

    ``use``: blocks handed out (``allocation``, ``allocated_bytes``, ``requested_bytes``);
    ``active``: handed out or freed but not yet reusable (``active``, ``active_bytes``) — the
    same as ``use`` unless freed blocks wait for a sync (``separate_active``); ``segment`` /
    ``reserved_bytes``: blocks obtained from the driver."""

    def __init__(self, separate_active: bool = False):
        self.use = {p: _Use() for p in POOLS}
        self.active = {p: _Use() for p in POOLS} if separate_active else self.use
        self.segments = {p: (_Stat(), _Stat()) for p in POOLS}
        self.counters = dict.fromkeys(COUNTERS, 0)

    @staticmethod
    def pool_of(size: int) -> str:
        return "small_pool" if size <= SMALL_SIZE else "large_pool"

    def change_segments(self, size: int, sign: int) -> None:
        for pool in ("all", self.pool_of(size)):
            count, nbytes = self.segments[pool]
            count.change(sign)
            nbytes.change(sign * size)

    def named(self) -> dict:
        """{(name, pool): _Stat} for every core statistic (the inactive_split ones: zeros)."""
        out = {}
        for p in POOLS:
            u, a = self.use[p], self.active[p]
            count, nbytes = self.segments[p]
            out.update({("allocation", p): u.count, ("allocated_bytes", p): u.nbytes,
                        ("requested_bytes", p): u.requested, ("active", p): a.count,
                        ("active_bytes", p): a.nbytes, ("segment", p): count,
                        ("reserved_bytes", p): nbytes, ("inactive_split", p): _Stat(),
                        ("inactive_split_bytes", p): _Stat()})
        return out

    def current(self, name: str) -> int:
        return self.named()[(name, "all")].current

    def reset_peak(self) -> None:
        for s in self.named().values():
            s.peak = s.current

    def reset_accumulated(self) -> None:
        for s in self.named().values():
            s.allocated = s.freed = 0
        self.counters = dict.fromkeys(COUNTERS, 0)

    def as_dict(self) -> OrderedDict:
        """Flat and sorted by key, as ``torch.cuda.memory_stats``."""
        items = [(f"{n}.{p}.{m}", getattr(s, m)) for (n, p), s in self.named().items()
                 for m in _Stat.__slots__]
        items += list(self.counters.items())
        return OrderedDict(sorted(items))


# ----------------------------------------------------------------------------- the pool


class CachingAllocator:
    """Size-class free lists over a driver adapter (see the module docstring).

    The adapter (``cuda_alloc_drivers``) answers ``malloc(size) -> handle`` (raising
    :class:`DriverOutOfMemory`), ``free(handle)``, ``flush()`` (make frees reach the driver),
    ``synchronize()``, ``memory_info() -> (free, total) | None``,
    ``lease(block, shape, dtype, on_release) -> device array`` and ``empty_array(shape, dtype)``
    (zero-byte arrays, which take no block). Tests substitute it to count or fail driver calls.
    """

    def __init__(self, driver, caching: bool = True, stream_ordered: bool = True):
        self.driver = driver
        self.caching = caching
        self.stream_ordered = stream_ordered
        self.stats = MemoryStats(separate_active=caching and not stream_ordered)
        self._use_all = self.stats.use["all"]
        self._use_small = self.stats.use["small_pool"]
        self._use_large = self.stats.use["large_pool"]
        self._free: dict = {}          # size class -> [Block] ready for reuse
        self._pending: list = []       # freed, waiting for a device sync (not stream ordered)
        self._returned = deque()       # freed by a finalizer, not yet taken by the pool
        self._lock = threading.RLock()

    # -------------------------------------------------------------- allocation

    def empty(self, shape: tuple, dtype):
        """An uninitialized C-contiguous device array of ``shape`` (a tuple of ints) and
        ``dtype``."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:
            return self.driver.empty_array(shape, dtype)
        size = round_size(nbytes)
        with self._lock:
            if self._returned:
                self._take_returned()
            blocks = self._free.get(size)
            block = blocks.pop() if blocks else self._cached(size)
            if block is None:
                block = self._malloc(size)
            block.requested = nbytes
            self._use_all.add(size, nbytes)
            (self._use_small if size <= SMALL_SIZE else self._use_large).add(size, nbytes)
            if self.stats.active is not self.stats.use:
                self._count_active(block, +1)
        try:
            return self.driver.lease(block, shape, dtype, self._returned.append)
        except BaseException:
            self._returned.append(block)
            raise

    def _cached(self, size):
        """A free block of class ``size`` after syncing pending frees, or None."""
        if self._pending:
            self._sync_pending()
            blocks = self._free.get(size)
            if blocks:
                return blocks.pop()
        return None

    def _malloc(self, size):
        try:
            return self._new_segment(size)
        except DriverOutOfMemory:
            pass
        self.stats.counters["num_alloc_retries"] += 1
        self._release_cached()
        try:
            return self._new_segment(size)
        except DriverOutOfMemory:
            self.stats.counters["num_ooms"] += 1
            raise OutOfMemoryError(self._oom_message(size)) from None

    def _new_segment(self, size):
        handle = self.driver.malloc(size)
        self.stats.counters["num_device_alloc"] += 1
        self.stats.change_segments(size, +1)
        return Block(size, handle)

    def _oom_message(self, size) -> str:
        """PyTorch's message, less what jitgrad cannot know (other processes' use) or offer
        (expandable segments)."""
        parts = [f"CUDA out of memory. Tried to allocate {format_size(size)}."]
        info = self.driver.memory_info()
        if info is not None and all(math.isfinite(v) for v in info):
            free, total = info
            parts.append(f"GPU 0 has a total capacity of {format_size(total)} of which "
                         f"{format_size(free)} is free.")
        allocated = self.stats.current("allocated_bytes")
        reserved = self.stats.current("reserved_bytes")
        parts.append(f"Of the allocated memory {format_size(allocated)} is allocated by "
                     f"jitgrad, and {format_size(reserved - allocated)} is reserved by jitgrad "
                     "but unallocated.")
        return " ".join(parts)

    # -------------------------------------------------------------- freeing

    def _count_active(self, block, sign: int) -> None:
        """Only when freed blocks wait for a sync (otherwise active is allocated)."""
        active = self.stats.active
        for pool in ("all", self.stats.pool_of(block.size)):
            (active[pool].add if sign > 0 else active[pool].sub)(block.size, block.requested)

    def _take_returned(self) -> None:
        """Move blocks whose last array died (the finalizers' queue) into the pool."""
        while self._returned:
            block = self._returned.popleft()
            size = block.size
            self._use_all.sub(size, block.requested)
            (self._use_small if size <= SMALL_SIZE else self._use_large).sub(size,
                                                                              block.requested)
            if not self.caching:
                self._free_segment(block)
            elif self.stream_ordered:
                self._free.setdefault(size, []).append(block)
            else:
                self._pending.append(block)

    def _sync_pending(self) -> None:
        self.driver.synchronize()
        self.stats.counters["num_sync_all_streams"] += 1
        for block in self._pending:
            self._count_active(block, -1)
            self._free.setdefault(block.size, []).append(block)
        self._pending.clear()

    def _free_segment(self, block) -> None:
        self.driver.free(block.handle)
        block.handle = None
        self.stats.counters["num_device_free"] += 1
        self.stats.change_segments(block.size, -1)

    def _release_cached(self) -> None:
        if self._pending:
            self._sync_pending()
        for blocks in self._free.values():
            for block in blocks:
                self._free_segment(block)
        self._free.clear()
        self.driver.flush()

    # -------------------------------------------------------------- public face

    def empty_cache(self) -> None:
        """Give every cached (unused) block back to the driver; blocks in use stay."""
        with self._lock:
            self._take_returned()
            self._release_cached()

    def memory_stats(self) -> OrderedDict:
        with self._lock:
            self._take_returned()
            return self.stats.as_dict()

    def current(self, name: str) -> int:
        with self._lock:
            self._take_returned()
            return self.stats.current(name)

    def reset_peak(self) -> None:
        with self._lock:
            self._take_returned()
            self.stats.reset_peak()

    def reset_accumulated(self) -> None:
        with self._lock:
            self._take_returned()
            self.stats.reset_accumulated()

    def cached_blocks(self) -> int:
        """Blocks held for reuse (free lists and pending)."""
        with self._lock:
            self._take_returned()
            return sum(map(len, self._free.values())) + len(self._pending)


# ----------------------------------------------------------------------------- the process's


_allocator = None
_init_lock = threading.Lock()


def caching_enabled_by_env() -> bool:
    """False when ``JITGRAD_CUDA_CACHING_ALLOCATOR=0`` or PyTorch's
    ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` is set (read once, when the allocator is made)."""
    if os.environ.get("JITGRAD_CUDA_CACHING_ALLOCATOR", "1").strip().lower() in (
            "0", "false", "no", "off"):
        return False
    return os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "").strip().lower() not in (
        "1", "true", "yes", "on")


def current():
    """The process's allocator, or None before the first device allocation."""
    return _allocator


def get(make_driver) -> CachingAllocator:
    """The process's allocator, made on first use over ``make_driver()``."""
    global _allocator
    if _allocator is None:
        with _init_lock:
            if _allocator is None:
                driver = make_driver()
                _allocator = CachingAllocator(driver, caching=caching_enabled_by_env(),
                                              stream_ordered=driver.stream_ordered())
    return _allocator
