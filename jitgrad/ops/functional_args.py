"""What the user-facing elementwise functions do with their arguments: PyTorch's type checks and
error messages, Python scalars wrapped as PyTorch wraps them, the wrappers that check and then
call a registry op (``_unary``, ``_binary``, ...), and the NotImplemented node PyTorch records for
an op without a derivative."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from . import elementwise as _declarations  # noqa: F401 - fills OPS before a wrapper reads it
from .composite import record
from .elementwise_call import call
from .parser_errors import describe_arguments, invalid_combination, parser_type_name  # noqa: F401 - (re-exported)
from .registry import OPS

_Number = (numbers.Number, np.number, np.bool_)


_ARG = {1: "input", 2: "other"}


def _check(x, name, pos=2, arg=None):
    if not isinstance(x, (Tensor,) + _Number):
        raise TypeError(f"{name}(): argument '{arg or _ARG[pos]}' (position {pos}) must be "
                        f"Tensor, not {parser_type_name(x)}")


def _need_tensor(x, name, pos=1, arg=None):
    """PyTorch's TypeError for a function taking only Tensors (``maximum(x, 2)``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg or _ARG[pos]}' (position {pos}) must be "
                        f"Tensor, not {parser_type_name(x)}")


describe_call = describe_arguments  # (the name the comparison ops import)


def _overload_error(name, *args):
    """PyTorch's TypeError when no overload takes the arguments (``eq(2, x)``)."""
    got = ", ".join(parser_type_name(a) for a in args)
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n * (Tensor input, Tensor other)\n"
                    f" * (Tensor input, Number other)\n")


def _binary(op_name, a, b):
    a, b = D.parser_scalar(a), D.parser_scalar(b)
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


def _wrapped(scalar, other):
    """A Python scalar first operand as PyTorch wraps it: a 0-d tensor that does not change the
    result dtype (a wrapped number only counts by category)."""
    return _scalar_tensor(scalar, D.result_type(scalar, other), other.device)


def _scalar_tensor(v, dt, device):
    """A 0-d tensor of ``dt`` holding scalar ``v``, integers wrapping as PyTorch's casts do."""
    from .basic import tensor
    from .elementwise_call import _scalar
    return tensor(_scalar(v, dt.np, False), dtype=dt, device=device)


def _unary(name):
    op = OPS[name]

    def fn(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{parser_type_name(input)}")
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


def _not_implemented(kernel, dt):
    """PyTorch's NotImplementedError for a dtype its kernel is not dispatched for."""
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{D.scalar_name(dt)}'")


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
