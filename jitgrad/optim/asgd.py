"""``ASGD`` (averaged SGD; weight decay, maximize): PyTorch's single-tensor update op by op in
jitgrad tensor ops (``_single_tensor``). Besides the parameter it keeps ``ax``, the running
average of the iterates from step ``t0`` on, and the 0-d ``eta`` (the decayed learning rate)
and ``mu`` (the averaging weight), which PyTorch always keeps beside the parameter."""
from __future__ import annotations

from ..ops.basic import ones_like, tensor, zeros_like
from ..ops.functional import maximum
from ..tensor import Tensor
from . import _single_tensor
from ._single_tensor import (
    _scalar_dtype,
    addcmul_,
    check_lr,
    check_nonnegative,
    grad_for_differentiable,
    params_with_grad,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["ASGD"]


def _scalar_on(p, value):
    """A 0-d state tensor of PyTorch's scalar dtype on ``p``'s device (ASGD does not wait for
    ``capturable`` to put ``step``, ``eta`` and ``mu`` there)."""
    if isinstance(value, Tensor):  # a tensor lr: as_tensor(lr, dtype=...).clone().detach()
        return value.to(dtype=_scalar_dtype(), device=p.device).clone().detach()
    return tensor(float(value), dtype=_scalar_dtype(), device=p.device)


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in (("foreach", None), ("maximize", False), ("differentiable", False),
                         ("capturable", False)):
                group.setdefault(k, v)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0:  # numbers from an old checkpoint become 0-d tensors
                    for key in ("step", "eta", "mu"):
                        if not isinstance(p_state[key], Tensor):
                            p_state[key] = _scalar_on(p, p_state[key])

    def _init_group(self, group):
        def init(p, state):  # PyTorch's key order: step, eta, mu, ax (all on p's device)
            state["step"] = _scalar_on(p, 0.0)
            state["eta"] = _scalar_on(p, to_scalar_lr(group["lr"]))
            state["mu"] = _scalar_on(p, 1.0)
            state["ax"] = zeros_like(p.detach())
        return params_with_grad(self, group, init=init)

    @grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._init_group(group)
            lr = to_scalar_lr(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay, capturable = group["weight_decay"], group["capturable"]
            for param in params:
                state = self.state[param]
                grad = param.grad if not group["maximize"] else -param.grad
                mu, ax, eta, step_t = state["mu"], state["ax"], state["eta"], state["step"]
                if capturable:
                    devices = _single_tensor.CAPTURABLE_DEVICES  # read late: tests patch it
                    kind = param.device.type
                    if not (mu.device.type == eta.device.type == step_t.device.type == kind
                            and kind in devices):
                        raise AssertionError(
                            "If capturable=True, params, mus, etas, and state_steps must be on "
                            f"supported devices: {devices}.")
                step_t += 1
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                if capturable:  # eta stays a device tensor: no host read inside a graph
                    param.mul_(1 - lambd * eta)
                    addcmul_(param, grad, eta, value=-1)
                else:
                    eta_value = eta.item()
                    param.mul_(1 - lambd * eta_value)  # decay term
                    param.add_(grad, alpha=-eta_value)
                if capturable or mu.item() != 1:
                    ax.add_(param.sub(ax).mul_(mu))
                else:
                    ax.copy_(param)
                if capturable:
                    eta.copy_(lr / ((1 + lambd * lr * step_t) ** alpha))
                    mu.copy_(1 / maximum(step_t - t0, ones_like(step_t)))
                else:
                    step = step_t.item()
                    new_eta = lr / ((1 + lambd * lr * step) ** alpha)
                    # PyTorch: torch.as_tensor(a float) is a default-dtype tensor, then copied
                    eta.copy_(new_eta if isinstance(new_eta, Tensor) else tensor(new_eta))
                    mu.copy_(tensor(1 / max(1, step - t0)))
        return loss
