"""``nn.Parameter``: a leaf Tensor that a Module registers as one of its parameters."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor

__all__ = ["Parameter", "Buffer", "is_lazy"]


class Parameter(Tensor):
    """A Tensor subclass, always a leaf, ``requires_grad=True`` by default.

    Like PyTorch's, it shares storage (and the version counter) with the tensor it wraps.
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import _dtype as D
            arr = np.empty((0,), dtype=D.get_default_dtype().np)
            vc = None
        elif isinstance(data, Tensor):
            arr = data._data
            vc = data._vc
        else:
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        self = object.__new__(cls)
        self._init(arr, False)
        if vc is not None:
            self._vc = vc
        if requires_grad:
            self.requires_grad_(True)
        return self

    def __init__(self, data=None, requires_grad=True):  # state is set up in __new__
        pass

    def __repr__(self, *, tensor_contents=None):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self._data.copy(), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._make(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            p._grad = Tensor._make(self._grad._data.copy())
        memo[id(self)] = p
        return p


def _rebuild_parameter(data, requires_grad):
    return Parameter(Tensor._make(data), requires_grad)


class Buffer(Tensor):
    """``nn.Buffer(tensor, persistent=True)``: marks a tensor assigned to a Module as a buffer.

    Assigning it registers the wrapped tensor (a plain Tensor) as a buffer.
    """

    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import _dtype as D
            data = Tensor._make(np.empty((0,), dtype=D.get_default_dtype().np))
        self = object.__new__(cls)
        self._init(data._data, data._requires_grad)
        self._vc = data._vc
        self.__dict__["persistent"] = persistent
        return self

    def __init__(self, data=None, *, persistent=True):
        pass


def is_lazy(param) -> bool:
    return False
