"""``Adamax`` (Adam with an infinity-norm second moment): PyTorch's single-tensor update op by op
in jitgrad tensor ops (``_single_tensor``), capturable on CUDA (the step stays on the device)."""
from __future__ import annotations

from ..ops.functional import maximum
from ..ops.shape_join import cat
from ._single_tensor import (
    addcdiv_,
    check_betas,
    check_capturable,
    check_lr,
    check_nonnegative,
    grad_for_differentiable,
    lerp_,
    params_with_grad,
    scalar,
    setstate_scalars,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonnegative(eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None, "maximize": False, "differentiable": False,
                                "capturable": False})

    def _init_group(self, group):
        return params_with_grad(self, group, ("exp_avg", "exp_inf"))

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            beta1, beta2 = group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            lr = to_scalar_lr(group["lr"])
            capturable = group["capturable"]
            for param in params:
                state = self.state[param]
                grad = param.grad if not group["maximize"] else -param.grad
                exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
                if capturable:
                    check_capturable(param, step_t)
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                lerp_(exp_avg, grad, 1 - beta1)
                if not group["differentiable"]:
                    exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                else:
                    norm_buf = cat([exp_inf.mul_(beta2).unsqueeze(0),
                                    grad.abs().add_(eps).unsqueeze(0)], 0)
                    exp_inf.copy_(norm_buf.amax(0, keepdim=False))
                if capturable:
                    neg_bias_correction = beta1 ** step_t - 1
                    neg_bias_correction.div_(lr)
                    denom = exp_inf * neg_bias_correction
                    addcdiv_(param, exp_avg, denom)
                else:
                    bias_correction = 1 - beta1 ** step_t.item()
                    clr = lr / bias_correction
                    addcdiv_(param, exp_avg, exp_inf, value=scalar(-clr))
        return loss
