"""Batch norm's CPU forward in ATen's arithmetic (float32 / float64 inputs), so that a
``BatchNorm`` layer gives PyTorch's bits: its output, saved statistics and running buffers.

What PyTorch 2.13 computes (batch_norm_kernel.cpp / Normalization.cpp, contiguous input seen as
``(N*C, M)`` rows; checked element by element against ``torch.native_batch_norm``):

* training statistics, per channel, in one sequential pass each (no reassociation): the mean
  ``T(sum x / n)`` with the sum in double (``acc_type``), then ``var_sum = T(sum (x - mean)^2)``,
  each square taken in ``T`` and added in double — for float64 GCC vectorizes each plane's
  loop two elements at a time (squares rounded, added in order) and contracts its scalar
  remainder: an odd plane's last square is added by FMA; ``invstd = T(1 / sqrt(double(T(var_sum /
  T(n))) + eps))``;
* running buffers (Normalization.cpp, built without FMA): ``momentum`` is cast to ``T``; the
  mean ``m * mean + (1 - m) * running`` in ``T``; the variance with ``unbiased = T(var_sum /
  T(n - 1))`` widened to double (``acc_type``) before ``m * unbiased``, so for float32 it rounds
  once, as an FMA would;
* the coefficients in ``T`` (opmath of float is float): ``alpha = invstd * w``,
  ``beta = b - mean * alpha`` — one FMA, as GCC contracts it in the AVX-512 build; in eval
  ``invstd = 1 / sqrt(running_var + T(eps))`` in ``T``;
* the output ``x * alpha + beta``: one FMA per element (the vector lambda, contracted).

The kernels compile without fast-math flags: every FMA is an explicit ``fma``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...backends.cpu import empty
from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma

__all__ = ["training_stats", "eval_coefficients", "affine", "updated_running_mean",
           "updated_running_var"]

_FLAGS = dict(nogil=True, error_model="numpy")
# The same crossover as _norm_kernels (measured there): below it one thread does the work
PARALLEL_MIN_ELEMENTS = 1 << 17


@njit(inline="always", **_FLAGS)
def _channel_stats(x, k, channels, n_t, eps, w, b, out):
    """Channel ``k``'s mean, var_sum, invstd, alpha, beta into ``out[0..4, k]`` (``out`` has
    ``x``'s dtype, so each store rounds to it as ATen's ``scalar_t`` locals do)."""
    m = x.shape[1]
    rows = x.shape[0] // channels
    s = 0.0
    for i in range(rows):
        r = i * channels + k
        for j in range(m):
            s += x[r, j]
    out[0, k] = s / (rows * m)
    mu = out[0, k]
    q = 0.0
    for i in range(rows):
        r = i * channels + k
        for j in range(m):
            d = x[r, j] - mu
            if x.itemsize == 8 and j == m - 1 and m % 2 == 1:
                q = fma(np.float64(d), np.float64(d), q)  # the loop's contracted remainder
            else:
                q += d * d
    out[1, k] = q
    var = out[1, k] / n_t[0]
    if eps == 0.0 and var == 0:
        out[2, k] = 0.0
    else:
        out[2, k] = 1.0 / np.sqrt(np.float64(var) + eps)
    out[3, k] = out[2, k] * w[k]
    out[4, k] = fma(-mu, out[3, k], b[k])


@njit(**_FLAGS)
def _stats_serial(x, channels, n_t, eps, w, b, out):
    for k in range(channels):
        _channel_stats(x, k, channels, n_t, eps, w, b, out)


@njit(parallel=True, **_FLAGS)
def _stats_parallel(x, channels, n_t, eps, w, b, out):
    for k in prange(channels):  # ATen's parallel_for over channels: each sum stays sequential
        _channel_stats(x, k, channels, n_t, eps, w, b, out)


# batch_norm_cpu_collect_stats_channels_last_impl's three routes for an (N, C) input
ROWS_BY_THREAD, ROWS_TILED, ROWS_BY_CHANNEL = 0, 1, 2


@njit(inline="always", **_FLAGS)
def _chunk_sums(x, t, chunk, buf):
    """Thread ``t``'s rows ``[t * chunk, (t + 1) * chunk)``: per-channel sums in ``T``."""
    for i in range(t * chunk, min(x.shape[0], (t + 1) * chunk)):
        for k in range(x.shape[1]):
            buf[t, k] += x[i, k]


@njit(inline="always", **_FLAGS)
def _chunk_squares(x, t, chunk, mean, buf):
    """Thread ``t``'s rows: per-channel ``(x - mean)^2`` summed by FMA in ``T``."""
    for i in range(t * chunk, min(x.shape[0], (t + 1) * chunk)):
        for k in range(x.shape[1]):
            d = x[i, k] - mean[k]
            buf[t, k] = fma(d, d, buf[t, k])


