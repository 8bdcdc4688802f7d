"""Philox4x32-10 random-number kernels for CUDA tensors (numba.cuda, grid-stride).

Counter-based (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; the
generator behind cuRAND's ``curandStatePhilox4_32_10`` and PyTorch's CUDA RNG): output element
``i`` of a call is a pure function of ``(key, counter)`` with ``key = seed`` (2 x 32 bits) and
``counter = (i_lo, i_hi, offset_lo, offset_hi)``, where ``offset`` is the generator's per-call
offset (``_cuda_random.CudaGenerator``). So a value never depends on which thread computed it or
on the launch configuration, a call is reproducible from (seed, offset), and two calls never
share a counter. Every element runs its own 10-round Philox block and uses 1-4 of its 32-bit
words (simple and launch-independent; Philox is ALU-cheap).

32x32 -> 64-bit products are computed in uint64 (exact); every integer constant is a typed
``np.uint64`` global (mixing uint64 with an int64 literal would make Numba promote to float64).
Float conversions use typed constants of the output dtype, so float32 kernels stay float32 (the
PTX test checks) except libdevice's ``cosf`` huge-argument reduction in the normal kernel,
which Box-Muller's argument (< 2*pi) never reaches (see ``backends.cuda.f64_instructions``).

Importing this module imports numba.cuda (``_cuda_random`` imports it on first use).
"""
from __future__ import annotations

import inspect

import numpy as np

from .backends.cuda_env import (
    ceil,
    cos,
    cuda,
    device_jit,
    exp,
    kernel_jit,
    log,
    pow_,
    select,
    sqrt,
    tan,
)
from .backends.cuda_kernels.common import scalar_type

__all__ = ["philox", "make_kernel", "make_graph_safe_kernel", "KINDS"]

_U = np.uint64
M0 = _U(0xD2511F53)
M1 = _U(0xCD9E8D57)
W0 = _U(0x9E3779B9)
W1 = _U(0xBB67AE85)
MASK = _U(0xFFFFFFFF)
S32 = _U(32)
S8 = _U(8)
S11 = _U(11)
S21 = _U(21)
S20 = _U(20)
u64 = scalar_type(np.uint64)
i64 = scalar_type(np.int64)


@device_jit
def _round(c0, c1, c2, c3, k0, k1):
    p0 = M0 * c0  # exact: both factors < 2**32
    p1 = M1 * c2
    return ((p1 >> S32) ^ c1 ^ k0, p1 & MASK, (p0 >> S32) ^ c3 ^ k1, p0 & MASK)


@device_jit
def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1): four 32-bit words (as uint64)."""
    for _ in range(9):
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
        k0 = (k0 + W0) & MASK
        k1 = (k1 + W1) & MASK
    return _round(c0, c1, c2, c3, k0, k1)


@device_jit
def _block(i, k0, k1, o0, o1):
    """The four words of element ``i`` (counter = i, offset)."""
    j = u64(i)
    return philox(j & MASK, j >> S32, o0, o1, k0, k1)


#: blocks one element of a rejection sampler may use (``_block_at``'s counter layout)
GAMMA_BLOCKS = 4096


@device_jit
def _block_at(i, b, k0, k1, o0, o1):
    """Block ``b`` of element ``i``, for samplers that draw an unbounded number of words per
    element (gamma): counter = (i, b, offset) with ``b`` above the index's high word, so blocks
    of different (i, b) never share a counter (i < 2**52, b < GAMMA_BLOCKS = 2**12); block 0
    is ``_block``'s."""
    j = u64(i)
    return philox(j & MASK, (j >> S32) | (u64(b) << S20), o0, o1, k0, k1)


