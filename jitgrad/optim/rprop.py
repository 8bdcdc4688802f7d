"""``Rprop`` (resilient backpropagation; maximize): PyTorch's single-tensor update op by op in
jitgrad tensor ops (``_single_tensor``), for CPU and CUDA parameters alike. Each element keeps its
own step size, grown by ``etaplus`` while the gradient's sign holds and shrunk by ``etaminus``
when it flips (that element then skips its update and forgets its gradient)."""
from __future__ import annotations

from ..ops.basic import full_like, zeros_like
from ..ops.functional import where
from ._single_tensor import (
    addcmul_,
    check_capturable,
    check_lr,
    grad_for_differentiable,
    init_step,
    params_with_grad,
    setstate_scalars,
)
from .optimizer import Optimizer, _closure_loss, _to_scalar

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None, "maximize": False, "differentiable": False,
                                "capturable": False})

    def _init_group(self, group):
        def init(p, state):  # PyTorch's key order: step, prev, step_size
            state["step"] = init_step(p, group["capturable"])
            state["prev"] = zeros_like(p.detach())
            state["step_size"] = full_like(p.grad, _to_scalar(group["lr"]))
        return params_with_grad(self, group, init=init)

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            capturable = group["capturable"]
            for param in params:
                state = self.state[param]
                grad = param.grad if not group["maximize"] else -param.grad
                prev, step_size, step = state["prev"], state["step_size"], state["step"]
                if capturable:
                    check_capturable(param, step)
                step += 1
                sign = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                if capturable:  # the same choices without a data-dependent mask
                    sign.copy_(where(sign.gt(0), etaplus, sign))
                    sign.copy_(where(sign.lt(0), etaminus, sign))
                    sign.copy_(where(sign.eq(0), 1, sign))
                else:
                    sign[sign.gt(0)] = etaplus
                    sign[sign.lt(0)] = etaminus
                    sign[sign.eq(0)] = 1
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                # a sign flip (factor etaminus): no step for that element, and its gradient is
                # forgotten so the next step grows again
                grad = grad.clone()
                if capturable:
                    grad.copy_(where(sign.eq(etaminus), 0, grad))
                else:
                    grad[sign.eq(etaminus)] = 0
                addcmul_(param, grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
