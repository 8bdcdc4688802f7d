"""ATen's CPU range-factory loops (RangeFactoriesKernel.cpp, RangeFactories.cpp), reproduced
to the bit, because values like ``arange(0, 10, 0.3)[13]`` differ in the last bit otherwise:

* linspace: the first half counts up from ``start``, the second half down from ``end``, each
  value ``start + step * k`` / ``end - step * j`` rounded once (the compiler contracts ATen's
  expression into a fused multiply-add), in the output's float type;
* logspace: ``pow(base, exponent)`` in double, the exponent not contracted;
* arange: ATen's vectorized loop (measured: 256-bit vectors, pairs of them per iteration, a
  scalar tail) inside each ``parallel_for`` chunk: a vector's base ``start + step * i`` rounded
  to the output type, its lanes ``base + j * step`` in the accumulate type, all fused.

NumPy has no fma, hence these compiled loops (llvm.fma through cpu_env's ``fma``).
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


@njit_cached(nogil=True, error_model="numpy")
def fill_arange(start, step, width, bounds, out):
    """ATen's arange over the chunks ``bounds[c]:bounds[c + 1]`` (its parallel_for split):
    ``width`` lanes per vector, two vectors per iteration, then the scalar tail; ``start`` and
    ``step`` in the accumulate type (double for float32/float64)."""
    for c in range(bounds.shape[0] - 1):
        i, end = bounds[c], bounds[c + 1]
        while i + 2 * width <= end:
            for _ in range(2):
                base = float(out.dtype.type(fma(step, float(i), start)))
                for j in range(width):
                    out[i + j] = fma(float(j), step, base)
                i += width
        while i < end:
            out[i] = fma(step, float(i), start)
            i += 1


_GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE


def parallel_chunks(n, threads):
    """The chunk bounds at::parallel_for gives ``threads`` OpenMP threads over ``range(n)``."""
    import numpy as np
    if n <= _GRAIN_SIZE or threads <= 1:
        return np.array([0, n], np.int64)
    t = min(threads, -(-n // _GRAIN_SIZE))
    size = -(-n // t)
    return np.array(sorted({min(n, k * size) for k in range(t + 1)}), np.int64)


def float_arange(start, step, n, dtype, threads):
    """``n`` values of a float32/float64 arange as ATen's CPU kernel writes them with
    ``threads`` threads (ATen's AVX2 vectors: 32 bytes)."""
    import numpy as np
    out = np.empty(n, dtype)
    fill_arange(float(start), float(step), 32 // out.itemsize, parallel_chunks(n, threads), out)
    return out


def _fma32(a, b, c):
    """float32 ``a * b + c`` rounded once, through float64: the product of two float32 values is
    exact there (a tie in the final rounding could round twice; not seen in practice)."""
    import numpy as np
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)


def half_arange(start, step, n, threads):
    """float16 arange as ATen's kernel: accumulate type float32, 16 lanes per vector."""
    import numpy as np
    s, st = np.float32(start), np.float32(step)
    out = np.empty(n, np.float16)
    width = 16
    bounds = parallel_chunks(n, threads)
    for c in range(len(bounds) - 1):
        b, e = int(bounds[c]), int(bounds[c + 1])
        vec_end = b + (e - b) // (2 * width) * (2 * width)
        idx = np.arange(b, vec_end)
        lane = (idx - b) % width
        bases = _fma32(st, (idx - lane).astype(np.float32), s).astype(np.float16)
        out[b:vec_end] = _fma32(lane.astype(np.float32), st, bases.astype(np.float32))
        tail = np.arange(vec_end, e)
        out[vec_end:e] = _fma32(st, tail.astype(np.float32), s)
    return out
