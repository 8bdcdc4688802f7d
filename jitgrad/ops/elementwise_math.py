"""Math-function declarations: exp/log families, roots, abs/sign, the trigonometric and hyperbolic
functions, erf, sigmoid, sinc, logit, and the two-operand hypot/logaddexp/xlogy/copysign (the
inverse hyperbolic functions, atan2, erfc and erfinv are ``elementwise_special``'s). How to write
one: ``elementwise.py``."""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise

# --------------------------------------------------------------------------- unary math


@elementwise(node="ExpBackward0", dtype="float", name="exp")
class _exp:
    def f(a):
        return exp(a)

    def da(g, out):
        return g * out


@elementwise(node="Expm1Backward0", dtype="float", name="expm1")
class _expm1:
    def f(a):
        return expm1(a)

    def da(g, out):
        return g * (out + lit(out, 1.0))


@elementwise(node="LogBackward0", dtype="float", name="log")
class _log:
    def f(a):
        return log(a)

    def da(g, a):
        return g / a


@elementwise(node="Log1PBackward0", dtype="float", name="log1p")
class _log1p:
    def f(a):
        return log1p(a)

    def da(g, a):
        return g / (a + lit(a, 1.0))


@elementwise(node="SqrtBackward0", dtype="float", name="sqrt")
class _sqrt:
    def f(a):
        return sqrt(a)

    def da(g, out):
        return g / (lit(out, 2.0) * out)


@elementwise(node="RsqrtBackward0", dtype="float")
class rsqrt:
    def f(a):
        return lit(a, 1.0) / sqrt(a)

    def da(g, out):
        return lit(out, -0.5) * g * out * out * out


@elementwise(node="AbsBackward0", name="abs")
class _abs:
    def f(a):
        return abs(a)

    def da(g, a):
        return select(a > lit(a, 0), g, select(a < lit(a, 0), -g, g * lit(g, 0.0)))


@elementwise(node="SignBackward0")
class sign:
    def f(a):
        return select(a > lit(a, 0), lit(a, 1), select(a < lit(a, 0), lit(a, -1), lit(a, 0)))

    def da(g):
        return lit(g, 0.0)


@elementwise(node="SinBackward0", dtype="float", name="sin")
class _sin:
    def f(a):
        return sin(a)

    def da(g, a):
        return g * cos(a)


@elementwise(node="CosBackward0", dtype="float", name="cos")
class _cos:
    def f(a):
        return cos(a)

    def da(g, a):
        return -g * sin(a)


@elementwise(node="TanBackward0", dtype="float", name="tan")
class _tan:
    def f(a):
        return tan(a)

    def da(g, out):
        return g * (lit(out, 1.0) + out * out)


@elementwise(node="TanhBackward0", dtype="float", name="tanh")
class _tanh:
    def f(a):
        return tanh(a)

    def da(g, out):
        return g * (lit(out, 1.0) - out * out)


@elementwise(node="SigmoidBackward0", dtype="float", name="sigmoid")
class _sigmoid:
    def f(a):
        return sigmoid(a)

    def da(g, out):
        # ATen's sigmoid_backward: grad * (1 - y) * y, in that order
        return g * (lit(out, 1.0) - out) * out


@elementwise(node="ErfBackward0", dtype="float", name="erf")
class _erf:
    def f(a):
        return erf(a)

    def da(g, a):
        return g * lit(a, 1.1283791670955126) * exp(-(a * a))


@elementwise(node="AsinBackward0", dtype="float", name="asin")
class _asin:
    def f(a):
        return asin(a)

    def da(g, a):
        return g / sqrt(lit(a, 1.0) - a * a)


@elementwise(node="AcosBackward0", dtype="float", name="acos")
class _acos:
    def f(a):
        return acos(a)

    def da(g, a):
        return -g / sqrt(lit(a, 1.0) - a * a)


