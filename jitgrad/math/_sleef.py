"""PyTorch's own CPU formulas, for results bit-identical to ``torch`` (not the most accurate).

ATen's vectorized kernels call SLEEF (``Sleef_expf16_u10``, ``Sleef_expd8_u10`` on AVX-512;
the AVX2 FMA builds compute the same bits).  ``exp_u10`` is SLEEF's ``xexpf`` / ``xexp``
algorithm as built with FMA: q = rint(round(x/ln2)) (the product is rounded first, no FMA),
a two-part ln2 Cody-Waite reduction by FMA, the u10 polynomial by FMA (Horner for float32,
SLEEF's Estrin ``POLY10`` for float64), 2^q applied by two power-of-two multiplies
(``_intrinsics.ldexp_m`` is SLEEF's ``vldexp2``), then x < -104 (-1000) -> 0 and
x > 100 (709.78...) -> inf.  ``expm1_u10_f32`` is SLEEF's ``xexpm1f`` (``expk2f`` in
double-float arithmetic, FMA variants of SLEEF's ``df*`` helpers), which ``torch.expm1``
(``vec::map``: every element, no scalar tail) uses.  Every FMA SLEEF uses is an explicit
``fma`` here and nothing else may fuse (``SLEEF_JIT``).

``log1p_u10_f32/f64`` (SLEEF's ``xlog1pf``/``xlog1p``, AVX-512 branch: the exponent read as
vgetexp reads it) and ``tanh_u10_f32/f64`` (``xtanhf``/``xtanh`` over ``expk2``) are
``Vectorized<float/double>::log1p/tanh``: what ATen's softplus, log_sigmoid, mish and gelu(tanh)
kernels call (nn/functional/activation_kernels.py uses them; torch.tanh itself does not).

``sigmoid_aten`` is ATen's ``sigmoid_kernel`` vector lambda (UnaryOpsKernel.cpp):
``(0 - x).exp() + 1`` then ``reciprocal()`` (a true division ``1 / d``).  It flushes to 0
below ~-88.7 (float32) / ~-709.8 (float64) exactly as PyTorch does.

Which elements PyTorch computes with these (measured; tests/math/test_sleef_bits.py):
``cpu_kernel_vec``'s ``vectorized_loop`` runs vectors in steps of 2 * lanes (32 floats /
16 doubles on AVX-512) per contiguous run of each ``parallel_for`` chunk (grain 32768) and the
remaining < 2 * lanes elements with the scalar lambda ``1 / (1 + std::exp(-x))`` (glibc);
non-contiguous runs go all-scalar.  Kernels here compute every element with the vector
formula, so the scalar tails can differ (by at most 2 ulp).
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ._config import JIT_OPTIONS
from ._intrinsics import fma, ldexp_m, select

#: No fast-math flags at all: SLEEF's double-float steps (two-sums, ``s = x*y`` followed by an
#: add) must round exactly where SLEEF rounds, and ``contract`` would fuse them into FMAs.
#: SLEEF's own FMAs are explicit ``fma`` calls; its selects are LLVM selects
#: (``_intrinsics.select``, never a branch); rint is the magic-number rounding (exact for the
#: |q| <= 1443 whose results are used).  LLVM may not merge repeated inlined calls of these
#: functions: a kernel must not rely on that (ops/elementwise_rnn.py names its products once).
SLEEF_JIT = dict(JIT_OPTIONS, fastmath=False)

# ---- float32: SLEEF xexpf (u10) ----------------------------------------------------
_F = np.float32
R_LN2F = _F(1.442695040888963407359924681001892137426645954152985934135449406931)
L2UF, L2LF = _F(0.693145751953125), _F(1.428606765330187045e-06)
EF5, EF4, EF3, EF2, EF1, EF0 = map(_F, (
    0.000198527617612853646278381, 0.00139304355252534151077271, 0.00833336077630519866943359,
    0.0416664853692054748535156, 0.166666671633720397949219, 0.5))
LO_F, HI_F = _F(-104), _F(100)
ZERO_F, ONE_F, INF_F, MAGIC_F = _F(0), _F(1), _F(np.inf), _F(1.5 * 2.0 ** 23)


@njit(**SLEEF_JIT)
def exp_u10_f32(d):
    q = (d * R_LN2F + MAGIC_F) - MAGIC_F       # rint of the rounded product (cvtps_epi32)
    s = fma(q, -L2UF, d)
    s = fma(q, -L2LF, s)
    u = fma(EF5, s, EF4)
    u = fma(u, s, EF3)
    u = fma(u, s, EF2)
    u = fma(u, s, EF1)
    u = fma(u, s, EF0)
    u = ONE_F + fma(s * s, u, s)
    u = ldexp_m(u, q + MAGIC_F)                # |q| <= 150 where the result is used
    u = select(d < LO_F, ZERO_F, u)
    return select(d > HI_F, INF_F, u)  # NaN propagates through the arithmetic


@njit(**SLEEF_JIT)
def sigmoid_aten_f32(x):
    r = ONE_F / (exp_u10_f32(-x) + ONE_F)
    return select(x == x, r, -x)  # NaN: ATen's -x flips its sign (LLVM may not)


# ---- float64: SLEEF xexp (u10, ENABLE_FMA_DP branch) -------------------------------
_D = np.float64
R_LN2D = _D(1.442695040888963407359924681001892137426645954152985934135449406931)
L2UD = _D(.69314718055966295651160180568695068359375)
L2LD = _D(.28235290563031577122588448175013436025525412068e-12)
ED9, ED8, ED7, ED6, ED5, ED4, ED3, ED2, ED1, ED0 = map(_D, (
    +0.2081276378237164457e-8, +0.2511210703042288022e-7, +0.2755762628169491192e-6,
    +0.2755723402025388239e-5, +0.2480158687479686264e-4, +0.1984126989855865850e-3,
    +0.1388888888914497797e-2, +0.8333333333314938210e-2, +0.4166666666666602598e-1,
    +0.1666666666666669072e+0))
HALF_D = _D(0.5)
LO_D, HI_D = _D(-1000), _D(709.78271114955742909217217426)
ZERO_D, ONE_D, INF_D, MAGIC_D = _D(0), _D(1), _D(np.inf), _D(1.5 * 2.0 ** 52)


@njit(**SLEEF_JIT)
def exp_u10_f64(d):
    q = (d * R_LN2D + MAGIC_D) - MAGIC_D
    s = fma(q, -L2UD, d)
    s = fma(q, -L2LD, s)
    s2 = s * s
    s4 = s2 * s2
    s8 = s4 * s4
    # SLEEF's POLY10 (Estrin), every step an FMA:
    # s8*(s*c9 + c8) + (s4*(s2*(s*c7 + c6) + (s*c5 + c4)) + (s2*(s*c3 + c2) + (s*c1 + c0)))
    p98 = fma(s, ED9, ED8)
    p76 = fma(s, ED7, ED6)
    p54 = fma(s, ED5, ED4)
    p32 = fma(s, ED3, ED2)
    p10 = fma(s, ED1, ED0)
    lo = fma(s4, fma(s2, p76, p54), fma(s2, p32, p10))
    u = fma(s8, p98, lo)
    u = fma(u, s, HALF_D)
    u = fma(u, s, ONE_D)
    u = fma(u, s, ONE_D)
    u = ldexp_m(u, q + MAGIC_D)                # |q| <= 1443 where the result is used
    u = select(d > HI_D, INF_D, u)
    return select(d < LO_D, ZERO_D, u)


@njit(**SLEEF_JIT)
def sigmoid_aten_f64(x):
    r = ONE_D / (exp_u10_f64(-x) + ONE_D)
    return select(x == x, r, -x)


# ---- float32: SLEEF xexpm1f (u10) over expk2f, double-float arithmetic ----------------
# (h, l) pairs are SLEEF's vfloat2; each helper names the SLEEF function it is.
M1F, M2F, M3F, M4F = map(_F, (0.1980960224e-3, 0.1394256484e-2, 0.8333456703e-2,
                              0.4166637361e-1))
M5F, HALF_F = _F(0.166666659414234244790680580464e+0), _F(0.5)
EM1_HI_F, EM1_SAT_F = _F(88.72283172607421875), _F(-16.635532333438687426013570)


@njit(**SLEEF_JIT)
def _dfadd2_f2f(xh, xl, y):
    s = xh + y
    v = s - xh
    return s, ((xh - (s - v)) + (y - v)) + xl


@njit(**SLEEF_JIT)
def _dfadd2_f2f2(xh, xl, yh, yl):
    s = xh + yh
    v = s - xh
    return s, ((xh - (s - v)) + (yh - v)) + (xl + yl)


@njit(**SLEEF_JIT)
def _dfmul_f2f(xh, xl, y):
    s = xh * y
    return s, fma(xl, y, fma(xh, y, -s))


@njit(**SLEEF_JIT)
def _dfmul_f2f2(xh, xl, yh, yl):
    s = xh * yh
    return s, fma(xh, yl, fma(xl, yh, fma(xh, yh, -s)))


@njit(**SLEEF_JIT)
def _dfsqu_f2(xh, xl):
    s = xh * xh
    return s, fma(xh + xh, xl, fma(xh, xh, -s))


@njit(**SLEEF_JIT)
def _expk2_f32(a):
    """SLEEF's expk2f of (a, 0): e**a as a double-float (0 below -104)."""
    q = (a * R_LN2F + MAGIC_F) - MAGIC_F
    sh, sl = _dfadd2_f2f(a, ZERO_F, q * -L2UF)
    sh, sl = _dfadd2_f2f(sh, sl, q * -L2LF)
    u = fma(M1F, sh, M2F)
    u = fma(u, sh, M3F)
    u = fma(u, sh, M4F)
    th, tl = _dfmul_f2f(sh, sl, u)
    th, tl = _dfadd2_f2f(th, tl, M5F)
    th, tl = _dfmul_f2f2(sh, sl, th, tl)
    th, tl = _dfadd2_f2f(th, tl, HALF_F)
    qh, ql = _dfsqu_f2(sh, sl)
    th, tl = _dfmul_f2f2(qh, ql, th, tl)
    th, tl = _dfadd2_f2f2(sh, sl, th, tl)
    h = ONE_F + th                             # dfadd_vf2_vf_vf2(1, t)
    tl = ((ONE_F - h) + th) + tl
    tq = q + MAGIC_F
    th = select(a < LO_F, ZERO_F, ldexp_m(h, tq))
    tl = select(a < LO_F, ZERO_F, ldexp_m(tl, tq))
    return th, tl


