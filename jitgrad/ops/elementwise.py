"""Elementwise ops: scalar forward + one scalar VJP per input (see ``registry.py``).

Vocabulary reminders: write every constant as ``lit(like, value)`` so float32 math stays float32
(a bare literal promotes it to float64 in Numba); write branches as ``select(cond, a, b)``; the
names in ``registry.SCALAR_VOCABULARY`` are the only functions available. NaN propagation follows
PyTorch (relu/clamp/maximum propagate NaN).
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise

# --------------------------------------------------------------------------- arithmetic


@elementwise(node="AddBackward0")
class add:
    def f(a, b):
        return a + b

    def da(g):
        return g

    def db(g):
        return g


@elementwise(node="SubBackward0")
class sub:
    def f(a, b):
        return a - b

    def da(g):
        return g

    def db(g):
        return -g


@elementwise(node="RsubBackward1", aux={"other": "compute"})
class rsub:
    def f(a, other):
        return other - a

    def da(g):
        return -g


@elementwise(node="RsubBackward0", name="rsub_tensor")
class _rsub_tensor:
    # torch.rsub(x, y) with two tensors: y - x
    def f(a, b):
        return b - a

    def da(g):
        return -g

    def db(g):
        return g


@elementwise(node="MulBackward0")
class mul:
    def f(a, b):
        return a * b

    def da(g, b):
        return g * b

    def db(g, a):
        return g * a


@elementwise(node="DivBackward0", dtype="float")
class div:
    def f(a, b):
        return a / b

    def da(g, b):
        return g / b

    def db(g, a, b):
        return -g * ((a / b) / b)


@elementwise(node="ReciprocalBackward0", dtype="float")
class reciprocal:
    def f(a):
        return lit(a, 1.0) / a

    def da(g, out):
        return -g * (out * out)


@elementwise(node="NegBackward0")
class neg:
    def f(a):
        return -a

    def da(g):
        return -g


@elementwise(node="PowBackward0", aux={"exponent": "compute"})
class pow:  # noqa: A001 - torch.pow
    def f(a, exponent):
        return pow_(a, exponent)

    def da(g, a, exponent):
        return select(exponent == lit(exponent, 0), g * lit(g, 0.0),
                      g * exponent * pow_(a, exponent - lit(exponent, 1)))


@elementwise(node="PowBackward0", name="pow_sqrt", dtype="float")
class _pow_sqrt:
    # x ** 0.5 on floating tensors: PyTorch's kernel takes sqrt (sqrt(-0.0) is -0.0,
    # sqrt(-inf) NaN) and its derivative 0.5 * rsqrt(x)
    def f(a):
        return sqrt(a)

    def da(g, a):
        return g * (lit(a, 0.5) * (lit(a, 1.0) / sqrt(a)))


# Integer powers with a negative integer exponent (tensor exponents; a scalar one raises):
# PyTorch's powi gives 1 for a base of 1, +-1 for -1 (by the exponent's parity), else 0.
# ``lit(b, 0.5) == lit(b, 0)`` is a compile-time "b is an integer", so float kernels keep
# plain pow_.


@elementwise(node="PowBackward1", name="pow_tensor")
class _pow_tensor:
    def f(a, b):
        neg = (lit(b, 0.5) == lit(b, 0)) & (b < lit(b, 0))
        p = pow_(a, select(neg, lit(b, 0), b))
        return select(neg, select(a == lit(a, 1), lit(a, 1), select(
            a == -lit(a, 1), select(b % lit(b, 2) == lit(b, 0), lit(a, 1), -lit(a, 1)),
            lit(a, 0))), p)

    def da(g, a, b):
        return select(b == lit(b, 0), g * lit(g, 0.0), g * b * pow_(a, b - lit(b, 1)))

    def db(g, a, b, out):
        return select((a == lit(a, 0)) & (b >= lit(b, 0)), g * lit(g, 0.0), g * out * log(a))


@elementwise(node="PowBackward2", aux={"base": "compute"}, name="rpow")
class _rpow:
    def f(b, base):
        neg = (lit(b, 0.5) == lit(b, 0)) & (b < lit(b, 0))
        p = pow_(base, select(neg, lit(b, 0), b))
        return select(neg, select(base == lit(base, 1), lit(base, 1), select(
            base == -lit(base, 1), select(b % lit(b, 2) == lit(b, 0), lit(base, 1),
                                          -lit(base, 1)), lit(base, 0))), p)

    def db(g, b, base, out):
        return select((base == lit(base, 0)) & (b >= lit(b, 0)), g * lit(g, 0.0),
                      g * out * log(base))


@elementwise(node="PowBackward0", name="square")
class _square:
    def f(a):
        return a * a

    def da(g, a):
        return g * lit(g, 2.0) * a


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
        return g * lit(g, 0.0)


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
        return g * out * (lit(out, 1.0) - out)


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


# --------------------------------------------------------------------------- rounding
# floor/ceil/trunc/round keep the input dtype and are the identity on integers (the vocabulary
# functions are); their gradient is zero, as PyTorch's (FloorBackward0 ...: zeros).


@elementwise(node="FloorBackward0", name="floor")
class _floor:
    def f(a):
        return floor(a)

    def da(g):
        return g * lit(g, 0.0)


@elementwise(node="CeilBackward0", name="ceil")
class _ceil:
    def f(a):
        return ceil(a)

    def da(g):
        return g * lit(g, 0.0)


@elementwise(node="TruncBackward0", name="trunc")
class _trunc:
    def f(a):
        return trunc(a)

    def da(g):
        return g * lit(g, 0.0)


@elementwise(node="RoundBackward0", name="round")
class _round:
    def f(a):
        return rint(a)  # half to even, as PyTorch (std::nearbyint)

    def da(g):
        return g * lit(g, 0.0)


@elementwise(node="RoundBackward1", aux={"ten_pow": "compute", "neg": "bool"}, dtype="float")
class round_decimals:
    # PyTorch's round(decimals=d): ten_pow = 10**|d| in the input precision, neg = d < 0.
    # Floating only (PyTorch has no integer kernel; functional.round raises for integers).
    def f(a, ten_pow, neg):
        return select(neg, rint(a / ten_pow) * ten_pow, rint(a * ten_pow) / ten_pow)

    def da(g):
        return g * lit(g, 0.0)


@elementwise(node="FracBackward0")
class frac:
    def f(a):
        return a - trunc(a)

    def da(g):
        return g


# --------------------------------------------------------------------------- division remainders
# PyTorch's CPU kernels, written out: fmod has the dividend's sign (C fmod; integers: C ``%``);
# remainder has the divisor's sign (fmod corrected by adding b, which keeps fmod's signed zero:
# remainder(-4., 2.) is -0.0); floor_divide is Python's ``//`` (floats: fmod-based, division by
# zero gives a / b). Integer division by zero is checked by the functional wrappers on the CPU.


@elementwise(node="FmodBackward1", name="fmod")
class _fmod:
    def f(a, b):
        return fmod(a, b)

    def da(g):
        return g

    def db(g, a, b):
        return -g * trunc(a / b)


@elementwise(node="FmodBackward0", aux={"other": "compute"})
class fmod_scalar:
    def f(a, other):
        return fmod(a, other)

    def da(g):
        return g


@elementwise(node="RemainderBackward1")
class remainder:
    def f(a, b):
        r = fmod(a, b)
        return select((r != lit(r, 0)) & ((r < lit(r, 0)) != (b < lit(b, 0))), r + b, r)

    def da(g):
        return g

    def db(g, a, b):
        # -g * floor_divide(a, b), PyTorch's div_floor_floating step by step (zero gradients of
        # its own: the floor kills them)
        mod = fmod(a, b)
        div = (a - mod) / b
        div = select((mod != lit(mod, 0.0)) & ((b < lit(b, 0.0)) != (mod < lit(mod, 0.0))),
                     div - lit(div, 1.0), div)
        fl = floor(div)
        fl = select(div - fl > lit(div, 0.5), fl + lit(fl, 1.0), fl)
        q = select(div != lit(div, 0.0), fl, (a / b) * lit(a, 0.0))  # copysign(0, a / b)
        return -g * select(b == lit(b, 0.0), a / b, q)


@elementwise(node="RemainderBackward0", aux={"other": "compute"})
class remainder_scalar:
    def f(a, other):
        r = fmod(a, other)
        return select((r != lit(r, 0)) & ((r < lit(r, 0)) != (other < lit(other, 0))),
                      r + other, r)

    def da(g):
        return g


@elementwise(node=None)
class floor_divide:
    # PyTorch records a NotImplemented node (no derivative): the wrapper attaches it
    def f(a, b):
        return a // b


# --------------------------------------------------------------------------- activations


@elementwise(node="ReluBackward0")
class relu:
    def f(a):
        return select(a < lit(a, 0), lit(a, 0), a)

    def da(g, out):
        return select(out > lit(out, 0), g, g * lit(g, 0.0))


@elementwise(node="LeakyReluBackward0", aux={"negative_slope": "compute"}, dtype="float")
class leaky_relu:
    def f(a, negative_slope):
        return select(a > lit(a, 0), a, a * negative_slope)

    def da(g, a, negative_slope):
        return select(a > lit(a, 0), g, g * negative_slope)


@elementwise(node="GeluBackward0", dtype="float")
class gelu:
    def f(a):
        return lit(a, 0.5) * a * (lit(a, 1.0) + erf(a * lit(a, 0.7071067811865476)))

    def da(g, a):
        return g * (lit(a, 0.5) * (lit(a, 1.0) + erf(a * lit(a, 0.7071067811865476)))
                    + a * lit(a, 0.3989422804014327) * exp(lit(a, -0.5) * a * a))


@elementwise(node="GeluBackward0", dtype="float")
class gelu_tanh:
    def f(a):
        return lit(a, 0.5) * a * (lit(a, 1.0) + tanh(
            lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))

    def da(g, a):
        return g * (lit(a, 0.5) * (lit(a, 1.0) + tanh(
            lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))
            + lit(a, 0.5) * a * (lit(a, 1.0) - tanh(
                lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)) * tanh(
                lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))
            * lit(a, 0.7978845608028654) * (lit(a, 1.0) + lit(a, 0.134145) * a * a))


@elementwise(node="SoftplusBackward0", aux={"beta": "compute", "threshold": "compute"},
             dtype="float")
class softplus:
    def f(a, beta, threshold):
        return select(a * beta > threshold, a, log1p(exp(a * beta)) / beta)

    def da(g, a, beta, threshold):
        return select(a * beta > threshold, g,
                      g * (exp(a * beta) / (exp(a * beta) + lit(a, 1.0))))


# PyTorch's CPU kernels of these activations are defined for floating types only: an integer or
# bool input raises NotImplementedError naming the kernel (read by elementwise_call._dtypes on
# the non-float path only, so float calls pay nothing)
FLOAT_KERNELS = {"leaky_relu": "leaky_relu_cpu", "gelu": "GeluKernelImpl",
                 "gelu_tanh": "GeluKernelImpl", "softplus": "softplus_cpu"}


@elementwise(node="ClampBackward1", aux={"lo": "compute", "hi": "compute"})
class clamp:
    def f(a, lo, hi):
        # min(max(a, lo), hi), as PyTorch: lo > hi gives hi everywhere; NaN propagates
        m = select(a < lo, lo, a)
        return select(m > hi, hi, m)

    def da(g, a, lo, hi):
        return select((a >= lo) & (a <= hi), g, g * lit(g, 0.0))


@elementwise(node="MaximumBackward0")
class maximum:
    def f(a, b):
        # NaN from either side; on ties (0.0 vs -0.0) the first operand, as PyTorch
        return select(a != a, a, select(b != b, b, select(a < b, b, a)))

    def da(g, a, b):
        return select(a < b, g * lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))

    def db(g, a, b):
        return select(a > b, g * lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))


@elementwise(node="MinimumBackward0")
class minimum:
    def f(a, b):
        return select(a != a, a, select(b != b, b, select(a > b, b, a)))

    def da(g, a, b):
        return select(a > b, g * lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))

    def db(g, a, b):
        return select(a < b, g * lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))


@elementwise(node="WhereBackward0", aux={"cond": "bool"})
class where:
    def f(cond, a, b):
        return select(cond, a, b)

    def da(g, cond):
        return select(cond, g, g * lit(g, 0.0))

    def db(g, cond):
        return select(cond, g * lit(g, 0.0), g)


# --------------------------------------------------------------------------- no gradient


@elementwise(node=None, dtype="compare")
class eq:
    def f(a, b):
        return a == b


@elementwise(node=None, dtype="compare")
class ne:
    def f(a, b):
        return a != b


@elementwise(node=None, dtype="compare")
class lt:
    def f(a, b):
        return a < b


@elementwise(node=None, dtype="compare")
class le:
    def f(a, b):
        return a <= b


@elementwise(node=None, dtype="compare")
class gt:
    def f(a, b):
        return a > b


@elementwise(node=None, dtype="compare")
class ge:
    def f(a, b):
        return a >= b


@elementwise(node=None, dtype="compare")
class isnan_:
    def f(a):
        return a != a


@elementwise(node=None, dtype="compare")
class isinf:
    # inf - inf is NaN; finite - finite is 0; integers are never infinite
    def f(a):
        return (a == a) & (a - a != a - a)


@elementwise(node=None, dtype="compare")
class isfinite:
    def f(a):
        return a - a == a - a


@elementwise(node=None, dtype="compare", aux={"rtol": "compute", "atol": "compute",
                                              "equal_nan": "bool"})
class isclose:
    # PyTorch's isclose for floating inputs: equal, or both NaN (equal_nan), or a finite
    # |a - b| <= atol + |rtol * b|, in the inputs' precision (integers: see functional.isclose)
    def f(a, b, rtol, atol, equal_nan):
        d = abs(a - b)
        return ((a == b) | (equal_nan & (a != a) & (b != b))
                | ((d - d == d - d) & (d <= atol + abs(rtol * b))))


@elementwise(node=None, dtype="logical")
class logical_not:
    def f(a):
        return a == lit(a, 0)


@elementwise(node=None, dtype="logical")
class logical_and:
    def f(a, b):
        return (a != lit(a, 0)) & (b != lit(b, 0))


@elementwise(node=None, dtype="logical")
class logical_or:
    def f(a, b):
        return (a != lit(a, 0)) | (b != lit(b, 0))


@elementwise(node=None, dtype="logical")
class logical_xor:
    def f(a, b):
        return (a != lit(a, 0)) != (b != lit(b, 0))


# --------------------------------------------------------------------------- parity-sweep additions
# (PyTorch's node names and derivative formulas, tools/autograd/derivatives.yaml)


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
        return select(a == lit(a, 0.0), g * lit(g, 0.0),
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
                      select(noeps, g * lit(g, 0.0) / lit(g, 0.0), g * lit(g, 0.0)),
                      g / abs(a * (lit(a, 1.0) - a)))


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
        return select((a == lit(a, 0.0)) & (b <= lit(b, 0.0)), g * lit(g, 0.0),
                      select((g == lit(g, 0.0)) & (b == b), g * lit(g, 0.0), g * log(b)))

    def db(g, a, b):
        return g * a / b


@elementwise(node="XlogyBackward2", dtype="float", aux={"other": "compute"})
class xlogy_scalar:
    def f(a, other):
        return select(other != other, other,
                      select(a == lit(a, 0.0), lit(a, 0.0), a * log(other)))

    def da(g, a, other):
        return select((a == lit(a, 0.0)) & (other <= lit(other, 0.0)), g * lit(g, 0.0),
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
        return g * lit(g, 0.0)


@elementwise(node="CopysignBackward1", dtype="float", aux={"other": "compute"})
class copysign_scalar:
    def f(a, other):
        neg = (other < lit(other, 0)) | ((other == lit(other, 0))
                                         & (lit(other, 1.0) / other < lit(other, 0.0)))
        return select(neg, -abs(a), abs(a))

    def da(g, a, out):
        return select(a == lit(a, 0), g * lit(g, 0.0), g * (out / a))


@elementwise(node="FmaxBackward0")
class fmax:
    def f(a, b):
        return select(b != b, a, select(a != a, b, select(a < b, b, a)))

    def da(g, a, b):
        return select((a >= b) | (b != b), g, g * lit(g, 0.0))

    def db(g, a, b):
        return select((a >= b) | (b != b), g * lit(g, 0.0), g)


@elementwise(node="FminBackward0")
class fmin:
    def f(a, b):
        return select(b != b, a, select(a != a, b, select(a > b, b, a)))

    def da(g, a, b):
        return select((a <= b) | (b != b), g, g * lit(g, 0.0))

    def db(g, a, b):
        return select((a <= b) | (b != b), g * lit(g, 0.0), g)


@elementwise(node="LerpBackward0", dtype="float", aux={"weight": "compute"})
class lerp:
    def f(a, b, weight):
        return select(abs(weight) < lit(weight, 0.5), a + weight * (b - a),
                      b - (b - a) * (lit(weight, 1.0) - weight))

    def da(g, weight):
        return g * (lit(weight, 1.0) - weight)

    def db(g, weight):
        return g * weight


@elementwise(node="LerpBackward1", dtype="float", name="lerp_tensor")
class _lerp_tensor:
    def f(a, b, w):
        return select(abs(w) < lit(w, 0.5), a + w * (b - a), b - (b - a) * (lit(w, 1.0) - w))

    def da(g, w):
        return g * (lit(w, 1.0) - w)

    def db(g, w):
        return g * w

    def dw(g, a, b):
        return g * (b - a)


@elementwise(node="AddcmulBackward0", aux={"value": "compute"})
class addcmul:
    def f(a, t1, t2, value):
        return a + value * t1 * t2

    def da(g):
        return g

    def dt1(g, t2, value):
        return g * t2 * value

    def dt2(g, t1, value):
        return g * t1 * value


# floating only (functional.addcdiv raises PyTorch's error for integers): the "float" rule keeps
# integer kernels, whose division by zero has no defined result, from being generated
@elementwise(node="AddcdivBackward0", aux={"value": "compute"}, dtype="float")
class addcdiv:
    def f(a, t1, t2, value):
        return a + value * (t1 / t2)

    def da(g):
        return g

    def dt1(g, t2, value):
        return g * value / t2

    def dt2(g, t1, t2, value):
        return -g * value * t1 / (t2 * t2)


@elementwise(node="NanToNumBackward0", aux={"nan": "compute", "posinf": "compute",
                                            "neginf": "compute"})
class nan_to_num:
    def f(a, nan, posinf, neginf):
        return select(a != a, nan, select(a - a == a - a, a, select(a > lit(a, 0), posinf, neginf)))

    def da(g, a):
        return select(a - a == a - a, g, g * lit(g, 0.0))


@elementwise(node=None, dtype="compare")
class signbit:
    # -0.0 and negative NaNs cannot be told from their positives with comparisons alone:
    # 1 / -0.0 is -inf; integers are negative or not
    def f(a):
        return (a < lit(a, 0)) | ((a == lit(a, 0)) & (lit(a, 1.0) / a < lit(a, 0.0)))


@elementwise(node=None)
class heaviside:
    def f(a, values):
        return select(a == lit(a, 0), values, select(a > lit(a, 0), lit(a, 1), lit(a, 0)))


# inverse hyperbolic functions, atan2, erfc/erfinv and the integer shifts: their own module
from . import elementwise_special  # noqa: E402,F401 - registers the declarations
