"""Tensor's object protocol: hashing (by identity), pickling, ``copy.deepcopy`` and printing
(``repr``/``str``/``format``).

Written as methods of ``TensorProtocol``, which is not a base class: ``bind`` copies them into
Tensor's own namespace beside the class body's methods, as ``_tensor_conversions`` does (the
dunders must sit in Tensor's own dict, which jitgrad.compile wraps, and lookups stay one dict
deep). Pickles name ``jitgrad.tensor._rebuild``, which stays there for the pickles written before.
"""
from __future__ import annotations

import types

import numpy as np

from . import _dtype as D
from .tensor import _rebuild  # tensor.py imports this module at its end, once Tensor exists


class TensorProtocol:
    """The methods ``bind`` gives Tensor (never instantiated, never inherited)."""

    # ------------------------------------------------------------------ hashing, pickling, copying

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, proto):
        lay = self._copy_layout()
        return (_rebuild, (self._host().copy(), self._requires_grad) + ((lay,) if lay else ()))

    def _copy_layout(self):
        """What a copy of this empty tensor records so it reports the same ``stride()`` and
        ``storage_offset()`` as PyTorch's copy (which copies the whole storage), or None. (A
        non-empty copy is compact here: its strides, real ones, differ from PyTorch's anyway.)"""
        if self._data.__class__ is not np.ndarray or self._data.size:
            return None
        off = self.storage_offset()
        st = self.stride()
        if not off and st == tuple(s // self._data.itemsize for s in self._data.strides):
            return None
        return st, off

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = type(self).__new__(type(self))
        t._init(self._data.copy(), self._requires_grad)
        lay = self._copy_layout()
        if lay:
            from ._layout import record_layout
            record_layout(t, *lay)
        if self._grad is not None:
            t._grad = self._grad.clone()
        memo[id(self)] = t
        return t

    # ------------------------------------------------------------------ printing

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import format_tensor
        gf = self._grad_fn
        return format_tensor(
            self._host(), dtype=self._data.dtype.name, device=str(self.device),
            requires_grad=self._requires_grad and gf is None,
            grad_fn_name=type(gf).__name__ if gf is not None else None,  # as PyTorch
            default_dtype=D.get_default_dtype().name)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)


def bind(cls) -> None:
    """Copy the protocol's methods into ``cls``'s namespace, named as if written in its body
    (``__str__`` is ``__repr__``, so named)."""
    for name, fn in vars(TensorProtocol).items():
        if isinstance(fn, types.FunctionType):
            fn.__qualname__ = f"{cls.__name__}.{fn.__name__}"
            fn.__module__ = cls.__module__
            setattr(cls, name, fn)
