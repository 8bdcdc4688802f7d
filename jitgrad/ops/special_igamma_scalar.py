"""Scalar kernels of the regularized incomplete gamma functions: ports of ATen's
``aten/src/ATen/native/Math.h`` (``calc_igamma``, ``calc_igammac`` and their helpers
``_igam_helper_fac``, ``_igam_helper_series``, ``_igamc_helper_series``,
``_igamc_helper_continued_fraction``, ``_igam_helper_asymptotic_series``, ``ratevl`` over
Boost's ``lanczos_sum_expg_scaled``), themselves SciPy's / Cephes' igam and igamc.

Vocabulary functions bound per target like ``ops/special_scalar.py``'s (``bind(env, jit)``,
see that module for the env's names; this one also uses ``expm1`` and ``igam_coeff(like, k,
n)``, the target's read of ``special_igamma_table``). The branches and constants are ATen's.
Where ATen's ``float`` code mixes in a ``double`` literal (``0.4 * fabs(a)``, ``x > 1.1``, the
exponential of the asymptotic series' tail, ...) C++ computes in double: ``wide`` does the same
on the CPU (the identity on CUDA).

ATen's CPU build contracts ``a * b - c`` into one fma in most places: ``mad(fused, a, b, c)``
does so where ``fused``. Measured against PyTorch 2.13 (CPU), the copy of ``calc_igammac``
that ``calc_igamma`` runs for ``x > max(1, a)`` is not contracted at all while the stand-alone
``calc_igammac`` and the rest of ``calc_igamma`` are, hence the flag through the helpers.
"""
# ruff: noqa: F821 - the bodies use the names of the target's env, bound by ``bind``
from __future__ import annotations

import types

__all__ = ["bind", "NAMES"]

#: the vocabulary names this module provides
NAMES = ("igamma", "igammac")

# Boost's lanczos_sum_expg_scaled (13 coefficients each; the denominator's last is 0)
_LANCZOS_NUM = (
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076.,
                150917976., 120543840., 39916800., 0.)
_LANCZOS_G = 6.024680040776729583740234375
_PI_F32 = 3.1415927410125732  # c10::pi<float>


def _horner(out, var, coeffs, indent):
    """``ratevl``'s loop ``r = r * y + c`` unrolled."""
    lines = [f"{out} = lit(x, {coeffs[0]!r})"]
    lines += [f"{out} = mad(fused, {out}, {var}, lit(x, {c!r}))" for c in coeffs[1:]]
    return [indent + line for line in lines]


def _lanczos_source():
    """ATen's ``ratevl(x, num, 12, denom, 12)`` unrolled: Horner in x for |x| <= 1, in 1/x
    over the reversed tables otherwise (its ``pow(x, N - M)`` is 1)."""
    lines = ["def _lanczos_sum_expg_scaled(x, fused):", "    if abs(x) > lit(x, 1.0):",
             "        y = lit(x, 1.0) / x"]
    lines += _horner("n", "y", _LANCZOS_NUM[::-1], "        ")
    lines += _horner("d", "y", _LANCZOS_DEN[::-1], "        ")
    lines += ["        return n / d"]
    lines += _horner("n", "x", _LANCZOS_NUM, "    ") + _horner("d", "x", _LANCZOS_DEN, "    ")
    lines += ["    return n / d"]
    return "\n".join(lines)


def mad(fused, a, b, c):
    """``a * b + c``, rounded once where ATen's build contracts it."""
    return fma(a, b, c) if fused else a * b + c


def _nan(x):
    return lit(x, 0.0) / lit(x, 0.0)


def _machep(x):
    return lit(x, 5.9604644775390625E-8) if single(x) else lit(x, 1.11022302462515654042E-16)


