"""A weight's ``.grad`` that a compiled step has not written yet.

When a lowered step folds plain SGD into the weight-gradient GEMM (``W += -lr * g^T h``,
``lower.py``), the gradient itself is never needed by the step. Eager code leaves it in
``p.grad``, and a user may read it (to log a norm, to clip it before the next step). So the
step leaves a ``PendingGrad`` there: a Tensor whose array is computed on first access from the
two operands the step kept (``g^T h``, the same BLAS call ``_linear_backward`` makes, so the
same bits as eager mode), after which it is a plain ``Tensor``. The operands are the step's
own buffers: before the step runs again (and overwrites them) it computes every pending
gradient something still references and drops the others (``settle``); a step that calls
``opt.zero_grad()`` after its forward drops the ones only ``.grad`` holds first.
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


def settle(pending, drop_held=False):
    """Before the buffers behind ``pending`` (``(weight, PendingGrad)`` pairs the caller made)
    change: compute the gradients something still references, forget the others; empties the
    list. ``drop_held``: the caller's step sets ``.grad`` to None before anything could read
    it, so a gradient only its weight's ``.grad`` holds is dropped now (not computed)."""
    for w, t in pending:
        if t.__class__ is not PendingGrad:
            continue
        # references: the pair, the loop variable, getrefcount's argument (+1: w's .grad)
        n = sys.getrefcount(t)
        if drop_held and n == 4 and w._grad is t:
            w._grad = None
        elif n > 3:
            t._data  # noqa: B018 (computes it)
    pending.clear()
