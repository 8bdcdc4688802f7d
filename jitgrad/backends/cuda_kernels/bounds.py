"""Device-side index checks: PyTorch's asynchronous "device-side assert", as a flag.

A CUDA kernel cannot raise, and reading an index tensor back to check it on the host would cost a
device->host synchronization per op. So the index kernels check each index themselves
(:func:`checked_index`): an index outside the op's range is skipped (nothing read or written out
of bounds; a gather writes 0 there) and the first one raises a flag in a 4-element int64 array in
*mapped* (host-visible, page-locked) memory: ``[error code, index, dim, size]``. The host looks at
it at the next synchronizing point, where PyTorch reports its device asserts too:
``backends.cuda.to_host`` (``.item()``, ``.cpu()``, ``.tolist()``, printing, every counted
device->host copy) and ``jitgrad.cuda.synchronize()`` call :func:`raise_pending`, which clears
the flag and raises the op's CPU error (same type and words as the CPU path: the code names the
op's ``IndexRule`` message). Reading the mapped flag is no transfer (no copy is made; nothing is
counted in ``stats``).

Differences from PyTorch: PyTorch's CUDA assert leaves the context unusable and says only
"device-side assert triggered"; here the flag is cleared once reported and the message is the
op's own. As in PyTorch, the results of the failing op (and of anything computed from them before
the report) are not meaningful.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import cuda

__all__ = ["checked_index", "check_args", "unchecked", "raise_pending", "pending"]

_errors: list = [None]  # code -> (exception class, message template); code 0: no report
_codes: dict = {}
_flag = None


# cuda.jit(device=True) rather than device_jit: under the simulator a device function needs the
# simulator's wrapper to see ``cuda.atomic`` (device_jit returns the bare Python function there)
@cuda.jit(device=True)
def checked_index(j, size, flag, chk):
    """``j`` wrapped into ``[0, size)`` (negatives only when ``chk[1]``), or -1 when out of range
    (then the first such index of the process raises the flag with code ``chk[0]``)."""
    k = j
    if k < 0 and chk[1] != 0:
        k += size
    if k < 0 or k >= size:
        if chk[0] != 0:
            if cuda.atomic.compare_and_swap(flag, 0, chk[0]) == 0:
                flag[1] = j
                flag[2] = chk[2]
                flag[3] = size
        return -1
    return k


def flag():
    """The mapped flag array (allocated on first use, zeroed)."""
    global _flag
    if _flag is None:
        f = cuda.mapped_array((4,), dtype=np.int64)
        f[:] = 0
        _flag = f
    return _flag


def _code(error) -> int:
    code = _codes.get(error)
    if code is None:
        code = _codes[error] = len(_errors)
        _errors.append(error)
    return code


def check_args(error, negatives: bool, dim: int):
    """``(flag, chk)`` kernel arguments: report out-of-range indices as ``error`` = (exception
    class, template with ``{index}``, ``{dim}``, ``{size}``); ``negatives``: -size..-1 wrap."""
    return flag(), (np.int64(_code(error)), np.int64(bool(negatives)), np.int64(dim))


def unchecked():
    """``(flag, chk)`` for indices produced by jitgrad itself (negatives wrap once, nothing
    reported; an impossible out-of-range index is still skipped)."""
    return flag(), (np.int64(0), np.int64(1), np.int64(0))


def pending():
    """The pending error (not cleared), or None."""
    f = _flag
    if f is None or int(f[0]) == 0:
        return None
    code, index, dim, size = (int(v) for v in f)
    exc, msg = _errors[code]
    return exc(msg.format(index=index, dim=dim, size=size))


def raise_pending() -> None:
    """Raise (and clear) the error a kernel flagged since the last check. The caller has
    synchronized (a device->host copy or ``synchronize``)."""
    err = pending()
    if err is not None:
        _flag[:] = 0
        raise err
