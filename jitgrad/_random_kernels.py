"""The engine and sampler kernels of PyTorch's CPU generator (``jitgrad._random``).

mt19937 (the 626-word engine array), every sampler's fill loop as ATen runs it (uniform,
normal_fill with its AVX2 and generic Box-Muller blocks, integers, bernoulli, exponential,
geometric, cauchy, randperm, multinomial), written in plain Python and compiled by Numba on
first use (``_kernels()``), and :func:`cpu_capability`: which ATen kernel variant torch runs on
this CPU.
"""

import math
import os
import platform

import numpy as np

from .codegen.kcache import lazy_kernels

# ---------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------

_N = 624                     # mt19937 state words
_LEFT = 624                  # index of `left_` in the engine array
_NEXT = 625                  # index of `next_` in the engine array
_ENGINE_LEN = 626
_DEFAULT_RNG_SEED = 67280421310721  # c10::detail::default_rng_seed_val
_STATE_SIZE = 5056           # sizeof(at::detail::CPUGeneratorImplState)
_U64 = (1 << 64) - 1

# float32 constants of avx_mathfun.h (ATen/native/cpu/avx_mathfun.h)
_f = np.float32
_F_ONE = _f(1.0)
_F_HALF = _f(0.5)
_F_MINUS_TWO = _f(-2.0)
_F_TWO_PI = _f(2.0 * math.pi)
_F_2M24 = _f(1.0 / (1 << 24))
_F_SQRTHF = _f(0.707106781186547524)
_F_LOG_P0 = _f(7.0376836292e-2)
_F_LOG_P1 = _f(-1.1514610310e-1)
_F_LOG_P2 = _f(1.1676998740e-1)
_F_LOG_P3 = _f(-1.2420140846e-1)
_F_LOG_P4 = _f(1.4249322787e-1)
_F_LOG_P5 = _f(-1.6668057665e-1)
_F_LOG_P6 = _f(2.0000714765e-1)
_F_LOG_P7 = _f(-2.4999993993e-1)
_F_LOG_P8 = _f(3.3333331174e-1)
_F_LOG_Q1 = _f(-2.12194440e-4)
_F_LOG_Q2 = _f(0.693359375)
_F_DP1 = _f(-0.78515625)
_F_DP2 = _f(-2.4187564849853515625e-4)
_F_DP3 = _f(-3.77489497744594108e-8)
_F_SIN_P0 = _f(-1.9515295891e-4)
_F_SIN_P1 = _f(8.3321608736e-3)
_F_SIN_P2 = _f(-1.6666654611e-1)
_F_COS_P0 = _f(2.443315711809948e-005)
_F_COS_P1 = _f(-1.388731625493765e-003)
_F_COS_P2 = _f(4.166664568298827e-002)
_F_FOPI = _f(1.27323954473516)
_D_2M53 = 1.0 / (1 << 53)
_D_TWO_PI = 2.0 * math.pi
del _f


# ---------------------------------------------------------------------------
# CPU capability (which ATen kernel variant torch would run on this machine)
# ---------------------------------------------------------------------------

_capability = None


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def cpu_capability():
    """Return ``"avx2"`` or ``"default"``: the ATen kernel family torch uses.

    ``"avx2"`` on x86-64 CPUs with AVX2+FMA (also AVX-512 CPUs: ATen does not
    dispatch the normal/uniform samplers to AVX-512 differently), else
    ``"default"``.  ``ATEN_CPU_CAPABILITY=default`` forces ``"default"`` like
    it does in torch.  Set ``JITGRAD_CPU_CAPABILITY`` to override.
    """
    global _capability
    if _capability is None:
        forced = os.environ.get("JITGRAD_CPU_CAPABILITY", "").strip().lower()
        aten = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
        if forced in ("avx2", "default"):
            cap = forced
        elif aten == "default":
            cap = "default"
        elif platform.machine().lower() in ("x86_64", "amd64", "x64"):
            flags = _cpu_flags()
            if flags is None:  # not Linux: assume a modern x86-64 CPU
                cap = "avx2"
            else:
                cap = "avx2" if {"avx2", "fma"} <= flags else "default"
        else:
            cap = "default"
        _capability = cap
    return _capability


# correctly rounded fused multiply-add; bound to a numba intrinsic by _kernels()
_fma = None

# ---------------------------------------------------------------------------
# kernels (plain Python here; compiled with numba by _kernels())
#
# The engine is an int64 array of 626 entries: the 624 state words (each
# < 2**32), then `left_` and `next_` exactly like at::mt19937_data_pod.
# ---------------------------------------------------------------------------

