"""PyTorch's CPU gamma and Dirichlet samplers (``torch._standard_gamma``,
``torch._sample_dirichlet``), drawing from the generator exactly as ATen's ``_s_gamma_cpu`` /
``_s_dirichlet_cpu`` (``aten/src/ATen/native/Distributions.cpp``) do, so seeded samples are
PyTorch's bit for bit.

Each element runs ``sample_gamma`` (``Distributions.h``: Marsaglia-Tsang, with the alpha < 1
boost ``U**(1/alpha)``) over two samplers of the generator: ``uniform_real_distribution<double>``
(53 bits of ``random64()``) and ``normal_distribution<double>``, which shares the generator's
cached second Box-Muller value with ``torch.normal`` (the ``_ncache`` of ``_random.Generator``).
Elements are drawn one after another in C order (``cpu_serial_kernel`` over a fresh contiguous
output). The arithmetic keeps ATen's types: for float32 the boost exponent ``1.0f / alpha``,
``alpha + 1`` and ``d = alpha - 1.0f/3.0f`` are float operations, the rest is double; the
constants written as float literals (``1.0f / 3.0f``, ``0.0331f``) keep their float values.

Dirichlet draws double gammas (alpha cast to double), sums each row in ATen's order (its
vectorised cascade sum, ``SumKernel.cpp``), divides and clamps to
``[tiny, nexttoward(1, 0)]`` of the dtype.
"""
from __future__ import annotations

import math

import numpy as np

from . import _random_kernels as _rk
from .codegen.kcache import lazy_kernels

_THIRD_F = float(np.float32(1.0) / np.float32(3.0))  # 1.0f / 3.0f
_C0331_F = float(np.float32(0.0331))                  # 0.0331f
_F32_THIRD = np.float32(_THIRD_F)
_F32_ONE = np.float32(1.0)
_D_TWO_PI = 2.0 * math.pi
_SUM_LANES = 4  # Vectorized<double>::size() of the AVX2/default sum kernel
_uniform_f64 = _rk._uniform_f64  # rebound to the compiled draw by _kernels()
_sum_loop2d = None  # ATen's sum loop (ops/_cascade_sum_kernels), bound by _kernels(): Numba


def _std_normal(s, cache):
    """``at::normal_distribution<double>(0, 1)``: the cached value if one is held, else a new
    Box-Muller pair (cos returned, sin cached), as ``_k_normal_serial`` draws them."""
    if cache[0] != 0.0:
        cache[0] = 0.0
        return cache[1]
    u1 = _uniform_f64(s)
    u2 = _uniform_f64(s)
    r = math.sqrt(-2.0 * math.log1p(-u2))
    theta = _D_TWO_PI * u1
    cache[1] = r * math.sin(theta)
    cache[0] = 1.0
    return r * math.cos(theta)


def _sample_gamma(s, cache, alpha, f32):
    """``sample_gamma<scalar_t, double>(alpha)``; ``f32``: scalar_t is float (``alpha`` holds a
    float32 value). Returns the double result before the cast to scalar_t."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        if f32:
            expo = np.float64(_F32_ONE / np.float32(alpha))
        else:
            expo = 1.0 / alpha
        scale *= math.pow(1.0 - _uniform_f64(s), expo)
        if f32:
            alpha = np.float64(np.float32(alpha) + _F32_ONE)
        else:
            alpha = alpha + 1.0
    if f32:
        d = np.float64(np.float32(alpha) - _F32_THIRD)
    else:
        d = alpha - _THIRD_F
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = _std_normal(s, cache)
        y = 1.0 + c * x
        while y <= 0:
            x = _std_normal(s, cache)
            y = 1.0 + c * x
        v = y * y * y
        u = 1.0 - _uniform_f64(s)
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _k_standard_gamma_f32(s, cache, alpha, out, tiny):
    for i in range(alpha.size):
        r = np.float32(_sample_gamma(s, cache, np.float64(alpha[i]), True))
        out[i] = r if tiny < r else tiny  # std::max(tiny, r): NaN -> tiny


def _k_standard_gamma_f64(s, cache, alpha, out, tiny):
    for i in range(alpha.size):
        r = _sample_gamma(s, cache, alpha[i], False)
        out[i] = r if tiny < r else tiny


def _k_dirichlet(s, cache, alpha, gam, out, k, lanes, tiny, top):
    """``_s_dirichlet_cpu``: double gammas, ATen's row sums, ratio cast to the output dtype and
    clamped to ``[tiny, top]`` (``std::min(top, std::max(tiny, r))``)."""
    dmin = 2.2250738585072014e-308  # DBL_MIN
    for i in range(alpha.size):
        g = _sample_gamma(s, cache, np.float64(alpha[i]), False)
        gam[i] = g if dmin < g else dmin
    acc = np.zeros((4, 4, lanes), dtype=np.float64)
    total_at = np.zeros(1, dtype=np.float64)
    rows = alpha.size // k if k > 0 else 0
    for r in range(rows):
        # the row's sum as ATen's sum(-1) adds it (ops/_cascade_sum_kernels.py)
        total_at[0] = 0.0
        _sum_loop2d(gam, r * k, total_at, 0, k, 1, 1, 0, 0, 0, lanes, acc)
        total = total_at[0]
        for j in range(k):
            v = out.dtype.type(gam[r * k + j] / total)
            v = v if tiny < v else tiny
            out[r * k + j] = v if v < top else top


_HELPERS = ("_std_normal", "_sample_gamma")
_KERNELS = ("_k_standard_gamma_f32", "_k_standard_gamma_f64", "_k_dirichlet")


def _bind_callees(g):
    _rk._kernels()
    g["_uniform_f64"] = _rk._uniform_f64
    from .ops._cascade_sum_kernels import _loop2d
    g["_sum_loop2d"] = _loop2d


# the samplers, compiled (or loaded from Numba's cache) on first use over the generator's
# compiled engine (``_random_kernels``); x / 0 is inf, as in C
_kernels = lazy_kernels(globals(), _HELPERS + _KERNELS, prepare=_bind_callees,
                        error_model="numpy")


def standard_gamma(gen, alpha: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma`` on the host: one draw per element of ``alpha`` (float32 or
    float64, any layout; drawn in C order) from the ``_random.Generator`` ``gen``."""
    a = np.ascontiguousarray(alpha).reshape(-1)
    out = np.empty(a.size, dtype=a.dtype)
    if a.size:
        k = _kernels()
        tiny = a.dtype.type(np.finfo(a.dtype).tiny)
        fn = k.k_standard_gamma_f32 if a.dtype == np.float32 else k.k_standard_gamma_f64
        with gen._lock:
            fn(gen._engine, gen._ncache, a, out, tiny)
    return out.reshape(alpha.shape)


def sample_dirichlet(gen, alpha: np.ndarray) -> np.ndarray:
    """``torch._sample_dirichlet`` on the host: rows along the last dim of ``alpha``."""
    a = np.ascontiguousarray(alpha).reshape(-1)
    out = np.empty(a.size, dtype=a.dtype)
    if a.size:
        k = _kernels()
        kdim = alpha.shape[-1] if alpha.ndim else 1
        fi = np.finfo(a.dtype)
        top = np.nextafter(a.dtype.type(1.0), a.dtype.type(0.0))
        gam = np.empty(a.size, dtype=np.float64)
        with gen._lock:
            k.k_dirichlet(gen._engine, gen._ncache, a, gam, out, kdim, _SUM_LANES,
                          a.dtype.type(fi.tiny), top)
    return out.reshape(alpha.shape)
