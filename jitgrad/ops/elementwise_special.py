"""More registry declarations: inverse hyperbolic functions, atan2, erfc/erfinv, integer shifts.

One of the topic modules ``elementwise.py`` imports, so ``OPS`` holds these wherever the
registry is read. Formulas and node names are PyTorch's (derivatives.yaml).
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node="AsinhBackward0", dtype="float", name="asinh")
class _asinh:
    def f(a):
        return asinh(a)

    def da(g, a):
        return g / sqrt(a * a + lit(a, 1.0))


@elementwise(node="AcoshBackward0", dtype="float", name="acosh")
class _acosh:
    def f(a):
        return acosh(a)

    def da(g, a):
        return g / sqrt(a * a - lit(a, 1.0))


@elementwise(node="AtanhBackward0", dtype="float", name="atanh")
class _atanh:
    def f(a):
        return atanh(a)

    def da(g, a):
        return g / (lit(a, 1.0) - a * a)


@elementwise(node="Atan2Backward0", dtype="float", name="atan2")
class _atan2:
    def f(a, b):
        return atan2(a, b)

    # PyTorch's atan2_backward: 1 / (a * a + b * b), 0 where that sum is 0 (the origin, or
    # underflow), times grad * b / grad * -a (so +-0 there, NaN for a NaN or infinite grad)
    def da(g, a, b):
        d = a * a + b * b
        return g * b * select(d == lit(d, 0.0), lit(d, 0.0), lit(d, 1.0) / d)

    def db(g, a, b):
        d = a * a + b * b
        return g * -a * select(d == lit(d, 0.0), lit(d, 0.0), lit(d, 1.0) / d)


@elementwise(node="ErfcBackward0", dtype="float", name="erfc")
class _erfc:
    def f(a):
        return erfc(a)

    def da(g, a):
        return g * lit(a, -1.1283791670955126) * exp(-(a * a))


@elementwise(node="ErfinvBackward0", dtype="float", name="erfinv")
class _erfinv:
    # PyTorch's calc_erfinv: a rational first guess (central / tail), two Newton steps on erf,
    # in the input's precision; |y| == 1 gives +-inf, |y| > 1 NaN (both set after the Newton
    # steps, which turn them into NaN)
    def f(a):
        y = abs(a)
        z = a * a
        num = ((lit(a, -0.140543331) * z + lit(a, 0.914624893)) * z
               + lit(a, -1.645349621)) * z + lit(a, 0.886226899)
        dem = (((lit(a, 0.012229801) * z + lit(a, -0.329097515)) * z + lit(a, 1.442710462))
               * z + lit(a, -2.118377725)) * z + lit(a, 1.0)
        central = a * num / dem
        t = sqrt(-log((lit(a, 1.0) - y) / lit(a, 2.0)))
        tnum = ((lit(a, 1.641345311) * t + lit(a, 3.429567803)) * t
                + lit(a, -1.624906493)) * t + lit(a, -1.970840454)
        tdem = (lit(a, 1.6370678) * t + lit(a, 3.5438892)) * t + lit(a, 1.0)
        tail = select(a < lit(a, 0.0), -abs(tnum), abs(tnum)) / tdem
        x = select(y <= lit(a, 0.7), central, tail)
        x = x - (erf(x) - a) / (lit(a, 1.1283791670955126) * exp(-(x * x)))
        x = x - (erf(x) - a) / (lit(a, 1.1283791670955126) * exp(-(x * x)))
        inf = lit(a, 1.0) / lit(a, 0.0)
        return select(y == lit(a, 1.0), select(a < lit(a, 0.0), -inf, inf),
                      select(y > lit(a, 1.0), inf - inf, x))

    def da(g, out):
        return g * lit(out, 0.886226925452758) * exp(out * out)


# Integer shifts (the wrappers refuse floating and bool result types, as PyTorch's kernels);
# no derivative: integer results
@elementwise(node=None, name="bitwise_left_shift")
class _bitwise_left_shift:
    def f(a, b):
        return lshift(a, b)


@elementwise(node=None, name="bitwise_right_shift")
class _bitwise_right_shift:
    def f(a, b):
        return rshift(a, b)