@njit(**_FLAGS)
def _by_thread_serial(x, tasks, mean, buf, squares):
    chunk = (x.shape[0] + tasks - 1) // tasks
    for t in range(tasks):
        if squares:
            _chunk_squares(x, t, chunk, mean, buf)
        else:
            _chunk_sums(x, t, chunk, buf)


@njit(parallel=True, **_FLAGS)
def _by_thread_parallel(x, tasks, mean, buf, squares):
    chunk = (x.shape[0] + tasks - 1) // tasks
    for t in prange(tasks):  # parallel_for(0, N, 1): one chunk of rows per thread
        if squares:
            _chunk_squares(x, t, chunk, mean, buf)
        else:
            _chunk_sums(x, t, chunk, buf)


@njit(inline="always", **_FLAGS)
def _small_batch_channel(x, k, route, n_t, out):
    """Channel ``k``'s mean and var_sum by the routes for ``N <= threads`` (module doc of
    ``_rows_stats``); ``out[2, k]`` is scratch."""
    n = x.shape[0]
    if route == ROWS_TILED:
        out[0, k] = 0.0
        for i in range(n):
            out[0, k] += x[i, k]
        out[0, k] = out[0, k] / n_t[0]
        out[1, k] = 0.0
        for i in range(n):
            d = x[i, k] - out[0, k]
            out[1, k] = fma(d, d, out[1, k])
    else:
        s = 0.0
        for i in range(n):
            s += x[i, k]
        out[0, k] = s / n
        s = 0.0
        for i in range(n):
            d = x[i, k] - out[0, k]
            if x.itemsize == 8 and i == n - 1 and n % 2 == 1:
                s = fma(np.float64(d), np.float64(d), s)
            else:
                out[2, k] = d * d
                s += out[2, k]
        out[1, k] = s


@njit(**_FLAGS)
def _small_batch_serial(x, route, n_t, out):
    for k in range(x.shape[1]):
        _small_batch_channel(x, k, route, n_t, out)


@njit(parallel=True, **_FLAGS)
def _small_batch_parallel(x, route, n_t, out):
    for k in prange(x.shape[1]):  # ATen's parallel_for over the channels
        _small_batch_channel(x, k, route, n_t, out)


@njit(**_FLAGS)
def _rows_stats(x, tasks, route, n_t, eps, w, b, out, parallel):
    """The statistics of an ``(N, C)`` input (one value per (sample, channel): ATen's
    channels-last kernel), by ATen's route for ``N`` against the thread count:

    * ``ROWS_BY_THREAD`` (``N > threads``): rows split into ``tasks`` chunks as parallel_for
      splits them, each chunk's per-channel sums in ``T`` (the vector lambdas; the squares
      accumulate by FMA, ``y + (x - mean) * (x - mean)`` contracted), the chunks' sums then
      added in order in double (``acc_type``): ``mean = T(sum / N)``, ``var_sum = T(sum)``;
    * ``ROWS_TILED`` (``N <= threads``, one thread or C <= 16 or C > 2048): all in ``T``,
      ``mean = (sum of rows) / T(N)``, the squares by FMA;
    * ``ROWS_BY_CHANNEL`` (otherwise): scalar loops, double sums, ``mean = T(sum / N)``, each
      square rounded to ``T`` before the double add, except (float64) an odd ``N``'s last
      one, added by FMA: GCC's loop, vectorized two rows at a time with its scalar remainder
      contracted (measured for N = 3, 5, 7).

    ``parallel``: the chunks (or channels) on Numba's threads; the bits depend on ``tasks``
    only, as ATen's on its thread count."""
    n, c = x.shape
    if route == ROWS_BY_THREAD:
        buf = np.zeros((tasks, c), x.dtype)
        for squares in (False, True):
            if parallel:
                _by_thread_parallel(x, tasks, out[0], buf, squares)
            else:
                _by_thread_serial(x, tasks, out[0], buf, squares)
            row = 1 if squares else 0
            for k in range(c):
                s = 0.0
                for t in range(tasks):
                    s += buf[t, k]
                out[row, k] = s if squares else s / n
            buf[:, :] = 0
    elif parallel:
        _small_batch_parallel(x, route, n_t, out)
    else:
        _small_batch_serial(x, route, n_t, out)
    for k in range(c):
        var = out[1, k] / n_t[0]
        if eps == 0.0 and var == 0:
            out[2, k] = 0.0
        else:
            out[2, k] = 1.0 / np.sqrt(np.float64(var) + eps)
        out[3, k] = out[2, k] * w[k]
        out[4, k] = fma(-out[0, k], out[3, k], b[k])


@njit(**_FLAGS)
def _eval_coefficients(mean, var, eps_t, w, b, out):
    for k in range(mean.shape[0]):
        out[0, k] = var[k] + eps_t[0]
        out[0, k] = 1.0 / np.sqrt(out[0, k])
        out[1, k] = out[0, k] * w[k]
        out[2, k] = fma(-mean[k], out[1, k], b[k])


