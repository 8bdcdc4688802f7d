"""Comparison declarations and the ops that choose by comparing: clamp, maximum/minimum, where,
fmax/fmin, nan_to_num; eq/ne/lt/le/gt/ge, isnan/isinf/isfinite/isclose, signbit, the logical ops
and heaviside (no gradient). How to write one: ``elementwise.py``."""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise

# --------------------------------------------------------------------------- selection


@elementwise(node="ClampBackward1", aux={"lo": "compute", "hi": "compute"})
class clamp:
    def f(a, lo, hi):
        # min(max(a, lo), hi), as PyTorch: lo > hi gives hi everywhere; NaN propagates, from a
        # bound too (ATen's vectorized minimum/maximum: clamp(x, max=nan) is all NaN)
        m = select(lo != lo, lo, select(a < lo, lo, a))
        return select(hi != hi, hi, select(m > hi, hi, m))

    def da(g, a, lo, hi):
        return select((a >= lo) & (a <= hi), g, lit(g, 0.0))


@elementwise(node="MaximumBackward0")
class maximum:
    def f(a, b):
        # NaN from either side; on ties (0.0 vs -0.0) the first operand, as PyTorch
        return select(a != a, a, select(b != b, b, select(a < b, b, a)))

    def da(g, a, b):
        return select(a < b, lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))

    def db(g, a, b):
        return select(a > b, lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))


@elementwise(node="MinimumBackward0")
class minimum:
    def f(a, b):
        return select(a != a, a, select(b != b, b, select(a > b, b, a)))

    def da(g, a, b):
        return select(a > b, lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))

    def db(g, a, b):
        return select(a < b, lit(g, 0.0), select(a == b, g * lit(g, 0.5), g))


@elementwise(node="WhereBackward0", aux={"cond": "bool"})
class where:
    def f(cond, a, b):
        return select(cond, a, b)

    def da(g, cond):
        return select(cond, g, lit(g, 0.0))

    def db(g, cond):
        return select(cond, lit(g, 0.0), g)


@elementwise(node="FmaxBackward0")
class fmax:
    def f(a, b):
        return select(b != b, a, select(a != a, b, select(a < b, b, a)))

    def da(g, a, b):
        return select((a >= b) | (b != b), g, lit(g, 0.0))

    def db(g, a, b):
        return select((a >= b) | (b != b), lit(g, 0.0), g)


@elementwise(node="FminBackward0")
class fmin:
    def f(a, b):
        return select(b != b, a, select(a != a, b, select(a > b, b, a)))

    def da(g, a, b):
        return select((a <= b) | (b != b), g, lit(g, 0.0))

    def db(g, a, b):
        return select((a <= b) | (b != b), lit(g, 0.0), g)


@elementwise(node="NanToNumBackward0", aux={"nan": "compute", "posinf": "compute",
                                            "neginf": "compute"})
class nan_to_num:
    def f(a, nan, posinf, neginf):
        return select(a != a, nan, select(a - a == a - a, a, select(a > lit(a, 0), posinf, neginf)))

    def da(g, a):
        return select(a - a == a - a, g, g * lit(g, 0.0))


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
