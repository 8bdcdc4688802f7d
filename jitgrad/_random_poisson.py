"""PyTorch's CPU Poisson and binomial samplers (``torch.poisson``, ``torch.binomial``), drawing
from the generator exactly as ATen's ``_s_poisson_cpu`` / ``_s_binomial_cpu``
(``aten/src/ATen/native/Distributions.cpp``) do, so seeded samples are PyTorch's bit for bit.

Both draw ``uniform_real_distribution<double>`` values (53 bits of ``random64()``), one element
after another in C order of the output (``cpu_serial_kernel`` over a fresh contiguous output),
as ``_random_gamma`` does for the gamma sampler.

Poisson (``sample_poisson``, double throughout): Hoermann's transformed rejection (PTRS) for
rates >= 10, Knuth's product of uniforms below; the int64 result is cast to the dtype, and a
value out of int64's range (or NaN) becomes INT64_MIN, as x86's ``cvttsd2si`` gives it.

Binomial (``sample_binomial<scalar_t, double>``, from TensorFlow's op): BTRS for
``count * p >= 10`` (p the smaller of prob and 1 - prob), geometric-sum inversion below. The
arithmetic keeps ATen's types: for float32 the products ``count * prob``, ``(count + 1) * prob``,
``1 - prob``, ``prob / (1 - prob)``, ``count - k`` and the ``sqrtf``/``log1pf``/``floorf``
calls are float operations (Numba's ``math`` calls the libm float variants on float32), the
rest is double.
"""
from __future__ import annotations

import math

import numpy as np

from . import _random_kernels as _rk
from .codegen.kcache import lazy_kernels

_uniform_f64 = _rk._uniform_f64  # rebound to the compiled draw by _kernels()
_INT64_MIN = -9223372036854775808
_TWO63 = 9223372036854775808.0

# stirling_approx_tail's table (TensorFlow's kTailValues), as doubles
_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287], dtype=np.float64)


def _to_int64(k):
    """``static_cast<int64_t>(double)`` as x86 computes it: out of range or NaN -> INT64_MIN."""
    if not (-_TWO63 <= k < _TWO63):
        return _INT64_MIN
    return np.int64(k)


def _sample_poisson(s, lam):
    """ATen's ``sample_poisson(double lambda, generator)`` (the caller checked lambda >= 0)."""
    if lam >= 10.0:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2.0)
        while True:
            u = _uniform_f64(s) - 0.5
            v = _uniform_f64(s)
            us = 0.5 - abs(u)
            k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return _to_int64(k)
            if k < 0.0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return _to_int64(k)
    if lam == 0.0:
        return np.int64(0)
    enlam = math.exp(-lam)
    x = np.int64(0)
    prod = 1.0
    while True:
        prod *= _uniform_f64(s)
        if prod > enlam:
            x += 1
        else:
            return x


def _k_poisson(s, lam, out):
    """One draw per element; returns the index of the first negative rate (ATen's check fires
    there, after the draws before it), or -1."""
    for i in range(lam.size):
        v = np.float64(lam[i])
        if not v >= 0.0:
            return i
        out[i] = _sample_poisson(s, v)
    return -1


def _stirling_tail(k):
    """``stirling_approx_tail<double>(k)``."""
    if k < 10.0:
        return _TAIL[np.int64(k)]
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1.0)


def _r(x, f32):
    """A scalar_t operation's result: rounded to float32 when scalar_t is float (one double
    operation on float32 values rounded once equals the float operation), kept otherwise."""
    if f32:
        return np.float64(np.float32(x))
    return x


def _binomial_inversion(s, count, prob, f32):
    """``binomial_inversion<scalar_t, double>``: count successes as a sum of geometric gaps;
    ``log1p(-prob)`` is ``log1pf`` for float (the scalar_t overload)."""
    geom_sum = 0.0
    num_geom = 0.0
    if f32:
        logprob = np.float64(math.log1p(np.float32(-prob)))
    else:
        logprob = math.log1p(-prob)
    while True:
        geom = math.ceil(math.log(_uniform_f64(s)) / logprob)
        geom_sum += geom
        if geom_sum > count:
            break
        num_geom = _r(num_geom + 1.0, f32)
    return num_geom


