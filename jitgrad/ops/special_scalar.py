"""Scalar kernels of the gamma, Bessel and normal-quantile functions: ports of ATen's
``aten/src/ATen/native/Math.h`` (``calc_digamma``, ``trigamma``, ``zeta``/``calc_polygamma``,
``calc_i0``/``calc_i0e``/``calc_i1``/``calc_i1e`` with their Chebyshev coefficients,
``calc_ndtri``, ``calc_erfcx``/``erfcx_y100`` with ``special_erfcx_table``, ``calc_log_ndtr``),
so values match PyTorch's to a few ulps (bit for bit on the CPU where ATen's own arithmetic is
reproduced: its compilers contract ``a + b * c`` into fma, which is written out here; the CPU
target compiles these without fast-math flags, so nothing else is fused).

They need loops and branches, so they are not scalar bodies but vocabulary functions
(``registry.SCALAR_VOCABULARY``), written once here and bound per target by ``bind(env, jit)``:
each function is re-created with ``env`` as its globals and wrapped in the target's ``jit``
(``numba.njit`` on the CPU, a device function on CUDA, nothing under the simulator or for the
Python-scalar fallbacks of ``tensor_env``). ``env`` names the math they call (``exp``, ``log``,
``sqrt``, ``sin``, ``tan``, ``pow_``, ``lgamma``, ``trunc``, ``floor``, ``log1p``, ``erfc``,
``fma``, ``erfcx_coeff``), ``lit`` (a constant, or a
cast, in its first argument's type), ``wide`` (to ATen's CPU accumulate type: float64 for
float32 on the CPU, the identity on CUDA, where PyTorch's acc type of float is float) and
``single`` (true for float32 operands: ATen has shorter float coefficient tables for i1/i1e).

Polynomial and Chebyshev evaluations are generated unrolled with one ``lit`` per coefficient,
so float32 code holds float32 constants only (no ``.f64`` in PTX).
"""
# ruff: noqa: F821 - the bodies use the names of the target's env, bound by ``bind``
from __future__ import annotations

import types

__all__ = ["bind", "NAMES"]

#: the vocabulary names this module provides
NAMES = ("digamma", "trigamma", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri", "erfcx",
         "log_ndtr")

_PI = 3.14159265358979323846

# ---- coefficient tables (Math.h) -------------------------------------------------------------

_I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
_I1E_A = (
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)
_DIGAMMA_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
              -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
              8.33333333333333333333E-2)
_NDTRI = {
    "p0": (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
           1.39312609387279679503E1, -1.23916583867381258016E0),
    "q0": (1.00000000000000000000E0, 1.95448858338141759834E0, 4.67627912898881538453E0,
           8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2,
           -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0),
    "p1": (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
           4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
           -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4),
    "q1": (1.00000000000000000000E0, 1.57799883256466749731E1, 4.53907635128879210584E1,
           4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0,
           -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4),
    "p2": (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
           1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
           3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9),
    "q2": (1.00000000000000000000E0, 6.02427039364742014255E0, 3.67983563856160859403E0,
           1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2,
           3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9),
}
# zeta's Euler-Maclaurin denominators
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _chbevl_source(name, coeffs):
    """ATen's ``chbevl(x, coeffs, len)`` unrolled. Its first step, ``x * c0 - 0 + c1``, is one
    fma in PyTorch's build (GCC drops the ``- 0``, leaving a product feeding an addition)."""
    lines = [f"def {name}(x):", "    b2 = lit(x, 0.0)", f"    b1 = lit(x, {coeffs[0]!r})",
             f"    b0 = fma(x, b1, lit(x, {coeffs[1]!r}))"]
    for c in coeffs[2:]:
        lines += ["    b2 = b1", "    b1 = b0", f"    b0 = fma(x, b1, -b2) + lit(x, {c!r})"]
    lines.append("    return lit(x, 0.5) * (b0 - b2)")
    return "\n".join(lines)


_POLEVL_STEP = "fma(r, x, lit(x, {c}))"


