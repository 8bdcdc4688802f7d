"""Scalar kernels of torch.special's orthogonal polynomials: ports of ATen's Math.h
(``chebyshev_polynomial_t/u/v/w_forward``, their ``shifted_`` forms,
``hermite_polynomial_h/he_forward``, ``laguerre_polynomial_l_forward``,
``legendre_polynomial_p_forward``), bound per target as ``special_scalar``'s are (``bind``; env
names ``lit``, ``fma``, ``cos``, ``sin``, ``acos``, ``single``).

Each takes ``(x, n)`` in the compute type, as ATen's kernels do, and truncates ``n`` to an
integer as its ``static_cast<int64_t>`` does on x86 (NaN and values beyond int64 become
INT64_MIN, a negative degree: the result is 0). The recurrences and special cases (``|x| == 1``,
the trigonometric forms for high degrees inside (-1, 1)) are ATen's, with its integer products
(``k * p``, ``n + 1``) converted to ``x``'s type, and ``a * b - c`` contracted to fma as PyTorch's
CPU build does (the first product of a difference of two). Where ATen returns an uninitialized
value (a NaN ``x`` with n >= 2 ends the recurrence before its first step) these return NaN.
"""
# ruff: noqa: F821 - the bodies use the names of the target's env, bound by ``bind``
from __future__ import annotations

import types

__all__ = ["bind", "NAMES"]

NAMES = ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t",
         "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h",
         "hermite_he", "laguerre_l", "legendre_p")

_TWO63 = 9.223372036854775808e18


def _degree(n):
    """``static_cast<int64_t>(n)``; out of range (NaN included) as -1."""
    if n < lit(n, _TWO63) and n >= lit(n, -_TWO63):
        return int(n)
    return -1


def _recurrence(two_x, p, q, n):
    """q_{k} = 2x q_{k-1} - q_{k-2} for k = 2..n, stopping at a NaN (ATen's loop)."""
    r = q
    k = 2
    while k <= n and q == q:
        r = fma(two_x, q, -p)
        p = q
        q = r
        k += 1
    return r


