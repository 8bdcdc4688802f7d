"""float32 implementations (all arithmetic in float32: no double in the IR).

Every constant is an ``np.float32`` module global; Numba freezes those as
float32 constants, whereas a bare Python literal would promote to float64.
Branches are written as ``a if c else b`` on values, which LLVM turns into
(vector) selects.
"""
import math

import numpy as np
from numba import njit

from ._config import JIT_OPTIONS
from ._intrinsics import ldexp_m, libm_if, log_reduce, pow2_m, quadrant_m

F = np.float32


def _b(u):
    """float32 from its bit pattern."""
    return np.array(u, dtype=np.uint32).view(np.float32)[()]


ZERO, HALF, ONE, TWO, THREE, FOUR, TEN = F(0), F(0.5), F(1), F(2), F(3), F(4), F(10)
INF, NAN = F(np.inf), F(np.nan)

# ---- exp / expm1 ----------------------------------------------------------------
LOG2E = F(1.4426950408889634)
MAGIC = F(1.5 * 2.0 ** 23)        # x + MAGIC - MAGIC rounds x to an integer (|x| < 2**22)
L2U = _b(0x3F317200)              # ln2 high part, 9 trailing zero bits: q*L2U exact
L2L = F(np.log(2.0) - float(_b(0x3F317200)))
EXP_HI = F(89.0)                  # exp(x) = inf above ~88.72: clamping to 89 still overflows
EXP_LO = F(-104.0)                # exp(x) = 0 below ~-103.97: clamping to -104 still gives 0
EM1_LO = F(-25.0)                 # expm1(x) rounds to -1 below ~-17.3
# expm1(r) = r + r^2*u(r) on |r| <= ln2/2 (minimax for the relative error of expm1;
# see _fit.py "expu32")
E0, E1, E2, E3, E4, E5 = map(F, (
    0.5, 0.1666666567325592, 0.04166649281978607, 0.008333547972142696, 0.0013932317961007357,
    0.00019759910355787724
))
TINY_EM1 = F(2.0 ** -25)
EM1_QBIG = F(24)


@njit(**JIT_OPTIONS)
def _u(s):
    u = E5
    u = u * s + E4
    u = u * s + E3
    u = u * s + E2
    u = u * s + E1
    return u * s + E0


@njit(**JIT_OPTIONS)
def _expm1_red(x, lo):
    """Reduction for exp/expm1.

    Returns (s, w, q, t): x clamped to [lo, EXP_HI] (NaN kept) = q*ln2 + s + w with
    q integral, |s| <= ln2/2, expm1(s) ~ s + w, t = q + MAGIC (bits hold q).
    The clamping makes the far ranges overflow/underflow/saturate by themselves.
    """
    x = EXP_HI if x > EXP_HI else x            # NaN-preserving clamps
    x = lo if x < lo else x
    t = x * LOG2E + MAGIC
    q = t - MAGIC                              # rint(x / ln2)
    s1 = x - q * L2U                           # exact
    s = s1 - q * L2L
    slo = (s1 - s) - q * L2L                   # s + slo = s1 - q*L2L (fast two-sum)
    return s, s * s * _u(s) + slo, q, t


@njit(**JIT_OPTIONS)
def exp(x):
    s, w, q, t = _expm1_red(x, EXP_LO)
    h = ONE + s
    y = h + (((ONE - h) + s) + w)              # 1 + s + w with 1 + s exact (fast two-sum)
    return ldexp_m(y, t)


@njit(**JIT_OPTIONS)
def _exp_small(x):
    """exp(x) for x in [-87, 88] (float32) / [-708, 709] (float64) or NaN: no extra-precision
    steps, and a single power-of-two multiply (the result is never subnormal or inf)."""
    t = x * LOG2E + MAGIC
    q = t - MAGIC
    s = x - q * L2U
    s = s - q * L2L
    return (ONE + (s + s * s * _u(s))) * pow2_m(t, 0)


@njit(**JIT_OPTIONS)
def expm1(x):
    s, w, q, t = _expm1_red(x, EM1_LO)
    h = pow2_m(t, -1)                          # 2**(q-1): normal for q in [-36, 128]
    # 2**q * (1 + s + w) - 1 = 2 * (h*s + (h - 1/2) + h*w): h*s and h - 1/2 are exact for
    # q < 24 and their sum often is; for larger q the -1/2 joins the smaller term instead
    r = ((h * s + (h - HALF)) + h * w) if q < EM1_QBIG else (((h * s - HALF) + h * w) + h)
    r = r * TWO
    r = x if abs(x) < TINY_EM1 else r          # exact, keeps -0.0 and subnormals
    return r