@elementwise(node="AtanBackward0", dtype="float", name="atan")
class _atan:
    def f(a):
        return atan(a)

    def da(g, a):
        return g / (a * a + lit(a, 1.0))


# --------------------------------------------------------------------------- more unary math


@elementwise(node="Log2Backward0", dtype="float", name="log2")
class _log2:
    def f(a):
        return log(a) * lit(a, 1.4426950408889634)

    def da(g, a):
        return g / (a * lit(a, 0.6931471805599453))


@elementwise(node="Log10Backward0", dtype="float", name="log10")
class _log10:
    def f(a):
        return log(a) * lit(a, 0.4342944819032518)

    def da(g, a):
        return g / (a * lit(a, 2.302585092994046))


@elementwise(node="SinhBackward0", dtype="float", name="sinh")
class _sinh:
    def f(a):
        # no cancellation: expm1(a) and expm1(-a) have opposite signs; keeps -0.0
        return (expm1(a) - expm1(-a)) * lit(a, 0.5)

    def da(g, a):
        return g * ((exp(a) + exp(-a)) * lit(a, 0.5))


@elementwise(node="CoshBackward0", dtype="float", name="cosh")
class _cosh:
    def f(a):
        return (exp(a) + exp(-a)) * lit(a, 0.5)

    def da(g, a):
        return g * ((expm1(a) - expm1(-a)) * lit(a, 0.5))


@elementwise(node="Exp2Backward0", dtype="float", name="exp2")
class _exp2:
    def f(a):
        return pow_(lit(a, 2.0), a)

    def da(g, out):
        return g * (out * lit(out, 0.6931471805599453))


@elementwise(node="Deg2RadBackward0", dtype="float")
class deg2rad:
    def f(a):
        return a * lit(a, 0.017453292519943295)

    def da(g):
        return g * lit(g, 0.017453292519943295)


@elementwise(node="Rad2DegBackward0", dtype="float")
class rad2deg:
    def f(a):
        return a * lit(a, 57.29577951308232)

    def da(g):
        return g * lit(g, 57.29577951308232)


@elementwise(node="SincBackward0", dtype="float")
class sinc:
    def f(a):
        p = a * lit(a, 3.141592653589793)
        return select(a == lit(a, 0.0), lit(a, 1.0), sin(p) / p)

    def da(g, a):
        p = a * lit(a, 3.141592653589793)
        return select(a == lit(a, 0.0), lit(g, 0.0),
                      g * ((p * cos(p) - sin(p)) / (p * a)))


@elementwise(node="LogitBackward0", dtype="float", aux={"lo": "compute", "hi": "compute"})
class logit:
    # eps given: x clamped to [eps, 1 - eps] (lo/hi); no eps: lo = -inf, hi = inf (no clamp, and
    # the gradient is NaN outside [0, 1] as PyTorch's)
    def f(a, lo, hi):
        x = select(a < lo, lo, select(a > hi, hi, a))
        return log(x / (lit(x, 1.0) - x))

    def da(g, a, lo, hi):
        # no eps (lo == -inf): NaN outside [0, 1]; eps: zero outside [eps, 1 - eps]
        noeps = lo == lo + lit(lo, 1.0)
        out_n = (a < lit(a, 0.0)) | (a > lit(a, 1.0))
        out_e = (a < lo) | (a > hi)
        # abs: g * +inf at 0 and 1 (PyTorch's kernel), whatever the sign of zero
        return select(select(noeps, out_n, out_e),
                      select(noeps, g * lit(g, 0.0) / lit(g, 0.0), lit(g, 0.0)),
                      g / abs(a * (lit(a, 1.0) - a)))


# --------------------------------------------------------------------------- two operands


