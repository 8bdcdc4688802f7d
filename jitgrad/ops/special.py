"""User-facing functions over ``elementwise_special``'s declarations: asinh/acosh/atanh,
atan2, erfc, erfinv and the integer shifts (``x << 2``), with PyTorch's argument checks."""
from __future__ import annotations

from .. import _dtype as D
from ..tensor import Tensor
from .elementwise_call import call
from .functional_args import (
    _check,
    _need_tensor,
    _not_implemented,
    _overload_error,
    _unary,
    _wrapped,
)
from .registry import OPS

__all__ = ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "atan2", "arctan2",
           "erfc", "erfinv", "bitwise_left_shift", "bitwise_right_shift"]

asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erfc = _unary("erfc")
erfinv = _unary("erfinv")
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def inplace_variant(fn, node_name):
    """What ``x.asinh_()`` computes: PyTorch records asinh_/acosh_/atanh_ as a node of their
    own (AsinhBackward1, ...) whose derivative is not implemented: backward through it raises."""
    name = fn.__name__

    def backward(node, g):
        raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not "
                                  "implemented.")

    def inplace_form(input):
        from ..autograd import grad_mode
        from .composite import record
        with grad_mode.no_grad():
            out = fn(input)
        return record(node_name, (input,), out._data, backward)
    inplace_form.__name__ = inplace_form.__qualname__ = name
    return inplace_form


def atan2(input, other):
    """The angle of (other, input) (Atan2Backward0); Tensors only, as PyTorch."""
    _need_tensor(input, "atan2", 1)
    _need_tensor(other, "atan2", 2)
    return call(OPS["atan2"], input, other)


arctan2 = atan2


def _shift(name, kernel):
    op = OPS[name]

    def fn(input, other):
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                _overload_error(name, input, other)
            _check(input, name, 1)
            input = _wrapped(input, other)  # 2 << x: the scalar takes x's category
        _check(other, name, 2)
        ct = D.result_type(input, other)
        if ct.is_floating_point or ct is D.bool_:
            raise _not_implemented(kernel, ct)
        return call(op, input, other)
    fn.__name__ = fn.__qualname__ = name
    return fn


bitwise_left_shift = _shift("bitwise_left_shift", "lshift_cpu")
bitwise_right_shift = _shift("bitwise_right_shift", "rshift_cpu")