def _igam_helper_fac(a, x, fused):
    """x^a exp(-x) / gamma(a)."""
    aw = wide(a)
    if wide(abs(a - x)) > lit(aw, 0.4) * wide(abs(a)):
        maxlog = lit(a, 88.72283905206835) if single(a) else lit(a, 7.09782712893383996843E2)
        ax = mad(fused, a, log(x), -x) - lgamma(a)
        if ax < -maxlog:
            return lit(a, 0.0)
        return exp(ax)
    g = lit(a, _LANCZOS_G)
    fac = a + g - lit(a, 0.5)
    res = sqrt(fac / lit(a, 2.718281828459045)) / _lanczos_sum_expg_scaled(a, fused)
    if a < lit(a, 200.0) and x < lit(a, 200.0):
        res *= exp(a - x) * pow_(x / fac, a)
    else:
        num = x - a - g + lit(a, 0.5)
        numfac = num / fac
        # x * (0.5 - g) / fac, the sum and its exp in double (C++ promotion); in double
        # the product a * (...) may be contracted into the sum, in float it is rounded first
        u = wide(x) * (lit(aw, 0.5) - wide(g)) / wide(fac)
        v = log1p(numfac) - numfac
        t = wide(a * v) + u if single(a) else mad(fused, aw, wide(v), u)
        res = lit(a, wide(res) * exp(t))
    return res


def _igam_helper_series(a, x):
    """igam by DLMF 8.11.4."""
    ax = _igam_helper_fac(a, x, True)
    if ax == lit(a, 0.0):
        return lit(a, 0.0)
    machep = _machep(a)
    r = a
    c = lit(a, 1.0)
    ans = lit(a, 1.0)
    for _ in range(2000):
        r += lit(a, 1.0)
        c *= x / r
        ans += c
        if c <= machep * ans:
            break
    return ans * ax / a


def _igamc_helper_series(a, x, fused):
    """igamc by DLMF 8.7.3 (the series of igam, arranged against cancellation)."""
    machep = _machep(a)
    fac = lit(a, 1.0)
    s = lit(a, 0.0)
    n = lit(a, 1.0)
    while n < lit(a, 2000.0):
        fac *= -x / n
        term = fac / (a + n)
        s += term
        if abs(term) <= machep * abs(s):
            break
        n += lit(a, 1.0)
    logx = log(x)
    term = -expm1(mad(fused, a, logx, -lgamma(lit(a, 1.0) + a)))
    return mad(fused, -exp(mad(fused, a, logx, -lgamma(a))), s, term)


def _igam_helper_asymptotic_series(a, x, igam):
    """igam / igamc by DLMF 8.12.3 / 8.12.4 (a large, x near a). ATen caches eta**n in an
    array; the same products are formed here as the loop goes (no local array on devices)."""
    machep = _machep(a)
    one = lit(a, 1.0)
    lam = x / a
    sigma = (x - a) / a
    sgn = -one if igam else one
    if lam > one:
        eta = sqrt(lit(a, -2.0) * (log1p(sigma) - sigma))
    elif lam < one:
        eta = -sqrt(lit(a, -2.0) * (log1p(sigma) - sigma))
    else:
        eta = lit(a, 0.0)
    res = lit(a, 0.5) * erfc(sgn * eta * sqrt(a / lit(a, 2.0)))
    absoldterm = one / lit(a, 0.0)
    s = lit(a, 0.0)
    afac = one
    for k in range(25):
        ck = lit(a, igam_coeff(a, k, 0))
        p = one
        for n in range(1, 25):
            p = eta * p
            ckterm = lit(a, igam_coeff(a, k, n)) * p
            ck += ckterm
            if abs(ckterm) < machep * abs(ck):
                break
        term = ck * afac
        absterm = abs(term)
        if absterm > absoldterm:
            break
        s += term
        if absterm < machep * abs(s):
            break
        absoldterm = absterm
        afac /= a
    # the tail in double on the CPU: -0.5 is a double literal, pi<float> a float
    aw = wide(a)
    ew = wide(eta)
    tail = (wide(sgn) * exp(lit(aw, -0.5) * aw * ew * ew) * wide(s)
            / wide(sqrt(lit(a, 2.0) * lit(a, _PI_F32) * a)))
    return lit(a, wide(res) + tail)


