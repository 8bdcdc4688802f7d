"""User-facing arithmetic: add/sub/mul/div (and their aliases), neg, reciprocal, square, pow,
float_power; rounding (floor/ceil/trunc/round/frac); the division remainders (floor_divide,
remainder, fmod, div's rounding modes); lerp, addcmul, addcdiv."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .elementwise_call import call
from .functional_args import (
    _binary,
    _check,
    _need_tensor,
    _no_derivative,
    _not_implemented,
    _Number,
    _overload_error,
    _scalar_tensor,
    _wrapped,
)
from .parser_errors import method_error, parser_type_name, raise_instead
from .registry import OPS


def _is_bool(x) -> bool:
    return (x.__class__ is bool or isinstance(x, np.bool_)
            or (isinstance(x, Tensor) and x._data.dtype.kind == "b"))


def _check_sub(input, other):
    if _is_bool(input) or _is_bool(other):
        if _is_bool(input) and _is_bool(other):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _alpha_dtype(input, other, alpha):
    """The result dtype of add/sub with ``alpha``, after PyTorch's alpha checks."""
    ct = D.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)) and ct is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not ct.is_floating_point and not isinstance(alpha, (int, np.integer, np.bool_)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return ct


def _check_half_scalar(ct, v):
    """A Scalar that ATen's kernel converts to half itself (``to<Half>()``: pow's exponent,
    add's alpha) must be within half's range; inf and NaN pass."""
    if ct is D.float16 and not isinstance(v, (bool, np.bool_)) and isinstance(v, _Number) \
            and abs(v) > 65504 and abs(v) != float("inf"):
        raise RuntimeError("value cannot be converted to type c10::Half without overflow")


def _scaled(name, input, other, alpha):
    """``alpha * other`` for rsub with PyTorch's alpha checks (on the result dtype)."""
    ct = _alpha_dtype(input, other, alpha)
    if ct is D.bool_:
        return call(OPS["logical_and"], other, bool(alpha)) if isinstance(other, Tensor) \
            else bool(other) and bool(alpha)
    return mul(other, alpha)


def _with_alpha(name, input, other, alpha):
    """add/sub with alpha != 1: one fused multiply-add (registry ``add_alpha``/``sub_alpha``),
    or ``other and alpha`` on bool."""
    _check(input, name, 1)
    _check(other, name, 2)
    ct = _alpha_dtype(input, other, alpha)
    if ct is D.bool_:
        return _binary(name, input, _scaled(name, input, other, alpha))
    _check_half_scalar(ct, alpha)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .basic import tensor
        input = tensor(input)
    return call(OPS[name + "_alpha"], input, other, alpha=alpha)


def add(input, other, *, alpha=1, _method=None):
    try:  # (free until raised) the method form words the parser's errors as a method's
        other, alpha = D.parser_scalar(other), D.parser_scalar(alpha)
        if alpha != 1 or isinstance(alpha, (bool, float, np.floating)):  # (1.0, True: checked)
            return _with_alpha("add", input, other, alpha)
        return _binary("add", input, other)
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


def sub(input, other, *, alpha=1, _method=None):
    try:  # (free until raised) the method form words the parser's errors as a method's
        input, other = D.parser_scalar(input), D.parser_scalar(other)
        alpha = D.parser_scalar(alpha)
        _check_sub(input, other)
        if not isinstance(input, Tensor) and isinstance(other, Tensor):
            _check(input, "sub", 1)
            input = _wrapped(input, other)  # torch.sub(2, x): SubBackward0, as PyTorch
        if alpha != 1 or isinstance(alpha, (bool, float, np.floating)):  # (1.0, True: checked)
            return _with_alpha("sub", input, other, alpha)
        return _binary("sub", input, other)
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


def rsub(input, other, alpha=1):
    """``other - input`` (``2 - x``: RsubBackward1, the scalar joining type promotion;
    two tensors: RsubBackward0)."""
    if not isinstance(input, Tensor):
        _overload_error("rsub", input, other)
    other = D.parser_scalar(other)
    _check_sub(input, other)
    if alpha != 1:
        input = _scaled("rsub", other, input, alpha)
    if isinstance(other, Tensor):
        return call(OPS["rsub_tensor"], input, other)
    _check(other, "rsub", 2)
    ct = D.result_type(input, other)
    x = input if input.dtype is ct else input.to(ct)
    return call(OPS["rsub"], x, other=other)


def mul(input, other, *, _method=None):
    try:  # (free until raised) the method form words the parser's errors as a method's
        return _binary("mul", input, other)
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


def div(input, other, *, rounding_mode=None, _method=None):
    try:  # (free until raised) the method form words the parser's errors as a method's
        if rounding_mode in ("floor", "trunc"):
            return _div_rounded(input, other, rounding_mode)
        if rounding_mode is not None:
            raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or "
                               f"'floor' but found '{rounding_mode}'")
        if not isinstance(input, Tensor) and isinstance(other, Tensor):
            # torch.div(2, x) wraps the scalar (DivBackward0); the operator 2 / x is
            # reciprocal(x) * 2 (methods._rtruediv)
            _check(input, "div", 1)
            ct = D.result_type(input, other)  # the scalar keeps its value (-1 / uint8: -1.0)
            from .basic import tensor
            input = tensor(input, dtype=ct if ct.is_floating_point else D.get_default_dtype(),
                           device=other.device)
        return _binary("div", input, other)
    except TypeError as e:
        given = {} if rounding_mode is None else {"rounding_mode": rounding_mode}
        raise_instead(method_error(_method, e, (other,), given))