@elementwise(node="HypotBackward0", dtype="float")
class hypot:
    def f(a, b):
        x = abs(a)
        y = abs(b)
        hi = select(x < y, y, x)
        lo = select(x < y, x, y)
        r = lo / hi
        # an infinite side gives inf even against NaN (C hypot); two zeros give 0
        hinf = (hi == hi) & (hi - hi != hi - hi)
        linf = (lo == lo) & (lo - lo != lo - lo)
        return select(hinf, hi, select(linf, lo, select(hi == lit(hi, 0.0), hi,
                                                        hi * sqrt(lit(r, 1.0) + r * r))))

    def da(g, a, out):
        return g * a / out

    def db(g, b, out):
        return g * b / out


@elementwise(node="LogaddexpBackward0", dtype="float")
class logaddexp:
    def f(a, b):
        m = select(a < b, b, a)
        return select((a == b) & (a - a != a - a), a, m + log1p(exp(-abs(a - b))))

    def da(g, a, b):
        return g / (lit(a, 1.0) + exp(b - a))

    def db(g, a, b):
        return g / (lit(a, 1.0) + exp(a - b))


@elementwise(node="Logaddexp2Backward0", dtype="float")
class logaddexp2:
    def f(a, b):
        m = select(a < b, b, a)
        return select((a == b) & (a - a != a - a), a,
                      m + log1p(pow_(lit(a, 2.0), -abs(a - b))) * lit(a, 1.4426950408889634))

    def da(g, a, b):
        return g / (lit(a, 1.0) + pow_(lit(a, 2.0), b - a))

    def db(g, a, b):
        return g / (lit(a, 1.0) + pow_(lit(a, 2.0), a - b))


@elementwise(node="XlogyBackward0", dtype="float")
class xlogy:
    def f(a, b):
        return select(b != b, b, select(a == lit(a, 0.0), lit(a, 0.0), a * log(b)))

    def da(g, a, b):
        # xlogy(g, b), zero where a == 0 and b <= 0 (derivatives.yaml)
        return select((a == lit(a, 0.0)) & (b <= lit(b, 0.0)), lit(g, 0.0),
                      select((g == lit(g, 0.0)) & (b == b), g * lit(g, 0.0), g * log(b)))

    def db(g, a, b):
        return g * a / b


@elementwise(node="XlogyBackward2", dtype="float", aux={"other": "compute"})
class xlogy_scalar:
    def f(a, other):
        return select(other != other, other,
                      select(a == lit(a, 0.0), lit(a, 0.0), a * log(other)))

    def da(g, a, other):
        return select((a == lit(a, 0.0)) & (other <= lit(other, 0.0)), lit(g, 0.0),
                      select((g == lit(g, 0.0)) & (other == other), g * lit(g, 0.0),
                             g * log(other)))


@elementwise(node="XlogyBackward1", dtype="float", aux={"base": "compute"})
class rxlogy:
    # xlogy(scalar, tensor): ``base`` is the scalar x
    def f(b, base):
        return select(b != b, b, select(base == lit(base, 0.0), lit(b, 0.0), base * log(b)))

    def db(g, b, base):
        return g * base / b


@elementwise(node="CopysignBackward0", dtype="float")
class copysign:
    def f(a, b):
        # |a| with b's sign (-0.0 told from 0.0 through 1/b; a NaN's sign bit is not read)
        neg = (b < lit(b, 0)) | ((b == lit(b, 0)) & (lit(b, 1.0) / b < lit(b, 0.0)))
        return select(neg, -abs(a), abs(a))

    def da(g, a, out):
        return select(a == lit(a, 0), g * lit(g, 0.0), g * (out / a))

    def db(g, b):
        return lit(g, 0.0)


@elementwise(node="CopysignBackward1", dtype="float", aux={"other": "compute"},
             half_scalar={"other": "common"})
class copysign_scalar:
    def f(a, other):
        neg = (other < lit(other, 0)) | ((other == lit(other, 0))
                                         & (lit(other, 1.0) / other < lit(other, 0.0)))
        return select(neg, -abs(a), abs(a))

    def da(g, a, out):
        return select(a == lit(a, 0), g * lit(g, 0.0), g * (out / a))
