"""``NAdam`` (Nesterov Adam with momentum decay; coupled or decoupled weight decay): PyTorch's
single-tensor update op by op in jitgrad tensor ops (``_single_tensor``), capturable on CUDA
(``step`` and ``mu_product`` stay on the device)."""
from __future__ import annotations

from ._single_tensor import (
    addcdiv_,
    addcmul_,
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

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_nonnegative(eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"maximize": False, "foreach": None, "capturable": False,
                                "differentiable": False, "decoupled_weight_decay": False},
                         keys=("step", "mu_product"))

    def _init_group(self, group):
        return params_with_grad(self, group, ("exp_avg", "exp_avg_sq"),
                                scalars=(("mu_product", 1.0),))

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            beta1, beta2 = group["betas"]
            lr = to_scalar_lr(group["lr"])
            weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
            eps, capturable = group["eps"], group["capturable"]
            for param in params:
                state = self.state[param]
                grad = param.grad if not group["maximize"] else -param.grad
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                mu_product, step_t = state["mu_product"], state["step"]
                if capturable:
                    check_capturable(param, mu_product, step_t,
                                     names="params, mu_products and state_steps")
                step_t += 1
                step = step_t if capturable else step_t.item()
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(param, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product *= mu
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt()
                if group["differentiable"] or capturable:
                    denom = denom.add(eps)
                    # tensors throughout: a captured graph must not read the step on the host
                    mu_product_next = mu_product * mu_next
                    grad = grad * (-lr * (1.0 - mu) / (1.0 - mu_product))
                    exp_avg = exp_avg * (-lr * mu_next / (1.0 - mu_product_next))
                    addcdiv_(param, grad, denom)
                    addcdiv_(param, exp_avg, denom)
                else:
                    mu_product_next = mu_product.item() * mu_next
                    denom.add_(eps)
                    addcdiv_(param, grad, denom,
                             value=scalar(-lr * (1.0 - mu) / (1.0 - mu_product.item())))
                    addcdiv_(param, exp_avg, denom,
                             value=scalar((-lr * mu_next) / (1.0 - mu_product_next)))
        return loss
