"""Bit-exact replica of PyTorch's default CPU random number generator.

PyTorch's CPU generator (``at::CPUGeneratorImpl``) is a 32-bit Mersenne
Twister (``at::mt19937``) plus a one-value cache for Box-Muller normals.
Every sampler below consumes the engine exactly like the corresponding ATen
CPU kernel (torch 2.13), so after ``manual_seed(s)`` the numbers are the same
as ``torch.manual_seed(s)`` followed by the same calls:

=====================  ======================================================
torch                   here
=====================  ======================================================
``torch.rand``          ``Generator.rand`` / ``uniform_``: one 32-bit draw per
                        float32 (24 bits used), two per float64 (53 bits)
``torch.randn``         ``Generator.randn`` / ``normal_``: numel >= 16 and
                        contiguous -> ATen's ``normal_fill`` (uniforms first,
                        then Box-Muller per block of 16, the tail block is
                        recomputed from 16 fresh uniforms); otherwise the
                        serial ``normal_distribution<double>`` with its cached
                        second value
``torch.randint``       ``Generator.randint``: ``random() % range + low``
                        (``random64()`` when range >= 2**28)
``torch.randperm``      ``Generator.randperm``: ATen's swap shuffle
``bernoulli``/dropout   ``Generator.bernoulli`` / ``dropout_mask``
``multinomial``         ``Generator.multinomial``
``exponential_``        ``Generator.exponential_``
=====================  ======================================================

The float32 ``normal_fill`` kernel differs per CPU build of ATen: x86-64 CPUs
with AVX2 (which includes every AVX-512 CPU, ATen never dispatches
``normal_stub`` to AVX-512) run a Cephes-style SIMD log/sincos compiled with
fused multiply-adds; other CPUs run scalar libm code.  The AVX2 variant is
replicated operation by operation (the FMA placement was read off the
disassembly of torch 2.13's ``libtorch_cpu.so``); the choice follows
:func:`cpu_capability` (``ATEN_CPU_CAPABILITY=default`` is honoured like
torch does).

Known differences: the libm-based paths (float64 normals, the non-AVX2
float32 kernel, exponential) call the platform libm like torch does, so they
match where torch and jitgrad share a libm (glibc on Linux); multinomial
without replacement orders zero-probability categories (picked only once the
non-zero ones are exhausted) by index, while torch's topk leaves ties in an
implementation-defined order.

Only numpy and the standard library are imported at module import time.
The kernels are compiled with numba (``cache=True``) on first use.
"""

import math
import os
import platform
import struct
import threading

import numpy as np

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "cpu_capability",
]

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


class _Kernels:
    pass


_K = None
_K_LOCK = threading.Lock()


def _kernels():
    """Compile (or load from numba's cache) the kernels on first use."""
    global _K
    if _K is not None:
        return _K
    with _K_LOCK:
        if _K is not None:
            return _K
        from .codegen.kcache import njit_cached

        g = globals()
        g["_fma"] = _make_fma()
        for name in _HELPERS:
            g[name] = njit_cached(g[name])
        k = _Kernels()
        for name in _KERNELS:
            jitted = njit_cached(g[name])
            g[name] = jitted
            setattr(k, name.lstrip("_"), jitted)
        _K = k
    return _K


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _shape_of(shape):
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise RuntimeError("Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _float_dtype(dtype, default=np.float32):
    dt = np.dtype(default if dtype is None else dtype)
    if dt not in (np.float32, np.float64, np.float16):
        raise TypeError(f"expected a floating point dtype, got {dt}")
    return dt


# ATen's names: ScalarType (kernel dispatch errors) and caffe2 TypeMeta (bounds errors)
_SCALAR_NAME = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}
_META_NAME = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}
_FLOAT_DIGITS = {"float16": 11, "float32": 24, "float64": 53}