true_divide = div
multiply = mul
subtract = sub
divide = div


def neg(input):
    _need_tensor(input, "neg")
    if input._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return call(OPS["neg"], input)


negative = neg


def reciprocal(input):
    return call(OPS["reciprocal"], input)


def square(input):
    _need_tensor(input, "square")
    if input._data.dtype.kind == "b":  # pow(x, 2): bool ** 2 is int64
        input = input.to(D.int64)
    return call(OPS["square"], input)


def _no_bool_pow(ct):
    if ct is D.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


def pow(input, exponent, *, _method=None):  # noqa: A001 - torch.pow
    try:  # (free until raised) the method form words the parser's errors as a method's
        if isinstance(input, Tensor) and isinstance(exponent, Tensor):
            if input.dtype is D.bool_ or exponent.dtype is D.bool_:
                _no_bool_pow(D.result_type(input, exponent))
            return call(OPS["pow_tensor"], input, exponent)
        if isinstance(input, Tensor):
            if not isinstance(exponent, _Number):
                _overload_error("pow", input, exponent)
            if input.dtype.is_floating_point is False \
                    and isinstance(exponent, (int, np.integer)) \
                    and not isinstance(exponent, (bool, np.bool_)) and exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return _pow_scalar_exponent(input, exponent)
        if not isinstance(exponent, Tensor) or not isinstance(input, _Number):
            _overload_error("pow", input, exponent)
        ct = D.result_type(exponent, input)  # the scalar base joins type promotion
        _no_bool_pow(ct)
        if ct is not exponent.dtype:
            exponent = exponent.to(ct)
        return call(OPS["rpow"], exponent, base=input)
    except TypeError as e:
        raise_instead(method_error(_method, e, (exponent,), {}))


def _pow_scalar_exponent(x, e):
    # exponent joins type promotion as a wrapped scalar: int tensor ** 0.5 is float
    ct = D.result_type(x, e)
    if ct is not x.dtype:
        x = x.to(ct)
    if not ct.is_floating_point and isinstance(e, (int, np.integer)) and ct is not D.bool_:
        info = np.iinfo(ct.np)
        if e > info.max or e < info.min:  # PyTorch converts the exponent to the tensor's type
            raise RuntimeError(f"value cannot be converted to type {ct.name}_t without "
                               "overflow")
    _check_half_scalar(ct, e)
    if ct is D.float32 or ct is D.float64:  # PyTorch's kernel special-cases these
        special = _POW_SPECIAL.get(e) if not isinstance(e, (bool, np.bool_)) else None
        if special is not None:
            return call(OPS[special], x)
    return call(OPS["pow"], x, exponent=e)


# scalar exponents PowKernel.cpp computes without std::pow on float32/float64 (products,
# sqrt, rsqrt, reciprocal), and the declared ops that do the same (ops/elementwise_arith.py)
_POW_SPECIAL = {0.5: "pow_sqrt", -0.5: "pow_rsqrt", -1: "pow_reciprocal", 2: "square",
                3: "pow_cube", -2: "pow_inverse_square"}


def positive(input):
    """``+x``: ``input`` itself; a bool tensor raises as in PyTorch."""
    _need_tensor(input, "positive")
    if input.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def float_power(input, exponent):
    """``pow`` in double precision (float64 result whatever the inputs)."""
    if isinstance(input, Tensor):
        input = input.to(D.float64)
    elif isinstance(input, _Number):
        input = float(input)
    if isinstance(exponent, Tensor):
        exponent = exponent.to(D.float64)
    elif isinstance(exponent, _Number):
        exponent = float(exponent)
    return pow(input, exponent)


# --------------------------------------------------------------------------- rounding


