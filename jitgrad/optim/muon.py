"""``Muon``: PyTorch 2.13's ``torch/optim/_muon.py`` (momentum, Nesterov, the quintic
Newton–Schulz orthogonalization, ``adjust_lr_fn``, decoupled weight decay) in jitgrad tensor ops,
one code path for CPU and CUDA parameters.

PyTorch runs the Newton–Schulz iteration in bfloat16. jitgrad has no bfloat16 dtype, so the
iteration keeps float32 tensors holding bfloat16 values: every op PyTorch runs in bfloat16 is
computed in float32 (PyTorch's accumulation type for it) and rounded to the nearest bfloat16,
ties to even (``round_to_bfloat16``). What remains different is only the order of the float32
sums inside the products (oneDNN's bfloat16 GEMM here, a BLAS or jitgrad's own on CUDA); a sum
that lands on the other side of a bfloat16 rounding boundary changes one element by a bfloat16
ulp, so updates agree with PyTorch's to about 1e-2 relative per element in the worst case, and
usually exactly.

Credit: the update follows PyTorch's ``torch/optim/_muon.py`` (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from ..autograd import grad_mode
from ..ops import functional as F
from ..ops.basic import zeros_like
from ..ops.composite import ieee_quiet
from ..ops.frexp import frexp
from ..ops.linalg import addmm
from ..tensor import Tensor
from ._single_tensor import lerp_, params_with_grad, to_scalar_lr
from .optimizer import Optimizer, _closure_loss

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


@ieee_quiet  # a carry past float32's range is inf, silently (NumPy would warn on the cast)
def round_to_bfloat16(x):
    """float32 ``x`` rounded to the nearest bfloat16 (ties to even), kept as float32: what
    c10's round_to_nearest_even does to the bits, in arithmetic (CUDA tensors have no bit
    view): bfloat16 keeps 8 significant bits, so with ``x = m * 2**e`` (frexp) the quantum is
    ``2**(e - 8)``, or ``2**-133`` among bfloat16's subnormals; ``round`` ties to even. In
    float64, where every scaling here is exact; a carry past float32's range gives inf, as the
    bit rounding does, and NaN stays NaN."""
    _, e = frexp(x)
    quantum = F.exp2((e.to(D.float64) - 8).clamp(min=-133))
    return (F.round(x.to(D.float64) / quantum) * quantum).to(D.float32)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """PyTorch's quintic Newton–Schulz iteration, each bfloat16 op as float32 then rounded."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    bf = round_to_bfloat16
    a, b, c = ns_coefficients
    # grad.bfloat16(): a float64 gradient goes through float first, as c10's conversion does
    ortho_grad = bf(grad.float())
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    norm = bf(ortho_grad.norm())
    ortho_grad = bf(ortho_grad / bf(norm.clamp(min=eps)))
    for _ in range(ns_steps):
        gram_matrix = bf(ortho_grad @ ortho_grad.T)
        gram_update = bf(addmm(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c))
        ortho_grad = bf(addmm(ortho_grad, gram_update, ortho_grad, beta=a))
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    return ortho_grad


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """Muon's learning-rate scaling by the parameter's shape."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(A, B))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _init_group(self, group):
        # (PyTorch also refuses complex parameters and sparse gradients here; jitgrad has
        # neither)
        def init(p, state):
            state["momentum_buffer"] = zeros_like(p.grad)
        return params_with_grad(self, group, init=init)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        with grad_mode.no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group):
        params = self._init_group(group)
        lr = to_scalar_lr(group["lr"])
        if isinstance(lr, Tensor):
            lr = lr.item()  # the scalar multiplies below see its value, as PyTorch's do
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        for param in params:
            grad = param.grad
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = self.state[param]["momentum_buffer"]
            lerp_(buf, grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], group["eps"])
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], param.shape)
            param.mul_(1 - lr * weight_decay)
            param.add_(update.to(param.dtype), alpha=-adjusted_lr)