def _mt_twist(s):
    for kk in range(_N - 397):
        y = (s[kk] & 0x80000000) | (s[kk + 1] & 0x7FFFFFFF)
        s[kk] = s[kk + 397] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
    for kk in range(_N - 397, _N - 1):
        y = (s[kk] & 0x80000000) | (s[kk + 1] & 0x7FFFFFFF)
        s[kk] = s[kk + 397 - _N] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
    y = (s[_N - 1] & 0x80000000) | (s[0] & 0x7FFFFFFF)
    s[_N - 1] = s[396] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)


def _mt_next(s):
    """at::mt19937::operator(): next 32-bit output (as int64)."""
    left = s[_LEFT] - 1
    if left == 0:
        _mt_twist(s)
        left = _N
        s[_NEXT] = 0
    s[_LEFT] = left
    i = s[_NEXT]
    s[_NEXT] = i + 1
    y = s[i]
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


def _mt_fill(s, out):
    """Fill a uint32 array with raw engine outputs (random())."""
    left = s[_LEFT]
    nxt = s[_NEXT]
    for k in range(out.size):
        left -= 1
        if left == 0:
            _mt_twist(s)
            left = _N
            nxt = 0
        y = s[nxt]
        nxt += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        out[k] = y
    s[_LEFT] = left
    s[_NEXT] = nxt


def _uniform_f32(s):
    """uniform_real_distribution<float>(0, 1): 24 bits of random()."""
    return np.float32(_mt_next(s) & 0xFFFFFF) * _F_2M24


def _uniform_f64(s):
    """uniform_real_distribution<double>(0, 1): 53 bits of random64()."""
    hi = _mt_next(s)
    lo = _mt_next(s)
    return np.float64(((hi & 0x1FFFFF) << 32) | lo) * _D_2M53


def _random64(s):
    hi = np.uint64(_mt_next(s))
    lo = np.uint64(_mt_next(s))
    return (hi << np.uint64(32)) | lo


def _k_uniform_f32(s, out, frm, to, use_fma):
    # uniform_kernel: x * (to - from) + from in float (contracted to an FMA
    # by the AVX2/AVX-512 builds); a value rounded up to `to` becomes `from`.
    rng = to - frm
    for i in range(out.size):
        x = np.float32(_mt_next(s) & 0xFFFFFF) * _F_2M24
        if use_fma:
            v = _fma(x, rng, frm)
        else:
            v = x * rng + frm
        if v == to:
            v = frm
        out[i] = v


def _k_uniform_f64(s, out, frm, to, use_fma):
    rng = to - frm
    for i in range(out.size):
        x = _uniform_f64(s)
        if use_fma:
            v = _fma(x, rng, frm)
        else:
            v = x * rng + frm
        if v == to:
            v = frm
        out[i] = v


def _k_randint32(s, out, rng, base):
    # uniform_int_from_to_distribution with range < 2**28: random() % range
    for i in range(out.size):
        out[i] = (_mt_next(s) % rng) + base


def _k_randint64(s, out, rng, base):
    # range >= 2**28: random64() % range, wrapped to int64
    urng = np.uint64(rng)
    ubase = np.uint64(base)
    for i in range(out.size):
        out[i] = np.int64((_random64(s) % urng) + ubase)


def _k_normal_serial(s, cache, out, mean, std, use_fma):
    """normal_distribution<double>(mean, std) with the cached sin value.

    cache[0] != 0 means a cached sample (cache[1]) is valid.
    """
    for i in range(out.size):
        if cache[0] != 0.0:
            ret = cache[1]
            cache[0] = 0.0
        else:
            u1 = _uniform_f64(s)
            u2 = _uniform_f64(s)
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = _D_TWO_PI * u1
            cache[1] = r * math.sin(theta)
            cache[0] = 1.0
            ret = r * math.cos(theta)
        if use_fma:
            out[i] = _fma(ret, std, mean)
        else:
            out[i] = ret * std + mean