#: kind -> extra runtime scalars (after n, k0, k1, o0, o1) before the output array
KINDS = {
    "uniform": ("low", "span", "high"),   # [low, high): low + span * u
    "normal": ("mean", "std"),            # Box-Muller (cos branch)
    "bernoulli": ("p", "one"),            # out = one if u < p else 0
    # per-element p array (same dtype as u) before out; p outside [0, 1] (or NaN) raises the
    # device-side flag (``cuda_kernels.bounds``) with error ``code``, as PyTorch's CUDA assert
    "bernoulli_tensor": ("one", "code", "flag"),
    "randint": ("low", "span"),           # low + (64-bit word % span)
    "exponential": ("lambd",),            # -log(1 - u) / lambd, never 0 (PyTorch's CUDA guard)
    "random64": (),                       # the whole 64-bit word as int64 (random_(min int64))
    "cauchy": ("median", "sigma"),        # median + sigma * tan(pi * (u - 1/2)), u in (0, 1]
    "log_normal": ("mean", "std"),        # exp of the normal kernel's Box-Muller value
    "geometric": ("log1m_p",),            # ceil(log(u) / log1p(-p)), u in (0, 1], at least 1
    # ``_cuda_rng_multinomial``: row i // n_sample of the flat (rows, cats) probabilities p and
    # their normalized prefix sums cum; the row's check codes (< 0 / NaN, inf, sum <= 0)
    "multinomial": ("n_sample", "cats", "c_neg", "c_inf", "c_sum", "flag", "p", "cum"),
    # Gamma(alpha, 1) per element of the array alpha (before out): ATen's sample_gamma
    "gamma": ("tiny", "alpha"),
    # ``_cuda_rng_poisson``: ATen's CPU Poisson / binomial samplers per element (double);
    # a rate not >= 0 raises the flag with ``code``
    "poisson": ("code", "flag", "lam"),
    "binomial": ("count", "prob"),
}

_cache: dict = {}