@njit(**SLEEF_JIT)
def expm1_u10_f32(a):
    th, tl = _expk2_f32(a)
    dh, dl = _dfadd2_f2f(th, tl, -ONE_F)
    x = dh + dl
    x = select(a > EM1_HI_F, INF_F, x)
    x = select(a < EM1_SAT_F, -ONE_F, x)
    return select(a == ZERO_F, a, x)  # -0.0 stays -0.0 (SLEEF's visnegzero select)


# ---- float64: SLEEF xexpm1 (u10) over expk2, double-double arithmetic -----------------
# (the df helpers above are type-generic: the same steps are SLEEF's dd* FMA helpers)
K9, K8, K7, K6, K5, K4, K3, K2, K1, K0 = map(_D, (
    +0.1602472219709932072e-9, +0.2092255183563157007e-8, +0.2505230023782644465e-7,
    +0.2755724800902135303e-6, +0.2755731892386044373e-5, +0.2480158735605815065e-4,
    +0.1984126984148071858e-3, +0.1388888888886763255e-2, +0.8333333333333347095e-2,
    +0.4166666666666669905e-1))
K_SIXTH = _D(+0.1666666666666666574e+0)
EM1_HI_D, EM1_SAT_D = _D(709.782712893383996732223), _D(-36.736800569677101399113302437)


