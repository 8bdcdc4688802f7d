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
from .registry import OPS

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


def _type_word(v):
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def describe_call(args, kwargs) -> str:
    """The argument types as PyTorch's parser lists them after "got": positional types, then
    the keywords as ``name=Type`` in reverse order of passing (the parser's dict walk), each
    followed by ", " when no positional argument came first (``(min=str, )``)."""
    words = [_type_word(a) for a in args]
    kws = [f"{k}={_type_word(v)}" for k, v in reversed(list(kwargs.items()))]
    if words or not kws:
        return ", ".join(words + kws)
    return "".join(k + ", " for k in kws)


def invalid_combination(name, args, kwargs, signatures) -> TypeError:
    """PyTorch's TypeError when no overload of ``name`` takes the call's arguments
    (``signatures``: its overloads, one ``(Tensor input, Number other)`` per entry)."""
    lines = "".join(f" * {sig}\n" for sig in signatures)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({describe_call(args, kwargs)}), but expected one of:\n{lines}")


def _overload_error(name, *args):
    """PyTorch's TypeError when no overload takes the arguments (``eq(2, x)``)."""
    got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args)
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