def chebyshev_t(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == one:
        if x > lit(x, 0.0) or n % 2 == 0:
            return one
        return -one
    if n > 6 and abs(x) < one:
        return cos(lit(x, n) * acos(x))
    if n == 0:
        return one
    if n == 1:
        return x
    return _recurrence(x + x, one, x, n)


def chebyshev_u(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == one:
        if x > lit(x, 0.0) or n % 2 == 0:
            return lit(x, n + 1)
        return lit(x, -(n + 1))
    if n > 8 and abs(x) < one:
        a = acos(x)
        if sin(a) != lit(x, 0.0):
            return sin(lit(x, n + 1) * a) / sin(a)
        return lit(x, n + 1) * cos(lit(x, n + 1) * a) / x
    if n == 0:
        return one
    if n == 1:
        return x + x
    return _recurrence(x + x, one, x + x, n)


def chebyshev_v(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == one:
        if x > lit(x, 0.0):
            return one
        if n % 2 == 0:
            return lit(x, n + n + 1)
        return lit(x, -(n + n + 1))
    if n > 8 and abs(x) < one:
        a = acos(x)
        if sin(a / lit(x, 2.0)) != one:
            return cos((lit(x, n) + lit(x, 0.5)) * a) / cos(a / lit(x, 2.0))
        if n % 2 == 0:
            return lit(x, n + n + 1)
        return lit(x, -(n + n + 1))
    if n == 0:
        return one
    if n == 1:
        return x + x - one
    return _recurrence(x + x, one, x + x - one, n)


def chebyshev_w(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == one:
        if x > lit(x, 0.0):
            return lit(x, n + n + 1)
        if n % 2 == 0:
            return one
        return -one
    if n > 8 and abs(x) < one:
        a = acos(x)
        if cos(a / lit(x, 2.0)) != one:
            return sin((lit(x, n) + lit(x, 0.5)) * a) / sin(a / lit(x, 2.0))
        if x > lit(x, 0.0):
            return lit(x, n + n + 1)
        if n % 2 == 0:
            return one
        return -one
    if n == 0:
        return one
    if n == 1:
        return x + x + one
    return _recurrence(x + x, one, x + x + one, n)


def shifted_chebyshev_t(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    y = x + x - one
    if n < 0:
        return lit(x, 0.0)
    if x == one:
        return one
    if x == lit(x, 0.0):
        if n % 2 == 0:
            return one
        return -one
    if n > 6 and abs(y) < one:
        return cos(lit(x, n) * acos(y))
    if n == 0:
        return one
    if n == 1:
        return y
    return _recurrence(y + y, one, y, n)


def shifted_chebyshev_u(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    y = x + x - one
    if n < 0:
        return lit(x, 0.0)
    if x == one:
        return lit(x, n + 1)
    if x == lit(x, 0.0):
        if n % 2 == 0:
            return lit(x, n + 1)
        return lit(x, -(n + 1))
    if n > 6 and abs(y) < one:
        a = acos(y)
        if sin(a) != lit(x, 0.0):
            return sin(lit(x, n + 1) * a) / sin(a)
        return lit(x, n + 1) * cos(lit(x, n + 1) * a) / y
    if n == 0:
        return one
    if n == 1:
        return y + y
    return _recurrence(y + y, one, y + y, n)


def shifted_chebyshev_v(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    y = x + x - one
    if n < 0:
        return lit(x, 0.0)
    if x == one:
        return one
    if x == lit(x, 0.0):
        if n % 2 == 0:
            return lit(x, n + n + 1)
        return lit(x, -(n + n + 1))
    if n > 6 and abs(y) < one:
        a = acos(y)
        if sin(a / lit(x, 2.0)) != one:
            return cos((lit(x, n) + lit(x, 0.5)) * a) / cos(a / lit(x, 2.0))
        if n % 2 == 0:
            return lit(x, n + n + 1)
        return lit(x, -(n + n + 1))
    if n == 0:
        return one
    if n == 1:
        return y + y - one
    return _recurrence(y + y, one, y + y - one, n)


def shifted_chebyshev_w(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    y = x + x - one
    if n < 0:
        return lit(x, 0.0)
    if x == one:
        return lit(x, n + n + 1)
    if x == lit(x, 0.0):
        if n % 2 == 0:
            return one
        return -one
    if n > 4 and abs(y) < one:
        a = acos(y)
        if cos(a / lit(x, 2.0)) != one:
            return sin((lit(x, n) + lit(x, 0.5)) * a) / sin(a / lit(x, 2.0))
        if n % 2 == 0:
            return one
        return -one
    if n == 0:
        return one
    if n == 1:
        return y + y + one
    return _recurrence(y + y, one, y + y + one, n)


def _hermite_limit(x):
    """getHermitianLimit<T>: beyond this degree ATen returns NaN."""
    return 128 if single(x) else 512


def hermite_h(x, order):
    n = _degree(order)
    if n < 0:
        return lit(x, 0.0)
    if n == 0:
        return lit(x, 1.0)
    if n == 1:
        return x + x
    if n > _hermite_limit(x):
        return lit(x, 0.0) / lit(x, 0.0)
    p = lit(x, 1.0)
    q = x + x
    r = lit(x, 0.0)
    k = 2
    while k < n + n:
        r = fma(x + x, q, -(lit(x, k) * p))
        p = q
        q = r
        k += 2
    return r


def hermite_he(x, order):
    n = _degree(order)
    if n < 0:
        return lit(x, 0.0)
    if n == 0:
        return lit(x, 1.0)
    if n == 1:
        return x
    if n > _hermite_limit(x):
        return lit(x, 0.0) / lit(x, 0.0)
    p = lit(x, 1.0)
    q = x
    r = x
    k = 1
    while k < n:
        r = fma(x, q, -(lit(x, k) * p))
        p = q
        q = r
        k += 1
    return r


def laguerre_l(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == lit(x, 0.0):
        return one
    if n == 0:
        return one
    if n == 1:
        return one - x
    p = one
    q = one - x
    r = q
    k = 1
    while k < n and q == q:
        r = fma(lit(x, k + k) + (one - x), q, -(lit(x, k) * p)) / lit(x, k + 1)
        p = q
        q = r
        k += 1
    return r


def legendre_p(x, order):
    n = _degree(order)
    one = lit(x, 1.0)
    if n < 0:
        return lit(x, 0.0)
    if abs(x) == one:
        if x > lit(x, 0.0) or n % 2 == 0:
            return one
        return -one
    if n == 0:
        return one
    if n == 1:
        return x
    p = one
    q = x
    r = q
    k = 1
    while k < n and q == q:
        r = fma(lit(x, k + k + 1) * x, q, -(lit(x, k) * p)) / lit(x, k + 1)
        p = q
        q = r
        k += 1
    return r


_FUNCTIONS = (_degree, _recurrence, _hermite_limit, chebyshev_t, chebyshev_u, chebyshev_v,
              chebyshev_w, shifted_chebyshev_t, shifted_chebyshev_u, shifted_chebyshev_v,
              shifted_chebyshev_w, hermite_h, hermite_he, laguerre_l, legendre_p)


def bind(env: dict, jit) -> dict:
    """The functions of ``NAMES`` with ``env``'s names as globals, each wrapped in ``jit``."""
    ns = dict(env)
    ns["_TWO63"] = _TWO63
    for fn in _FUNCTIONS:
        ns[fn.__name__] = types.FunctionType(fn.__code__, ns, fn.__name__)
    for fn in _FUNCTIONS:
        ns[fn.__name__] = jit(ns[fn.__name__])
    return {name: ns[name] for name in NAMES}
