"""Registry declarations of torch.special's Airy and Bessel functions (airy_ai, bessel_j0/j1/y0/y1,
modified_bessel_i1/k0/k1, scaled_modified_bessel_k0/k1) and orthogonal polynomials of ``(x, n)``
(Chebyshev T/U/V/W and their shifted forms, Hermite H/He, Laguerre L, Legendre P).

One of the topic modules ``elementwise.py`` imports. PyTorch declares none of them
differentiable, so they are kernels without a node (``node=None``); the vocabulary functions are
ATen's Math.h ported in ``ops/special_bessel_scalar.py`` and ``ops/special_polynomial_scalar.py``.
The user functions (argument checks, scalar operands, ``out=``) are in ``ops/special_bessel.py``.
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node=None, dtype="float", name="special_airy_ai")
class _airy_ai:
    def f(a):
        return airy_ai(a)


@elementwise(node=None, dtype="float", name="special_bessel_j0")
class _bessel_j0:
    def f(a):
        return bessel_j0(a)


@elementwise(node=None, dtype="float", name="special_bessel_j1")
class _bessel_j1:
    def f(a):
        return bessel_j1(a)


@elementwise(node=None, dtype="float", name="special_bessel_y0")
class _bessel_y0:
    def f(a):
        return bessel_y0(a)


@elementwise(node=None, dtype="float", name="special_bessel_y1")
class _bessel_y1:
    def f(a):
        return bessel_y1(a)


@elementwise(node=None, dtype="float", name="special_modified_bessel_i1")
class _modified_bessel_i1:
    def f(a):
        return modified_bessel_i1(a)


@elementwise(node=None, dtype="float", name="special_modified_bessel_k0")
class _modified_bessel_k0:
    def f(a):
        return modified_bessel_k0(a)


@elementwise(node=None, dtype="float", name="special_modified_bessel_k1")
class _modified_bessel_k1:
    def f(a):
        return modified_bessel_k1(a)


@elementwise(node=None, dtype="float", name="special_scaled_modified_bessel_k0")
class _scaled_modified_bessel_k0:
    def f(a):
        return scaled_modified_bessel_k0(a)


@elementwise(node=None, dtype="float", name="special_scaled_modified_bessel_k1")
class _scaled_modified_bessel_k1:
    def f(a):
        return scaled_modified_bessel_k1(a)


# the polynomials: the degree n in the compute type (ATen's kernels take it as scalar_t and
# truncate it); not named n, the CUDA kernels' element count
@elementwise(node=None, dtype="float", name="special_chebyshev_polynomial_t")
class _chebyshev_polynomial_t:
    def f(x, degree):
        return chebyshev_t(x, degree)


@elementwise(node=None, dtype="float", name="special_chebyshev_polynomial_u")
class _chebyshev_polynomial_u:
    def f(x, degree):
        return chebyshev_u(x, degree)


@elementwise(node=None, dtype="float", name="special_chebyshev_polynomial_v")
class _chebyshev_polynomial_v:
    def f(x, degree):
        return chebyshev_v(x, degree)


@elementwise(node=None, dtype="float", name="special_chebyshev_polynomial_w")
class _chebyshev_polynomial_w:
    def f(x, degree):
        return chebyshev_w(x, degree)


@elementwise(node=None, dtype="float", name="special_shifted_chebyshev_polynomial_t")
class _shifted_chebyshev_polynomial_t:
    def f(x, degree):
        return shifted_chebyshev_t(x, degree)


@elementwise(node=None, dtype="float", name="special_shifted_chebyshev_polynomial_u")
class _shifted_chebyshev_polynomial_u:
    def f(x, degree):
        return shifted_chebyshev_u(x, degree)


@elementwise(node=None, dtype="float", name="special_shifted_chebyshev_polynomial_v")
class _shifted_chebyshev_polynomial_v:
    def f(x, degree):
        return shifted_chebyshev_v(x, degree)


@elementwise(node=None, dtype="float", name="special_shifted_chebyshev_polynomial_w")
class _shifted_chebyshev_polynomial_w:
    def f(x, degree):
        return shifted_chebyshev_w(x, degree)


@elementwise(node=None, dtype="float", name="special_hermite_polynomial_h")
class _hermite_polynomial_h:
    def f(x, degree):
        return hermite_h(x, degree)


@elementwise(node=None, dtype="float", name="special_hermite_polynomial_he")
class _hermite_polynomial_he:
    def f(x, degree):
        return hermite_he(x, degree)


@elementwise(node=None, dtype="float", name="special_laguerre_polynomial_l")
class _laguerre_polynomial_l:
    def f(x, degree):
        return laguerre_l(x, degree)


@elementwise(node=None, dtype="float", name="special_legendre_polynomial_p")
class _legendre_polynomial_p:
    def f(x, degree):
        return legendre_p(x, degree)
