"""``autograd.Function``: user-defined ops with a hand-written backward, PyTorch's API."""
from __future__ import annotations

from . import grad_mode
from .node import Ctx, FunctionNode, SavedTensor, node_class


class FunctionCtx(Ctx):
    __slots__ = ()

    def save_for_backward(self, *tensors):
        self._saved = {i: (SavedTensor(t) if t is not None else None)
                       for i, t in enumerate(tensors)}

    def mark_non_differentiable(self, *tensors):
        self.attrs.setdefault("non_diff", set()).update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.attrs["materialize"] = bool(value)



def _function_backward(node, *grads):
    ctx = node.ctx
    ctx.saved_tensors = tuple(s.tensor(node) if s is not None else None
                              for s in ctx._saved.values())
    if ctx.attrs.get("materialize", True):
        from ..ops.basic import zeros_like
        outs = ctx.attrs["outputs_meta"]
        grads = tuple(g if g is not None else zeros_like(o) for g, o in zip(grads, outs))
    res = node.ctx.attrs["cls"].backward(ctx, *grads)
    if not isinstance(res, tuple):
        res = (res,)
    if not grad_mode.is_grad_enabled():
        # a user's backward may return tensors it keeps (its saved inputs, say): the engine
        # passes on only arrays it owns, so leaves can adopt them without copying
        from ..tensor import Tensor
        res = tuple(Tensor._make(r._data.copy()) if isinstance(r, Tensor) else r for r in res)
    return res


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``."""

    @classmethod
    def apply(cls, *args):
        from ..tensor import Tensor
        ctx = FunctionCtx()
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if grad_mode.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad
                                               for a in args):
            next_functions, meta, needs = [], [], []
            for a in args:
                if isinstance(a, Tensor) and a.requires_grad:
                    next_functions.append(a._edge())
                    meta.append((tuple(a.shape), a.dtype))
                    needs.append(True)
                else:
                    next_functions.append((None, 0))
                    meta.append(None)
                    needs.append(False)
            ctx.needs_input_grad = tuple(needs)
            ctx.attrs["cls"] = cls
            ctx.attrs["outputs_meta"] = tuple(Tensor._make(o._data) for o in outs)
            node = node_class(cls.__name__ + "Backward", FunctionNode)(
                next_functions, meta, ctx, _function_backward, len(outs))
            non_diff = ctx.attrs.get("non_diff", set())
            new_outs = []
            for i, o in enumerate(outs):
                if isinstance(o, Tensor) and o.is_floating_point() and id(o) not in non_diff:
                    if any(o is a for a in args):
                        o = Tensor._make(o._data)
                    o._grad_fn, o._output_nr, o._requires_grad = node, i, True
                new_outs.append(o)
            outs = tuple(new_outs)
        return outs[0] if single else outs

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("subclasses of Function implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function implement backward")
