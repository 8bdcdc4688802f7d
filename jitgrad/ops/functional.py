"""User-facing elementwise functions (``jitgrad.add``, ``jitgrad.sin``, ...) over the registry."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from . import elementwise as _decls  # noqa: F401 - registers the declarations
from .elementwise_call import call
from .registry import OPS

__all__ = [
    "add", "sub", "mul", "div", "true_divide", "neg", "negative", "pow", "reciprocal", "square",
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "abs", "absolute", "sign",
    "sin", "cos", "tan", "tanh", "sigmoid", "erf", "relu", "leaky_relu", "gelu", "softplus",
    "clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "where", "eq", "ne", "lt",
    "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal", "equal",
    "logical_not", "logical_and", "logical_or", "logical_xor", "isnan", "isinf", "isfinite",
    "multiply", "subtract", "divide", "rsub", "floor_divide", "remainder", "fmod", "floor",
    "ceil", "round", "trunc", "frac",
    "allclose", "isclose", "sinh", "cosh", "asin", "acos", "atan",
]

_Number = (numbers.Number, np.number, np.bool_)


def _check(x, name):
    if not isinstance(x, (Tensor,) + _Number):
        raise TypeError(f"{name}(): argument must be a Tensor or a number, not "
                        f"{type(x).__name__}")


def _binary(op_name, a, b):
    _check(a, op_name)
    _check(b, op_name)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        from .basic import tensor
        a = tensor(a)
    return call(OPS[op_name], a, b)


def add(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = mul(other, alpha)
    return _binary("add", input, other)


def sub(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = mul(other, alpha)
    if not isinstance(input, Tensor):
        return rsub(other, input)
    return _binary("sub", input, other)


def rsub(input, other, alpha=1):
    """``other - input`` for a tensor ``input`` (PyTorch records RsubBackward1 for scalars)."""
    if isinstance(other, Tensor):
        return _binary("sub", other, input)
    return call(OPS["rsub"], input, other=other)


def mul(input, other, *, out=None):
    return _binary("mul", input, other)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return trunc(div(input, other))
    if not isinstance(input, Tensor):
        # scalar / tensor: PyTorch records reciprocal(x) * scalar
        return mul(reciprocal(other), input)
    return _binary("div", input, other)


true_divide = div
multiply = mul
subtract = sub
divide = div


def neg(input):
    return call(OPS["neg"], input)


negative = neg


def reciprocal(input):
    return call(OPS["reciprocal"], input)


def square(input):
    return call(OPS["square"], input)


def pow(input, exponent):  # noqa: A001 - torch.pow
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return call(OPS["pow_tensor"], input, exponent)
    if isinstance(input, Tensor):
        _check(exponent, "pow")
        if input.dtype.is_floating_point is False and isinstance(exponent, (int, np.integer)) \
                and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return _pow_scalar_exponent(input, exponent)
    _check(input, "pow")
    ct = D.result_type(exponent, input)  # the scalar base joins type promotion
    if ct is not exponent.dtype:
        exponent = exponent.to(ct)
    return call(OPS["rpow"], exponent, base=input)


def _pow_scalar_exponent(x, e):
    # exponent joins type promotion as a wrapped scalar: int tensor ** 0.5 is float
    ct = D.result_type(x, e)
    if ct is not x.dtype:
        x = x.to(ct)
    return call(OPS["pow"], x, exponent=e)


def _unary(name):
    op = OPS[name]

    def fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        return call(op, input)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


exp = _unary("exp")
expm1 = _unary("expm1")
log = _unary("log")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
abs = _unary("abs")  # noqa: A001
absolute = abs
sign = _unary("sign")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
relu = _unary("relu")


def log2(input):
    return log(input) / math.log(2.0)


def log10(input):
    return log(input) / math.log(10.0)


def sinh(input):
    return (exp(input) - exp(-input)) * 0.5


def cosh(input):
    return (exp(input) + exp(-input)) * 0.5


def _numpy_only(name, np_fn, dtype_rule="same"):
    """Piecewise-constant or rarely differentiated functions, computed with NumPy.

    Their gradient is zero almost everywhere (floor, round, ...) or they are not differentiable
    in PyTorch either for integer results; results never require grad.
    """
    def fn(input, *args):
        data = np_fn(input._data, *args)
        return Tensor._make(np.asarray(data, dtype=input._data.dtype if dtype_rule == "same"
                                       else data.dtype))
    fn.__name__ = name
    return fn


floor = _numpy_only("floor", np.floor)
ceil = _numpy_only("ceil", np.ceil)
trunc = _numpy_only("trunc", np.trunc)


def round(input, decimals=0):  # noqa: A001
    return Tensor._make(np.round(input._data, decimals).astype(input._data.dtype))


def frac(input):
    return input - trunc(input).detach()


def asin(input):
    return Tensor._make(np.arcsin(input._data))


def acos(input):
    return Tensor._make(np.arccos(input._data))


def atan(input):
    return Tensor._make(np.arctan(input._data))


def floor_divide(input, other):
    a = input._data if isinstance(input, Tensor) else input
    b = other._data if isinstance(other, Tensor) else other
    dt = D.result_type(input, other)
    if not dt.is_floating_point and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    return Tensor._make(np.asarray(np.floor_divide(a, b)).astype(dt.np))


def remainder(input, other):
    a = input._data if isinstance(input, Tensor) else input
    b = other._data if isinstance(other, Tensor) else other
    dt = D.result_type(input, other)
    res = Tensor._make(np.asarray(np.mod(a, b)).astype(dt.np))
    if isinstance(input, Tensor) and input.requires_grad and dt.is_floating_point:
        # d/da (a - floor(a/b)*b) = 1 almost everywhere
        return input - (input.detach() - res)
    return res


def fmod(input, other):
    a = input._data
    b = other._data if isinstance(other, Tensor) else other
    dt = D.result_type(input, other)
    res = Tensor._make(np.asarray(np.fmod(a, b)).astype(dt.np))
    if input.requires_grad and dt.is_floating_point:
        return input - (input.detach() - res)
    return res


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return call(OPS["leaky_relu"], input, negative_slope=negative_slope)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        return call(OPS["gelu_tanh"], input)
    if approximate != "none":
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    return call(OPS["gelu"], input)


def softplus(input, beta=1.0, threshold=20.0):
    return call(OPS["softplus"], input, beta=beta, threshold=threshold)


def _bound(v, dt, low):
    if v is None:
        if dt.is_floating_point:
            return -np.inf if low else np.inf
        info = np.iinfo(dt.np) if dt is not D.bool_ else None
        return (info.min if low else info.max) if info else (0 if low else 1)
    return v.item() if isinstance(v, Tensor) else v


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - PyTorch's names
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) and min.ndim > 0 or isinstance(max, Tensor) and max.ndim > 0:
        r = input
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return r
    ct = D.result_type(input, *(v for v in (min, max) if v is not None))
    x = input if ct is input.dtype else input.to(ct)
    return call(OPS["clamp"], x, lo=_bound(min, ct, True), hi=_bound(max, ct, False))


clip = clamp


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


def maximum(input, other):
    return _binary("maximum", input, other)


def minimum(input, other):
    return _binary("minimum", input, other)


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .index import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not D.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.name.capitalize()}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .basic import tensor
        input = tensor(input, dtype=D.result_type(input, other))
    return call(OPS["where"], input, other, cond=condition)


def _compare(name):
    def fn(input, other):
        return _binary(name, input, other)
    fn.__name__ = name
    return fn


eq = _compare("eq")
ne = _compare("ne")
lt = _compare("lt")
le = _compare("le")
gt = _compare("gt")
ge = _compare("ge")
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def equal(input, other) -> bool:
    return tuple(input.shape) == tuple(other.shape) and bool(np.array_equal(input._data,
                                                                            other._data))


def logical_not(input):
    return call(OPS["logical_not"], input)


def logical_and(input, other):
    return _binary("logical_and", input, other)


def logical_or(input, other):
    return _binary("logical_or", input, other)


def logical_xor(input, other):
    return _binary("logical_xor", input, other)


def isnan(input):
    return Tensor._make(np.isnan(input._data))


def isinf(input):
    return Tensor._make(np.isinf(input._data))


def isfinite(input):
    return Tensor._make(np.isfinite(input._data))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return Tensor._make(np.isclose(input._data, other._data, rtol=rtol, atol=atol,
                                   equal_nan=equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))
