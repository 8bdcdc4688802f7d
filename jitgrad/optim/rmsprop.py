"""``RMSprop`` (momentum, centered, weight decay, maximize): PyTorch's single-tensor update op by
op in jitgrad tensor ops (``_single_tensor``), for CPU and CUDA parameters alike."""
from __future__ import annotations

from ._single_tensor import (
    addcdiv_,
    addcmul_,
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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_nonnegative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"momentum": 0, "centered": False, "foreach": None,
                                "maximize": False, "differentiable": False,
                                "capturable": False})

    def _init_group(self, group):
        buffers = ["square_avg"]
        if group["momentum"] > 0:
            buffers.append("momentum_buffer")
        if group["centered"]:
            buffers.append("grad_avg")
        return params_with_grad(self, group, buffers)

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            lr = to_scalar_lr(group["lr"])
            alpha, eps = group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            differentiable = group["differentiable"]
            for param in params:
                state = self.state[param]
                step_t = state["step"]
                if group["capturable"]:
                    check_capturable(param, step_t)
                grad = param.grad if not group["maximize"] else -param.grad
                square_avg = state["square_avg"]
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                addcmul_(square_avg.mul_(alpha), grad, grad, value=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    lerp_(grad_avg, grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add(eps) if differentiable else avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    addcdiv_(buf.mul_(momentum), grad, avg)
                    param.add_(buf, alpha=scalar(-lr))
                else:
                    addcdiv_(param, grad, avg, value=scalar(-lr))
        return loss
