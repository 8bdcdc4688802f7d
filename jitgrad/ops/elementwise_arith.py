"""Arithmetic declarations: add/sub/mul/div and their reversed forms, powers, rounding, the
division remainders, lerp/addcmul/addcdiv. How to write one: ``elementwise.py``."""
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


# add/sub with alpha != 1: ATen's add kernel is one fused multiply-add, fmadd(b, alpha, a),
# alpha in the common dtype (``alpha.to<scalar_t>()``: half for float16) and sub's negated;
# a separate alpha * b rounds twice (a.add(b, alpha=0.3) differed in 11791 of 64000 float32
# values). The node is PyTorch's: AddBackward0/SubBackward0 with the other's gradient g * alpha
@elementwise(node="AddBackward0", aux={"alpha": "compute"}, name="add_alpha",
             half_scalar={"alpha": "common"})
class _add_alpha:
    def f(a, b, alpha):
        return fma(b, alpha, a)

    def da(g):
        return g

    def db(g, alpha):
        return g * alpha


@elementwise(node="SubBackward0", aux={"alpha": "compute"}, name="sub_alpha",
             half_scalar={"alpha": "common"})
class _sub_alpha:
    def f(a, b, alpha):
        return fma(b, -alpha, a)

    def da(g):
        return g

    def db(g, alpha):
        return -(g * alpha)


@elementwise(node="RsubBackward1", aux={"other": "compute"}, half_scalar={"other": "common"})
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


# ATens mul_kernel reads a scalar second operand as float (opmath) for half
@elementwise(node="MulBackward0", half_scalar={"b": "opmath"})
class mul:
    def f(a, b):
        return a * b

    def da(g, b):
        return g * b

    def db(g, a):
        return g * a


@elementwise(node="DivBackward0", dtype="float", half_scalar={"b": "opmath"})
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


# the half kernel takes ``exp_scalar.to<Half>()``
@elementwise(node="PowBackward0", aux={"exponent": "compute"}, half_scalar={"exponent": "common"})
class pow:  # noqa: A001 - torch.pow
    def f(a, exponent):
        return pow_(a, exponent)

    def da(g, a, exponent):
        # ATen's pow_backward: grad * (exponent * self.pow(exponent - 1)), where that pow takes
        # PowKernel.cpp's special cases (below) for exponent - 1 in {1, 2, 3, -2, +-0.5, -1}
        e1 = exponent - lit(exponent, 1)
        p = select(e1 == lit(e1, 1), a,
            select(e1 == lit(e1, 2), a * a,
            select(e1 == lit(e1, 3), a * a * a,
            select(e1 == lit(e1, -2), lit(a, 1.0) / (a * a),
            select(e1 == lit(e1, 0.5), sqrt(a),
            select(e1 == lit(e1, -0.5), lit(a, 1.0) / sqrt(a),
            select(e1 == lit(e1, -1), lit(a, 1.0) / a, pow_(a, e1))))))))
        return select(exponent == lit(exponent, 0), lit(g, 0.0), g * (exponent * p))


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
        return select(b == lit(b, 0), lit(g, 0.0), g * b * pow_(a, b - lit(b, 1)))

    def db(g, a, b, out):
        return select((a == lit(a, 0)) & (b >= lit(b, 0)), g * lit(g, 0.0), g * out * log(a))


# the base is a wrapped number cast to the common dtype (pow(Tensor, Tensor))
@elementwise(node="PowBackward2", aux={"base": "compute"}, name="rpow",
             half_scalar={"base": "common"})
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


# PyTorch's float32/float64 kernel for a scalar exponent (PowKernel.cpp) special-cases
# -1, -0.5, 0.5 (reciprocal/rsqrt/sqrt kernels), 2, 3 and -2 (products) before std::pow; its
# backward is grad * (exponent * self.pow(exponent - 1)) through the same special cases.
# These are those cases: PyTorch's bits, and no libm pow call for the common powers.
@elementwise(node="PowBackward0", name="pow_cube", dtype="float")
class _pow_cube:
    def f(a):
        return a * a * a

    def da(g, a):
        return g * (lit(a, 3.0) * (a * a))


@elementwise(node="PowBackward0", name="pow_inverse_square", dtype="float")
class _pow_inverse_square:
    def f(a):
        return lit(a, 1.0) / (a * a)

    def da(g, a):
        return g * (lit(a, -2.0) * pow_(a, lit(a, -3.0)))


