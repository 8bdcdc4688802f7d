"""``Adadelta`` (weight decay, maximize): PyTorch's single-tensor update op by op in jitgrad
tensor ops (``_single_tensor``); capturable keeps the (unread) step count on the device."""
from __future__ import annotations

from ._single_tensor import (
    addcmul_,
    check_capturable,
    check_lr,
    check_nonnegative,
    grad_for_differentiable,
    params_with_grad,
    scalar,
    setstate_scalars,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None, "maximize": False, "differentiable": False,
                                "capturable": False})

    def _init_group(self, group):
        return params_with_grad(self, group, ("square_avg", "acc_delta"))

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            lr = to_scalar_lr(group["lr"])
            rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
            if group["capturable"]:  # PyTorch checks every parameter before any update
                for p in params:
                    check_capturable(p, self.state[p]["step"], xla=False)
            for param in params:
                state = self.state[param]
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"] += 1
                grad = param.grad if not group["maximize"] else -param.grad
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                addcmul_(square_avg.mul_(rho), grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()
                delta.div_(std).mul_(grad)
                addcmul_(acc_delta.mul_(rho), delta, delta, value=1 - rho)
                param.add_(delta, alpha=scalar(-lr))
        return loss
