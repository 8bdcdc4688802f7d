"""Shared pieces of the optimizers written as PyTorch's ``_single_tensor_<name>`` loops: the
update is a sequence of jitgrad tensor ops (the same ops, in the same order, as PyTorch's), so one
code path serves CPU and CUDA parameters and float64 results agree with PyTorch bit for bit.
A fused per-parameter kernel (as SGD and Adam have) can replace a loop later, keeping its state
layout."""
from __future__ import annotations

import functools

from .._dtype import float32, float64, get_default_dtype
from ..autograd import grad_mode
from ..ops import functional as F
from ..ops import inplace
from ..ops.basic import ones, tensor, zeros
from ..tensor import Tensor

__all__ = ["addcmul_", "addcdiv_", "lerp_", "scalar", "check_lr", "new_scalar", "init_step",
           "check_capturable", "grad_for_differentiable", "setstate_scalars",
           "CAPTURABLE_DEVICES"]

# jitgrad's Tensor has no in-place addcmul_/addcdiv_/lerp_ methods yet: the same ops as
# functions (an out-of-place result written into the first argument, its version bumped)
addcmul_ = inplace.unary_inplace(F.addcmul)
addcdiv_ = inplace.unary_inplace(F.addcdiv)
lerp_ = inplace.unary_inplace(F.lerp)

# PyTorch's _get_capturable_supported_devices() (privateuse1's default name), in its words
CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def scalar(x):
    """A ``value=``/``alpha=`` argument: PyTorch turns a 0-d tensor there into a Python
    Scalar (the float32 value of a float32 ``lr`` tensor, widened)."""
    return x.item() if isinstance(x, Tensor) else x


def check_lr(lr):
    """PyTorch's first two constructor checks, shared by every optimizer."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_nonnegative(**values):
    """PyTorch's ``if not 0.0 <= x: raise ValueError("Invalid <name> value: x")`` constructor
    checks, in the order given (``eps`` is called "epsilon" in the message)."""
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {'epsilon' if name == 'eps' else name} value: {v}")


def check_betas(betas):
    """PyTorch's Adam-family check: both betas in [0, 1)."""
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def to_scalar_lr(lr):
    """PyTorch's optimizer._to_scalar: a 1-element tensor lr becomes 0-d, a number stays."""
    if isinstance(lr, Tensor) and lr.dim() != 0:
        return lr.squeeze()
    return lr


def _scalar_dtype(is_fused=None):
    if is_fused:
        return float32
    return float64 if get_default_dtype() is float64 else float32


def new_scalar(p, value, capturable):
    """A 0-d state tensor (``step``, ``mu_product``): PyTorch's _get_scalar_dtype() on the
    host, or beside the parameter when capturable (a graph replay increments it there)."""
    dt = _scalar_dtype()
    if capturable:
        return (ones if value == 1 else zeros)((), dtype=dt, device=p.device)
    return tensor(float(value), dtype=dt)


def init_step(p, capturable):
    return new_scalar(p, 0.0, capturable)


def params_with_grad(opt, group, buffers=(), scalars=(), init=None):
    """The group's parameters that have a gradient, each one's state made on first use as
    PyTorch's ``_init_group`` makes it, in its key order (``state_dict`` keeps it): ``step``,
    the 0-d ``scalars`` ((name, initial value) pairs), a zero buffer per name in ``buffers``;
    or ``init(p, state)`` for an optimizer whose first state is none of these."""
    from ..ops.basic import zeros_like
    params = []
    for p in group["params"]:
        if p.grad is None:
            continue
        params.append(p)
        state = opt.state[p]
        if len(state) == 0 and init is not None:
            init(p, state)
        elif len(state) == 0:
            state["step"] = init_step(p, group["capturable"])
            for name, value in scalars:
                state[name] = new_scalar(p, value, group["capturable"])
            for name in buffers:
                state[name] = zeros_like(p.detach())
    return params


def check_capturable(p, *scalars, names="params and state_steps", xla=True):
    """PyTorch's check that a capturable step runs where graphs can be captured."""
    devices = CAPTURABLE_DEVICES if xla else CAPTURABLE_DEVICES[:-1]
    kind = p.device.type
    if not (all(s.device.type == kind for s in scalars) and kind in devices):
        raise AssertionError(f"If capturable=True, {names} must be on supported devices: "
                             f"{devices}.")


def grad_for_differentiable(step):
    """PyTorch's _use_grad_for_differentiable: the update records a graph only when the
    optimizer was built with ``differentiable=True`` (else it runs under no_grad)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with grad_mode.set_grad_enabled(bool(self.defaults["differentiable"])):
            return step(self, *args, **kwargs)
    return wrapper


def setstate_scalars(opt, defaults, keys=("step",)):
    """The tail of PyTorch's ``__setstate__``: missing group keys get their defaults, and a
    number saved for ``step`` (an old checkpoint) becomes a 0-d tensor again."""
    for group in opt.param_groups:
        for k, v in defaults.items():
            group.setdefault(k, v)
        capturable = bool(group.get("capturable", False))
        for p in group["params"]:
            p_state = opt.state.get(p, [])
            if len(p_state) == 0:
                continue
            for key in keys:
                if key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = new_scalar(p, 0.0, capturable).fill_(float(p_state[key]))