def _need_float(dtype, kernel=None, dist=None):
    """The dtype check of a floating-point sampler, with PyTorch's error."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        name = _SCALAR_NAME.get(dt.name, dt.name)
        if dist == "Exponential":
            raise RuntimeError("Exponential distribution is a continuous probability "
                               "distribution. dtype must be a floating point but you specified "
                               f"{name}")
        if dist == "Cauchy":
            raise RuntimeError("Cauchy distribution is a continuous probability distribution. "
                               "dtype must be a floating point but you specified "
                               f"{_META_NAME.get(dt.name, dt.name)}")
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    return dt


def _to_int64_via(dt, v):
    """``static_cast<int64_t>(static_cast<scalar_t>(v))`` (x86: NaN/overflow -> INT64_MIN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = dt.type(v)
    if not np.isfinite(f) or not -(1 << 63) <= float(f) < (1 << 63):
        return -(1 << 63)
    return int(f)


def _update_from(dt, frm):
    from_plus_1 = _to_int64_via(dt, frm + 1)
    if from_plus_1 < frm:
        n = abs(frm + 1).bit_length() - 1
        frm = from_plus_1 + (1 << (n - _FLOAT_DIGITS[dt.name] + 1))
    return frm


def _update_to(dt, to):
    to_minus_1 = _to_int64_via(dt, to - 1)
    if to_minus_1 >= to:
        n = abs(to - 1).bit_length() - 1
        to = to_minus_1 - (1 << (n - _FLOAT_DIGITS[dt.name] + 1))
    return to


def _check_from_to_in_range(frm, to_inc, dt):
    name = _META_NAME.get(dt.name, dt.name)
    if dt.kind == "f":
        fi = np.finfo(dt)
        lo, hi = float(fi.min), float(fi.max)
        for v, what in ((frm, "from"), (to_inc, "to - 1")):
            if not lo <= v <= hi:
                raise RuntimeError(f"{what} is out of bounds for {name}")
        digits = _FLOAT_DIGITS[dt.name]
        for v, what in ((frm, "from"), (to_inc, "to - 1")):
            if v < -(1 << digits) or v > (1 << digits):
                import warnings
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {name} can support discrete uniform distribution only within "
                    "this range. This warning will become an error in version 1.7 release, "
                    "please fix the code in advance", UserWarning, stacklevel=4)
        return
    if dt.kind == "b":
        lo, hi = 0, 1
    else:
        ii = np.iinfo(dt)
        lo, hi = int(ii.min), int(ii.max)
    for v, what in ((frm, "from"), (to_inc, "to - 1")):
        if not lo <= v <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")


def _seed_to_u64(seed):
    try:
        seed = int(seed)
    except (TypeError, ValueError):
        raise TypeError(
            f"seed must be an int, got {type(seed).__name__}") from None
    if not (-(1 << 63) <= seed <= _U64):
        raise RuntimeError(
            "Overflow when unpacking long long, seed must be within the "
            "range [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]")
    return seed & _U64


def _nondeterministic_seed():
    # c10::detail::getNonDeterministicRandom(): 8 bytes of /dev/urandom
    return int.from_bytes(os.urandom(8), "little")


# ---------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------

_STRUCT = struct.Struct("<QiiQ624Qdddi4xf?3x")
assert _STRUCT.size == _STATE_SIZE


