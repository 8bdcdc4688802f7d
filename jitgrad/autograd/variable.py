"""``autograd.Variable``: the legacy wrapper tutorials still use. Like PyTorch's today, it
returns a Tensor (``Variable(t, requires_grad=True)`` is ``t`` with the flag set)."""
from __future__ import annotations


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        from ..tensor import Tensor
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from ..ops.basic import tensor
        from ..tensor import Tensor
        if data is None:
            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            data.requires_grad_(True)
        return data