def _rounding(name):
    """floor/ceil/trunc: registry ops keeping the dtype (identity on integers, as PyTorch);
    zero gradients (FloorBackward0 ...)."""
    op = OPS[name]

    def fn(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{parser_type_name(input)}")
        if input.dtype is D.bool_:
            raise _not_implemented(f"{name}_vml_cpu", input.dtype)
        return call(op, input)
    fn.__name__ = fn.__qualname__ = name
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
trunc = _rounding("trunc")
fix = trunc


def round(input, *, decimals=0):  # noqa: A001
    """Half to even (RoundBackward0); ``decimals`` != 0 rounds ``input * 10**decimals`` the same
    way, as PyTorch does (RoundBackward1; floating inputs only)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"round(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if decimals == 0:
        if input.dtype is D.bool_:
            raise _not_implemented("round_vml_cpu", input.dtype)
        return call(OPS["round"], input)
    if not input.dtype.is_floating_point:
        raise _not_implemented("round_cpu", input.dtype)
    return call(OPS["round_decimals"], input, ten_pow=10.0 ** abs(decimals),
                neg=decimals < 0)


def frac(input):
    """``input - trunc(input)`` (FracBackward0: the gradient passes through); floating only."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frac(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if not input.dtype.is_floating_point:
        raise _not_implemented("frac_cpu", input.dtype)
    return call(OPS["frac"], input)


# --------------------------------------------------------------------------- division remainders


def _division_operands(name, kernel, input, other):
    """Checks shared by floor_divide/remainder/fmod: PyTorch's dtype errors and, for integer
    results on the CPU, its ZeroDivisionError (a kernel cannot raise; checked before the launch).
    On CUDA the divisor is not read back: an integer division by zero gives 0 there."""
    _check(input, name)
    _check(other, name)
    ct = D.result_type(input, other)
    if ct is D.bool_:
        raise _not_implemented(kernel, ct)
    if not ct.is_floating_point:
        if isinstance(other, Tensor):
            d = other._data
            zero = d.__class__ is np.ndarray and d.size and not d.all()
        else:
            zero = other == 0
        if zero:
            raise RuntimeError("ZeroDivisionError")
    return ct


def floor_divide(input, other, *, _method=None):
    """Python's ``//`` (sign of the divisor); no derivative (PyTorch: NotImplemented node). A
    NumPy bool operand is a double, as PyTorch's parser reads it (``int_x // np.bool_(True)``:
    float32)."""
    try:  # (free until raised) the method form words the parser's errors as a method's
        input, other = D.parser_scalar(input), D.parser_scalar(other)
        _division_operands("floor_divide", "div_floor_cpu", input, other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            from .basic import tensor
            input = tensor(input)
        with grad_mode.no_grad():
            res = call(OPS["floor_divide"], input, other)
        return _no_derivative("floor_divide", res, (input, other))
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


def _div_rounded(input, other, mode):
    """``div(rounding_mode=...)``: floor_divide, or the truncated quotient (floats:
    ``trunc(a / b)``; integers: ``(a - fmod(a, b)) // b``, exact); PyTorch's DivBackward2 (zero
    gradients)."""
    with grad_mode.no_grad():
        if mode == "floor":
            res = floor_divide(input, other)
        else:
            ct = _division_operands("div", "div_trunc_cpu", input, other)
            input_t = input
            if not isinstance(input, Tensor):  # a true division, not scalar * reciprocal
                input_t = _scalar_tensor(input, ct, other.device)
            if ct.is_floating_point:
                if ct is D.float16 and isinstance(other, Tensor) and other.numel() != 1:
                    # ATen's Half kernel without a scalar divisor: (a / b).trunc() on
                    # Vectorized<Half>, the quotient rounded to half before trunc
                    res = trunc(div(input_t, other))
                else:  # the float quotient truncated (div_trunc_cpu_reduced_float)
                    res = call(OPS["div_trunc"], input_t, other)
            else:
                res = floor_divide(_binary("sub", input_t, fmod(input_t, other)), other)
    if (res.dtype.is_floating_point and grad_mode.is_grad_enabled()
            and any(isinstance(t, Tensor) and t.requires_grad for t in (input, other))):
        def backward(node, g):
            # PyTorch: zeros (exactly +0: a negative, NaN or infinite grad does not show)
            from .factories import zeros_like
            return [zeros_like(g) if need else None for need in node.ctx.needs_input_grad]
        return record("DivBackward2", [input, other], res._data, backward)
    return res


def _with_scalar_other(op_name, input, other, ct):
    """``input op other`` for a Python-scalar ``other``: the ``*Backward0`` op (no edge for the
    scalar); the scalar joins type promotion, as in PyTorch."""
    x = input if input.dtype is ct else input.to(ct)
    return call(OPS[op_name], x, other=other)


def remainder(input, other, *, _method=None):
    """Python's ``%`` (sign of the divisor; PyTorch's kernel: fmod plus the divisor where the
    signs differ). RemainderBackward1 (tensor, tensor) / RemainderBackward0 (tensor, scalar);
    ``other`` gets ``-g * floor_divide(input, other)``. A scalar ``input`` records PyTorch's
    NotImplemented node."""
    try:  # (free until raised) the method form words the parser's errors as a method's
        ct = _division_operands("remainder", "remainder_cpu", input, other)
        if isinstance(input, Tensor) and isinstance(other, Tensor):
            return call(OPS["remainder"], input, other)
        if isinstance(input, Tensor):
            return _with_scalar_other("remainder_scalar", input, other, ct)
        with grad_mode.no_grad():
            res = call(OPS["remainder"], _scalar_tensor(input, ct, other.device), other)
        return _no_derivative("remainder", res, (input, other))
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


def fmod(input, other, *, _method=None):
    """C fmod (sign of the dividend). FmodBackward1 (tensor, tensor) / FmodBackward0 (tensor,
    scalar); ``other`` gets ``-g * trunc(input / other)``."""
    try:  # (free until raised) the method form words the parser's errors as a method's
        if not isinstance(input, Tensor):
            _overload_error("fmod", input, other)
        ct = _division_operands("fmod", "fmod_cpu", input, other)
        if isinstance(other, Tensor):
            return call(OPS["fmod"], input, other)
        return _with_scalar_other("fmod_scalar", input, other, ct)
    except TypeError as e:
        raise_instead(method_error(_method, e, (other,), {}))


# --------------------------------------------------------------------------- lerp, addcmul, addcdiv


def lerp(input, end, weight):
    """``input + weight * (end - input)`` (PyTorch's two-sided formula); LerpBackward0 (scalar
    weight) / LerpBackward1 (tensor weight)."""
    _need_tensor(input, "lerp", 1)
    if not isinstance(end, Tensor) or not isinstance(weight, (Tensor,) + _Number):
        got = ", ".join(parser_type_name(a)
                        for a in (input, end, weight))
        raise TypeError(f"lerp() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (Tensor input, Tensor end, Tensor weight, *, "
                        "Tensor out = None)\n * (Tensor input, Tensor end, Number weight, *, "
                        "Tensor out = None)\n")
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {D.c_name(input.dtype)} for `end` but got dtype "
                           f"{D.c_name(end.dtype)}")
    if isinstance(weight, Tensor) and weight._data.ndim == 0 and weight.dtype is not input.dtype:
        # a 0-d weight of another dtype takes part in type promotion (as a wrapped scalar
        # would not: a float64 one makes 0-d float32 inputs float64, 1-d ones stay float32)
        ct = D.result_type(input, end, weight)
        if ct is not input.dtype:
            input, end = input.to(ct), end.to(ct)
        weight = weight.to(ct)
    if not input.dtype.is_floating_point:
        raise _not_implemented("lerp_kernel_scalar" if not isinstance(weight, Tensor)
                               else "lerp_kernel_tensor", input.dtype)
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {D.c_name(input.dtype)} for `weight` but got "
                               f"dtype {D.c_name(weight.dtype)}")
        return call(OPS["lerp_tensor"], input, end, weight)
    _check(weight, "lerp", 3, "weight")
    return call(OPS["lerp"], input, end, weight=weight)


