"""``Adagrad`` (lr decay, initial accumulator, weight decay, maximize): PyTorch's single-tensor
update op by op in jitgrad tensor ops (``_single_tensor``). Like PyTorch, the state of every
parameter (grad or not) is created by the constructor."""
from __future__ import annotations

from ..ops.basic import full_like, zeros
from ._single_tensor import (
    _scalar_dtype,
    addcdiv_,
    addcmul_,
    check_lr,
    check_nonnegative,
    grad_for_differentiable,
    init_step,
    scalar,
    setstate_scalars,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        # fused=True runs the same update here; its state keeps PyTorch's fused layout (a
        # float32 step beside the parameter) so checkpoints move between the two
        state["step"] = zeros((), dtype=_scalar_dtype(True), device=p.device) \
            if group["fused"] else init_step(p, False)
        state["sum"] = full_like(p.detach(), self.defaults["initial_accumulator_value"])

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None, "maximize": False, "differentiable": False,
                                "fused": None})

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = []
            for p in group["params"]:
                if p.grad is not None:
                    params.append(p)
                    if len(self.state[p]) == 0:  # a group added after construction
                        self._init_state(p, group)
            lr = to_scalar_lr(group["lr"])
            weight_decay, lr_decay, eps = group["weight_decay"], group["lr_decay"], group["eps"]
            for param in params:
                state = self.state[param]
                step_t, state_sum = state["step"], state["sum"]
                step_t += 1
                step = step_t.item()
                grad = param.grad if not group["maximize"] else -param.grad
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                addcmul_(state_sum, grad, grad, value=1)
                if group["differentiable"]:
                    std = state_sum.sqrt() + eps
                else:
                    std = state_sum.sqrt().add_(eps)
                addcdiv_(param, grad, std, value=scalar(-clr))
        return loss