# ---- log / log1p (fdlibm e_logf.c kernel) ------------------------------------------
LG1, LG2, LG3, LG4 = map(F, (
    0xAAAAAA / 2.0 ** 24, 0xCCCE13 / 2.0 ** 25, 0x91E9EE / 2.0 ** 25, 0xF89E26 / 2.0 ** 26
))
LN2_HI = _b(0x3F317180)
LN2_LO = _b(0x3717F7D1)
TINY_L1P = F(2.0 ** -25)


@njit(**JIT_OPTIONS)
def _log_kernel(m, k, c):
    """log(m * 2**k) + c for m in [sqrt(1/2), sqrt(2)), c a small correction."""
    f = m - ONE
    s = f / (TWO + f)
    z = s * s
    w = z * z
    R = z * (LG1 + w * LG3) + w * (LG2 + w * LG4)
    hfsq = HALF * f * f
    return k * LN2_HI - ((hfsq - (s * (hfsq + R) + (k * LN2_LO + c))) - f)


@njit(**JIT_OPTIONS)
def log(x):
    m, k = log_reduce(x)
    r = _log_kernel(m, k, ZERO)
    r = r if x < INF else x                    # +inf, NaN
    r = -INF if x == ZERO else r
    r = NAN if x < ZERO else r
    return r


@njit(**JIT_OPTIONS)
def log1p(x):
    u = ONE + x
    m, k = log_reduce(u)
    # c = (1 + x) - u exactly (fast two-sum with the larger operand first), then c/u
    c = (ONE - (u - x)) if x > ONE else (x - (u - ONE))
    r = _log_kernel(m, k, c / u)
    r = x if abs(x) < TINY_L1P else r
    r = r if x < INF else x
    r = -INF if x == -ONE else r
    r = NAN if x < -ONE else r
    return r


# ---- tanh / sigmoid / softplus -------------------------------------------------------
TH_X = F(0.9)
# tanh(x) = x + x^3 * P(x^2) on [0, 0.9]   (_fit.py "tanh32_09_7")
T0, T1, T2, T3, T4, T5, T6 = map(F, (
    -0.33333322405815125, 0.13332980871200562, -0.05392947420477867, 0.02166409231722355,
    -0.00826545525342226, 0.002583425957709551, -0.0004557101638056338
))


@njit(**JIT_OPTIONS)
def tanh(x):
    a = abs(x)
    z = a * a
    p = T6
    p = p * z + T5
    p = p * z + T4
    p = p * z + T3
    p = p * z + T2
    p = p * z + T1
    p = p * z + T0
    small = a + (a * z) * p                    # exact for tiny a (and keeps subnormals)
    # a >= 0.9: 1 - 2/(exp(2a) + 1); the error of exp is damped by 2/(e^1.8 + 1) < 0.3
    big = ONE - TWO / (_exp_small(TEN + TEN if a > TEN else a + a) + ONE)
    r = small if a < TH_X else big
    return math.copysign(r, x)                 # odd; tanh(-0.0) = -0.0


@njit(**JIT_OPTIONS)
def sigmoid(x):
    e = exp(-abs(x))
    pos = x >= ZERO
    num = ONE if pos else e
    d = ONE + e
    derr = (ONE - d) + e                       # d + derr = 1 + e exactly
    q = num / d
    rinv = q if pos else ONE - q               # ~ 1/d
    return q + ((num - q * d) - q * derr) * rinv   # num / (d + derr), division residual added


@njit(**JIT_OPTIONS)
def softplus(x):
    m = x if x > ZERO else ZERO
    return m + log1p(exp(-abs(x)))


# ---- sin / cos / tan -------------------------------------------------------------
# |x| <= TRIG_MAX: Cody-Waite reduction by pi/2 with a 5-part pi/2 (q*P1..q*P4 are exact
# products for |q| < 2**13) accumulated as a double-float; beyond it (rare), libm through
# a masked vector call (see _intrinsics.libm_if).
TWO_OVER_PI = F(0.6366197723675814)
PIO2_1 = F(float.fromhex("0x1.92p+0"))
PIO2_2 = F(float.fromhex("0x1.fb4p-12"))
PIO2_3 = F(float.fromhex("0x1.444p-24"))
PIO2_4 = F(float.fromhex("0x1.68cp-39"))
PIO2_5 = F(float.fromhex("0x1.1a6264p-54"))
TRIG_MAX = F(8192.0)
S1, S2, S3, S4 = map(F, (
    -0.1666666716337204, 0.008333379402756691, -0.0001985307171707973, 2.8327190193522256e-06
))
C1, C2, C3 = F(0.04166664555668831), F(-0.0013887310633435845), F(2.4432567443000153e-05)
TINY_SIN = F(2.0 ** -12)


