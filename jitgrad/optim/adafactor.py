"""``Adafactor`` (weight decay, maximize): PyTorch's single-tensor update (``_adafactor.py``)
op by op in jitgrad tensor ops. A parameter of two or more dimensions keeps its second moment
factored over the last two (``row_var``: the mean over the last dimension, ``col_var``: over
the one before), a vector keeps the full ``variance``; ``step`` is a 0-d host tensor."""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..ops.basic import zeros_like
from ..ops.reduce_norm import norm
from ..tensor import Tensor
from ._single_tensor import (
    lerp_,
    new_scalar,
    params_with_grad,
    setstate_scalars,
    to_scalar_lr,
)
from .optimizer import Optimizer, _closure_loss

__all__ = ["Adafactor"]


def _eps(dtype):
    """torch.finfo(dtype).eps (NumPy has no bfloat16: 2 ** -7)."""
    if str(dtype).endswith("bfloat16"):
        return 0.0078125
    return float(np.finfo(dtype.np).eps)


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        setstate_scalars(self, {"foreach": None})

    def _init_group(self, group):
        def init(p, state):
            # step stays on the host (no capturable mode): PyTorch's choice
            state["step"] = new_scalar(p, 0.0, False)
            if p.grad.dim() > 1:
                row_shape = list(p.grad.shape)
                row_shape[-1] = 1
                state["row_var"] = p.grad.new_zeros(row_shape)
                col_shape = list(p.grad.shape)
                col_shape[-2] = 1
                state["col_var"] = p.grad.new_zeros(col_shape)
            else:
                state["variance"] = zeros_like(p.grad)
        # (PyTorch also refuses complex parameters here; jitgrad has no complex dtypes)
        return params_with_grad(self, group, init=init)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        with grad_mode.no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        params = self._init_group(group)
        if getattr(self, "grad_scale", None) is not None or \
                getattr(self, "found_inf", None) is not None:
            raise AssertionError("Grad scaling should occur outside of optimizer.step()")
        lr = to_scalar_lr(group["lr"])
        eps1, eps2 = group["eps"]
        d, beta2_decay, weight_decay = group["d"], group["beta2_decay"], group["weight_decay"]
        for param in params:
            state = self.state[param]
            grad = param.grad if not group["maximize"] else -param.grad
            step_t = state["step"]
            if eps1 is None:  # PyTorch keeps the first parameter's for the rest of the group
                eps1 = _eps(param.dtype)
            step_t += 1
            step_float = step_t.item()
            one_minus_beta2_t = step_float**beta2_decay
            rho_t = min(lr, 1 / (step_float**0.5))
            alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
            if weight_decay != 0:
                param.mul_(1 - lr * weight_decay)
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                # (g * g).mean(dim=-1) without a gradient-sized temporary, as PyTorch does
                row_mean = norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                lerp_(row_var, row_mean, one_minus_beta2_t)
                col_mean = norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                lerp_(col_var, col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                variance = state["variance"]
                lerp_(variance, grad * grad, one_minus_beta2_t)
                var_estimate = variance.clone()  # the update must not write into variance
            # eps1 squared: the square root below brings it back to eps1's magnitude
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            param.add_(update, alpha=-alpha / denom)
