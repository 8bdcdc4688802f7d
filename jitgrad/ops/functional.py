"""User-facing elementwise functions (``jitgrad.add``, ``jitgrad.sin``, ...) over the registry."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from . import elementwise as _decls  # noqa: F401 - registers the declarations
from .composite import record
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
    # added with the elementwise PyTorch-parity sweep
    "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign", "heaviside",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "lerp", "addcmul", "addcdiv",
    "exp2", "sinc", "deg2rad", "rad2deg", "nan_to_num", "logit", "signbit", "positive", "sgn",
    "fix", "arcsin", "arccos", "arctan", "float_power",
]

_Number = (numbers.Number, np.number, np.bool_)


_ARG = {1: "input", 2: "other"}


def _check(x, name, pos=2, arg=None):
    if not isinstance(x, (Tensor,) + _Number):
        raise TypeError(f"{name}(): argument '{arg or _ARG[pos]}' (position {pos}) must be "
                        f"Tensor, not {type(x).__name__}")


def _need_tensor(x, name, pos=1, arg=None):
    """PyTorch's TypeError for a function taking only Tensors (``maximum(x, 2)``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg or _ARG[pos]}' (position {pos}) must be "
                        f"Tensor, not {type(x).__name__}")


def _overload_error(name, *args):
    """PyTorch's TypeError when no overload takes the arguments (``eq(2, x)``)."""
    got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args)
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n * (Tensor input, Tensor other)\n"
                    f" * (Tensor input, Number other)\n")


def _binary(op_name, a, b):
    _check(a, op_name, 1)
    _check(b, op_name, 2)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        from .basic import tensor
        a = tensor(a)
    return call(OPS[op_name], a, b)


def _tensor_binary(op_name, a, b, name=None):
    """An op PyTorch defines for two Tensors only."""
    _need_tensor(a, name or op_name, 1)
    _need_tensor(b, name or op_name, 2)
    return call(OPS[op_name], a, b)


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


