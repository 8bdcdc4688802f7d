"""``torch.poisson`` / ``torch.binomial`` on CUDA tensors: ATen's CPU samplers
(``sample_poisson``: PTRS for rates >= 10, Knuth below; ``sample_binomial``: BTRS for
``count * p >= 10``, geometric-sum inversion below) run per element on the device over the
CUDA generator's Philox blocks, in double precision whatever the tensor's dtype (ATen's CPU
accscalar_t), one generator call (one offset) per op.

Element ``i`` draws block ``b`` (``_cuda_rng_kernels._block_at``: counter (i, b, offset)) for
its b-th pair of uniforms, so its value depends only on (seed, offset, i): reproducible under
``manual_seed``, the CPU path's distribution, not its numbers (PyTorch's CUDA samplers are
cuRAND's and differ from its CPU ones too). An element that used up ``GAMMA_BLOCKS`` blocks
(never in practice: each attempt accepts with probability > 0.2) gives NaN.

A rate that is not >= 0 raises the CPU path's error at the next synchronizing point (a
device-side flag, as the other CUDA samplers' checks); a NaN count with a prob in (0, 1) gives
NaN, as the CPU path (where ATen's loop never ends).
"""
from __future__ import annotations

import numpy as np

from ._cuda_rng_kernels import GAMMA_BLOCKS, _block_at
from .backends.cuda_env import ceil, cuda, device_jit, exp, floor, lgamma, log, log1p, sqrt

__all__ = ["poisson_kernel", "binomial_kernel", "poisson", "binomial", "POISSON_RATE"]

POISSON_RATE = (RuntimeError, "invalid Poisson rate, expected rate to be non-negative")

@device_jit
def _stirling_tail(k):
    """``stirling_approx_tail<double>(k)`` (the table for k < 10, as a chain of selects:
    device code has no global arrays here)."""
    if k < 10.0:
        j = int(k)
        t = 0.0810614667953272
        if j == 1:
            t = 0.0413406959554092
        elif j == 2:
            t = 0.0276779256849983
        elif j == 3:
            t = 0.02079067210376509
        elif j == 4:
            t = 0.0166446911898211
        elif j == 5:
            t = 0.0138761288230707
        elif j == 6:
            t = 0.0118967099458917
        elif j == 7:
            t = 0.0104112652619720
        elif j == 8:
            t = 0.00925546218271273
        elif j == 9:
            t = 0.00833056343336287
        return t
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1.0)


