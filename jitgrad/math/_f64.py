"""float64 implementations.  Same structure as _f32.py, with float64 constants/degrees."""
import math

import numpy as np
from numba import njit

from ._config import JIT_OPTIONS
from ._intrinsics import ldexp_m, libm_if, log_reduce, pow2_m, quadrant_m

F = np.float64

ZERO, HALF, ONE, TWO, THREE, TWENTY = F(0), F(0.5), F(1), F(2), F(3), F(20)
INF, NAN = F(np.inf), F(np.nan)

# ---- exp / expm1 ----------------------------------------------------------------
LOG2E = F(1.4426950408889634)
MAGIC = F(1.5 * 2.0 ** 52)
L2U = F(float.fromhex("0x1.62e42fefa3000p-1"))   # 12 trailing zero bits: q*L2U exact
L2L = F(2.8235290563031577122588448175013436025525412068e-13)
EXP_HI = F(710.0)                 # exp overflows above ~709.78
EXP_LO = F(-746.0)                # exp underflows to 0 below ~-745.13
EM1_LO = F(-45.0)                 # expm1 rounds to -1 below ~-37.4
# expm1(r) = r + r^2*u(r), |r| <= ln2/2   (_fit.py "expu64")
E0, E1, E2, E3, E4, E5, E6, E7, E8, E9, E10 = map(F, (
    0.5, 0.16666666666666677, 0.041666666666666685, 0.008333333333321756, 0.0013888888888890765,
    0.00019841269885460626, 2.4801587288753607e-05, 2.755724504267432e-06,
    2.7557318980856627e-07, 2.5108718653469987e-08, 2.0897617188454364e-09
))
TINY_EM1 = F(2.0 ** -54)
EM1_QBIG = F(53)


@njit(**JIT_OPTIONS)
def _u(s):
    u = E10
    u = u * s + E9
    u = u * s + E8
    u = u * s + E7
    u = u * s + E6
    u = u * s + E5
    u = u * s + E4
    u = u * s + E3
    u = u * s + E2
    u = u * s + E1
    return u * s + E0


@njit(**JIT_OPTIONS)
def _expm1_red(x, lo):
    """See _f32._expm1_red."""
    x = EXP_HI if x > EXP_HI else x
    x = lo if x < lo else x
    t = x * LOG2E + MAGIC
    q = t - MAGIC
    s1 = x - q * L2U
    s = s1 - q * L2L
    slo = (s1 - s) - q * L2L
    return s, s * s * _u(s) + slo, q, t


@njit(**JIT_OPTIONS)
def exp(x):
    s, w, q, t = _expm1_red(x, EXP_LO)
    h = ONE + s
    y = h + (((ONE - h) + s) + w)
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
    h = pow2_m(t, -1)
    r = ((h * s + (h - HALF)) + h * w) if q < EM1_QBIG else (((h * s - HALF) + h * w) + h)
    r = r * TWO
    r = x if abs(x) < TINY_EM1 else r
    return r


# ---- log / log1p (fdlibm e_log.c kernel) --------------------------------------------
LG1, LG2, LG3, LG4, LG5, LG6, LG7 = map(F, (
    6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
    2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
    1.479819860511658591e-01
))
LN2_HI = F(6.93147180369123816490e-01)
LN2_LO = F(1.90821492927058770002e-10)
TINY_L1P = F(2.0 ** -54)


@njit(**JIT_OPTIONS)
def _log_kernel(m, k, c):
    f = m - ONE
    s = f / (TWO + f)
    z = s * s
    w = z * z
    t1 = w * (LG2 + w * (LG4 + w * LG6))
    t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)))
    R = t2 + t1
    hfsq = HALF * f * f
    return k * LN2_HI - ((hfsq - (s * (hfsq + R) + (k * LN2_LO + c))) - f)


@njit(**JIT_OPTIONS)
def log(x):
    m, k = log_reduce(x)
    r = _log_kernel(m, k, ZERO)
    r = r if x < INF else x
    r = -INF if x == ZERO else r
    r = NAN if x < ZERO else r
    return r


@njit(**JIT_OPTIONS)
def log1p(x):
    u = ONE + x
    m, k = log_reduce(u)
    c = (ONE - (u - x)) if x > ONE else (x - (u - ONE))
    r = _log_kernel(m, k, c / u)
    r = x if abs(x) < TINY_L1P else r
    r = r if x < INF else x
    r = -INF if x == -ONE else r
    r = NAN if x < -ONE else r
    return r


# ---- tanh / sigmoid / softplus -------------------------------------------------------
# |x| < 0.625: tanh = x + x^3 P(x^2)/Q(x^2)   (Cephes tanh.c)
TP0, TP1, TP2 = map(F, (-9.64399179425052238628e-1, -9.92877231001918586564e1,
                        -1.61468768441708447952e3))
