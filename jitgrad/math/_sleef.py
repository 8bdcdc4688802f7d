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
import numpy as np
from numba import njit

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
def expm1_u10_f32(a):
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
def expm1_u10_f64(a):
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
    dh, dl = _dfadd2_f2f(th, tl, -ONE_D)
    x = dh + dl
    x = select(a > EM1_HI_D, INF_D, x)
    x = select(a < EM1_SAT_D, -ONE_D, x)
    return select(a == ZERO_D, a, x)