def _polevl_source(name, coeffs):
    """ATen's ``polevl(x, coeffs, len(coeffs) - 1)`` (Horner from a zero start) unrolled."""
    lines = [f"def {name}(x):", "    r = lit(x, 0.0)"]
    lines += ["    r = " + _POLEVL_STEP.format(c=repr(c)) for c in coeffs]
    lines.append("    return r")
    return "\n".join(lines)


_GENERATED = "\n\n".join(
    [_chbevl_source("_cheb_i0e_a", _I0E_A), _chbevl_source("_cheb_i0e_b", _I0E_B),
     _chbevl_source("_cheb_i1e_a64", _I1E_A), _chbevl_source("_cheb_i1e_a32", _I1E_A[12:]),
     _chbevl_source("_cheb_i1e_b64", _I1E_B), _chbevl_source("_cheb_i1e_b32", _I1E_B[18:]),
     _polevl_source("_polevl_digamma", _DIGAMMA_A)]
    + [_polevl_source("_polevl_ndtri_" + k, v) for k, v in _NDTRI.items()]) + "\n"


# ---- the functions (bodies written against the env's names) ---------------------------------

def _digamma_positive(x):
    result = lit(x, 0.0)
    while x < lit(x, 10.0):  # push x to be >= 10
        result -= lit(x, 1.0) / x
        x += lit(x, 1.0)
    if x == lit(x, 10.0):
        return result + lit(x, 2.25175258906672110764)  # psi(10)
    y = lit(x, 0.0)
    if x < lit(x, 1.0e17):
        z = lit(x, 1.0) / (x * x)
        y = z * _polevl_digamma(z)
    return result + log(x) - lit(x, 0.5) / x - y


def digamma(x):
    if x == lit(x, 0.0):
        return -(lit(x, 1.0) / x)  # copysign(inf, -x)
    if x < lit(x, 0.0):
        if x == trunc(x):
            return lit(x, 0.0) / lit(x, 0.0)  # NaN at the negative integers
        # reflection through the fractional part; pi / tan(pi r) in the accumulate type
        rw = wide(x - trunc(x))
        t = lit(rw, _PI) / tan(lit(rw, _PI) * rw)
        return _digamma_positive(lit(x, 1.0) - x) - lit(x, t)
    return _digamma_positive(x)


def trigamma(x):
    sign = lit(x, 1.0)
    result = lit(x, 0.0)
    if x < lit(x, 0.5):
        sign = lit(x, -1.0)
        s = sin(lit(x, _PI) * x)
        result -= lit(x, _PI) * lit(x, _PI) / (s * s)
        x = lit(x, 1.0) - x
    for _ in range(6):
        result += lit(x, 1.0) / (x * x)
        x += lit(x, 1.0)
    ixx = lit(x, 1.0) / (x * x)
    # a + b * c contracted to fma as the compilers of PyTorch's kernels do
    inner = fma(-ixx, fma(-ixx, lit(x, 1.0 / 42), lit(x, 1.0 / 30)), lit(x, 1.0 / 6))
    result += fma(ixx, inner, lit(x, 1.0) + lit(x, 1.0) / (lit(x, 2.0) * x)) / x
    return sign * result


def _zeta_acc(x, q, s):
    machep = lit(x, 1.11022302462515654042E-16)
    one = lit(x, 1.0)
    if x == one:
        return one / lit(x, 0.0)
    if x < one:
        return lit(x, 0.0) / lit(x, 0.0)
    if q <= lit(x, 0.0):
        if q == floor(q):
            return one / lit(x, 0.0)
        if x != floor(x):
            return lit(x, 0.0) / lit(x, 0.0)
    a = q
    i = 0
    b = lit(x, 0.0)
    while i < 9 or a <= lit(x, 9.0):
        i += 1
        a += one
        b = pow_(a, -x)
        s += b
        if -machep * s < b and b < machep * s:
            return s
    w = a
    s += b * w / (x - one)
    s = fma(-lit(x, 0.5), b, s)
    a = one
    k = lit(x, 0.0)
    for j in range(12):
        a *= x + k
        b /= w
        t = a * b / _zeta_denominator(x, j)
        s = s + t
        t = abs(t / s)
        if t < machep:
            return s
        k += one
        a *= x + k
        b /= w
        k += one
    return s