def make_kernel(kind, dtype, out_dtype=None):
    """``(pyfunc, kernel)`` of sampler ``kind``: uniforms of ``dtype`` (float32/float64; the
    integer ``randint`` ignores it) written as ``out_dtype`` (default ``dtype``)."""
    dtype = np.dtype(dtype)
    out_dtype = np.dtype(out_dtype or dtype)
    key = (kind, dtype.str, out_dtype.str)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    ft = scalar_type(dtype)
    ot = scalar_type(out_dtype)
    f64 = dtype == np.float64
    # typed constants: 2**-24 / 2**-53 scale 24 / 53 random bits into [0, 1)
    scale = dtype.type(2.0 ** -53 if f64 else 2.0 ** -24)
    one = dtype.type(1)
    two = dtype.type(2)
    two_pi = dtype.type(2 * np.pi)
    zero_out = out_dtype.type(0)
    zero = dtype.type(0)
    half_eps = dtype.type(np.finfo(dtype).eps / 2)
    one_minus = one - half_eps

    @device_jit
    def unit(a, b):
        """A uniform in [0, 1) from one (float32: 24 bits) or two (float64: 53 bits) words."""
        if f64:
            return ft((a << S21) | (b >> S11)) * scale
        return ft(a >> S8) * scale

    if kind == "uniform":
        def rng_uniform(n, k0, k1, o0, o1, low, span, high, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                v = low + span * unit(r0, r1)
                # rounding can reach ``high``: keep the interval half-open (PyTorch does too)
                out[i] = ot(select(v >= high, low, v))
        pyfunc = rng_uniform
    elif kind == "normal":
        def rng_normal(n, k0, k1, o0, o1, mean, std, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, r2, r3 = _block(i, k0, k1, o0, o1)
                u1 = one - unit(r0, r1)  # (0, 1]: log stays finite
                u2 = unit(r2, r3)
                z = sqrt(-two * log(u1)) * cos(two_pi * u2)
                out[i] = ot(mean + std * z)
        pyfunc = rng_normal
    elif kind == "bernoulli":
        def rng_bernoulli(n, k0, k1, o0, o1, p, val, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                out[i] = select(unit(r0, r1) < p, val, zero_out)
        pyfunc = rng_bernoulli
    elif kind == "bernoulli_tensor":
        def rng_bernoulli_tensor(n, k0, k1, o0, o1, val, code, flag, p, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                pi = p[i]
                if not (pi >= zero and pi <= one):  # NaN too: PyTorch's !(0 <= p && p <= 1)
                    if cuda.atomic.compare_and_swap(flag, 0, code) == 0:
                        flag[1] = i
                out[i] = select(unit(r0, r1) < pi, val, zero_out)
        pyfunc = rng_bernoulli_tensor
    elif kind == "randint":
        def rng_randint(n, k0, k1, o0, o1, low, span, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                out[i] = ot(low + i64(((r0 << S32) | r1) % span))
        pyfunc = rng_randint
    elif kind == "random64":
        def rng_random64(n, k0, k1, o0, o1, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                out[i] = ot(i64((r0 << S32) | r1))
        pyfunc = rng_random64
    elif kind == "cauchy":
        pi = dtype.type(np.pi)
        half = dtype.type(0.5)

        def rng_cauchy(n, k0, k1, o0, o1, median, sigma, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                u = one - unit(r0, r1)  # (0, 1], curand_uniform's interval (ATen's CUDA kernel)
                out[i] = ot(median + sigma * tan(pi * (u - half)))
        pyfunc = rng_cauchy
    elif kind == "log_normal":
        def rng_log_normal(n, k0, k1, o0, o1, mean, std, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, r2, r3 = _block(i, k0, k1, o0, o1)
                z = sqrt(-two * log(one - unit(r0, r1))) * cos(two_pi * unit(r2, r3))
                out[i] = ot(exp(mean + std * z))
        pyfunc = rng_log_normal
    elif kind == "geometric":
        def rng_geometric(n, k0, k1, o0, o1, log1m_p, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                # u == 1 would give 0 trials: the support starts at 1 (u rounds there only)
                k = ceil(log(one - unit(r0, r1)) / log1m_p)
                out[i] = ot(select(k < one, one, k))
        pyfunc = rng_geometric
    elif kind == "exponential":
        def rng_exponential(n, k0, k1, o0, o1, lambd, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r0, r1, _, _ = _block(i, k0, k1, o0, o1)
                # PyTorch's CUDA guard: log(x) for x near 1 is -eps/2, so 0 is never drawn
                x = one - unit(r0, r1)
                lg = select(x >= one_minus, -half_eps, log(x))
                out[i] = ot(-lg / lambd)
        pyfunc = rng_exponential
    elif kind == "multinomial":
        pyfunc = _multinomial_kernel(unit, one, zero, dtype.type(np.inf))
    elif kind == "gamma":
        pyfunc = _gamma_kernel(unit, dtype)
    elif kind in ("poisson", "binomial"):
        from . import _cuda_rng_poisson as P
        pyfunc = (P.poisson_kernel if kind == "poisson" else P.binomial_kernel)(unit)
    else:
        raise ValueError(f"unknown sampler {kind!r}")
    hit = _cache[key] = (pyfunc, kernel_jit(pyfunc))
    return hit


def _multinomial_kernel(unit, one, zero, inf):
    """``sampleMultinomialWithReplacement`` (ATen's MultinomialKernel.cu): sample ``i`` of row
    ``r = i // n_sample`` is the first category whose prefix sum reaches a uniform in (0, 1]
    (binary search; past the end: the last category), moved back over zero-probability
    categories, so those are never drawn. The row's first sample also checks the row as the CPU
    path does (an entry < 0 or NaN, then inf, then a sum <= 0) and raises the flag with that
    error's code: the samples of such a row are not meaningful (PyTorch asserts)."""

    def rng_multinomial(n, k0, k1, o0, o1, n_sample, cats, c_neg, c_inf, c_sum, flag, p, cum,
                        out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            row = i // n_sample
            base = row * cats
            if i - row * n_sample == 0:
                code = c_neg - c_neg
                s = zero
                for j in range(cats):
                    v = p[base + j]
                    if not v >= zero:
                        code = c_neg
                        break
                    if v == inf:
                        code = c_inf
                        break
                    s += v
                if code == 0 and not s > zero:
                    code = c_sum
                if code != 0:
                    if cuda.atomic.compare_and_swap(flag, 0, code) == 0:
                        flag[1] = row
            r0, r1, _, _ = _block(i, k0, k1, o0, o1)
            val = one - unit(r0, r1)  # (0, 1], curand_uniform's interval
            lo = base - base
            hi = cats
            while hi - lo > 0:
                mid = lo + (hi - lo) // 2
                if cum[base + mid] < val:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == cats:  # rounding left the last prefix sum below val
                lo = cats - 1
            while lo >= 1 and p[base + lo] == zero:
                lo -= 1
            out[i] = lo
    return rng_multinomial


def _gamma_kernel(unit, dtype):
    """ATen's ``sample_gamma`` (Distributions.h: Marsaglia-Tsang, the alpha < 1 boost
    ``U**(1/alpha)``, 0 for alpha == 0) per element, in the uniforms' dtype, then
    ``max(tiny, sample)`` as ATen's kernels (NaN -> tiny, as the CPU path). Element ``i``
    draws block 0 (the boost's uniform), then per attempt k block 2k+1 (a Box-Muller normal)
    and 2k+2 (the acceptance uniform): the values depend only on (seed, offset, i). After
    GAMMA_BLOCKS blocks (acceptance is >= 95% per attempt, so never in practice) the sample
    is NaN, hence tiny."""
    t = dtype.type
    zero, one, two, half, nine = t(0), t(1), t(2), t(0.5), t(9)
    third, c0331, two_pi, nan = t(1.0 / 3.0), t(0.0331), t(2 * np.pi), t(np.nan)
    attempts = (GAMMA_BLOCKS - 1) // 2

    def rng_gamma(n, k0, k1, o0, o1, tiny, alpha, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            a = alpha[i]
            res = zero
            if a != zero:  # alpha == 0 gives 0 (NaN goes on)
                scale = one
                if a < one:
                    r0, r1, _, _ = _block_at(i, 0, k0, k1, o0, o1)
                    scale = pow_(one - unit(r0, r1), one / a)
                    a = a + one
                d = a - third
                c = one / sqrt(nine * d)
                res = nan
                for k in range(attempts):
                    r0, r1, r2, r3 = _block_at(i, 2 * k + 1, k0, k1, o0, o1)
                    x = sqrt(-two * log(one - unit(r0, r1))) * cos(two_pi * unit(r2, r3))
                    y = one + c * x
                    if y <= zero:  # NaN goes on, as ATen's ``while (y <= 0)``
                        continue
                    s0, s1, _, _ = _block_at(i, 2 * k + 2, k0, k1, o0, o1)
                    u = one - unit(s0, s1)
                    v = y * y * y
                    xx = x * x
                    if u < one - c0331 * xx * xx or log(u) < half * xx + d * (one - v + log(v)):
                        res = scale * d * v
                        break
            out[i] = select(tiny < res, res, tiny)
    return rng_gamma


def make_graph_safe_kernel(kind, dtype, out_dtype=None):
    """``(pyfunc, kernel)`` of sampler ``kind`` for CUDA graphs: the key and the base offset come
    from a device array ``state`` (uint64: seed low and high words, offset low and high words)
    and the call's own offset is ``base + intra``, where ``intra`` (a launch constant) counts
    the draws since the step began. With ``state`` holding the generator's (seed, offset) at
    the start of the step, the counter words are ``make_kernel``'s exactly; a graph replaying
    the launch only needs ``state`` rewritten (``CudaGenerator.upload_graph_state``)."""
    dtype = np.dtype(dtype)
    out_dtype = np.dtype(out_dtype or dtype)
    key = ("graph-safe", kind, dtype.str, out_dtype.str)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    pyfunc, _ = make_kernel(kind, dtype, out_dtype)
    extras = ", ".join(list(inspect.signature(pyfunc).parameters)[5:])
    source = (f"def rng_graph_safe(n, state, intra, {extras}):\n"
              "    o = ((state[3] << S32) | state[2]) + intra\n"
              f"    body(n, state[0], state[1], o & MASK, (o >> S32) & MASK, {extras})\n")
    # cuda.jit(device=True), not device_jit: under the simulator the body calls cuda.grid,
    # which only the simulator's device-function wrapper provides
    namespace = {"body": cuda.jit(device=True)(pyfunc), "S32": S32, "MASK": MASK}
    exec(source, namespace)  # the sampler's parameters differ by kind: one wrapper each
    wrapper = namespace["rng_graph_safe"]
    hit = _cache[key] = (wrapper, kernel_jit(wrapper))
    return hit