def _addc(name, input, tensor1, tensor2, value):
    _need_tensor(input, name, 1)
    _need_tensor(tensor1, name, 2, "tensor1")
    _need_tensor(tensor2, name, 3, "tensor2")
    if isinstance(value, Tensor) and value._data.ndim == 0:
        value = value.item()  # a 0-d tensor is a Number to PyTorch's parser
    elif not isinstance(value, _Number) or isinstance(value, complex):
        if isinstance(value, complex):
            raise RuntimeError(f"value cannot be converted to type "
                               f"{D.c_name(D.result_type(input, tensor1, tensor2))} without "
                               "overflow")
        raise TypeError(f"{name}(): argument 'value' must be Number, not "
                        f"{parser_type_name(value)}")
    ct = D.result_type(input, tensor1, tensor2)
    if ct is D.bool_ and name == "addcmul":
        raise _not_implemented("addcmul_cpu_out", ct)
    if not ct.is_floating_point:
        if name == "addcdiv":
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        value = int(value)  # PyTorch casts the value to the integer type
    return call(OPS[name], input, tensor1, tensor2, value=value)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2`` (AddcmulBackward0)."""
    return _addc("addcmul", input, tensor1, tensor2, value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2`` (AddcdivBackward0); floating only."""
    return _addc("addcdiv", input, tensor1, tensor2, value)