def _nf16_avx2(d, off, mean, std):
    """NormalFill16<float, true> (AVX2): log256_ps / sincos256_ps lane by lane.

    Operation order and FMA placement follow torch 2.13's compiled kernel.
    """
    for j in range(8):
        u1 = _F_ONE - d[off + j]
        u2 = d[off + 8 + j]
        # ---- log256_ps(u1); u1 is in (2**-24, 1], never <= 0 or denormal
        m, ex = math.frexp(u1)
        x = np.float32(m)
        e = np.float32(ex)
        t = x - _F_ONE
        if x < _F_SQRTHF:
            e = e - _F_ONE
            x = t + x
        else:
            x = t
        z = x * x
        y = _fma(_F_LOG_P0, x, _F_LOG_P1)
        y = _fma(y, x, _F_LOG_P2)
        y = _fma(y, x, _F_LOG_P3)
        y = _fma(y, x, _F_LOG_P4)
        y = _fma(y, x, _F_LOG_P5)
        y = _fma(y, x, _F_LOG_P6)
        y = _fma(y, x, _F_LOG_P7)
        y = _fma(y, x, _F_LOG_P8)
        y = y * x
        y = _fma(y, z, e * _F_LOG_Q1)
        y = y - z * _F_HALF
        x = x + y
        lg = _fma(e, _F_LOG_Q2, x)
        radius = np.sqrt(lg * _F_MINUS_TWO)
        # ---- sincos256_ps(theta); theta >= 0
        theta = _F_TWO_PI * u2
        jj = (np.int64(theta * _F_FOPI) + 1) & ~np.int64(1)
        yf = np.float32(jj)
        xr = _fma(yf, _F_DP1, theta)
        xr = _fma(yf, _F_DP2, xr)
        xr = _fma(yf, _F_DP3, xr)
        z = xr * xr
        c = _fma(_F_COS_P0, z, _F_COS_P1)
        c = _fma(c, z, _F_COS_P2)
        c = c * z
        c = _fma(z, c, -(z * _F_HALF))
        c = c + _F_ONE
        sn = _fma(_F_SIN_P0, z, _F_SIN_P1)
        sn = _fma(sn, z, _F_SIN_P2)
        sn = z * sn
        sn = _fma(xr, sn, xr)
        if (jj & 2) == 0:
            sv = sn
            cv = c
        else:
            sv = c
            cv = sn
        if (jj & 4) != 0:
            sv = -sv
        if ((jj - 2) & 4) == 0:
            cv = -cv
        d[off + j] = _fma(radius * cv, std, mean)
        d[off + 8 + j] = _fma(radius * sv, std, mean)


def _nf16_f32_default(d, off, mean, std):
    """NormalFill16<float> generic (non-AVX2 builds): float libm calls."""
    for j in range(8):
        u1 = _F_ONE - d[off + j]
        u2 = d[off + 8 + j]
        radius = np.sqrt(_F_MINUS_TWO * np.float32(math.log(u1)))
        theta = np.float32(_D_TWO_PI * np.float64(u2))
        d[off + j] = _fma(radius * np.float32(math.cos(theta)), std, mean)
        d[off + 8 + j] = _fma(radius * np.float32(math.sin(theta)), std, mean)


def _nf16_f64(d, off, mean, std):
    """NormalFill16<double>."""
    for j in range(8):
        u1 = 1.0 - d[off + j]
        u2 = d[off + 8 + j]
        radius = math.sqrt(-2.0 * math.log(u1))
        theta = _D_TWO_PI * u2
        d[off + j] = _fma(radius * math.cos(theta), std, mean)
        d[off + 8 + j] = _fma(radius * math.sin(theta), std, mean)


def _k_normal_fill_f32(s, out, tail, mean, std, avx2):
    """normal_fill<float>: `out` (numel >= 16) gets uniforms, then 16-blocks.

    `tail` is a float32 scratch of 16 for the recomputed last block.
    """
    n = out.size
    for i in range(n):
        out[i] = _uniform_f32(s)
    i = 0
    while i + 16 <= n:
        if avx2:
            _nf16_avx2(out, i, mean, std)
        else:
            _nf16_f32_default(out, i, mean, std)
        i += 16
    if n % 16 != 0:
        for k in range(16):
            tail[k] = _uniform_f32(s)
        if avx2:
            _nf16_avx2(tail, 0, mean, std)
        else:
            _nf16_f32_default(tail, 0, mean, std)
        for k in range(16):
            out[n - 16 + k] = tail[k]


def _k_normal_fill_f64(s, out, tail, mean, std):
    n = out.size
    for i in range(n):
        out[i] = _uniform_f64(s)
    i = 0
    while i + 16 <= n:
        _nf16_f64(out, i, mean, std)
        i += 16
    if n % 16 != 0:
        for k in range(16):
            tail[k] = _uniform_f64(s)
        _nf16_f64(tail, 0, mean, std)
        for k in range(16):
            out[n - 16 + k] = tail[k]


def _k_bernoulli_scalar(s, out, p):
    # bernoulli_distribution<double>(p): uniform double < p
    for i in range(out.size):
        out[i] = 1 if _uniform_f64(s) < p else 0


def _k_bernoulli_tensor_f32(s, out, p):
    # bernoulli_distribution<float>(p_val): uniform float < p_val
    for i in range(out.size):
        out[i] = 1 if _uniform_f32(s) < p[i] else 0


def _k_bernoulli_tensor_f64(s, out, p):
    for i in range(out.size):
        out[i] = 1 if _uniform_f64(s) < p[i] else 0