TQ0, TQ1, TQ2 = map(F, (1.12811678491632931402e2, 2.23548839060100448583e3,
                        4.84406305325125486048e3))
TH_X = F(0.625)


@njit(**JIT_OPTIONS)
def tanh(x):
    a = abs(x)
    z = a * a
    small = a < TH_X
    pz = (TP0 * z + TP1) * z + TP2
    qz = ((z + TQ0) * z + TQ1) * z + TQ2
    e = _exp_small(TWENTY + TWENTY if a > TWENTY else a + a)  # tanh = 1 beyond ~19.1
    # one division for both branches: base + num/den
    base = a if small else ONE
    num = (a * z) * pz if small else -TWO
    den = qz if small else e + ONE
    r = base + num / den                       # exact for tiny a (and keeps subnormals)
    return math.copysign(r, x)


@njit(**JIT_OPTIONS)
def sigmoid(x):
    e = exp(-abs(x))
    pos = x >= ZERO
    num = ONE if pos else e
    d = ONE + e
    derr = (ONE - d) + e
    q = num / d
    rinv = q if pos else ONE - q
    return q + ((num - q * d) - q * derr) * rinv


@njit(**JIT_OPTIONS)
def softplus(x):
    m = x if x > ZERO else ZERO
    return m + log1p(exp(-abs(x)))


# ---- sin / cos / tan (fdlibm __rem_pio2 medium case, __kernel_sin, musl __cos) ------------
# |x| <= TRIG_MAX: Cody-Waite by pi/2 in three 33-bit parts (q*PIO2_k exact for |q| < 2**20)
# plus a tail, accumulated as a double-float; beyond it (rare), libm through a masked vector
# call (see _intrinsics.libm_if).
TWO_OVER_PI = F(0.63661977236758134308)
PIO2_1 = F(1.57079632673412561417e+00)
PIO2_2 = F(6.07710050630396597660e-11)
PIO2_3 = F(2.02226624871116645580e-21)
PIO2_3T = F(8.47842766036889956997e-32)
TRIG_MAX = F(2.0 ** 19)
S1, S2, S3, S4, S5, S6 = map(F, (
    -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
    2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
))
C1, C2, C3, C4, C5, C6 = map(F, (
    4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
    -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
))
TINY_SIN = F(2.0 ** -27)


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
    rh, e = _two_sum(r, -(q * PIO2_2))
    rh, e2 = _two_sum(rh, -(q * PIO2_3))
    rl = (e + e2) - q * PIO2_3T
    h = rh + rl
    return h, rl - (h - rh), quadrant_m(t)


@njit(**JIT_OPTIONS)
def _ksin(x, y):
    z = x * x
    v = z * x
    r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))
    return x - ((z * (HALF * y - v * r) - y) - v * S1)


@njit(**JIT_OPTIONS)
def _kcos(x, y):
    z = x * x
    w = z * z
    r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6))
    hz = HALF * z
    w = ONE - hz
    return w + (((ONE - w) - hz) + (z * r - x * y))


@njit(**JIT_OPTIONS)
def sin(x):
    rh, rl, q = _rem_pio2(x)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    v = c if (q == ONE) | (q == THREE) else s
    v = -v if q >= TWO else v
    v = x if abs(x) < TINY_SIN else v
    return libm_if(abs(x) > TRIG_MAX, x, v, "sin")


@njit(**JIT_OPTIONS)
def cos(x):
    rh, rl, q = _rem_pio2(x)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    v = s if (q == ONE) | (q == THREE) else c
    v = -v if (q == ONE) | (q == TWO) else v
    return libm_if(abs(x) > TRIG_MAX, x, v, "cos")


@njit(**JIT_OPTIONS)
def tan(x):
    rh, rl, q = _rem_pio2(x)
    s = _ksin(rh, rl)
    c = _kcos(rh, rl)
    odd = (q == ONE) | (q == THREE)
    num = -c if odd else s
    den = s if odd else c
    v = num / den
    v = x if abs(x) < TINY_SIN else v
    return libm_if(abs(x) > TRIG_MAX, x, v, "tan")


