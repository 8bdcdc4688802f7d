"""``RAdam`` (rectified Adam; coupled or decoupled weight decay): PyTorch's single-tensor update
op by op in jitgrad tensor ops (``_single_tensor``), capturable on CUDA (the step stays on the
device and the rectification becomes a ``where``)."""
from __future__ import annotations

from ..ops.functional import where
from ._single_tensor import (
    addcmul_,
    check_betas,
    check_capturable,
    check_lr,
    check_nonnegative,
    grad_for_differentiable,
    lerp_,
    params_with_grad,
    setstate_scalars,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_lr(lr)
        check_nonnegative(eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None, "maximize": False, "differentiable": False,
                                "decoupled_weight_decay": False, "capturable": False})

    def _init_group(self, group):
        return params_with_grad(self, group, ("exp_avg", "exp_avg_sq"))

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            beta1, beta2 = group["betas"]
            lr = to_scalar_lr(group["lr"])
            weight_decay, eps = group["weight_decay"], group["eps"]
            capturable, differentiable = group["capturable"], group["differentiable"]
            for param in params:
                state = self.state[param]
                grad = param.grad if not group["maximize"] else -param.grad
                exp_avg, exp_avg_sq, step_t = (state["exp_avg"], state["exp_avg_sq"],
                                               state["step"])
                if capturable:
                    check_capturable(param, step_t)
                step_t += 1
                step = step_t if capturable else step_t.item()
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(param, alpha=weight_decay)
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                # the length of the approximated simple moving average (the paper's rho)
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if capturable:
                    update = where(rho_t > 5.0, _rect(rho_t, rho_inf) * _adaptive_lr(
                        exp_avg_sq, bias_correction2, eps, differentiable), 1.0)
                    param.add_(bias_corrected_exp_avg * lr * update, alpha=-1.0)
                elif rho_t > 5.0:
                    param.add_(bias_corrected_exp_avg * lr
                               * _adaptive_lr(exp_avg_sq, bias_correction2, eps, differentiable)
                               * _rect(rho_t, rho_inf), alpha=-1.0)
                else:
                    param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss


def _rect(rho_t, rho_inf):
    return ((rho_t - 4) * (rho_t - 2) * rho_inf
            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


def _adaptive_lr(exp_avg_sq, bias_correction2, eps, differentiable):
    exp_avg_sq_sqrt = exp_avg_sq.sqrt()
    exp_avg_sq_sqrt = exp_avg_sq_sqrt.add(eps) if differentiable else exp_avg_sq_sqrt.add_(eps)
    return (bias_correction2 ** 0.5) / exp_avg_sq_sqrt