@njit(**JIT_OPTIONS)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(**JIT_OPTIONS)
def _rem_pio2(x):
    """(rh, rl, n) with x = k*pi/2 + rh + rl, |rh| <~ pi/4, n = k mod 4, for |x| <= TRIG_MAX."""
    t = x * TWO_OVER_PI + MAGIC
    q = t - MAGIC
    r = x - q * PIO2_1                         # exact
    r = r - q * PIO2_2                         # exact (|r| < 1 on a grid >= 2**-24)
    rh, e = _two_sum(r, -(q * PIO2_3))
    rh, e2 = _two_sum(rh, -(q * PIO2_4))
    rl = (e + e2) - q * PIO2_5
    h = rh + rl
    return h, rl - (h - rh), quadrant_m(t)


@njit(**JIT_OPTIONS)
def _ksin(x, y):
    """sin(x + y), |x| <= pi/4, |y| tiny."""
    z = x * x
    v = z * x
    p = S2 + z * (S3 + z * S4)
    return x - ((z * (HALF * y - v * p) - y) - v * S1)


@njit(**JIT_OPTIONS)
def _kcos(x, y):
    """cos(x + y), |x| <= pi/4, |y| tiny."""
    z = x * x
    zr = (z * z) * (C1 + z * (C2 + z * C3))
    hz = HALF * z
    w = ONE - hz
    return w + (((ONE - w) - hz) + (zr - x * y))


@njit(**JIT_OPTIONS)
def sin(x):
    rh, rl, n = _rem_pio2(x)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    v = c if (n == ONE) | (n == THREE) else s
    v = -v if n >= TWO else v
    v = x if abs(x) < TINY_SIN else v          # exact, keeps -0.0 and subnormals
    return libm_if(abs(x) > TRIG_MAX, x, v, "sin")   # also +-inf -> nan


@njit(**JIT_OPTIONS)
def cos(x):
    rh, rl, n = _rem_pio2(x)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    v = s if (n == ONE) | (n == THREE) else c
    v = -v if (n == ONE) | (n == TWO) else v
    return libm_if(abs(x) > TRIG_MAX, x, v, "cos")


# tan(r) = r + r^3 * P(r^2) on |r| <= pi/4   (_fit.py "tan32_7")
TN0, TN1, TN2, TN3, TN4, TN5, TN6 = map(F, (
    0.33333349227905273, 0.13332676887512207, 0.05405867099761963, 0.02128765732049942,
    0.010823378339409828, 0.00010366016795160249, 0.004369933158159256
))


@njit(**JIT_OPTIONS)
def tan(x):
    rh, rl, q = _rem_pio2(x)
    z = rh * rh
    p = TN6
    p = p * z + TN5
    p = p * z + TN4
    p = p * z + TN3
    p = p * z + TN2
    p = p * z + TN1
    p = p * z + TN0
    rest = (rh * z) * p + rl * (ONE + z)       # tan(rh + rl) = rh + rest   (tan' = 1 + tan^2)
    th = rh + rest
    tl = (rh - th) + rest                      # th + tl = rh + rest (fast two-sum)
    v = -ONE / th                              # odd quadrants: -1/tan, with the division
    v = v - ((-ONE - v * th) - v * tl) * v     # residual and tl folded back in
    v = v if (q == ONE) | (q == THREE) else th
    v = x if abs(x) < TINY_SIN else v
    return libm_if(abs(x) > TRIG_MAX, x, v, "tan")


# ---- erf -------------------------------------------------------------------------
# |x| < 1: erf = x + x*P(x^2)   (_fit.py "erfs32")
P0, P1, P2, P3, P4, P5, P6 = map(F, (
    0.12837916612625122, -0.3761262595653534, 0.11283578723669052, -0.026853354647755623,
    0.005187200848013163, -0.0007998461951501667, 7.809903763700277e-05
))
# 1 <= |x| <= 4: erf = 1 - exp(L(|x|) - x^2), L = log(erfc(x) exp(x^2))   (_fit.py "erfL32")
L0, L1, L2, L3, L4, L5, L6 = map(F, (
    -0.00034152469015680254, -1.1270891427993774, 0.36185503005981445, -0.10310659557580948,
    0.021837975829839706, -0.002947635482996702, 0.0001863770594354719
))


@njit(**JIT_OPTIONS)
def erf(x):
    a = abs(x)
    z = x * x
    p = P6
    p = p * z + P5
    p = p * z + P4
    p = p * z + P3
    p = p * z + P2
    p = p * z + P1
    p = p * z + P0
    small = x + x * p
    ac = FOUR if a > FOUR else a               # erf(4) rounds to 1; NaN stays NaN
    l = L6
    l = l * ac + L5
    l = l * ac + L4
    l = l * ac + L3
    l = l * ac + L2
    l = l * ac + L1
    l = l * ac + L0
    big = ONE - _exp_small(l - ac * ac)
    big = math.copysign(big, x)
    return small if a < ONE else big
