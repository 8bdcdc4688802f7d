"""``nn.Parameter``: a leaf Tensor that a Module registers as one of its parameters."""
from __future__ import annotations

import sys

import numpy as np

from ..tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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


# ---------------------------------------------------------------------- uninitialized tensors
# PyTorch guards these with __torch_function__: every torch function or Tensor method outside
# an allow-list raises ValueError, properties pass. jitgrad has no __torch_function__, so the
# guard sits in __getattribute__: public Tensor methods outside the list raise at lookup, and
# any op that reads the storage (``_data``) outside an allowed method or property raises there
# (functional calls such as ``F.linear(x, p)``, operators such as ``p + 1``).

_ALLOWED_METHODS = frozenset({
    "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char",
    "short", "int", "long", "cuda", "cpu", "to", "get_device"})
_LAZY_OWN = set()  # the Uninitialized* classes: their own attributes are never guarded
_permit = [0]  # > 0 while an allowed method or property runs: it may read the storage


def _lookup(cls, name):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass, klass.__dict__[name]
    return None, None


def _op_name():
    """How PyTorch's message would name the function that touched an uninitialized tensor:
    the innermost frame on the stack whose name is a public jitgrad function or method."""
    import jitgrad

    from . import functional as F
    from . import init
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_name
        if f.f_globals.get("__name__", "").startswith("jitgrad") and not name.startswith("_"):
            if hasattr(F, name):
                return f"<built-in function {name}>"
            if hasattr(init, name):
                return f"<function {name}>"
            if name in Tensor.__dict__:
                return f"<method '{name}' of 'torch._C.TensorBase' objects>"
            if hasattr(jitgrad, name):
                return f"<built-in method {name} of type object>"
        f = f.f_back
    return f"<function {sys._getframe(2).f_code.co_qualname}>"


def _use_error(cls, what):
    return ValueError(
        f"Attempted to use an uninitialized parameter in {what}. This error happens when you "
        "are using a `LazyModule` or explicitly manipulating "
        f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call `forward` "
        "with a dummy batch to initialize the parameters before calling torch functions")


def _permitted(fn, convert_to=None):
    def call(*args, **kwargs):
        _permit[0] += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            _permit[0] -= 1
        if convert_to is not None and type(out) is Tensor:
            # Tensor.__torch_function__ returns a buffer's conversions as its own subclass
            out.__class__ = convert_to
        return out
    return call


class UninitializedTensorMixin:
    __slots__ = ()

    def __getattribute__(self, name):
        if _permit[0]:  # inside an allowed method: the real tensor, shape included
            if name == "shape":
                return Tensor.shape.__get__(self)
            return object.__getattribute__(self, name)
        if name == "_data":
            raise _use_error(type(self), _op_name())
        cls = type(self)
        if name == "shape":
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith("jitgrad") and not caller.startswith("jitgrad.nn.modules"):
                # an op reading it (PyTorch's C++ ops never see the Python property);
                # Module code gets the property's RuntimeError, as in PyTorch
                raise _use_error(cls, _op_name())
        owner, attr = _lookup(cls, name)
        if owner is None or owner in _LAZY_OWN or name.startswith("_") or \
                type(attr).__name__ == "member_descriptor":
            return object.__getattribute__(self, name)
        if name in _ALLOWED_METHODS:
            convert = cls if cls.cls_to_become is Tensor else None
            return _permitted(object.__getattribute__(self, name), convert)
        if isinstance(attr, property):
            _permit[0] += 1
            try:
                return object.__getattribute__(self, name)
            finally:
                _permit[0] -= 1
        if callable(attr):
            if sys._getframe(1).f_globals.get("__name__", "").startswith("jitgrad"):
                raise _use_error(cls, _op_name())  # a jitgrad function using it: name that
            raise _use_error(cls, f"<method '{name}' of 'torch._C.TensorBase' objects>")
        return object.__getattribute__(self, name)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Replace the empty storage by ``empty(shape)`` (this tensor's device and dtype unless
        given) and become ``cls_to_become``."""
        from ..ops.basic import empty
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        data = self.data
        result = type(self)(self.requires_grad, data.device, data.dtype)
        memo[id(self)] = result
        return result


def _empty_storage(device, dtype):
    from .. import _dtype as D
    from ..ops.basic import empty
    return empty(0, device=device, dtype=D.to_dtype(dtype) if dtype is not None else None)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (a lazy module's, until its first forward):
    only dtype/device conversions and ``materialize`` are allowed on it."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        _permit[0] += 1
        try:
            self = object.__new__(cls)
            self._init(_empty_storage(device, dtype)._data, False)
            if requires_grad:
                self.requires_grad_(True)
        finally:
            _permit[0] -= 1
        return self

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet; ``materialize`` makes it a plain Tensor."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        _permit[0] += 1
        try:
            self = object.__new__(cls)
            self._init(_empty_storage(device, dtype)._data, False)
            if requires_grad:
                self.requires_grad_(True)
        finally:
            _permit[0] -= 1
        self.__dict__["persistent"] = persistent
        self.__dict__["_is_buffer"] = True
        return self

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


_LAZY_OWN.update({UninitializedTensorMixin, UninitializedParameter, UninitializedBuffer})


def is_lazy(param) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)