def zeta(x, q):
    """Hurwitz zeta in the accumulate type (ATen's ``zeta<scalar_t, is_cuda>``)."""
    # the first term is pow(q, -x) in scalar_t (std::pow of two floats), the rest in acc_t
    return lit(x, _zeta_acc(wide(x), wide(q), wide(pow_(q, -x))))


def polygamma(n, x):
    """``n`` holds an integer >= 0 in ``x``'s type (the wrappers refuse negative n)."""
    if n == lit(x, 0.0):
        return digamma(x)
    if n == lit(x, 1.0):
        return trigamma(x)
    one = lit(x, 1.0)
    sign = one if floor(n * lit(x, 0.5)) * lit(x, 2.0) != n else -one
    return sign * exp(lgamma(n + one)) * zeta(n + one, x)


def i0(v):
    x = abs(v)
    if x <= lit(x, 8.0):
        return exp(x) * _cheb_i0e_a(x / lit(x, 2.0) - lit(x, 2.0))
    return exp(x) * _cheb_i0e_b(lit(x, 32.0) / x - lit(x, 2.0)) / sqrt(x)


def i0e(v):
    x = abs(v)
    if x <= lit(x, 8.0):
        return _cheb_i0e_a(x / lit(x, 2.0) - lit(x, 2.0))
    return _cheb_i0e_b(lit(x, 32.0) / x - lit(x, 2.0)) / sqrt(x)


def _i1e_small(x):  # chbevl(y, A) for x <= 8, float's shorter table for float32
    y = x / lit(x, 2.0) - lit(x, 2.0)
    return _cheb_i1e_a32(y) if single(x) else _cheb_i1e_a64(y)


def _i1e_large(x):
    y = lit(x, 32.0) / x - lit(x, 2.0)
    return _cheb_i1e_b32(y) if single(x) else _cheb_i1e_b64(y)


def i1(v):
    x = abs(v)
    if x <= lit(x, 8.0):
        out = exp(x) * x * _i1e_small(x)
    else:
        out = exp(x) * _i1e_large(x) / sqrt(x)
    return -out if v < lit(v, 0.0) else out


def i1e(v):
    x = abs(v)
    if x <= lit(x, 8.0):
        out = _i1e_small(x) * x
    else:
        out = _i1e_large(x) / sqrt(x)
    return -out if v < lit(v, 0.0) else out


def ndtri(y0):
    zero = lit(y0, 0.0)
    one = lit(y0, 1.0)
    if y0 == zero:
        return -one / zero
    if y0 == one:
        return one / zero
    if y0 < zero or y0 > one:
        return zero / zero
    code = True
    y = y0
    if y > one - lit(y0, 0.13533528323661269189):  # exp(-2)
        y = one - y
        code = False
    if y > lit(y0, 0.13533528323661269189):
        y = y - lit(y0, 0.5)
        y2 = y * y
        x = fma(y, y2 * _polevl_ndtri_p0(y2) / _polevl_ndtri_q0(y2), y)
        return x * lit(y0, 2.50662827463100050242)  # sqrt(2 pi)
    # ATen's CPU build calls C's double ::log / ::sqrt here for float too (wide = float64)
    x = lit(y0, sqrt(lit(wide(y), -2.0) * log(wide(y))))
    xw = wide(x)
    x0 = lit(y0, xw - log(xw) / xw)
    z = one / x
    if x < lit(y0, 8.0):  # y > exp(-32)
        x1 = z * _polevl_ndtri_p1(z) / _polevl_ndtri_q1(z)
    else:
        x1 = z * _polevl_ndtri_p2(z) / _polevl_ndtri_q2(z)
    x = x0 - x1
    return -x if code else x