def _k_exponential(s, out, lambd):
    # exponential_distribution<double>: (-1 / lambda) * log1p(-u)
    c = -1.0 / lambd
    for i in range(out.size):
        out[i] = c * math.log1p(-_uniform_f64(s))


def _k_random_mod32(s, out, m):
    # uniform_int_distribution with a 32-bit draw: random() % m
    for i in range(out.size):
        out[i] = _mt_next(s) % m


def _k_random_mod64(s, out, m, full):
    # uniform_int_distribution / full range with random64(): random64() % m, or the raw
    # 64 bits reinterpreted as int64 (``full``)
    um = np.uint64(m)
    for i in range(out.size):
        r = _random64(s)
        if full:
            out[i] = np.int64(r)
        else:
            out[i] = np.int64(r % um)


def _k_geometric(s, out, p):
    # geometric_distribution<double>: ceil(log(u) / log1p(-p))
    c = math.log1p(-p)
    for i in range(out.size):
        out[i] = math.ceil(math.log(_uniform_f64(s)) / c)


def _k_exp(out):
    # libm exp (ATen's at::exp on double), in place
    for i in range(out.size):
        out[i] = math.exp(out[i])


def _k_cauchy(s, out, median, sigma):
    # cauchy_distribution<double>: median + sigma * tan(pi * (u - 0.5))
    for i in range(out.size):
        out[i] = median + sigma * math.tan(math.pi * (_uniform_f64(s) - 0.5))


def _k_randperm32(s, out, n):
    for i in range(n):
        out[i] = i
    for i in range(n - 1):
        z = _mt_next(s) % (n - i)
        sav = out[i]
        out[i] = out[z + i]
        out[z + i] = sav


def _k_randperm64(s, out, n):
    # n >= 2**32 / 20: inside-out Fisher-Yates with random64()
    for i in range(n):
        z = np.int64(_random64(s) % np.uint64(i + 1))
        out[i] = out[z]
        out[z] = i


def _k_multinomial_repl_f32(s, probs, cum, out, n_sample):
    # multinomial_with_replacement_apply for float (cumulative sums in float)
    n_dist, n_cat = probs.shape
    for i in range(n_dist):
        total = np.float32(0.0)
        for j in range(n_cat):
            total = total + probs[i, j]
            cum[j] = total
        for j in range(n_cat):
            cum[j] = cum[j] / total
        for k in range(n_sample):
            u = _uniform_f64(s)
            left = 0
            right = n_cat
            cum[n_cat - 1] = np.float32(1.0)
            while right - left > 0:
                mid = left + (right - left) // 2
                if cum[mid] < u:
                    left = mid + 1
                else:
                    right = mid
            out[i, k] = left


def _k_multinomial_repl_f64(s, probs, cum, out, n_sample):
    n_dist, n_cat = probs.shape
    for i in range(n_dist):
        total = 0.0
        for j in range(n_cat):
            total = total + probs[i, j]
            cum[j] = total
        for j in range(n_cat):
            cum[j] = cum[j] / total
        for k in range(n_sample):
            u = _uniform_f64(s)
            left = 0
            right = n_cat
            cum[n_cat - 1] = 1.0
            while right - left > 0:
                mid = left + (right - left) // 2
                if cum[mid] < u:
                    left = mid + 1
                else:
                    right = mid
            out[i, k] = left


_HELPERS = ("_mt_twist", "_mt_next", "_uniform_f32", "_uniform_f64",
            "_random64", "_nf16_avx2", "_nf16_f32_default", "_nf16_f64")
_KERNELS = ("_mt_fill", "_k_uniform_f32", "_k_uniform_f64",
            "_k_randint32", "_k_randint64", "_k_normal_serial",
            "_k_normal_fill_f32", "_k_normal_fill_f64", "_k_bernoulli_scalar",
            "_k_bernoulli_tensor_f32", "_k_bernoulli_tensor_f64",
            "_k_exponential", "_k_randperm32", "_k_randperm64",
            "_k_random_mod32", "_k_random_mod64", "_k_geometric", "_k_cauchy", "_k_exp",
            "_k_multinomial_repl_f32", "_k_multinomial_repl_f64")


def _make_fma():
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx, a, b, c):
        """Correctly rounded fused multiply-add (llvm.fma)."""
        if isinstance(a, types.Float) and a == b and b == c:
            def codegen(context, builder, signature, args):
                return builder.fma(*args)
            return a(a, b, c), codegen
        return None

    return fma


def _bind_fma(g):
    g["_fma"] = _make_fma()


# compile (or load from numba's cache) the kernels on first use
_kernels = lazy_kernels(globals(), _HELPERS + _KERNELS, prepare=_bind_fma)

