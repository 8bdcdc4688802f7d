"""A weight's ``.grad`` that a compiled step has not written yet.

When a lowered step folds plain SGD into the weight-gradient GEMM (``W += -lr * g^T h``,
``lower.py``), the gradient itself is never needed by the step. Eager code leaves it in
``p.grad``, and a user may read it (to log a norm, to clip it before the next step). So the
step leaves a ``PendingGrad`` there: a Tensor whose array is computed on first access from the
two operands the step kept (``g^T h``, the same BLAS call ``_linear_backward`` makes, so the
same bits as eager mode), after which it is a plain ``Tensor``. The operands are the step's
own buffers: before the step runs again (and overwrites them) it computes every pending
gradient something still references and drops the others (``settle``).
"""
from __future__ import annotations

import sys
import weakref

import numpy as np

from ..backends import blas
from ..tensor import Tensor

_DATA = Tensor.__dict__["_data"]  # the slot under the property below
_SOURCES = {}  # id(pending tensor) -> (weakref, g, h)
_STAND_INS = {}


class PendingGrad(Tensor):
    __slots__ = ()

    @property
    def _data(self):
        entry = _SOURCES.pop(id(self))
        _, g, h = entry
        data = blas.matmul(g.T, h)
        _DATA.__set__(self, data)
        self.__class__ = Tensor
        return data

    @_data.setter
    def _data(self, value):
        _SOURCES.pop(id(self), None)
        _DATA.__set__(self, value)
        self.__class__ = Tensor


def make(g, h, dtype):
    """A pending ``g^T h`` of dtype ``dtype`` (``g``, ``h``: 2-D arrays the caller keeps
    unchanged until ``settle``)."""
    shape = (g.shape[1], h.shape[1])
    key = (shape, dtype)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:  # what the slot holds until computed: read-only, no memory
        stand_in = _STAND_INS[key] = np.broadcast_to(np.zeros((), dtype), shape)
    t = Tensor._make(stand_in)
    t.__class__ = PendingGrad
    key = id(t)
    _SOURCES[key] = (weakref.ref(t, lambda _, k=key: _SOURCES.pop(k, None)), g, h)
    return t


def settle(pending):
    """Before the buffers behind ``pending`` (a list of PendingGrads the caller made) change:
    compute those something else still references, forget the others; empties the list."""
    for t in pending:
        # references: the list, the loop variable, getrefcount's argument
        if t.__class__ is PendingGrad and sys.getrefcount(t) > 3:
            t._data  # noqa: B018 (computes it)
    pending.clear()