# ---- erf -------------------------------------------------------------------------
# |x| < 1: erf = x + x*P(x^2)   (_fit.py "erfs64")
(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12) = map(F, (
    0.1283791670955126, -0.3761263890318409, 0.11283791670970629, -0.02686617064791709,
    0.005223977651404151, -0.0008548328454770251, 0.00012055383080021611,
    -1.4926804685566001e-05, 1.6479818682340244e-06, -1.654407991844471e-07,
    1.5927093902927832e-08, -1.6141042862874007e-09, 1.3815357167515622e-10
))
# 1 <= |x| <= 6: erf = 1 - exp(L(|x|) - x^2), L = log(erfc(x) exp(x^2)) piecewise on
# [1, 1.5], [1.5, 2.25], [2.25, 3.5], [3.5, 6] in t = |x| - centre  (_fit.py "erfL64_*")
ERF_B1, ERF_B2, ERF_B3, ERF_MAX = F(1.5), F(2.25), F(3.5), F(6.0)
_LC = (F(1.25), F(1.875), F(2.875), F(4.75))
_L = [
    [-1.0001536619221256, -0.5677239416692392, 0.12918983594113903, -0.03268700868290532,
     0.007791961622384503, -0.001606950926734057, 0.00024678350088447483,
     -1.0043256700359181e-05, -1.0821718954035629e-05, 5.1953889895734405e-06,
     -1.5051575495198286e-06, 6.363631149308527e-08],
    [-1.3114467176930773, -0.43802371386343414, 0.08277314955270093, -0.018370399429739337,
     0.004061666998970265, -0.0008408815201039421, 0.00015423833789246665,
     -2.2498171067026163e-05, 1.581816629181315e-06, 4.739397606874224e-07,
     -2.753987271068557e-07, 8.899883507998605e-08],
    [-1.681713301109529, -0.3147634474684403, 0.04551707459748956, -0.008128681965827979,
     0.0015174705196292907, -0.0002804595067217176, 4.979871974272561e-05,
     -8.263729966520186e-06, 1.2300648699375145e-06, -1.5105537647574454e-07,
     9.631918996778119e-09, 3.7191473479321944e-09],
    [-2.151558941910365, -0.20208857697334864, 0.019659362909277448, -0.0024595879550018645,
     0.0003342421781946952, -4.6785306094604375e-05, 6.582937292546648e-06,
     -9.186642983531815e-07, 1.2348774857540178e-07, -1.852537208564209e-08,
     1.0773786911636558e-09, -5.463449934584406e-10],
]
(LA0, LA1, LA2, LA3, LA4, LA5, LA6, LA7, LA8, LA9, LA10, LA11) = [F(v) for v in _L[0]]
(LB0, LB1, LB2, LB3, LB4, LB5, LB6, LB7, LB8, LB9, LB10, LB11) = [F(v) for v in _L[1]]
(LC0, LC1, LC2, LC3, LC4, LC5, LC6, LC7, LC8, LC9, LC10, LC11) = [F(v) for v in _L[2]]
(LD0, LD1, LD2, LD3, LD4, LD5, LD6, LD7, LD8, LD9, LD10, LD11) = [F(v) for v in _L[3]]
CA, CB, CC, CD = _LC


@njit(**JIT_OPTIONS)
def _sel(i1, i2, i3, a, b, c, d):
    return d if i3 else (c if i2 else (b if i1 else a))


@njit(**JIT_OPTIONS)
def erf(x):
    a = abs(x)
    z = x * x
    p = P12
    p = p * z + P11
    p = p * z + P10
    p = p * z + P9
    p = p * z + P8
    p = p * z + P7
    p = p * z + P6
    p = p * z + P5
    p = p * z + P4
    p = p * z + P3
    p = p * z + P2
    p = p * z + P1
    p = p * z + P0
    small = x + x * p
    ac = ERF_MAX if a > ERF_MAX else a           # erf(6) rounds to 1; NaN stays NaN
    i1 = ac >= ERF_B1
    i2 = ac >= ERF_B2
    i3 = ac >= ERF_B3
    t = ac - _sel(i1, i2, i3, CA, CB, CC, CD)
    l = _sel(i1, i2, i3, LA11, LB11, LC11, LD11)
    l = l * t + _sel(i1, i2, i3, LA10, LB10, LC10, LD10)
    l = l * t + _sel(i1, i2, i3, LA9, LB9, LC9, LD9)
    l = l * t + _sel(i1, i2, i3, LA8, LB8, LC8, LD8)
    l = l * t + _sel(i1, i2, i3, LA7, LB7, LC7, LD7)
    l = l * t + _sel(i1, i2, i3, LA6, LB6, LC6, LD6)
    l = l * t + _sel(i1, i2, i3, LA5, LB5, LC5, LD5)
    l = l * t + _sel(i1, i2, i3, LA4, LB4, LC4, LD4)
    l = l * t + _sel(i1, i2, i3, LA3, LB3, LC3, LD3)
    l = l * t + _sel(i1, i2, i3, LA2, LB2, LC2, LD2)
    l = l * t + _sel(i1, i2, i3, LA1, LB1, LC1, LD1)
    l = l * t + _sel(i1, i2, i3, LA0, LB0, LC0, LD0)
    big = ONE - _exp_small(l - ac * ac)
    big = math.copysign(big, x)
    return small if a < ONE else big
