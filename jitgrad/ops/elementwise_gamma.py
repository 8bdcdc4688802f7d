"""Registry declarations of the gamma, Bessel and normal-distribution family: lgamma, digamma,
polygamma, i0/i0e/i1/i1e, ndtri, erfcx, log_ndtr, entr, xlog1py, and zeta, igamma and igammac
(kernels without derivative; the wrappers in ``special_functions`` record their nodes).

One of the topic modules ``elementwise.py`` imports. The functions with loops (digamma, ...)
are vocabulary names bound per target (``ops/special_scalar.py``); formulas and node names
are PyTorch's (derivatives.yaml, FunctionsManual's i1_backward / i1e_backward).
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node="LgammaBackward0", dtype="float", name="lgamma")
class _lgamma:
    def f(a):
        return lgamma(a)

    def da(g, a):
        return g * digamma(a)


@elementwise(node="DigammaBackward0", dtype="float", name="digamma")
class _digamma:
    def f(a):
        return digamma(a)

    def da(g, a):
        return g * polygamma(lit(a, 1.0), a)


# order: PyTorch's n, an integer >= 0 (checked by the wrapper), passed in the compute type
@elementwise(node="PolygammaBackward0", dtype="float", aux={"order": "compute"},
             name="polygamma")
class _polygamma:
    def f(a, order):
        return polygamma(order, a)

    def da(g, a, order):
        return g * polygamma(order + lit(order, 1.0), a)


@elementwise(node="I0Backward0", dtype="float", name="i0")
class _i0:
    def f(a):
        return i0(a)

    def da(g, a):
        return g * i1(a)


@elementwise(node="SpecialI0EBackward0", dtype="float", name="special_i0e")
class _i0e:
    def f(a):
        return i0e(a)

    def da(g, a, out):
        # i1e(x) - sgn(x) * i0e(x); sgn(NaN) is 0 as PyTorch's
        sgn = select(a > lit(a, 0.0), lit(a, 1.0), select(a < lit(a, 0.0), lit(a, -1.0),
                                                           lit(a, 0.0)))
        return g * (i1e(a) - sgn * out)


# i1_backward / i1e_backward: 0.5 at |x| <= eps (the formula's 0 / 0), eps being float64's
# machine epsilon for both float types (PyTorch's float32 threshold is 1.19e-7; between the two
# the float32 formula gives 0.5 to the rounding anyway)
@elementwise(node="SpecialI1Backward0", dtype="float", name="special_i1")
class _i1:
    def f(a):
        return i1(a)

    def da(g, a, out):
        big = abs(a) > lit(a, 2.220446049250313e-16)
        safe = select(big, a, lit(a, 2.220446049250313e-16))
        return g * select(big, i0(safe) - out * (lit(a, 1.0) / safe), lit(a, 0.5))


@elementwise(node="SpecialI1EBackward0", dtype="float", name="special_i1e")
class _i1e:
    def f(a):
        return i1e(a)

    def da(g, a, out):
        big = abs(a) > lit(a, 2.220446049250313e-16)
        safe = select(big, a, lit(a, 2.220446049250313e-16))
        sgn = select(safe > lit(a, 0.0), lit(a, 1.0), lit(a, -1.0))
        return g * select(big, i0e(safe) - out * (sgn + lit(a, 1.0) / safe), lit(a, 0.5))


@elementwise(node="SpecialNdtriBackward0", dtype="float", name="special_ndtri")
class _ndtri:
    def f(a):
        return ndtri(a)

    def da(g, out):
        return g * lit(out, 2.5066282746310002) * exp(out * out / lit(out, 2.0))


@elementwise(node="SpecialErfcxBackward0", dtype="float", name="special_erfcx")
class _erfcx:
    def f(a):
        return erfcx(a)

    def da(g, a, out):
        return (lit(a, 2.0) * a * out - lit(a, 1.1283791670955126)) * g


@elementwise(node="SpecialLogNdtrBackward0", dtype="float", name="special_log_ndtr")
class _log_ndtr:
    def f(a):
        return log_ndtr(a)

    def da(g, a, out):
        return g / lit(a, 2.5066282746310002) * exp(-(out + a * a / lit(a, 2.0)))


@elementwise(node="SpecialEntrBackward0", dtype="float", name="special_entr")
class _entr:
    def f(a):
        inf = lit(a, 1.0) / lit(a, 0.0)
        return select(a != a, a, select(a > lit(a, 0.0), -a * log(a),
                                        select(a == lit(a, 0.0), lit(a, 0.0), -inf)))

    def da(g, a):
        return g * -(lit(a, 1.0) + log(a))


# xlog1py: x * log1p(y), 0 where x == 0 unless y is NaN (ATen's CPU kernel)
@elementwise(node="SpecialXlog1PyBackward0", dtype="float", name="special_xlog1py")
class _xlog1py:
    def f(a, b):
        return select(b != b, b, select(a == lit(a, 0.0), lit(a, 0.0), a * log1p(b)))

    def da(g, a, b):
        # xlog1py(g, b), zero where a == 0 and b <= -1 (derivatives.yaml)
        return select((a == lit(a, 0.0)) & (b <= lit(b, -1.0)), lit(g, 0.0),
                      select(b != b, b, select(g == lit(g, 0.0), g * lit(g, 0.0),
                                               g * log1p(b))))

    def db(g, a, b):
        return g * a / (b + lit(b, 1.0))


@elementwise(node="SpecialXlog1PyBackward2", dtype="float", aux={"other": "compute"},
             name="special_xlog1py_scalar")
class _xlog1py_scalar:
    def f(a, other):
        return select(other != other, other,
                      select(a == lit(a, 0.0), lit(a, 0.0), a * log1p(other)))

    def da(g, a, other):
        return select((a == lit(a, 0.0)) & (other <= lit(other, -1.0)), lit(g, 0.0),
                      select(other != other, g * other,
                             select(g == lit(g, 0.0), g * lit(g, 0.0), g * log1p(other))))


@elementwise(node="SpecialXlog1PyBackward1", dtype="float", aux={"base": "compute"},
             name="special_rxlog1py")
class _rxlog1py:
    def f(b, base):
        return select(b != b, b, select(base == lit(b, 0.0), lit(b, 0.0), base * log1p(b)))

    def db(g, b, base):
        return g * base / (b + lit(b, 1.0))


# Hurwitz zeta; its derivative (in q only) is recorded by the wrapper
@elementwise(node=None, dtype="float", name="special_zeta")
class _zeta:
    def f(a, b):
        return zeta(a, b)


# the regularized incomplete gamma functions P(a, x) and Q(a, x); their derivative (in x only)
# is recorded by the wrappers in special_functions
@elementwise(node=None, dtype="float", name="igamma")
class _igamma:
    def f(a, b):
        return igamma(a, b)


@elementwise(node=None, dtype="float", name="igammac")
class _igammac:
    def f(a, b):
        return igammac(a, b)
