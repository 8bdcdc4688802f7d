"""ATen's CPU linspace loop (RangeFactoriesKernel.cpp): the first half counts up from ``start``,
the second half down from ``end``, each value ``start + step * k`` / ``end - step * j`` rounded
once (the compiler contracts ATen's expression into a fused multiply-add), in the output's
float type. NumPy has no fma, hence this one compiled loop (llvm.fma through cpu_env's ``fma``).
"""
from __future__ import annotations

from ..backends.cpu_env import fma
from ..codegen.kcache import njit_cached


@njit_cached(nogil=True, error_model="numpy")
def fill_linspace(start, end, step, out):
    n = out.shape[0]
    half = n // 2
    for k in range(n):
        if k < half:
            out[k] = fma(step, out.dtype.type(k), start)
        else:
            out[k] = fma(-step, out.dtype.type(n - 1 - k), end)


def float_linspace(start, end, steps, dtype):
    """``steps`` (> 1) values of a float32/float64 ``dtype`` as ATen's linspace gives them:
    start/end converted to the dtype and the step computed in it."""
    import numpy as np
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        s, e = t(start), t(end)
        step = t((e - s) / t(steps - 1))
    out = np.empty(steps, dtype)
    fill_linspace(s, e, step, out)
    return out


@njit_cached(nogil=True, error_model="numpy")
def fill_logspace(base, start, end, step, out):
    """ATen's CPU logspace loop: ``pow(base, start + step * i)`` in double (``end - step * j``
    for the second half). Unlike linspace's kernel, ATen's compiler leaves these exponents
    unfused (measured: every float64 value matches only that way), and so does Numba here."""
    n = out.shape[0]
    half = n // 2
    for k in range(n):
        if k < half:
            out[k] = base ** (start + step * float(k))
        else:
            out[k] = base ** (end - step * float(n - 1 - k))