@njit(**SLEEF_JIT)
def _ddadd_f_f2(x, yh, yl):
    s = x + yh
    return s, ((x - s) + yh) + yl


@njit(**SLEEF_JIT)
def _expk2_f64(a):
    """SLEEF's expk2 of (a, 0): e**a as a double-double (0 below -1000)."""
    q = (a * R_LN2D + MAGIC_D) - MAGIC_D
    sh, sl = _dfadd2_f2f(a, ZERO_D, q * -L2UD)
    sh, sl = _dfadd2_f2f(sh, sl, q * -L2LD)
    s2h, s2l = _dfsqu_f2(sh, sl)
    s4h, s4l = _dfsqu_f2(s2h, s2l)
    s8 = s4h * s4h
    p98 = fma(sh, K9, K8)                      # POLY10(s, s2, s4, s8, K9..K0), Estrin
    lo = fma(s4h, fma(s2h, fma(sh, K7, K6), fma(sh, K5, K4)),
             fma(s2h, fma(sh, K3, K2), fma(sh, K1, K0)))
    u = fma(s8, p98, lo)
    th, tl = _dfmul_f2f(sh, sl, K_SIXTH)
    th, tl = _ddadd_f_f2(HALF_D, th, tl)
    th, tl = _dfmul_f2f2(th, tl, sh, sl)
    th, tl = _ddadd_f_f2(ONE_D, th, tl)
    th, tl = _dfmul_f2f2(th, tl, sh, sl)
    th, tl = _ddadd_f_f2(ONE_D, th, tl)
    uh, ul = _dfmul_f2f(s4h, s4l, u)
    h = th + uh                                # ddadd_vd2_vd2_vd2(t, s4*u)
    tl = (((th - h) + uh) + tl) + ul
    tq = q + MAGIC_D
    th = select(a < LO_D, ZERO_D, ldexp_m(h, tq))
    tl = select(a < LO_D, ZERO_D, ldexp_m(tl, tq))
    return th, tl