class Generator:
    """Replica of ``torch.Generator()`` on the CPU (``at::CPUGeneratorImpl``).

    All samplers return NumPy arrays (C order); they draw from the stream in
    the same order as ATen fills a contiguous tensor.
    """

    device = "cpu"

    def __init__(self, device="cpu", seed=None):
        if device is not None and not str(device).startswith("cpu"):
            raise RuntimeError(
                f"jitgrad.Generator only supports the CPU, got {device!r}")
        self._lock = threading.RLock()
        self._engine = np.zeros(_ENGINE_LEN, dtype=np.int64)
        # [valid, value] caches of normal_distribution<double> / <float>
        self._ncache = np.zeros(2, dtype=np.float64)
        self._fcache = None
        self._seed = 0
        self.manual_seed(_DEFAULT_RNG_SEED if seed is None else seed)

    # -- seeding -----------------------------------------------------------
    def manual_seed(self, seed):
        """Seed like ``torch.Generator.manual_seed``; returns ``self``."""
        s = _seed_to_u64(seed)
        with self._lock:
            self._set_seed(s)
        return self

    def _set_seed(self, s):
        self._seed = s
        self._ncache[:] = 0.0
        self._fcache = None
        _engine_seed(self._engine, s)

    def seed(self):
        """Re-seed from a non-deterministic source and return the seed."""
        s = _nondeterministic_seed()
        with self._lock:
            self._set_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    # -- state -------------------------------------------------------------
    def get_state(self):
        """State in torch's ``CPUGeneratorImplState`` byte layout (5056 B).

        The result can be fed to ``torch.Generator.set_state`` (as a uint8
        tensor) and vice versa.
        """
        with self._lock:
            e = self._engine
            valid = bool(self._ncache[0] != 0.0)
            fvalid = self._fcache is not None
            raw = _STRUCT.pack(
                self._seed, int(e[_LEFT]), 1, int(e[_NEXT]),
                *[int(v) for v in e[:_N]],
                0.0, float(self._ncache[1]) if valid else 0.0, 0.0,
                1 if valid else 0,
                float(self._fcache) if fvalid else 0.0, fvalid)
        return np.frombuffer(raw, dtype=np.uint8).copy()

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state` (or ``torch.get_rng_state``)."""
        if hasattr(new_state, "numpy") and not isinstance(new_state, np.ndarray):
            new_state = new_state.numpy()
        buf = np.ascontiguousarray(np.asarray(new_state))
        if buf.dtype != np.uint8:
            raise TypeError("RNG state must be a uint8 array, got "
                            f"{buf.dtype}")
        buf = buf.reshape(-1)
        if buf.size != _STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but "
                f"found the input RNG state size to be {buf.size}")
        vals = _STRUCT.unpack(buf.tobytes())
        seed, left, seeded, nxt = vals[:4]
        words = vals[4:4 + _N]
        _nx, normal_y, _rho, normal_valid, fnext, fvalid = vals[4 + _N:]
        nxt &= 0xFFFFFFFF
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        with self._lock:
            e = self._engine
            e[:_N] = np.array(words, dtype=np.uint64).astype(np.uint32)
            e[_LEFT] = left
            e[_NEXT] = nxt
            self._seed = seed
            if normal_valid:
                self._ncache[0] = 1.0
                self._ncache[1] = normal_y
            else:
                self._ncache[:] = 0.0
            self._fcache = np.float32(fnext) if fvalid else None
        return self

    def clone_state(self):
        """A new Generator with a copy of this one's state."""
        g = Generator.__new__(Generator)
        g._lock = threading.RLock()
        with self._lock:
            g._engine = self._engine.copy()
            g._ncache = self._ncache.copy()
            g._fcache = self._fcache
            g._seed = self._seed
        return g

    # -- raw draws ---------------------------------------------------------
    def random_raw(self, n):
        """``n`` raw 32-bit outputs of the engine (``CPUGeneratorImpl::random``)."""
        out = np.empty(int(n), dtype=np.uint32)
        if out.size:
            with self._lock:
                _kernels().mt_fill(self._engine, out)
        return out

    # -- uniform -----------------------------------------------------------
    def uniform_(self, shape, low=0.0, high=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).uniform_(low, high)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, "check_uniform_bounds")
        low = float(low)
        high = float(high)
        if not low <= high:
            raise RuntimeError("uniform_ expects to return a [from, to) range, "
                               f"but found from={low} > to={high}")
        n = _numel(shape)
        use_fma = cpu_capability() != "default"
        k = _kernels() if n else None
        if dt == np.float64:
            out = np.empty(n, dtype=np.float64)
            if n:
                with self._lock:
                    k.k_uniform_f64(self._engine, out, low, high, use_fma)
            return out.reshape(shape)
        out = np.empty(n, dtype=np.float32)
        if dt == np.float32:
            if n:
                with self._lock:
                    k.k_uniform_f32(self._engine, out, np.float32(low),
                                    np.float32(high), use_fma)
            return out.reshape(shape)
        # float16: opmath float, then cast; a cast that lands on `to` -> from
        if n:
            with self._lock:
                k.k_uniform_f32(self._engine, out, np.float32(low),
                                np.float32(high), use_fma)
        res = out.astype(np.float16)
        res[res == np.float16(high)] = np.float16(low)
        return res.reshape(shape)

    def rand(self, shape, dtype=np.float32):
        """``torch.rand(shape, dtype=dtype)``."""
        return self.uniform_(shape, 0.0, 1.0, dtype)

    # -- normal ------------------------------------------------------------
    def normal_(self, shape, mean=0.0, std=1.0, dtype=np.float32,
                contiguous=True):
        """``torch.empty(shape, dtype).normal_(mean, std)``.

        ``contiguous=False`` replicates a non-contiguous destination: ATen
        then always uses the serial sampler and fills memory in stride order;
        the values are returned in generation order (flat).
        """
        shape = _shape_of(shape)
        dt = _need_float(dtype, "normal_kernel_cpu")
        mean = float(mean)
        std = float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        n = _numel(shape)
        if n == 0:
            return np.empty(shape, dtype=dt)
        k = _kernels()
        if n >= 16 and contiguous:
            if dt == np.float64:
                out = np.empty(n, dtype=np.float64)
                tail = np.empty(16, dtype=np.float64)
                with self._lock:
                    k.k_normal_fill_f64(self._engine, out, tail, mean, std)
            elif dt == np.float32:
                out = np.empty(n, dtype=np.float32)
                tail = np.empty(16, dtype=np.float32)
                with self._lock:
                    k.k_normal_fill_f32(self._engine, out, tail,
                                        np.float32(mean), np.float32(std),
                                        cpu_capability() == "avx2")
            else:
                # Half: float blocks drawn block by block; the tail block is
                # drawn after the last full block and written over the last
                # 16 outputs.
                full = n - n % 16
                m = full + (16 if n % 16 else 0)
                buf = np.empty(m, dtype=np.float32)
                tail = np.empty(16, dtype=np.float32)
                with self._lock:
                    k.k_normal_fill_f32(self._engine, buf, tail,
                                        np.float32(mean), np.float32(std),
                                        cpu_capability() == "avx2")
                if m != n:
                    buf = np.concatenate([buf[:n - 16], buf[full:]])
                out = buf.astype(np.float16)
        else:
            out = np.empty(n, dtype=np.float64)
            with self._lock:
                k.k_normal_serial(self._engine, self._ncache, out, mean, std,
                                  cpu_capability() != "default")
            if dt != np.float64:
                out = out.astype(dt)
        return out.reshape(shape) if contiguous else out

    def randn(self, shape, dtype=np.float32):
        """``torch.randn(shape, dtype=dtype)``."""
        return self.normal_(shape, 0.0, 1.0, dtype)

    # -- integers ----------------------------------------------------------
    def randint(self, low, high=None, shape=(), dtype=np.int64):
        """``torch.randint(low, high, shape, dtype=dtype)``.

        ``randint(high, shape=...)`` means ``low=0`` like torch.
        """
        if high is None:
            low, high = 0, low
        low = int(low)
        high = int(high)
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if not low < high:
            raise RuntimeError("random_ expects 'from' to be less than 'to', "
                               f"but got from={low} >= to={high}")
        rng = high - low
        n = _numel(shape)
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            # ATen (non-fbcode builds): 64-bit draws once range >= 2**28,
            # whatever the dtype ("allow approx 5% skew ... using %")
            with self._lock:
                if rng >= (1 << 28):
                    k.k_randint64(self._engine, out, np.uint64(rng),
                                  np.int64(low))
                else:
                    k.k_randint32(self._engine, out, rng, low)
        if dt != np.int64:
            out = out.astype(dt)
        return out.reshape(shape)

    def random_(self, shape, dtype, *bounds):
        """``torch.empty(shape, dtype).random_(*bounds)``: ``()`` is PyTorch's
        ``uniform_int_distribution`` (floats: ``[0, 2**mantissa_digits]``, integers: ``[0,
        max]``, bool: one bit), ``(to,)`` is ``[0, to)``, ``(from, to)`` is ``[from, to)`` and
        ``(from, None)`` is ``[from, max]`` (``random_from_to_impl`` with its checks)."""
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        n = _numel(shape)
        if not bounds:
            out = np.empty(n, dtype=np.int64)
            if n:
                k = _kernels()
                with self._lock:
                    if dt.kind == "b":
                        k.k_random_mod32(self._engine, out, 2)
                    elif dt == np.float64:
                        k.k_random_mod64(self._engine, out, np.uint64((1 << 53) + 1), False)
                    elif dt.kind == "f":
                        k.k_random_mod32(self._engine, out, (1 << _FLOAT_DIGITS[dt.name]) + 1)
                    elif dt == np.int64:
                        k.k_random_mod64(self._engine, out, np.uint64(1 << 63), False)
                    else:
                        k.k_random_mod32(self._engine, out, int(np.iinfo(dt).max) + 1)
            return out.astype(dt).reshape(shape)
        if len(bounds) == 1:
            frm, to = 0, bounds[0]
        else:
            frm, to = bounds
        frm = int(frm)
        if to is not None:
            to = int(to)
            if not frm < to:
                raise RuntimeError("random_ expects 'from' to be less than 'to', but got "
                                   f"from={frm} >= to={to}")
            if dt.kind == "f":
                frm = _update_from(dt, frm)
                to = _update_to(dt, to)
                if not frm < to:
                    raise RuntimeError("random_ expects 'from' casted to dtype to be less than "
                                       f"'to' casted to dtype, but got from={frm} >= to={to}")
            _check_from_to_in_range(frm, to - 1, dt)
            return self._from_to(shape, dt, to - frm, frm)
        if frm == -(1 << 63):  # [int64 min, int64 max]: the full 64-bit range
            if dt.kind not in "f" and dt != np.int64 or dt == np.float16:
                raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, "
                                   "double, float and bfloat16")
            out = np.empty(n, dtype=np.int64)
            if n:
                with self._lock:
                    _kernels().k_random_mod64(self._engine, out, np.uint64(1), True)
            return out.astype(dt).reshape(shape)
        if dt.kind == "f":
            to_inc = min(1 << _FLOAT_DIGITS[dt.name], (1 << 63) - 1)
            frm = _update_from(dt, frm)
            if not frm < to_inc:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or "
                                   "equal to 'to_inc' casted to dtype, but got "
                                   f"from={frm} > to_inc={to_inc}")
        elif dt.kind == "b":
            to_inc = 1
        else:
            to_inc = int(np.iinfo(dt).max)
        _check_from_to_in_range(frm, to_inc, dt)
        return self._from_to(shape, dt, to_inc - frm + 1, frm)

    def _from_to(self, shape, dt, rng, base):
        """``uniform_int_from_to_distribution``: ``random() % range + base`` (``random64()``
        once range >= 2**28), cast to the dtype."""
        n = _numel(shape)
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            with self._lock:
                if rng >= (1 << 28):
                    k.k_randint64(self._engine, out, np.uint64(rng), np.int64(base))
                else:
                    k.k_randint32(self._engine, out, rng, base)
        return out.astype(dt).reshape(shape)

    def geometric_(self, shape, p, dtype=np.float32):
        """``torch.empty(shape, dtype).geometric_(p)`` (any real dtype but bool)."""
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if dt.kind == "b":
            raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
        p = float(p)
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_geometric(self._engine, out, p)
        with np.errstate(invalid="ignore", over="ignore"):
            return out.astype(dt).reshape(shape)

    def cauchy_(self, shape, median=0.0, sigma=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).cauchy_(median, sigma)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, dist="Cauchy")
        sigma = float(sigma)
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_cauchy(self._engine, out, float(median), sigma)
        with np.errstate(over="ignore"):
            return out.astype(dt).reshape(shape)

    def log_normal_(self, shape, mean=1.0, std=2.0, dtype=np.float32):
        """``torch.empty(shape, dtype).log_normal_(mean, std)``: ``exp`` of the serial
        ``normal_distribution<double>`` (whatever the size)."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, "log_normal_cpu")
        std = float(std)
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
        z = self.normal_(shape, float(mean), std, np.float64, contiguous=False)
        if z.size:
            _kernels().k_exp(z)
        with np.errstate(over="ignore"):
            return z.astype(dt).reshape(shape)

    def randperm(self, n, dtype=np.int64):
        """``torch.randperm(n, dtype=dtype)``."""
        n = int(n)
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got{n}")
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            with self._lock:
                if n < 0xFFFFFFFF // 20:
                    k.k_randperm32(self._engine, out, n)
                else:
                    k.k_randperm64(self._engine, out, n)
        dt = np.dtype(dtype)
        return out if dt == np.int64 else out.astype(dt)

    # -- bernoulli / dropout -----------------------------------------------
    def bernoulli(self, p, shape=None, dtype=None):
        """Bernoulli samples (0/1) as torch draws them.

        * ``p`` a Python/NumPy scalar: ``torch.empty(shape, dtype).bernoulli_(p)``
          (also ``torch.bernoulli(x, p)`` with ``shape=x.shape``); one
          ``random64()`` per element compared as double; ``dtype`` defaults
          to float32.
        * ``p`` an array: ``torch.bernoulli(p)`` (``shape`` defaults to
          ``p.shape``; ``p`` is broadcast to ``shape`` like ``bernoulli_(p)``);
          float64 ``p`` draws doubles, other float ``p`` draws float32
          uniforms; ``dtype`` defaults to ``p.dtype``.
        """
        if np.ndim(p) == 0 and not isinstance(p, np.ndarray):
            pv = float(p)
            if not 0.0 <= pv <= 1.0:
                raise RuntimeError(
                    f"bernoulli_ expects p to be in [0, 1], but got p={pv}")
            shape = _shape_of(shape)
            dt = np.dtype(np.float32 if dtype is None else dtype)
            n = _numel(shape)
            out = np.empty(n, dtype=np.int8)
            if n:
                with self._lock:
                    _kernels().k_bernoulli_scalar(self._engine, out, pv)
            return out.astype(dt).reshape(shape)
        parr = np.asarray(p)
        if parr.dtype.kind != "f":
            raise TypeError("bernoulli expects a floating point probability "
                            f"tensor, got {parr.dtype}")
        shape = parr.shape if shape is None else _shape_of(shape)
        dt = np.dtype(parr.dtype if dtype is None else dtype)
        if parr.dtype == np.float64:
            pf = np.ascontiguousarray(np.broadcast_to(parr, shape)).reshape(-1)
            kern = "k_bernoulli_tensor_f64"
        else:
            pf = np.ascontiguousarray(
                np.broadcast_to(parr, shape).astype(np.float32)).reshape(-1)
            kern = "k_bernoulli_tensor_f32"
        if pf.size and (np.any(~(pf >= 0)) or np.any(pf > 1)):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got "
                               "false.  (Could this error message be improved?  If so, please "
                               "report an enhancement request to PyTorch.)")
        out = np.empty(pf.size, dtype=np.int8)
        if pf.size:
            with self._lock:
                getattr(_kernels(), kern)(self._engine, out, pf)
        return out.astype(dt).reshape(shape)

    def dropout_mask(self, shape, p, dtype=np.float32):
        """The scaled noise ``F.dropout(x, p, training=True)`` multiplies by.

        ATen (CPU): ``noise = empty_like(x).bernoulli_(1 - p);
        noise.div_(1 - p); return x * noise``.  Returns ``noise`` (so the
        caller computes ``x * noise`` in x's dtype).  ``p == 1`` gives zeros
        and draws nothing, ``p == 0`` gives ones and draws nothing.
        """
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"dropout probability has to be between 0 and 1, but got {p}")
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if p == 0.0:
            return np.ones(shape, dtype=dt)
        if p == 1.0 or _numel(shape) == 0:
            return np.zeros(shape, dtype=dt)
        q = 1.0 - p
        noise = self.bernoulli(q, shape, dt)
        return noise / dt.type(q)

    # -- other distributions -----------------------------------------------
    def exponential_(self, shape, lambd=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).exponential_(lambd)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, dist="Exponential")
        lambd = float(lambd)
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_exponential(self._engine, out, lambd)
        return out.astype(dt).reshape(shape)

    def multinomial(self, probs, num_samples, replacement=False):
        """``torch.multinomial(probs, num_samples, replacement)`` (int64).

        Without replacement (or with ``num_samples == 1``) ATen draws
        ``q ~ Exp(1)`` shaped like ``probs`` and takes the top-k of
        ``probs / q``.
        """
        probs = np.asarray(probs)
        if probs.dtype not in (np.float32, np.float64):
            probs = probs.astype(np.float32)
        if probs.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        n_cat = probs.shape[-1]
        num_samples = int(num_samples)
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        if not replacement and num_samples > n_cat:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) "
                               "samples without replacement")
        if np.any(probs < 0) or not np.all(np.isfinite(probs)):
            raise RuntimeError(
                "probability tensor contains either `inf`, `nan` or element < 0")
        p2 = np.ascontiguousarray(probs.reshape(-1, n_cat))
        if np.any(p2.sum(axis=1) <= 0):
            raise RuntimeError("invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement or num_samples == 1:
            q = self.exponential_(probs.shape, 1.0, probs.dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = (probs / q).reshape(-1, n_cat)
            if num_samples == 1:
                res = np.argmax(r, axis=1).reshape(-1, 1)
            else:
                # topk: largest first; stable among equal keys
                res = np.argsort(-r, axis=1, kind="stable")[:, :num_samples]
            res = res.astype(np.int64)
        else:
            res = np.empty((p2.shape[0], num_samples), dtype=np.int64)
            k = _kernels()
            with self._lock:
                if p2.dtype == np.float64:
                    k.k_multinomial_repl_f64(self._engine, p2,
                                             np.empty(n_cat, np.float64),
                                             res, num_samples)
                else:
                    k.k_multinomial_repl_f32(self._engine, p2,
                                             np.empty(n_cat, np.float32),
                                             res, num_samples)
        if probs.ndim == 1:
            res = res.reshape(-1)
        return res


# names without the trailing underscore (same samplers)
Generator.uniform = Generator.uniform_
Generator.normal = Generator.normal_
Generator.exponential = Generator.exponential_


def _engine_seed(engine, s):
    """at::mt19937(seed): init_with_uint32(seed & 0xffffffff), in NumPy."""
    x = s & 0xFFFFFFFF
    words = [0] * _N
    words[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        words[j] = x
    engine[:_N] = words
    engine[_LEFT] = 1
    engine[_NEXT] = 0


# ---------------------------------------------------------------------------
# module-level default generator (torch.default_generator)
# ---------------------------------------------------------------------------

default_generator = Generator(seed=_nondeterministic_seed())


def manual_seed(seed):
    """``torch.manual_seed``: seed the default generator and return it."""
    return default_generator.manual_seed(seed)


def seed():
    """``torch.seed``: non-deterministic re-seed; returns the seed."""
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
