"""``SparseAdam``: PyTorch's constructor (its argument checks and messages) and the first
check of its step. jitgrad has no sparse tensors, so every gradient is dense and a step with a
gradient raises PyTorch's own error for dense gradients (use ``Adam``); a step where no
parameter has a gradient runs the closure and returns its loss, as PyTorch's does."""
from __future__ import annotations

from ..autograd import grad_mode
from ..tensor import Tensor
from .optimizer import Optimizer, _closure_loss

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [[index, d_index] for index, group in enumerate(self.param_groups)
                          for d_index, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    def step(self, closure=None):
        loss = _closure_loss(closure)
        with grad_mode.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None and not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, please "
                                           "consider Adam instead")
        return loss