@njit(**SLEEF_JIT)
def expm1_u10_f64(a):
    th, tl = _expk2_f64(a)
    dh, dl = _dfadd2_f2f(th, tl, -ONE_D)
    x = dh + dl
    x = select(a > EM1_HI_D, INF_D, x)
    x = select(a < EM1_SAT_D, -ONE_D, x)
    return select(a == ZERO_D, a, x)

# ---- SLEEF's FMA double-float helpers used by log1p/tanh (type-generic; ``one`` types them) --

@intrinsic
def _exponent_bits(typingctx, w):
    """(floor(log2(w)), 2**-floor(log2(w))) of a positive normal float, from its exponent field
    (AVX-512's vgetexp and SLEEF's vldexp3(1, -e)); inf/NaN give (bias + 1, -inf), the values
    SLEEF's own steps give there (its results at those inputs are overridden by selects)."""
    if w not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        ft = args[0].type
        it, mb, bias = (ir.IntType(32), 23, 127) if ft == ir.FloatType() else \
            (ir.IntType(64), 52, 1023)
        b = builder
        field = b.and_(b.lshr(b.bitcast(args[0], it), ir.Constant(it, mb)),
                       ir.Constant(it, 2 * bias + 1))
        e = b.sitofp(b.sub(field, ir.Constant(it, bias)), ft)
        t = b.bitcast(b.shl(b.sub(ir.Constant(it, 2 * bias), field), ir.Constant(it, mb)), ft)
        return context.make_tuple(builder, sig.return_type, (e, t))
    return types.UniTuple(w, 2)(w), codegen


@njit(**SLEEF_JIT)
def _dfdiv(nh, nl, dh, dl, one):
    """dfdiv_vf2_vf2_vf2 / dddiv_vd2_vd2_vd2 (FMA): n / d as a double-float."""
    t = one / dh                                # vrec: a true division
    s = nh * t
    u = fma(t, nh, -s)
    v = fma(-dl, t, fma(-dh, t, one))
    return s, fma(s, v, fma(nl, t, u))


@njit(**SLEEF_JIT)
def _dfrec(dh, dl, one):
    """dfrec_vf2_vf2 (FMA): 1 / d as a double-float."""
    s = one / dh
    return s, s * fma(-dl, s, fma(-dh, s, one))


@njit(**SLEEF_JIT)
def _dfadd_f_f(x, y):
    s = x + y
    return s, (x - s) + y


@njit(**SLEEF_JIT)
def _dfadd_f2f2(xh, xl, yh, yl):
    s = xh + yh
    return s, (((xh - s) + yh) + xl) + yl


@njit(**SLEEF_JIT)
def _dfadd_f2f(xh, xl, y):
    s = xh + y
    return s, ((xh - s) + y) + xl


# ---- float32: SLEEF xlog1pf (u10), AVX-512 branch ----------------------------------------
# (ATen's Vectorized<float>::log1p is Sleef_log1pf16_u10: softplus, log_sigmoid and mish)
LN2_HI_F, LN2_LO_F = _F(0.69314718246459960938), _F(-1.904654323148236017e-09)
LP1F, LP2F, LP3F = _F(+0.3027294874e+0), _F(+0.3996108174e+0), _F(+0.6666694880e+0)
R075_F, TWO_F, BIG_F, NEG_ONE_F = _F(1.0 / 0.75), _F(2), _F(1e38), _F(-1)
NAN_F = _F(np.nan)