def _btrs(s, count, prob, f32):
    """``btrs<scalar_t, double>``: Hormann's transformed rejection with squeeze; ``_r`` marks
    the operations whose operands are both scalar_t (float for float tensors)."""
    q = _r(1.0 - prob, f32)
    stddev = _r(math.sqrt(_r(_r(count * prob, f32) * q, f32)), f32)
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = _r(count * prob, f32) + 0.5
    v_r = 0.92 - 4.2 / b
    r = _r(prob / q, f32)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(_r(_r(count + 1.0, f32) * prob, f32))
    while True:
        u = _uniform_f64(s) - 0.5
        v = _uniform_f64(s)
        us = 0.5 - abs(u)
        k = _r(math.floor((2.0 * a / us + b) * u + c), f32)  # static_cast<scalar_t>
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        cmk = _r(count - k, f32)
        cmk1 = _r(cmk + 1.0, f32)
        upperbound = ((m + 0.5) * math.log((m + 1.0) / (r * (count - m + 1.0)))
                      + _r(count + 1.0, f32) * math.log((count - m + 1.0) / cmk1)
                      + (k + 0.5) * math.log(r * cmk1 / _r(k + 1.0, f32))
                      + _stirling_tail(m) + _stirling_tail(count - m)
                      - _stirling_tail(k) - _stirling_tail(cmk))
        if v <= upperbound:
            return k


def _sample_binomial(s, count, prob, f32):
    """``sample_binomial<scalar_t, double>`` (values of scalar_t held as doubles); NaN prob
    gives NaN. A NaN count with a prob in (0, 1) makes ATen's inversion loop forever; here it
    gives NaN."""
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if count != count:
        return count
    if prob <= 0.5:
        if _r(count * prob, f32) >= 10.0:
            return _btrs(s, count, prob, f32)
        return _binomial_inversion(s, count, prob, f32)
    if prob > 0.5:
        qprob = _r(1.0 - prob, f32)
        if _r(count * qprob, f32) >= 10.0:
            return _r(count - _btrs(s, count, qprob, f32), f32)
        return _r(count - _binomial_inversion(s, count, qprob, f32), f32)
    return np.nan


def _k_binomial(s, count, prob, out, f32):
    for i in range(count.size):
        out[i] = _sample_binomial(s, np.float64(count[i]), np.float64(prob[i]), f32)


_HELPERS = ("_to_int64", "_sample_poisson", "_stirling_tail", "_r", "_binomial_inversion",
            "_btrs", "_sample_binomial")
_KERNELS = ("_k_poisson", "_k_binomial")


def _bind_callees(g):
    _rk._kernels()
    g["_uniform_f64"] = _rk._uniform_f64


# the samplers, compiled (or loaded from Numba's cache) on first use over the generator's
# compiled engine (``_random_kernels``); x / 0 is inf, as in C
_kernels = lazy_kernels(globals(), _HELPERS + _KERNELS, prepare=_bind_callees,
                        error_model="numpy")


def poisson(gen, lam: np.ndarray) -> np.ndarray:
    """``torch.poisson`` on the host: one draw per element of ``lam`` (float16/32/64, any
    layout; drawn in C order, each rate read as a double) from the ``_random.Generator``
    ``gen``. Raises ATen's error at the first rate that is not >= 0, the generator having
    advanced by the draws before it (as ATen's)."""
    a = np.ascontiguousarray(lam).reshape(-1)
    out = np.zeros(a.size, dtype=np.int64)
    if a.size:
        k = _kernels()
        with gen._lock:
            bad = k.k_poisson(gen._engine, a.astype(np.float64), out)
        if bad >= 0:
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    with np.errstate(over="ignore"):  # static_cast<Half>(1e6) is inf, silently
        return out.astype(lam.dtype).reshape(lam.shape)


def binomial(gen, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """``torch.binomial`` on the host: ``count`` and ``prob`` of one dtype (float32/float64),
    already broadcast to the output's shape; drawn in C order."""
    c = np.ascontiguousarray(count).reshape(-1)
    p = np.ascontiguousarray(prob).reshape(-1)
    out = np.zeros(c.size, dtype=c.dtype)
    if c.size:
        k = _kernels()
        with gen._lock:
            k.k_binomial(gen._engine, c, p, out, c.dtype == np.float32)
    return out.reshape(count.shape)
