"""SLEEF's double-precision ``xerf_u1`` (``Sleef_erfd8_u10``, AVX-512 FMA build): what ATen's
``Vectorized<double>::erf`` calls, hence the bits of the vector lanes of gelu's float64 kernels
(nn/functional/activation_kernels.py).  ``Vectorized<float>::erf`` is ATen's own polynomial
(``erf_aten_f32``, below), over SLEEF's ``expf``.

Written in SLEEF's operation order with its double-double helpers (``_sleef``'s FMA variants);
its Estrin macros POLY5/POLY8/POLY16/POLY21 (misc.h) nest as spelled out in ``_poly21``.
SLEEF decides per 8-lane vector whether every |x| <= 2.5 (then skips the other branch), but the
lanes' values are the same either way: here every element picks its branch by a select.
Compiled with ``SLEEF_JIT`` (no contraction: every FMA is an explicit ``fma``).
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ._intrinsics import fma, ldexp_m, select
from ._sleef import (
    L2LD,
    L2UD,
    MAGIC_D,
    R_LN2D,
    SLEEF_JIT,
    _ddadd_f_f2,
    _dfadd2_f2f,
    _dfadd_f2f2,
    _dfadd_f_f,
    _dfmul_f2f,
    _dfrec,
    _dfsqu_f2,
    exp_u10_f32,
)

_D = np.float64
ZERO, ONE, HALF = _D(0), _D(1), _D(0.5)

# xerf_u1's POLY21 coefficients, highest first: |x| <= 2.5, then |x| > 2.5
_C_LO = tuple(map(_D, (
    -0.2083271002525222097e-14, +0.7151909970790897009e-13, -0.1162238220110999364e-11,
    +0.1186474230821585259e-10, -0.8499973178354613440e-10, +0.4507647462598841629e-9,
    -0.1808044474288848915e-8, +0.5435081826716212389e-8, -0.1143939895758628484e-7,
    +0.1215442362680889243e-7, +0.1669878756181250355e-7, -0.9808074602255194288e-7,
    +0.1389000557865837204e-6, +0.2945514529987331866e-6, -0.1842918273003998283e-5,
    +0.3417987836115362136e-5, +0.3860236356493129101e-5, -0.3309403072749947546e-4,
    +0.1060862922597579532e-3, +0.2323253155213076174e-3, +0.1490149719145544729e-3)))
_C_HI = tuple(map(_D, (
    -0.4024015130752621932e-18, +0.3847193332817048172e-16, -0.1749316241455644088e-14,
    +0.5029618322872872715e-13, -0.1025221466851463164e-11, +0.1573695559331945583e-10,
    -0.1884658558040203709e-9, +0.1798167853032159309e-8, -0.1380745342355033142e-7,
    +0.8525705726469103499e-7, -0.4160448058101303405e-6, +0.1517272660008588485e-5,
    -0.3341634127317201697e-5, -0.2515023395879724513e-5, +0.6539731269664907554e-4,
    -0.3551065097428388658e-3, +0.1210736097958368864e-2, -0.2605566912579998680e-2,
    +0.1252823202436093193e-2, +0.1820191395263313222e-1, -0.1021557155453465954e+0)))
# poly4dd's double-double coefficients (c2, c1, c0), both ranges
_DD_LO = tuple(map(_D, (0.0092877958392275604405, 7.9287559463961107493e-19,
                        0.042275531758784692937, 1.3785226620501016138e-19,
                        0.07052369794346953491, 9.5846628070792092842e-19)))
_DD_HI = tuple(map(_D, (-0.63691044383641748361, -2.4249477526539431839e-17,
                        -1.1282926061803961737, -6.2970338860410996505e-17,
                        -1.2261313785184804967e-05, -5.5329707514490107044e-22)))
# expk's POLY10 coefficients, highest first
_E = tuple(map(_D, (
    2.51069683420950419527139e-08, 2.76286166770270649116855e-07, 2.75572496725023574143864e-06,
    2.48014973989819794114153e-05, 0.000198412698809069797676111, 0.0013888888939977128960529,
    0.00833333333332371417601081, 0.0416666666665409524128449, 0.166666666666666740681535,
    0.500000000000000999200722)))
TWO_OVER_SQRTPI = _D(1.12837916709551262756245475959)
TINY, SIX, LO_EXP = _D(1e-8), _D(6), _D(-1000)


@njit(**SLEEF_JIT)
def _p4(x, x2, c):
    """POLY4(x, x2, c[0..3]) = x2*(x*c0 + c1) + (x*c2 + c3)."""
    return fma(x2, fma(x, c[0], c[1]), fma(x, c[2], c[3]))


@njit(**SLEEF_JIT)
def _p8(x, x2, x4, c):
    return fma(x4, _p4(x, x2, c[0:4]), _p4(x, x2, c[4:8]))


@njit(**SLEEF_JIT)
def _poly21(x, x2, x4, x8, x16, c):
    """MLA(x16, POLY5(d4..d0), POLY16(cf..c0)), POLY5 = MLA(x4, d4, POLY4(d3..d0)),
    POLY16 = MLA(x8, POLY8(cf..c8), POLY8(c7..c0))."""
    p5 = fma(x4, c[0], _p4(x, x2, c[1:5]))
    p16 = fma(x8, _p8(x, x2, x4, c[5:13]), _p8(x, x2, x4, c[13:21]))
    return fma(x16, p5, p16)


@njit(**SLEEF_JIT)
def _ddmla(x, yh, yl, zh, zl):
    """ddmla_vd2_vd_vd2_vd2: z + y * x."""
    mh, ml = _dfmul_f2f(yh, yl, x)
    return _dfadd_f2f2(zh, zl, mh, ml)


@njit(**SLEEF_JIT)
def _expk(dh, dl):
    """SLEEF's expk of a double-double (its u10 exp's kernel), one double; 0 below -1000."""
    u = (dh + dl) * R_LN2D
    dq = (u + MAGIC_D) - MAGIC_D                 # vrint
    sh, sl = _dfadd2_f2f(dh, dl, dq * -L2UD)
    sh, sl = _dfadd2_f2f(sh, sl, dq * -L2LD)
    sh, sl = _dfadd_f_f(sh, sl)                   # ddnormalize
    s2 = sh * sh
    s4 = s2 * s2
    s8 = s4 * s4
    c = _E
    u = fma(s8, fma(sh, c[0], c[1]), _p8(sh, s2, s4, c[2:10]))   # POLY10
    th, tl = _ddadd_f_f2(ONE, sh, sl)
    qh, ql = _dfsqu_f2(sh, sl)
    qh, ql = _dfmul_f2f(qh, ql, u)
    th, tl = _dfadd_f2f2(th, tl, qh, ql)
    u = ldexp_m(th + tl, dq + MAGIC_D)
    return select(dh < LO_EXP, ZERO, u)


@njit(**SLEEF_JIT)
def erf_u1_f64(a):
    x = abs(a)
    x2 = x * x
    x4 = x2 * x2
    x8 = x4 * x4
    x16 = x8 * x8
    lo = x <= _D(2.5)
    # the coefficient sets are selected per lane (vsel_vd_vo_d_d), then one POLY21
    c = _C_LO if lo else _C_HI
    d = _DD_LO if lo else _DD_HI
    t = _poly21(x, x2, x4, x8, x16, c)
    # poly4dd(x, t, c2, c1, c0) = ddmla(x*x, poly2dd(x, t, c2), poly2dd_b(x, c1, c0))
    ah, al = _ddmla(x, t, ZERO, d[0], d[1])
    bh, bl = _ddmla(x, d[2], d[3], d[4], d[5])
    th, tl = _ddmla(x * x, ah, al, bh, bl)
    if lo:
        mh, ml = _dfmul_f2f(th, tl, x)
        sh, sl = _ddadd_f_f2(ONE, mh, ml)
        sh, sl = _dfsqu_f2(sh, sl)
        sh, sl = _dfsqu_f2(sh, sl)
        sh, sl = _dfsqu_f2(sh, sl)
        sh, sl = _dfsqu_f2(sh, sl)
        th, tl = _dfrec(sh, sl, ONE)
    else:
        th, tl = _expk(th, tl), ZERO
    th, tl = _dfadd2_f2f(th, tl, -ONE)
    z = -(th + tl)
    z = select(x < TINY, x * TWO_OVER_SQRTPI, z)
    z = select(x >= SIX, ONE, z)
    z = select(abs(a) == np.inf, ONE, z)
    z = select(a == ZERO, ZERO, z)
    return _mulsign(z, a)


@njit(**SLEEF_JIT)
def _mulsign(z, a):
    """vmulsign: z with its sign bit xor-ed with a's."""
    return select(math.copysign(ONE, a) < ZERO, -z, z)