@njit(**SLEEF_JIT)
def log1p_u10_f32(d):
    dp1 = d + ONE_F
    e, t = _exponent_bits(dp1 * R075_F)         # vgetexp; inf -> 128; t = 2**-e
    m = fma(d, t, t - ONE_F)
    sh, sl = _dfmul_f2f(LN2_HI_F, LN2_LO_F, e)
    ah, al = _dfadd_f_f(TWO_F, m)
    xh, xl = _dfdiv(m, ZERO_F, ah, al, ONE_F)
    x2 = xh * xh
    t = fma(LP1F, x2, LP2F)
    t = fma(t, x2, LP3F)
    sh, sl = _dfadd_f2f2(sh, sl, xh * TWO_F, xl * TWO_F)
    sh, sl = _dfadd_f2f(sh, sl, x2 * xh * t)
    r = sh + sl
    r = select(d > BIG_F, INF_F, r)
    r = select(NEG_ONE_F > d, NAN_F, r)
    r = select(d == NEG_ONE_F, -INF_F, r)
    return select(d == ZERO_F, d, r)            # -0.0 stays -0.0 (and +0 gives +0)


# ---- float64: SLEEF xlog1p (u10), AVX-512 branch; the polynomial is SLEEF's POLY7 (Estrin) ---
LN2_HI_D, LN2_LO_D = _D(0.693147180559945286226764), _D(2.319046813846299558417771e-17)
LD6, LD5, LD4, LD3, LD2, LD1, LD0 = map(_D, (
    0.1532076988502701353e+0, 0.1525629051003428716e+0, 0.1818605932937785996e+0,
    0.2222214519839380009e+0, 0.2857142932794299317e+0, 0.3999999999635251990e+0,
    0.6666666666667333541e+0))
R075_D, TWO_D, BIG_D, NEG_ONE_D, NAN_D = _D(1.0 / 0.75), _D(2), _D(1e307), _D(-1), _D(np.nan)


@njit(**SLEEF_JIT)
def log1p_u10_f64(d):
    dp1 = d + ONE_D
    e, t = _exponent_bits(dp1 * R075_D)         # vgetexp; inf -> 1024; t = 2**-e
    m = fma(d, t, t - ONE_D)
    sh, sl = _dfmul_f2f(LN2_HI_D, LN2_LO_D, e)
    ah, al = _dfadd_f_f(TWO_D, m)
    xh, xl = _dfdiv(m, ZERO_D, ah, al, ONE_D)
    x2 = xh * xh
    x4 = x2 * x2
    x8 = x4 * x4
    # POLY7(x2, x4, x8, c6..c0) = x8*(x4*c6 + (x2*c5 + c4)) + (x4*(x2*c3 + c2) + (x2*c1 + c0))
    t = fma(x8, fma(x4, LD6, fma(x2, LD5, LD4)),
            fma(x4, fma(x2, LD3, LD2), fma(x2, LD1, LD0)))
    sh, sl = _dfadd_f2f2(sh, sl, xh * TWO_D, xl * TWO_D)
    sh, sl = _dfadd_f2f(sh, sl, x2 * xh * t)
    r = sh + sl
    r = select(d > BIG_D, INF_D, r)
    r = select(NEG_ONE_D > d, NAN_D, r)
    r = select(d == NEG_ONE_D, -INF_D, r)
    return select(d == ZERO_D, d, r)



# ---- SLEEF xtanhf / xtanh (u10): (e - 1/e) / (e + 1/e) over expk2 of |x| ------------------
# (ATen's Vectorized<float/double>::tanh: gelu's tanh approximation and mish call it)
TANH_SAT_F, TANH_SAT_D = _F(8.664339742), _D(18.714973875)


@njit(**SLEEF_JIT)
def tanh_u10_f32(x):
    dh, dl = _expk2_f32(abs(x))
    eh, el = _dfrec(dh, dl, ONE_F)
    nh, nl = _dfadd_f2f2(dh, dl, -eh, -el)
    ah, al = _dfadd_f2f2(dh, dl, eh, el)
    qh, ql = _dfdiv(nh, nl, ah, al, ONE_F)
    y = qh + ql
    y = select((abs(x) > TANH_SAT_F) | (y != y), ONE_F, y)
    return select(x == x, math.copysign(y, x), x)


@njit(**SLEEF_JIT)
def tanh_u10_f64(x):
    dh, dl = _expk2_f64(abs(x))
    eh, el = _dfrec(dh, dl, ONE_D)
    nh, nl = _dfadd2_f2f2(dh, dl, -eh, -el)
    ah, al = _dfadd2_f2f2(dh, dl, eh, el)
    qh, ql = _dfdiv(nh, nl, ah, al, ONE_D)
    y = qh + ql
    y = select((abs(x) > TANH_SAT_D) | (y != y), ONE_D, y)
    return select(x == x, math.copysign(y, x), x)
