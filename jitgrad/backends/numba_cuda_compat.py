"""Import numba.cuda in a state that compiles kernels, whatever NumPy is installed.

numba-cuda 0.30.4 (the newest release; the project is in maintenance mode and declined the
fix, NVIDIA/numba-cuda#907 / #916) registers ``overload(np.row_stack)`` unconditionally for
NumPy >= 2.0 when its ``numba.cuda.np.arrayobj`` module is first imported — lazily, on the first
kernel compilation. NumPy 2.5 removed ``np.row_stack``, so on NumPy >= 2.5 that import raises
``AttributeError: module 'numpy' has no attribute 'row_stack'`` and no kernel compiles at all.
(numba itself guards the same line since 0.67.)

``import_numba_cuda()`` imports numba.cuda and, when NumPy lacks ``row_stack``, imports that one
module with a stand-in ``np.row_stack`` present for the duration of the import only: the
overload is registered for a private function nobody can call, and ``numpy`` is left exactly as
it was (``hasattr(np, "row_stack")`` stays False for the user's code). Under the simulator no
kernel is compiled and nothing is imported beyond ``numba.cuda``.

Every jitgrad module that needs numba.cuda gets it from here (``backends/cuda.py``,
``backends/cuda_env.py``; the kernel modules import ``cuda_env``).
"""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_done = False


def _row_stack(tup):  # the stand-in: never called (NumPy >= 2.5 has no np.row_stack to call)
    return np.vstack(tup)


def import_numba_cuda():
    """``numba.cuda``, with numba-cuda's NumPy-2.5 import failure worked around (see above)."""
    global _done
    from numba import cuda
    if _done:
        return cuda
    with _lock:
        if not _done:
            if not _simulator(cuda):
                _import_arrayobj()
            _done = True
    return cuda


def _simulator(cuda) -> bool:
    try:
        from numba.cuda.core import config
    except ImportError:  # older numba-cuda
        from numba.core import config
    return bool(config.ENABLE_CUDASIM)


def needs_row_stack_shim() -> bool:
    return "row_stack" not in np.__dict__


def _import_arrayobj() -> None:
    import importlib
    import sys
    name = "numba.cuda.np.arrayobj"
    if name in sys.modules or not needs_row_stack_shim():
        return
    np.row_stack = _row_stack
    try:
        importlib.import_module(name)
    finally:
        del np.row_stack