@njit(inline="always", **_FLAGS)
def _affine_row(x, r, a, b, out):
    k = r % a.shape[0]
    ar = a[k]
    br = b[k]
    for j in range(x.shape[1]):
        out[r, j] = fma(x[r, j], ar, br)


@njit(**_FLAGS)
def _affine_serial(x, a, b, out):
    for r in range(x.shape[0]):
        _affine_row(x, r, a, b, out)


@njit(parallel=True, **_FLAGS)
def _affine_parallel(x, a, b, out):
    for r in prange(x.shape[0]):
        _affine_row(x, r, a, b, out)


def _params(w, b, channels, dt):
    return (np.ones(channels, dt) if w is None else np.ascontiguousarray(w, dt),
            np.zeros(channels, dt) if b is None else np.ascontiguousarray(b, dt))


def training_stats(x2, channels, eps, w, b):
    """``(mean, var_sum, invstd, alpha, beta)`` per channel of a non-empty ``(N*C, M)``
    float32/float64 array, each in its dtype; ``w``/``b`` arrays or None."""
    dt = x2.dtype
    wt, bt = _params(w, b, channels, dt)
    out = np.empty((5, channels), dt)
    n_t = np.array([x2.size // channels], dt)  # C++'s var_sum / n converts n to scalar_t
    if x2.shape[1] == 1:  # ATen takes its channels-last kernel: sums per thread's rows
        from ..._settings import get_num_threads
        rows = x2.shape[0] // channels
        threads = get_num_threads()
        if rows > threads:
            route = ROWS_BY_THREAD
        elif threads == 1 or channels <= 16 or channels > 2048:
            route = ROWS_TILED
        else:
            route = ROWS_BY_CHANNEL
        _rows_stats(x2.reshape(rows, channels), max(1, min(threads, rows)), route, n_t,
                    float(eps), wt, bt, out, x2.size >= PARALLEL_MIN_ELEMENTS)
    else:
        kernel = _stats_parallel if x2.size >= PARALLEL_MIN_ELEMENTS else _stats_serial
        kernel(x2, channels, n_t, float(eps), wt, bt, out)
    return out[0], out[1], out[2], out[3], out[4]


def eval_coefficients(mean, var, eps, w, b):
    """``(invstd, alpha, beta)`` from the running statistics (arrays in the input's dtype)."""
    dt = mean.dtype
    wt, bt = _params(w, b, mean.shape[0], dt)
    out = np.empty((3, mean.shape[0]), dt)
    _eval_coefficients(np.ascontiguousarray(mean), np.ascontiguousarray(var),
                       np.array([eps], dt), wt, bt, out)
    return out[0], out[1], out[2]


@njit(**_FLAGS)
def _affine_channels_last(x, a, b, out):
    """``(N, C)``: ``fma(x, alpha, beta)`` along each row (the channels), rows in order."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = fma(x[i, k], a[k], b[k])


@njit(parallel=True, **_FLAGS)
def _affine_channels_last_parallel(x, a, b, out):
    for i in prange(x.shape[0]):  # elementwise: any split gives the same bits
        for k in range(x.shape[1]):
            out[i, k] = fma(x[i, k], a[k], b[k])


def affine(x2, alpha, beta):
    """``fma(x, alpha, beta)`` per row, the coefficients repeating down the rows."""
    out = empty(x2.shape, x2.dtype)
    if x2.size:
        if x2.shape[1] == 1:  # one value per (sample, channel): along the channels instead
            c = alpha.shape[0]
            (_affine_channels_last_parallel if x2.size >= PARALLEL_MIN_ELEMENTS
             else _affine_channels_last)(x2.reshape(-1, c), alpha, beta, out.reshape(-1, c))
        else:
            (_affine_parallel if x2.size >= PARALLEL_MIN_ELEMENTS else _affine_serial)(
                x2, alpha, beta, out)
    return out


def updated_running_mean(running, mean, momentum):
    """``m * mean + (1 - m) * running`` with ``m = T(momentum)``, in ``T``."""
    t = running.dtype.type
    m = t(momentum)
    return m * mean.astype(running.dtype) + (t(1) - m) * running


def updated_running_var(running, var_sum, n, momentum):
    """``m * unbiased + (1 - m) * running``: ``unbiased = T(var_sum / T(n - 1))`` widened to
    double before the product, the other term in ``T``."""
    t = running.dtype.type
    m = t(momentum)
    with np.errstate(divide="ignore", invalid="ignore"):  # n == 1: inf/NaN as in ATen
        unbiased = var_sum.astype(running.dtype) / t(n - 1)
    new = np.float64(m) * unbiased.astype(np.float64) + ((t(1) - m) * running).astype(np.float64)
    return new.astype(running.dtype)
