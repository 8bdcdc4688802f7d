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

__all__ = ["record", "record_composition", "wrap", "ieee_quiet"]


def ieee_quiet(fn):
    """Run ``fn`` with NumPy's floating-point warnings off: PyTorch returns inf/NaN silently
    (the sum of inf and -inf is NaN, no RuntimeWarning), so ops computed with NumPy must too."""
    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return quiet


def wrap(data, view_of: Tensor | None = None, view_fn=None) -> Tensor:
    t = Tensor._make(data)
    if view_of is not None:
        t._vc = view_of._vc
        t._base = view_of._base if view_of._base is not None else view_of
        if view_fn is not None:
            t._view_fn = _replay_from_base(view_of, view_fn)
    return t


def _replay_from_base(parent: Tensor, fn):
    """``base -> view`` for a view made by ``fn`` from ``parent`` (itself the base, a view made
    by indexing, or a replayable view), or None. In-place writes into the view replay it on the
    base's new value (``index.setitem``), as PyTorch's CopySlices does with as_strided."""
    if parent._base is None:
        return fn
    key = getattr(parent, "_view_key", None)
    if key is not None:
        from .index import getitem
        return lambda b: fn(getitem(b, key))
    before = parent._view_fn
    return None if before is None else (lambda b: fn(before(b)))


def record(node_name: str, inputs, outputs, backward, *, save=(), save_outputs=(),
           view_of=None, attrs=None, view_fn=None):
    """Wrap ``outputs`` (arrays) as Tensors and, if any input requires grad, attach the node.

    ``inputs`` are the node's slots (Tensors, or None/scalars for slots without an edge);
    ``save`` is ``(name, tensor)`` pairs; ``save_outputs`` is ``(name, output_index)`` pairs.
    ``view_of``: the outputs share its storage; ``view_fn`` (one output): Tensor -> the same
    view of another tensor, so in-place writes into the view can be recorded on its base.
    Returns one Tensor, or a tuple when ``outputs`` is a list.
    """
    single = not isinstance(outputs, (list, tuple))
    outs = [wrap(o, view_of, view_fn if single else None)
            for o in ([outputs] if single else outputs)]
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


class _Composition:
    """The hidden graph behind a node made by ``record_composition``: kept like a saved tensor
    (freed when the node is released, so a second backward raises PyTorch's error)."""

    __slots__ = ("out", "inputs")

    def __init__(self, out, inputs):
        self.out = out
        self.inputs = inputs

    def free(self) -> None:
        self.out = self.inputs = None

    def tensor(self, node):  # as SavedTensor.tensor, for grad_fn._saved_tensors
        from ..autograd.node import FREED_MESSAGE
        if self.out is None:
            raise RuntimeError(FREED_MESSAGE)
        return self.out


def _composition_backward(node, g):
    from ..autograd import engine
    from ..autograd.node import FREED_MESSAGE
    comp = node.ctx._saved["composition"]
    if comp.out is None:
        raise RuntimeError(FREED_MESSAGE)
    grads = iter(engine.grad([comp.out], comp.inputs, [g], retain_graph=True,
                             create_graph=grad_mode.is_grad_enabled(), allow_unused=True))
    return tuple(next(grads) if need else None for need in node.ctx.needs_input_grad)


def record_composition(node_name: str, inputs, build):
    """``build(*inputs)``, a composition of differentiable ops, presented as ONE node called
    ``node_name`` with an edge per input: the grad_fn PyTorch records for an op that jitgrad
    computes by composition on some device (``nll_loss`` on CUDA is gather/mul/sum inside, but
    its grad_fn is ``NllLossBackward0`` as in PyTorch). The node's backward differentiates the
    hidden composition (a nested ``autograd.grad``), so gradients, ``create_graph`` and double
    backward are exactly the composition's."""
    if not grad_mode.is_grad_enabled() or not any(
            isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return build(*inputs)
    inner = build(*inputs)
    if inner.grad_fn is None:
        return inner
    out = record(node_name, inputs, inner._data, _composition_backward)
    diff = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    out._grad_fn.ctx._saved["composition"] = _Composition(inner, diff)
    return out
