"""Independent pieces of CPU work spread over the BLAS thread count, each run sequentially.

Why not let MKL thread every GEMM: a pass made of many cache-sized GEMMs (the convolutions of
``nn/functional/_conv_rows.py`` make ~80 per map) meets one MKL barrier per call, and on a
machine whose cores are shared, every barrier waits for the slowest thread's next time slice.
Measured on 2 busy cores, the ResNet layer's forward+backward went from 1.5x to 2.3-2.9x
PyTorch's time (median) that way, and Numba ``prange`` kernels between the GEMMs fought MKL's
spinning threads for the cores. Here the pieces are handed out one at a time to as many
threads as MKL would use (the caller's thread is one of them), MKL running single-threaded in
each: a descheduled thread only delays its own piece, the others take the rest, and the only
barrier is the end of the batch.

Without MKL (NumPy's BLAS threads itself) everything runs in the caller's thread.
"""
from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from . import blas

__all__ = ["run", "count", "count_changed"]

_pool = None
_pool_size = 0
_pool_lock = threading.Lock()
_local = threading.local()


def count() -> int:
    """How many threads ``run`` uses: MKL's current thread count (1 without MKL)."""
    return blas.max_threads()


def count_changed(n: int) -> None:
    """``set_num_threads``' hook. The host routines (``host_routines.py``: sigmoid) cut their
    work where ``at::parallel_for`` would at ``n`` threads, reading ``n`` from a memory cell:
    compiled code (a ``jitgrad.compile`` replay) calls them with no Python in between, so the
    cell must change with the count, not at the next eager lookup. Not loaded yet: the first
    lookup (``vml.routine``) sets it."""
    routines = sys.modules.get(__package__ + ".host_routines")
    if routines is not None:
        routines.set_threads(n)


def _sequential_blas():
    """Make this (worker) thread's MKL calls single-threaded, once per thread."""
    if not getattr(_local, "sequential", False):
        blas.set_local_threads(1)
        _local.sequential = True


def _executor(workers):
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="jitgrad-host")
            _pool_size = workers
        return _pool


def run(fn, pieces, threads=None):
    """``fn(piece, index)`` for every piece, in no set order, on up to ``threads`` threads
    (``index`` names the thread, 0 up, so per-thread accumulators need no lock); returns
    ``{index: [results]}``. With more than one thread the pieces run on pool threads and the
    caller waits: setting MKL's thread count for the caller's thread and back costs ~0.35 ms
    per call here, more than a pool thread's wake-up."""
    threads = count() if threads is None else threads
    pieces = list(pieces)
    threads = max(1, min(threads, len(pieces)))
    if threads == 1:
        return {0: [fn(p, 0) for p in pieces]}
    queue = iter(pieces)  # next() on a list iterator is atomic under the GIL

    def drain(index):
        _sequential_blas()
        return [fn(p, index) for p in queue]

    pool = _executor(threads)
    futures = [pool.submit(drain, i) for i in range(threads)]
    for f in futures:  # wait for every worker before raising what one of them raised
        f.exception()
    return {i: f.result() for i, f in enumerate(futures)}