def poisson_kernel(unit):
    """``rng_poisson(n, k0, k1, o0, o1, code, flag, lam, out)``: ``unit`` makes a float64
    uniform in [0, 1) from two words."""
    nan = np.float64(np.nan)
    two63 = np.float64(2.0 ** 63)

    def rng_poisson(n, k0, k1, o0, o1, code, flag, lam, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            r = np.float64(lam[i])
            res = nan
            if not r >= 0.0:
                if cuda.atomic.compare_and_swap(flag, 0, code) == 0:
                    flag[1] = i
            elif r >= 10.0:  # transformed rejection (Hoermann, 1993)
                slam = sqrt(r)
                loglam = log(r)
                b = 0.931 + 2.53 * slam
                a = -0.059 + 0.02483 * b
                invalpha = 1.1239 + 1.1328 / (b - 3.4)
                vr = 0.9277 - 3.6224 / (b - 2.0)
                for blk in range(GAMMA_BLOCKS):
                    w0, w1, w2, w3 = _block_at(i, blk, k0, k1, o0, o1)
                    u = unit(w0, w1) - 0.5
                    v = unit(w2, w3)
                    us = 0.5 - abs(u)
                    k = floor((2.0 * a / us + b) * u + r + 0.43)
                    if us >= 0.07 and v <= vr:
                        res = k
                        break
                    if k < 0.0 or (us < 0.013 and v > us):
                        continue
                    if (log(v) + log(invalpha) - log(a / (us * us) + b)
                            <= -r + k * loglam - lgamma(k + 1.0)):
                        res = k
                        break
            elif r == 0.0:
                res = 0.0
            else:  # Knuth: count uniforms until their product drops to exp(-rate)
                enlam = exp(-r)
                x = 0.0
                prod = 1.0
                done = False
                for blk in range(GAMMA_BLOCKS):
                    w0, w1, w2, w3 = _block_at(i, blk, k0, k1, o0, o1)
                    prod *= unit(w0, w1)
                    if prod > enlam:
                        x += 1.0
                        prod *= unit(w2, w3)
                        if prod > enlam:
                            x += 1.0
                            continue
                    done = True
                    break
                if done:
                    res = x
            # static_cast<int64_t> as x86 gives it (the CPU path): out of range -> INT64_MIN
            out[i] = res if -two63 <= res < two63 else -two63
    return rng_poisson


def binomial_kernel(unit):
    """``rng_binomial(n, k0, k1, o0, o1, count, prob, out)`` (double arithmetic)."""
    nan = np.float64(np.nan)

    @device_jit
    def inversion(i, k0, k1, o0, o1, count, prob):
        """``binomial_inversion``: successes as a sum of geometric gaps."""
        geom_sum = 0.0
        num_geom = 0.0
        logprob = log1p(-prob)
        for blk in range(GAMMA_BLOCKS):
            w0, w1, w2, w3 = _block_at(i, blk, k0, k1, o0, o1)
            geom_sum += ceil(log(unit(w0, w1)) / logprob)
            if geom_sum > count:
                return num_geom
            num_geom += 1.0
            geom_sum += ceil(log(unit(w2, w3)) / logprob)
            if geom_sum > count:
                return num_geom
            num_geom += 1.0
        return nan

    @device_jit
    def btrs(i, k0, k1, o0, o1, count, prob):
        """``btrs``: Hormann's transformed rejection with squeeze."""
        stddev = sqrt(count * prob * (1.0 - prob))
        b = 1.15 + 2.53 * stddev
        a = -0.0873 + 0.0248 * b + 0.01 * prob
        c = count * prob + 0.5
        v_r = 0.92 - 4.2 / b
        r = prob / (1.0 - prob)
        alpha = (2.83 + 5.1 / b) * stddev
        m = floor((count + 1.0) * prob)
        for blk in range(GAMMA_BLOCKS):
            w0, w1, w2, w3 = _block_at(i, blk, k0, k1, o0, o1)
            u = unit(w0, w1) - 0.5
            v = unit(w2, w3)
            us = 0.5 - abs(u)
            k = floor((2.0 * a / us + b) * u + c)
            if k < 0.0 or k > count:
                continue
            if us >= 0.07 and v <= v_r:
                return k
            v = log(v * alpha / (a / (us * us) + b))
            upperbound = ((m + 0.5) * log((m + 1.0) / (r * (count - m + 1.0)))
                          + (count + 1.0) * log((count - m + 1.0) / (count - k + 1.0))
                          + (k + 0.5) * log(r * (count - k + 1.0) / (k + 1.0))
                          + _stirling_tail(m) + _stirling_tail(count - m)
                          - _stirling_tail(k) - _stirling_tail(count - k))
            if v <= upperbound:
                return k
        return nan

    def rng_binomial(n, k0, k1, o0, o1, count, prob, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            cnt = np.float64(count[i])
            p = np.float64(prob[i])
            res = nan
            if cnt <= 0.0 or p <= 0.0:
                res = 0.0
            elif p >= 1.0 or cnt != cnt:
                res = cnt
            elif p <= 0.5:
                if cnt * p >= 10.0:
                    res = btrs(i, k0, k1, o0, o1, cnt, p)
                else:
                    res = inversion(i, k0, k1, o0, o1, cnt, p)
            elif p > 0.5:
                q = 1.0 - p
                if cnt * q >= 10.0:
                    res = cnt - btrs(i, k0, k1, o0, o1, cnt, q)
                else:
                    res = cnt - inversion(i, k0, k1, o0, o1, cnt, q)
            out[i] = res
    return rng_binomial


def poisson(lam):
    """Poisson draws (the CudaArray ``lam``'s dtype) from the CUDA generator, one call."""
    from ._cuda_random import _draw, _flag_code
    flag, code = _flag_code(POISSON_RATE)
    dt = np.dtype(lam.dtype)
    return _draw("poisson", lam.shape, np.float64, dt, (code,), (flag, lam.flat()))


def binomial(count, prob, shape):
    """Binomial draws of ``count``'s dtype: the CudaArrays ``count`` and ``prob`` broadcast to
    ``shape``, one generator call."""
    from ._cuda_random import _draw
    dt = np.dtype(count.dtype)
    shape = tuple(shape)
    return _draw("binomial", shape, np.float64, dt, (), (count.flat(shape), prob.flat(shape)))