def _erfcx_y100(y100):
    """ATen's 100-piece Chebyshev fit; ``erfcx_coeff(like, k, j)`` is the target's table read
    (in ``like``'s type). ATen's literals are double, so its CPU float kernel evaluates the
    polynomial in double (``wide``)."""
    k = int(y100)
    if k < 0 or k >= 100:
        return lit(y100, 1.0)  # y100 == 100: |x| below 4 eps, erfcx(x) == 1 to 1e-15
    t = lit(y100, 2.0) * y100 - lit(y100, 2 * k + 1)
    tw = wide(t)
    r = erfcx_coeff(tw, k, 6)
    for j in range(5, -1, -1):  # not contracted in PyTorch's build (its values bit for bit)
        r = r * tw + erfcx_coeff(tw, k, j)
    return lit(y100, r)


def erfcx(x):
    """exp(x^2) erfc(x) (ATen's calc_erfcx, from the Faddeeva package)."""
    if x != x:
        return x
    if x >= lit(x, 0.0):
        if x > lit(x, 50.0):  # continued-fraction expansion
            if x > lit(x, 5e7):
                return lit(x, 0.56418958354775628694807945156) / x
            # x * x in T, the rest in double on ATen's CPU (double literals; contracted)
            xw = wide(x)
            xx = wide(x * x)
            if single(x):
                a = xx + lit(xw, 4.5)
                c = xx + lit(xw, 5.0)
            else:
                a = fma(xw, xw, lit(xw, 4.5))
                c = fma(xw, xw, lit(xw, 5.0))
            num = wide(lit(x, 0.56418958354775628694807945156)) * fma(xx, a, lit(xw, 2.0))
            return lit(x, num / (xw * fma(xx, c, lit(xw, 3.75))))
        return _erfcx_y100(lit(x, 400.0) / (lit(x, 4.0) + x))
    if x < lit(x, -26.7):
        return lit(x, 1.0) / lit(x, 0.0)
    # C's exp (double) of x * x on ATen's CPU
    e = lit(wide(x), 2.0) * exp(wide(x * x))
    if x < lit(x, -6.1):
        return lit(x, e)
    return lit(x, e - wide(_erfcx_y100(lit(x, 400.0) / (lit(x, 4.0) - x))))


def log_ndtr(x):
    """log of the standard normal CDF (ATen's calc_log_ndtr)."""
    t = x * lit(x, 0.70710678118654752440)
    if x < lit(x, -1.0):
        return log(erfcx(-t) / lit(x, 2.0)) - t * t
    return log1p(-erfc(t) / lit(x, 2.0))


_FUNCTIONS = (_erfcx_y100, erfcx, log_ndtr, _digamma_positive, digamma, trigamma, _zeta_acc,
              zeta, polygamma, i0, i0e, _i1e_small, _i1e_large, i1, i1e, ndtri)


def _zeta_denominator_source():
    # A[j] of zeta's loop: a chain of selects over the loop counter, each constant in x's type
    body = "lit(x, 0.0)"
    for j in reversed(range(len(_ZETA_A))):
        body = f"(lit(x, {_ZETA_A[j]!r}) if j == {j} else {body})"
    return f"def _zeta_denominator(x, j):\n    return {body}\n"


def bind(env: dict, jit) -> dict:
    """The functions of ``NAMES`` with ``env``'s names as globals, each wrapped in ``jit``
    (helpers too: they call each other through the namespace)."""
    ns = dict(env)
    ns["_PI"] = _PI
    exec(compile(_GENERATED + "\n" + _zeta_denominator_source(),
                 "<jitgrad special_scalar>", "exec"), ns)
    made = [name for name in ns if name.startswith(("_cheb_", "_polevl_", "_zeta_den"))]
    for fn in _FUNCTIONS:
        ns[fn.__name__] = types.FunctionType(fn.__code__, ns, fn.__name__)
        made.append(fn.__name__)
    for name in made:
        ns[name] = jit(ns[name])
    return {name: ns[name] for name in NAMES}
