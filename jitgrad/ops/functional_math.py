"""User-facing math functions and activations: exp/log families, roots, abs/sign, trigonometric
and hyperbolic functions, erf, sigmoid, sinc, logit; hypot, logaddexp(2), xlogy, copysign; relu,
leaky_relu, gelu, softplus."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .elementwise_call import call
from .functional_args import (
    _check,
    _need_tensor,
    _not_for_bool,
    _not_implemented,
    _overload_error,
    _unary,
)
from .registry import OPS

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
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")


def sgn(input):
    """``sign`` for real tensors, recorded as PyTorch records it (SgnBackward0)."""
    from .composite import record_composition
    return record_composition("SgnBackward0", (input,), sign)


arcsin, arccos, arctan = asin, acos, atan


def logit(input, eps=None):
    """``log(x / (1 - x))``, ``x`` clamped to [eps, 1 - eps] when ``eps`` is given
    (LogitBackward0: zero gradient where clamped, NaN outside [0, 1] without eps)."""
    _need_tensor(input, "logit")
    if eps is None:
        return call(OPS["logit"], input, lo=-np.inf, hi=np.inf)
    return call(OPS["logit"], input, lo=eps, hi=1.0 - eps)


# --------------------------------------------------------------------------- two operands


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


# --------------------------------------------------------------------------- activations
# (relu is a plain unary wrapper, with the others above)


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
