"""SLEEF's u10 ``log`` (``xlogf_u1`` / ``xlog_u1``, AVX-512 branch), the bits of ATen's
``Vectorized<float/double>::log()`` (``Sleef_logf16_u10`` / ``Sleef_logd8_u10``): what
``log_softmax``'s CPU kernels apply to each row's sum of exponentials.

The AVX-512 branch splits ``d`` with two independent instructions: ``e = vgetexp(d * (1/0.75))``
(+inf -> 128 / 1024) and ``m = vgetmant(d)`` normalized to [0.75, 1.5); then
``x = (m - 1) / (m + 1)`` in double-float arithmetic, a short odd polynomial in ``x^2`` (Horner
for float32, SLEEF's Estrin ``POLY7`` for float64), ``e * ln2`` as a double-float, and one final
add; ``vfixupimm`` maps 0 -> -inf, +inf -> +inf, negatives -> NaN.  Every FMA SLEEF performs is
an explicit ``fma``; nothing else may fuse (``SLEEF_JIT``).  ``vgetmant`` here assumes a normal
(or zero/inf/NaN) input: subnormal inputs are not handled as the instruction handles them (no
caller here passes one: a softmax row's sum of exponentials is >= 1).

A separate module from ``_sleef.py`` (another concern's file); it reuses its helpers.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ._intrinsics import fma, select
from ._sleef import SLEEF_JIT, _dfadd_f2f, _dfadd_f2f2, _dfdiv, _dfmul_f2f, _exponent_bits

__all__ = ["log_u10_f32", "log_u10_f64"]


@intrinsic
def _getmant_p75(typingctx, w):
    """AVX-512 ``vgetmant(w, _MM_MANT_NORM_p75_1p5)`` of a normal float: ``w``'s significand
    in [1, 2), halved when it is >= 1.5 (its first fraction bit set), so in [0.75, 1.5)."""
    if w not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        ft = args[0].type
        it, mb, bias = (ir.IntType(32), 23, 127) if ft == ir.FloatType() else \
            (ir.IntType(64), 52, 1023)
        b = builder
        bits = b.bitcast(args[0], it)
        frac = b.and_(bits, ir.Constant(it, (1 << mb) - 1))
        top = b.lshr(frac, ir.Constant(it, mb - 1))
        field = b.sub(ir.Constant(it, bias), top)
        return b.bitcast(b.or_(frac, b.shl(field, ir.Constant(it, mb))), ft)
    return w(w), codegen


@njit(**SLEEF_JIT)
def _dfadd2_ff(x, y):
    """dfadd2_vf2_vf_vf / ddadd2_vd2_vd_vd: the exact two-sum of two floats."""
    s = x + y
    v = s - x
    return s, (x - (s - v)) + (y - v)


# ---- float32: xlogf_u1 ------------------------------------------------------------------
_F = np.float32
LN2_HI_F, LN2_LO_F = _F(0.69314718246459960938), _F(-1.904654323148236017e-09)
LP1F, LP2F, LP3F = _F(+0.3027294874e+0), _F(+0.3996108174e+0), _F(+0.6666694880e+0)
R075_F = _F(1.0 / 0.75)
ZERO_F, ONE_F, TWO_F, INF_F, NAN_F = _F(0), _F(1), _F(2), _F(np.inf), _F(np.nan)


@njit(**SLEEF_JIT)
def log_u10_f32(d):
    e, _ = _exponent_bits(d * R075_F)           # vgetexp; +inf -> 128
    m = _getmant_p75(d)
    sh, sl = _dfmul_f2f(LN2_HI_F, LN2_LO_F, e)
    nh, nl = _dfadd2_ff(-ONE_F, m)
    dh, dl = _dfadd2_ff(ONE_F, m)
    xh, xl = _dfdiv(nh, nl, dh, dl, ONE_F)
    x2 = xh * xh
    t = fma(LP1F, x2, LP2F)
    t = fma(t, x2, LP3F)
    sh, sl = _dfadd_f2f2(sh, sl, xh * TWO_F, xl * TWO_F)
    sh, sl = _dfadd_f2f(sh, sl, x2 * xh * t)
    r = sh + sl
    r = select(d == INF_F, INF_F, r)           # vfixupimm: +inf, negatives, zeros
    r = select(d < ZERO_F, NAN_F, r)
    r = select(d == ZERO_F, -INF_F, r)
    return select(d != d, d, r)                 # vgetmant's NaN, kept by vfixupimm


# ---- float64: xlog_u1; the polynomial is SLEEF's POLY7 (Estrin) -------------------------
_D = np.float64
LN2_HI_D, LN2_LO_D = _D(0.693147180559945286226764), _D(2.319046813846299558417771e-17)
LD6, LD5, LD4, LD3, LD2, LD1, LD0 = map(_D, (
    0.1532076988502701353e+0, 0.1525629051003428716e+0, 0.1818605932937785996e+0,
    0.2222214519839380009e+0, 0.2857142932794299317e+0, 0.3999999999635251990e+0,
    0.6666666666667333541e+0))
R075_D = _D(1.0 / 0.75)
ZERO_D, ONE_D, TWO_D, INF_D, NAN_D = _D(0), _D(1), _D(2), _D(np.inf), _D(np.nan)


@njit(**SLEEF_JIT)
def log_u10_f64(d):
    e, _ = _exponent_bits(d * R075_D)           # vgetexp; +inf -> 1024
    m = _getmant_p75(d)
    nh, nl = _dfadd2_ff(-ONE_D, m)
    dh, dl = _dfadd2_ff(ONE_D, m)
    xh, xl = _dfdiv(nh, nl, dh, dl, ONE_D)
    x2 = xh * xh
    x4 = x2 * x2
    x8 = x4 * x4
    # POLY7(x2, x4, x8, c6..c0) = x8*(x4*c6 + (x2*c5 + c4)) + (x4*(x2*c3 + c2) + (x2*c1 + c0))
    t = fma(x8, fma(x4, LD6, fma(x2, LD5, LD4)),
            fma(x4, fma(x2, LD3, LD2), fma(x2, LD1, LD0)))
    sh, sl = _dfmul_f2f(LN2_HI_D, LN2_LO_D, e)
    sh, sl = _dfadd_f2f2(sh, sl, xh * TWO_D, xl * TWO_D)
    sh, sl = _dfadd_f2f(sh, sl, x2 * xh * t)
    r = sh + sl
    r = select(d == INF_D, INF_D, r)
    r = select(d < ZERO_D, NAN_D, r)
    r = select(d == ZERO_D, -INF_D, r)
    return select(d != d, d, r)