@elementwise(node="PowBackward0", name="pow_reciprocal", dtype="float")
class _pow_reciprocal:
    def f(a):
        return lit(a, 1.0) / a

    def da(g, a):
        return g * (lit(a, -1.0) * (lit(a, 1.0) / (a * a)))


@elementwise(node="PowBackward0", name="pow_rsqrt", dtype="float")
class _pow_rsqrt:
    def f(a):
        return lit(a, 1.0) / sqrt(a)

    def da(g, a):
        return g * (lit(a, -0.5) * pow_(a, lit(a, -1.5)))


@elementwise(node="PowBackward0", name="square")
class _square:
    def f(a):
        return a * a

    def da(g, a):
        return g * lit(g, 2.0) * a


# --------------------------------------------------------------------------- rounding
# floor/ceil/trunc/round keep the input dtype and are the identity on integers (the vocabulary
# functions are); their gradient is zero, as PyTorch's (FloorBackward0 ...: zeros).


@elementwise(node="FloorBackward0", name="floor")
class _floor:
    def f(a):
        return floor(a)

    def da(g):
        return lit(g, 0.0)


@elementwise(node="CeilBackward0", name="ceil")
class _ceil:
    def f(a):
        return ceil(a)

    def da(g):
        return lit(g, 0.0)


@elementwise(node="TruncBackward0", name="trunc")
class _trunc:
    def f(a):
        return trunc(a)

    def da(g):
        return lit(g, 0.0)


@elementwise(node="RoundBackward0", name="round")
class _round:
    def f(a):
        return rint(a)  # half to even, as PyTorch (std::nearbyint)

    def da(g):
        return lit(g, 0.0)


@elementwise(node="RoundBackward1", aux={"ten_pow": "compute", "neg": "bool"}, dtype="float")
class round_decimals:
    # PyTorch's round(decimals=d): ten_pow = 10**|d| in the input precision, neg = d < 0.
    # Floating only (PyTorch has no integer kernel; functional.round raises for integers).
    def f(a, ten_pow, neg):
        return select(neg, rint(a / ten_pow) * ten_pow, rint(a * ten_pow) / ten_pow)

    def da(g):
        return lit(g, 0.0)


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


@elementwise(node="FmodBackward0", aux={"other": "compute"}, half_scalar={"other": "common"})
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


@elementwise(node="RemainderBackward0", aux={"other": "compute"},
             half_scalar={"other": "common"})
class remainder_scalar:
    def f(a, other):
        r = fmod(a, other)
        return select((r != lit(r, 0)) & ((r < lit(r, 0)) != (other < lit(other, 0))),
                      r + other, r)

    def da(g):
        return g


@elementwise(node=None, half_scalar={"b": "opmath"})  # div_floor_kernel: as mul
class floor_divide:
    # PyTorch records a NotImplemented node (no derivative): the wrapper attaches it
    def f(a, b):
        return a // b


# div(rounding_mode="trunc") on floats: ATen's div_trunc_kernel truncates the quotient in the
# compute type (float for half: one rounding of the truncated value, not trunc of a rounded
# quotient); gradients are DivBackward2's zeros, recorded by the wrapper
@elementwise(node=None, dtype="float", name="div_trunc", half_scalar={"b": "opmath"})
class _div_trunc:
    def f(a, b):
        return trunc(a / b)


# --------------------------------------------------------------------------- lerp, addcmul, addcdiv


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
    # ATen's CPU kernel, fmadd(value * t1, t2, self), and derivatives.yaml's grad * (t2 * value)
    # and grad * (t1 * value), operation for operation (bit for bit with PyTorch)
    def f(a, t1, t2, value):
        return fma(value * t1, t2, a)

    def da(g):
        return g

    def dt1(g, t2, value):
        return g * (t2 * value)

    def dt2(g, t1, value):
        return g * (t1 * value)


# floating only (functional.addcdiv raises PyTorch's error for integers): the "float" rule keeps
# integer kernels, whose division by zero has no defined result, from being generated
@elementwise(node="AddcdivBackward0", aux={"value": "compute"}, dtype="float")
class addcdiv:
    # ATen's CPU kernel and derivatives.yaml, operation for operation: ``(value * t1) / t2``,
    # ``grad * (value / t2)`` and ``-grad * (value * t1 / (t2 * t2))`` (another grouping
    # differs from PyTorch in the last bit for about a fifth of the elements)
    def f(a, t1, t2, value):
        return a + value * t1 / t2

    def da(g):
        return g

    def dt1(g, t2, value):
        return g * (value / t2)

    def dt2(g, t1, t2, value):
        return -g * (value * t1 / (t2 * t2))