# ---- ATen's Vectorized<float>::erf (vec512_float.h): Abramowitz-Stegun 7.1.26 with SLEEF's
# expf: sign(x) * (1 - r(t) * t * exp(-x*x)), t = 1 / (p*|x| + 1) --------------------------
_F = np.float32
P_F, P1_F, P2_F, P3_F, P4_F, P5_F = map(_F, (0.3275911, 0.254829592, -0.284496736, 1.421413741,
                                             -1.453152027, 1.061405429))
ONE_F = _F(1)


@njit(**SLEEF_JIT)
def erf_aten_f32(x):
    a = abs(x)
    t = ONE_F / fma(P_F, a, ONE_F)
    r = fma(fma(fma(fma(P5_F, t, P4_F), t, P3_F), t, P2_F), t, P1_F)
    e = -exp_u10_f32(-(x * x))
    y = fma(e * t, r, ONE_F)
    return select(math.copysign(ONE_F, x) < _F(0), -y, y)


def vec_erf(x):
    """``Vectorized<scalar_t>::erf`` on AVX-512: ``erf_aten_f32`` / ``erf_u1_f64`` by type
    (a Numba-callable stub; from Python, NumPy's erf via math)."""
    return math.erf(x)


@overload(vec_erf, jit_options=SLEEF_JIT, target="cpu")
def _vec_erf(x):
    if x == types.float32:
        return lambda x: erf_aten_f32(x)
    if x == types.float64:
        return lambda x: erf_u1_f64(x)
    return None