def _scaled(name, input, other, alpha):
    """``alpha * other`` for add/sub with PyTorch's alpha checks (on the result dtype)."""
    ct = D.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)) and ct is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not ct.is_floating_point and not isinstance(alpha, (int, np.integer, np.bool_)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if ct is D.bool_:
        return call(OPS["logical_and"], other, bool(alpha)) if isinstance(other, Tensor) \
            else bool(other) and bool(alpha)
    return mul(other, alpha)


def _wrapped(scalar, other):
    """A Python scalar first operand as PyTorch wraps it: a 0-d tensor that does not change the
    result dtype (a wrapped number only counts by category)."""
    return _scalar_tensor(scalar, D.result_type(scalar, other), other.device)


def _scalar_tensor(v, dt, device):
    """A 0-d tensor of ``dt`` holding scalar ``v``, integers wrapping as PyTorch's casts do."""
    from .basic import tensor
    from .elementwise_call import _scalar
    return tensor(_scalar(v, dt.np, False), dtype=dt, device=device)


def add(input, other, *, alpha=1):
    if alpha != 1 or alpha.__class__ is bool:
        _check(input, "add", 1)
        _check(other, "add", 2)
        other = _scaled("add", input, other, alpha)
    return _binary("add", input, other)


def sub(input, other, *, alpha=1):
    _check_sub(input, other)
    if alpha != 1 or alpha.__class__ is bool:
        _check(input, "sub", 1)
        _check(other, "sub", 2)
        other = _scaled("sub", input, other, alpha)
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        _check(input, "sub", 1)
        input = _wrapped(input, other)  # torch.sub(2, x): SubBackward0, as PyTorch
    return _binary("sub", input, other)


def rsub(input, other, alpha=1):
    """``other - input`` (``2 - x``: RsubBackward1, the scalar joining type promotion;
    two tensors: RsubBackward0)."""
    if not isinstance(input, Tensor):
        _overload_error("rsub", input, other)
    _check_sub(input, other)
    if alpha != 1:
        input = _scaled("rsub", other, input, alpha)
    if isinstance(other, Tensor):
        return call(OPS["rsub_tensor"], input, other)
    _check(other, "rsub", 2)
    ct = D.result_type(input, other)
    x = input if input.dtype is ct else input.to(ct)
    return call(OPS["rsub"], x, other=other)


def mul(input, other):
    return _binary("mul", input, other)


def div(input, other, *, rounding_mode=None):
    if rounding_mode in ("floor", "trunc"):
        return _div_rounded(input, other, rounding_mode)
    if rounding_mode is not None:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        # torch.div(2, x) wraps the scalar (DivBackward0); the operator 2 / x is
        # reciprocal(x) * 2 (methods._rtruediv)
        _check(input, "div", 1)
        ct = D.result_type(input, other)  # the scalar keeps its value (-1 / uint8: -1.0)
        from .basic import tensor
        input = tensor(input, dtype=ct if ct.is_floating_point else D.get_default_dtype(),
                       device=other.device)
    return _binary("div", input, other)


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


def pow(input, exponent):  # noqa: A001 - torch.pow
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        if input.dtype is D.bool_ or exponent.dtype is D.bool_:
            _no_bool_pow(D.result_type(input, exponent))
        return call(OPS["pow_tensor"], input, exponent)
    if isinstance(input, Tensor):
        if not isinstance(exponent, _Number):
            _overload_error("pow", input, exponent)
        if input.dtype.is_floating_point is False and isinstance(exponent, (int, np.integer)) \
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
    if e == 0.5 and (ct is D.float32 or ct is D.float64):  # PyTorch's kernel: sqrt
        return call(OPS["pow_sqrt"], x)
    return call(OPS["pow"], x, exponent=e)


def _unary(name):
    op = OPS[name]

    def fn(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return call(op, input)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _not_for_bool(fn, error):
    """``fn`` raising ``error()`` for a bool tensor (PyTorch has no bool kernel for it)."""
    def checked(input):
        if isinstance(input, Tensor) and input._data.dtype.kind == "b":
            raise error()
        return fn(input)
    checked.__name__ = checked.__qualname__ = fn.__name__
    return checked


exp = _unary("exp")
expm1 = _unary("expm1")
log = _unary("log")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
abs = _not_for_bool(  # noqa: A001
    _unary("abs"), lambda: NotImplementedError("\"abs_cpu\" not implemented for 'Bool'"))
absolute = abs
sign = _unary("sign")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
relu = _not_for_bool(_unary("relu"),
                     lambda: RuntimeError("Boolean inputs not supported for relu"))
log2 = _unary("log2")
log10 = _unary("log10")
sinh = _unary("sinh")
cosh = _unary("cosh")
exp2 = _unary("exp2")
sinc = _unary("sinc")
deg2rad = _unary("deg2rad")
rad2deg = _unary("rad2deg")
sgn = sign


def _not_implemented(kernel, dt):
    """PyTorch's NotImplementedError for a dtype its kernel is not dispatched for."""
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{D.scalar_name(dt)}'")


def _rounding(name):
    """floor/ceil/trunc: registry ops keeping the dtype (identity on integers, as PyTorch);
    zero gradients (FloorBackward0 ...)."""
    op = OPS[name]

    def fn(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        if input.dtype is D.bool_:
            raise _not_implemented(f"{name}_vml_cpu", input.dtype)
        return call(op, input)
    fn.__name__ = fn.__qualname__ = name
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
trunc = _rounding("trunc")


def round(input, *, decimals=0):  # noqa: A001
    """Half to even (RoundBackward0); ``decimals`` != 0 rounds ``input * 10**decimals`` the same
    way, as PyTorch does (RoundBackward1; floating inputs only)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"round(): argument 'input' must be Tensor, not {type(input).__name__}")
    if decimals == 0:
        if input.dtype is D.bool_:
            raise _not_implemented("round_vml_cpu", input.dtype)
        return call(OPS["round"], input)
    if not input.dtype.is_floating_point:
        raise _not_implemented("round_cpu", input.dtype)
    return call(OPS["round_decimals"], input, ten_pow=10.0 ** builtins.abs(decimals),
                neg=decimals < 0)


def frac(input):
    """``input - trunc(input)`` (FracBackward0: the gradient passes through); floating only."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frac(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise _not_implemented("frac_cpu", input.dtype)
    return call(OPS["frac"], input)


asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")


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


def _no_derivative(name, result, inputs):
    """PyTorch records a ``NotImplemented`` node where an op has no derivative: the result
    requires grad and backward through it raises."""
    if (result.dtype.is_floating_point and grad_mode.is_grad_enabled()
            and any(isinstance(t, Tensor) and t.requires_grad for t in inputs)):
        def backward(node, *grads):
            raise RuntimeError(f"derivative for aten::{name} is not implemented")
        # slots only for the inputs that require grad, as PyTorch's NotImplemented node has
        return record("NotImplemented", [t for t in inputs if isinstance(t, Tensor)
                                         and t.requires_grad], result._data, backward)
    return result


def floor_divide(input, other):
    """Python's ``//`` (sign of the divisor); no derivative (PyTorch: NotImplemented node)."""
    _division_operands("floor_divide", "div_floor_cpu", input, other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .basic import tensor
        input = tensor(input)
    with grad_mode.no_grad():
        res = call(OPS["floor_divide"], input, other)
    return _no_derivative("floor_divide", res, (input, other))


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
                res = trunc(div(input_t, other))
            else:
                res = floor_divide(_binary("sub", input_t, fmod(input_t, other)), other)
    if (res.dtype.is_floating_point and grad_mode.is_grad_enabled()
            and any(isinstance(t, Tensor) and t.requires_grad for t in (input, other))):
        def backward(node, g):
            return [g * 0.0 if need else None for need in node.ctx.needs_input_grad]
        return record("DivBackward2", [input, other], res._data, backward)
    return res


def _with_scalar_other(op_name, input, other, ct):
    """``input op other`` for a Python-scalar ``other``: the ``*Backward0`` op (no edge for the
    scalar); the scalar joins type promotion, as in PyTorch."""
    x = input if input.dtype is ct else input.to(ct)
    return call(OPS[op_name], x, other=other)


def remainder(input, other):
    """Python's ``%`` (sign of the divisor; PyTorch's kernel: fmod plus the divisor where the
    signs differ). RemainderBackward1 (tensor, tensor) / RemainderBackward0 (tensor, scalar);
    ``other`` gets ``-g * floor_divide(input, other)``. A scalar ``input`` records PyTorch's
    NotImplemented node."""
    ct = _division_operands("remainder", "remainder_cpu", input, other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return call(OPS["remainder"], input, other)
    if isinstance(input, Tensor):
        return _with_scalar_other("remainder_scalar", input, other, ct)
    with grad_mode.no_grad():
        res = call(OPS["remainder"], _scalar_tensor(input, ct, other.device), other)
    return _no_derivative("remainder", res, (input, other))


def fmod(input, other):
    """C fmod (sign of the dividend). FmodBackward1 (tensor, tensor) / FmodBackward0 (tensor,
    scalar); ``other`` gets ``-g * trunc(input / other)``."""
    if not isinstance(input, Tensor):
        _overload_error("fmod", input, other)
    ct = _division_operands("fmod", "fmod_cpu", input, other)
    if isinstance(other, Tensor):
        return call(OPS["fmod"], input, other)
    return _with_scalar_other("fmod_scalar", input, other, ct)


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


def _clamp_backward(node, g):
    """PyTorch's ``clamp_backward_min_max``: ``self`` gets ``g`` where min <= self <= max, a
    bound gets it where it clamped (with min > max: max wins)."""
    a = node.ctx.attrs
    needs = node.ctx.needs_input_grad
    x = node.saved("self")
    lo = node.saved("min") if a["lo"] else None
    hi = node.saved("max") if a["hi"] else None
    gx = glo = ghi = None
    if lo is not None and hi is not None:
        if needs[0]:
            gx = where(logical_and(ge(x, lo), le(x, hi)), g, 0.0)
        if needs[1]:
            glo = where(logical_and(lt(x, lo), lt(lo, hi)), g, 0.0)
        if needs[2]:
            ghi = where(logical_or(gt(x, hi), lt(hi, lo)), g, 0.0)
    elif lo is not None:
        gx = where(ge(x, lo), g, 0.0) if needs[0] else None
        glo = where(lt(x, lo), g, 0.0) if needs[1] else None
    else:
        gx = where(le(x, hi), g, 0.0) if needs[0] else None
        ghi = where(gt(x, hi), g, 0.0) if needs[-1] else None
    if a["name"] == "ClampBackward0":
        return (gx, glo, ghi)
    return (gx, glo if lo is not None else ghi)


def _clamp_tensors(name, input, lo, hi):
    """clamp with Tensor bounds (PyTorch's ``clamp.Tensor``, ``clamp_min.Tensor``, ...): the
    bounds broadcast and get gradients; one node, ClampBackward0 with slots (self, min, max), or
    ClampMinBackward1/ClampMaxBackward1 with (self, bound)."""
    with grad_mode.no_grad():
        r = input
        if lo is not None:
            r = maximum(r, lo)
        if hi is not None:
            r = minimum(r, hi)
    slots = (input, lo, hi) if name == "ClampBackward0" else \
        (input, lo if lo is not None else hi)
    save = [("self", input)] + [(n, v) for n, v in (("min", lo), ("max", hi)) if v is not None]
    return record(name, slots, r._data, _clamp_backward, save=save,
                  attrs={"name": name, "lo": lo is not None, "hi": hi is not None})


def _clamp_overload_error(input, min, max):  # noqa: A002
    def word(v):
        return "Tensor" if isinstance(v, Tensor) else type(v).__name__
    got = ", ".join(word(v) for v in (input, min, max) if v is not None)
    raise TypeError(f"clamp() received an invalid combination of arguments - got ({got}), but "
                    "expected one of:\n * (Tensor input, Tensor min = None, Tensor max = None, *, "
                    "Tensor out = None)\n * (Tensor input, Number min = None, Number max = None, "
                    "*, Tensor out = None)\n")


def _renamed(t, name):
    """The scalar clamp's node under the name PyTorch gives ``clamp_min``/``clamp_max``."""
    gf = t._grad_fn
    if gf is not None and type(gf).__name__ == "ClampBackward1":
        from ..autograd.node import node_class
        gf.__class__ = node_class(name, type(gf).__mro__[1])
    return t


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # PyTorch's overloads, in its order: clamp(Tensor? min, Tensor? max) (ClampBackward0);
        # clamp(Scalar? min, Scalar? max), which takes a 0-d tensor not requiring grad
        if not isinstance(min, _Number) and not isinstance(max, _Number):
            return _clamp_tensors("ClampBackward0", input, min, max)
        if any(isinstance(v, Tensor) and (v.ndim != 0 or v._requires_grad)
               for v in (min, max)):
            _clamp_overload_error(input, min, max)
    ct = D.result_type(input, *(v for v in (min, max) if v is not None))
    x = input if ct is input.dtype else input.to(ct)
    return call(OPS["clamp"], x, lo=_bound(min, ct, True), hi=_bound(max, ct, False))


clip = clamp


def clamp_min(input, min):  # noqa: A002
    if isinstance(min, Tensor):
        return _clamp_tensors("ClampMinBackward1", input, min, None)
    return _renamed(clamp(input, min=min), "ClampMinBackward0")


def clamp_max(input, max):  # noqa: A002
    if isinstance(max, Tensor):
        return _clamp_tensors("ClampMaxBackward1", input, None, max)
    return _renamed(clamp(input, max=max), "ClampMaxBackward0")


def maximum(input, other):
    return _tensor_binary("maximum", input, other)


def minimum(input, other):
    return _tensor_binary("minimum", input, other)


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .index import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not D.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {D.scalar_name(condition.dtype)}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .basic import tensor
        input = tensor(input, dtype=D.result_type(input, other))
    return call(OPS["where"], input, other, cond=condition)


def _compare(name):
    def fn(input, other):
        if not isinstance(input, Tensor):
            _overload_error(name, input, other)
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
    if tuple(input.shape) != tuple(other.shape):
        return False
    if input._data.__class__ is np.ndarray and other._data.__class__ is np.ndarray:
        return bool(np.array_equal(input._data, other._data))
    return bool(eq(input, other).all())  # CUDA: a device compare and all(), one 1-byte read


def logical_not(input):
    _need_tensor(input, "logical_not")
    return call(OPS["logical_not"], input)


def logical_and(input, other):
    return _tensor_binary("logical_and", input, other)


def logical_or(input, other):
    return _tensor_binary("logical_or", input, other)


def logical_xor(input, other):
    return _tensor_binary("logical_xor", input, other)


def isnan(input):
    _need_tensor(input, "isnan")
    return call(OPS["isnan_"], input)


def _never_inf(input):
    """Integers and bools are finite: no kernel (``a - a`` has no bool version)."""
    from .basic import zeros_like
    return zeros_like(input, dtype=D.bool_)


def isinf(input):
    if not input.dtype.is_floating_point:
        return _never_inf(input)
    return call(OPS["isinf"], input)


def isfinite(input):
    if not input.dtype.is_floating_point:
        from .basic import ones_like
        return ones_like(input, dtype=D.bool_)
    return call(OPS["isfinite"], input)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """PyTorch's isclose: ``input == other``, or both NaN with ``equal_nan``, or a finite
    ``|input - other| <= atol + |rtol * other|`` (floats: in their precision, one registry op;
    integers/bools: the difference is taken in the integer type, then compared in the default
    float type, as PyTorch does)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{D.scalar_name(input.dtype)} did not match "
                           f"{D.scalar_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    if input.dtype.is_floating_point:
        return call(OPS["isclose"], input, other, rtol=rtol, atol=atol,
                    equal_nan=bool(equal_nan))
    close = eq(input, other)
    if rtol == 0 and atol == 0:
        return close
    fdt = D.get_default_dtype()
    a, b = (input.to(fdt), other.to(fdt)) if input.dtype is D.bool_ else (input, other)
    diff = abs(sub(a, b))
    if not diff.dtype.is_floating_point:
        diff = diff.to(fdt)
    allowed = add(abs(mul(b, rtol)), atol)
    return logical_or(close, le(diff, allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    if input._data.__class__ is np.ndarray and other._data.__class__ is np.ndarray:
        return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol,
                                equal_nan=equal_nan))
    # CUDA: the isclose kernel and a device all(); one 1-byte read for the answer
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


# --------------------------------------------------------------------------- parity-sweep additions


def fmax(input, other):
    """NaN-ignoring maximum (FmaxBackward0: ties give the whole gradient to ``input``)."""
    return _tensor_binary("fmax", input, other)


def fmin(input, other):
    return _tensor_binary("fmin", input, other)


def _float_only(name, kernel, *tensors):
    ct = D.result_type(*tensors)
    if not ct.is_floating_point:
        raise _not_implemented(kernel, ct)


def _float_binary(name):
    """A binary registry op whose PyTorch CPU kernel (``<name>_cpu``) is floating only."""
    def fn(input, other):
        _need_tensor(input, name, 1)
        _need_tensor(other, name, 2)
        _float_only(name, f"{name}_cpu", input, other)
        return call(OPS[name], input, other)
    fn.__name__ = fn.__qualname__ = name
    return fn


hypot = _float_binary("hypot")
logaddexp = _float_binary("logaddexp")
logaddexp2 = _float_binary("logaddexp2")


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN).
    XlogyBackward0 (tensors) / XlogyBackward1 (scalar input) / XlogyBackward2 (scalar other)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return call(OPS["xlogy"], input, other)
    if isinstance(input, Tensor):
        _check(other, "xlogy", 2)
        ct = D.result_type(input, other)
        x = input if input.dtype is ct else input.to(ct)
        return call(OPS["xlogy_scalar"], x, other=other)
    if not isinstance(other, Tensor):
        _overload_error("xlogy", input, other)
    _check(input, "xlogy", 1, "self")
    ct = D.result_type(input, other)
    y = other if other.dtype is ct else other.to(ct)
    return call(OPS["rxlogy"], y, base=input)


def copysign(input, other):
    """``|input|`` with the sign of ``other`` (CopysignBackward0/1); integers give floats."""
    if not isinstance(input, Tensor):
        _overload_error("copysign", input, other)
    if isinstance(other, Tensor):
        return call(OPS["copysign"], input, other)
    _check(other, "copysign", 2)
    ct = D.result_type(input, other)
    if not ct.is_floating_point:
        ct = D.get_default_dtype()
    return call(OPS["copysign_scalar"], input if input.dtype is ct else input.to(ct),
                other=other)


def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero; no derivative (NotImplemented node)."""
    _need_tensor(input, "heaviside", 1)
    _need_tensor(values, "heaviside", 2, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    with grad_mode.no_grad():
        res = call(OPS["heaviside"], input, values)
    return _no_derivative("heaviside", res, (input, values))


_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or",
            "bitwise_xor": "logical_xor"}
_NP_BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
               "bitwise_xor": np.bitwise_xor}


def _bitwise(name):
    """``&``/``|``/``^``: bools through the logical registry ops (any device); integers through
    NumPy on the CPU (the registry's kernels are compiled for floating types too, where ``&`` has
    no meaning)."""
    def fn(input, other):
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                _overload_error(name, input, other)
            input, other = other, input  # & | ^ commute
        _check(other, name, 2)
        ct = D.result_type(input, other)
        if ct.is_floating_point:
            raise _not_implemented(f"{name}_cpu", ct)
        if ct is D.bool_:
            return call(OPS[_LOGICAL[name]], input, other)
        return _integer_numpy(_NP_BITWISE[name], ct, input, other)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _integer_numpy(ufunc, ct, *operands):
    """An integer op computed by NumPy on the CPU, in PyTorch's result dtype ``ct``."""
    from .elementwise_call import _scalar
    if any(isinstance(a, Tensor) and a._data.__class__ is not np.ndarray for a in operands):
        return _integer_cuda(ufunc, ct, operands)
    arrays = []
    for a in operands:
        if isinstance(a, Tensor):
            arrays.append(a._data.astype(ct.np, copy=False))
        else:
            arrays.append(_scalar(a, ct.np, False))
    return Tensor._make(np.asarray(ufunc(*arrays), dtype=ct.np))


def _integer_cuda(ufunc, ct, operands):
    """The same on CUDA tensors: ``cuda_kernels.bitwise`` (operands cast to ``ct`` on the
    device, broadcast through strides, Python ints passed as scalars)."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    from .elementwise_call import check_same_device
    check_same_device([a for a in operands if isinstance(a, Tensor)])
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in operands if isinstance(a, Tensor)))
    ops = [a._data.astype(ct.np, copy=False).kview() if isinstance(a, Tensor) else int(a)
           for a in operands]
    name = {np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor",
            np.invert: "invert"}[ufunc]
    return Tensor._make(CudaArray.wrap(B.kernels().bitwise.bitwise(name, shape, ct.np, *ops)))


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")


def bitwise_not(input):
    _need_tensor(input, "bitwise_not")
    if input.dtype.is_floating_point:
        raise _not_implemented("bitwise_not_cpu", input.dtype)
    if input.dtype is D.bool_:
        return logical_not(input)
    return _integer_numpy(np.invert, input.dtype, input)


def lerp(input, end, weight):
    """``input + weight * (end - input)`` (PyTorch's two-sided formula); LerpBackward0 (scalar
    weight) / LerpBackward1 (tensor weight)."""
    _need_tensor(input, "lerp", 1)
    _need_tensor(end, "lerp", 2, "end")
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {D.c_name(input.dtype)} for `end` but got dtype "
                           f"{D.c_name(end.dtype)}")
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
    ct = D.result_type(input, tensor1, tensor2)
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


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to ``posinf``/``neginf`` (default: the dtype's largest/lowest
    finite value); integers and bools come back unchanged (a copy). NanToNumBackward0."""
    _need_tensor(input, "nan_to_num")
    if not input.dtype.is_floating_point:
        from .basic import clone
        return clone(input)
    info = np.finfo(input.dtype.np)
    return call(OPS["nan_to_num"], input, nan=nan,
                posinf=float(info.max) if posinf is None else posinf,
                neginf=float(info.min) if neginf is None else neginf)


def logit(input, eps=None):
    """``log(x / (1 - x))``, ``x`` clamped to [eps, 1 - eps] when ``eps`` is given
    (LogitBackward0: zero gradient where clamped, NaN outside [0, 1] without eps)."""
    _need_tensor(input, "logit")
    if eps is None:
        return call(OPS["logit"], input, lo=-np.inf, hi=np.inf)
    return call(OPS["logit"], input, lo=eps, hi=1.0 - eps)


def signbit(input):
    _need_tensor(input, "signbit")
    if input.dtype is D.bool_ or input.dtype is D.uint8:
        from .basic import zeros_like
        return zeros_like(input, dtype=D.bool_)
    return call(OPS["signbit"], input)


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


fix = trunc
arcsin, arccos, arctan = asin, acos, atan