def _igamc_helper_continued_fraction(a, x, fused):
    """igamc by DLMF 8.9.2."""
    ax = _igam_helper_fac(a, x, fused)
    if ax == lit(a, 0.0):
        return lit(a, 0.0)
    machep = _machep(a)
    big = lit(a, 16777216.0) if single(a) else lit(a, 4.503599627370496e15)
    biginv = lit(a, 5.9604644775390625E-8) if single(a) else lit(a, 2.22044604925031308085e-16)
    one = lit(a, 1.0)
    y = one - a
    z = x + y + one
    c = lit(a, 0.0)
    pkm2 = one
    qkm2 = x
    pkm1 = x + one
    qkm1 = z * x
    ans = pkm1 / qkm1
    for _ in range(2000):
        c += one
        y += one
        z += lit(a, 2.0)
        yc = y * c
        pk = mad(fused, pkm1, z, -(pkm2 * yc))
        qk = mad(fused, qkm1, z, -(qkm2 * yc))
        if qk != lit(a, 0.0):
            r = pk / qk
            t = abs((ans - r) / r)
            ans = r
        else:
            t = one
        pkm2 = pkm1
        pkm1 = pk
        qkm2 = qkm1
        qkm1 = qk
        if abs(pk) > big:
            pkm2 *= biginv
            pkm1 *= biginv
            qkm2 *= biginv
            qkm1 *= biginv
        if t <= machep:
            break
    return ans * ax


def _asymptotic_regime(a, x):
    """a large and x near a (SciPy's SMALL = 20, LARGE = 200, ratios 0.3 and 4.5)."""
    absxma_a = abs(x - a) / a
    if a > lit(a, 20.0) and a < lit(a, 200.0) and absxma_a < lit(a, 0.3):
        return True
    return a > lit(a, 200.0) and absxma_a < lit(a, 4.5) / sqrt(a)


def igammac(a, x):
    """The regularized upper incomplete gamma Q(a, x) (ATen's calc_igammac)."""
    zero = lit(a, 0.0)
    one = lit(a, 1.0)
    inf = one / zero
    if x < zero or a < zero:
        return _nan(a)
    if a == zero:
        return zero if x > zero else _nan(a)
    if x == zero:
        return one
    if a == inf:
        return _nan(a) if x == inf else one
    if x == inf:
        return zero
    if _asymptotic_regime(a, x):
        return _igam_helper_asymptotic_series(a, x, False)
    xw = wide(x)
    if xw > lit(xw, 1.1):
        if x < a:
            return one - _igam_helper_series(a, x)
        return _igamc_helper_continued_fraction(a, x, True)
    if xw <= lit(xw, 0.5):
        if lit(xw, -0.4) / wide(log(x)) < wide(a):
            return one - _igam_helper_series(a, x)
        return _igamc_helper_series(a, x, True)
    if xw * lit(xw, 1.1) < wide(a):
        return one - _igam_helper_series(a, x)
    return _igamc_helper_series(a, x, True)


def igamma(a, x):
    """The regularized lower incomplete gamma P(a, x) (ATen's calc_igamma)."""
    zero = lit(a, 0.0)
    one = lit(a, 1.0)
    inf = one / zero
    if x < zero or a < zero:
        return _nan(a)
    if a == zero:
        return one if x > zero else _nan(a)
    if x == zero:
        return zero
    if a == inf:
        return _nan(a) if x == inf else zero
    if x == inf:
        return one
    if _asymptotic_regime(a, x):
        return _igam_helper_asymptotic_series(a, x, True)
    if x > one and x > a:
        # one - igammac(a, x), whose branches reduce to these two here (x > a), computed
        # without contractions as PyTorch's CPU build does in this copy
        if wide(x) > lit(wide(x), 1.1):
            return one - _igamc_helper_continued_fraction(a, x, False)
        return one - _igamc_helper_series(a, x, False)
    return _igam_helper_series(a, x)


_FUNCTIONS = (mad, _nan, _machep, _igam_helper_fac, _igam_helper_series, _igamc_helper_series,
              _igam_helper_asymptotic_series, _igamc_helper_continued_fraction,
              _asymptotic_regime, igammac, igamma)


def bind(env: dict, jit) -> dict:
    """``igamma`` and ``igammac`` with ``env``'s names as globals, each function (helpers too)
    wrapped in ``jit``."""
    ns = dict(env)
    ns["_PI_F32"], ns["_LANCZOS_G"] = _PI_F32, _LANCZOS_G
    exec(compile(_lanczos_source() + "\n", "<jitgrad special_igamma_scalar>", "exec"), ns)
    made = ["_lanczos_sum_expg_scaled"]
    for fn in _FUNCTIONS:
        ns[fn.__name__] = types.FunctionType(fn.__code__, ns, fn.__name__)
        made.append(fn.__name__)
    for name in made:
        ns[name] = jit(ns[name])
    return {name: ns[name] for name in NAMES}
