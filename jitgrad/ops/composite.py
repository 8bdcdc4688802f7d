"""Recording non-elementwise ops: their kernels run first, then ``record`` attaches a node whose
VJP is a Python function written with registered (differentiable) ops, so ``create_graph=True``
works through them too.

A backward function receives ``(node, *grad_outputs)``: ``node.saved(name)`` unpacks a saved
tensor (version-checked), ``node.ctx.attrs`` holds plain values. It returns one gradient (or
None) per input slot; the engine sums them back to each input's shape and dtype.
"""
from __future__ import annotations

import functools

import numpy as np

from ..autograd import grad_mode
from ..autograd.node import Ctx, FunctionNode, node_class
from ..tensor import Tensor

__all__ = ["record", "wrap", "ieee_quiet"]


def ieee_quiet(fn):
    """Run ``fn`` with NumPy's floating-point warnings off: PyTorch returns inf/NaN silently
    (the sum of inf and -inf is NaN, no RuntimeWarning), so ops computed with NumPy must too."""
    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return quiet


def wrap(data, view_of: Tensor | None = None) -> Tensor:
    t = Tensor._make(data)
    if view_of is not None:
        t._vc = view_of._vc
        t._base = view_of._base if view_of._base is not None else view_of
    return t


def record(node_name: str, inputs, outputs, backward, *, save=(), save_outputs=(),
           view_of=None, attrs=None):
    """Wrap ``outputs`` (arrays) as Tensors and, if any input requires grad, attach the node.

    ``inputs`` are the node's slots (Tensors, or None/scalars for slots without an edge);
    ``save`` is ``(name, tensor)`` pairs; ``save_outputs`` is ``(name, output_index)`` pairs.
    Returns one Tensor, or a tuple when ``outputs`` is a list.
    """
    single = not isinstance(outputs, (list, tuple))
    outs = [wrap(o, view_of) for o in ([outputs] if single else outputs)]
    if grad_mode.is_grad_enabled() and any(
            isinstance(t, Tensor) and t._requires_grad for t in inputs):
        ctx = Ctx()
        ctx.attrs = attrs or {}
        next_functions, meta, needs = [], [], []
        for t in inputs:
            if isinstance(t, Tensor) and t._requires_grad:
                next_functions.append(t._edge())
                meta.append((tuple(t._data.shape), t.dtype))
                needs.append(True)
            else:
                next_functions.append((None, 0))
                meta.append(None)
                needs.append(False)
        ctx.needs_input_grad = tuple(needs)
        for name, t in save:
            ctx.save(name, t)
        node = node_class(node_name, FunctionNode)(next_functions, meta, ctx, backward,
                                                   len(outs))
        for i, o in enumerate(outs):
            if o._data.dtype.kind == "f":
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
        for name, idx in save_outputs:
            ctx.save(name, outs[idx], is_output=True)
    return outs[0] if single else tuple(outs)
