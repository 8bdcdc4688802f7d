"""Registry declarations of the number-theoretic and floating-point helpers: gcd/lcm (integers;
no derivative), ldexp (its forward) and nextafter (NextafterBackward0).

One of the topic modules ``elementwise.py`` imports. Values, node names and derivative
formulas are PyTorch's: ``calc_gcd`` (Euclid on absolute values, the vocabulary's ``gcd``),
lcm ``|a / gcd * b|`` (0 when the gcd is 0), ldexp's forward ``a * 2**b``, nextafter's
gradient ``g`` for ``a`` except where ``a == b`` (0 there) and 0 for ``b``.
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node=None, name="gcd")
class _gcd:
    def f(a, b):
        return gcd(a, b)


@elementwise(node=None, name="lcm")
class _lcm:
    def f(a, b):
        d = gcd(a, b)
        q = select(d == lit(d, 0), lit(d, 1), d)  # never divide by 0 (both branches run)
        return select(d == lit(d, 0), lit(a, 0), abs(a // q * b))


# forward only: LdexpBackward0 is recorded by ops/numeric.ldexp (its self gradient is
# ``g * pow(2, other)`` in other's dtype: 0 for negative integer exponents, as PyTorch's).
# PyTorch's ldexp is mul(a, pow(2, other)): a 0-d float32 ``other`` gives a float32 2**other
# that mul's half kernel reads as float (opmath)
@elementwise(node=None, dtype="float", name="ldexp", half_scalar={"b": "opmath"})
class _ldexp:
    def f(a, b):
        return a * pow_(lit(a, 2.0), b)


@elementwise(node="NextafterBackward0", dtype="float", name="nextafter")
class _nextafter:
    def f(a, b):
        return nextafter(a, b)

    def da(g, a, b):
        return select(a == b, lit(g, 0.0), g)

    def db(g, a, b):
        return select(a == b, lit(g, 0.0), lit(g, 0.0))
