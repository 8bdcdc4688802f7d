"""``Adam`` and ``AdamW`` (amsgrad, maximize, weight decay coupled or decoupled); one fused
Numba kernel per parameter (``_kernels.adam_step``)."""
from __future__ import annotations

import numpy as np

from ..backends import vml
from ..tensor import Tensor
from . import _kernels
from ._single_tensor import check_betas, check_lr, check_nonnegative
from .optimizer import Optimizer, _closure_loss, _DeviceFlat, _FlatView, _on_device, _to_scalar

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_lr(lr)
        check_nonnegative(eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = float(_to_scalar(group["lr"]))
            beta1, beta2 = (float(_to_scalar(b)) for b in group["betas"])
            eps = float(group["eps"])
            wd = float(_to_scalar(group["weight_decay"]))
            amsgrad = bool(group["amsgrad"])
            maximize = bool(group["maximize"])
            decoupled = bool(group["decoupled_weight_decay"])
            capturable = bool(group["capturable"])
            # PyTorch's fused CPU kernel takes a correctly rounded sqrt (ATen's Vectorized),
            # its single-tensor and foreach paths MKL's (``vml``): the kernel follows suit
            fused = bool(group["fused"])
            # the kernels' scalar arguments per (step, dtype): the parameters of a group
            # usually share both, and building the dtype scalars costs more than the kernel
            # of a small parameter
            scalars = {}
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                pd = p._data
                state = self.state[p]
                dev = _on_device(p)
                if capturable and not dev:  # PyTorch's check and words
                    raise AssertionError(
                        "If capturable=True, params and state_steps must be on supported "
                        "devices: ['cuda', 'xpu', 'hpu', 'privateuseone', 'xla'].")
                if len(state) == 0:
                    state["step"] = Tensor._make(np.asarray(0.0, dtype=np.float32))
                    if dev:  # moments live on the device (zero-filled there); step on the host
                        state.update(_device_zeros(p, amsgrad))
                    else:
                        state["exp_avg"] = Tensor._make(np.zeros_like(pd))
                        state["exp_avg_sq"] = Tensor._make(np.zeros_like(pd))
                        if amsgrad:
                            state["max_exp_avg_sq"] = Tensor._make(np.zeros_like(pd))
                if capturable:
                    _capturable_step(p, state, lr, beta1, beta2, eps, wd, decoupled,
                                     amsgrad, maximize)
                    continue
                step_t = _host_step(state)
                step_t._data[...] += 1
                step_t._vc.value += 1
                step = float(step_t._data)
                sc = scalars.get((step, pd.dtype))
                if sc is None:
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2 = 1 - beta2 ** step
                    step_size = lr / bias_correction1
                    bias_correction2_sqrt = bias_correction2 ** 0.5
                    t = pd.dtype.type
                    sc = scalars[(step, pd.dtype)] = (
                        t(1 - lr * wd), t(wd), t(1 - beta1), t(beta2), t(1 - beta2),
                        t(bias_correction2_sqrt), t(eps), t(-step_size))
                m, v = state["exp_avg"], state["exp_avg_sq"]
                if dev:
                    views = _DeviceFlat()
                    mf, vf = views.get(m._data), views.get(v._data)
                    # without amsgrad the kernel never touches vmax: pass m's buffer again
                    # (not a second copy that a write-back could restore stale)
                    vmf = views.get(state["max_exp_avg_sq"]._data) if amsgrad else mf
                    from ._cuda_kernels import launch_adam
                    launch_adam(views.get(pd), views.get(g._data, pd.dtype), mf, vf, vmf, *sc,
                                decoupled, wd != 0, amsgrad, maximize)
                    views.write_back()
                    p._vc.value += 1
                    m._vc.value += 1
                    v._vc.value += 1
                    continue
                gd = g._data if g._data.dtype == pd.dtype else g._data.astype(pd.dtype)
                views = _FlatView()
                mf = views.get(m._data)
                # without amsgrad vmax is unused: mf itself, not a second (stale) copy of m
                vmf = views.get(state["max_exp_avg_sq"]._data) if amsgrad else mf
                args = (views.get(pd), views.get(gd), mf, views.get(v._data), vmf, *sc,
                        decoupled, wd != 0, amsgrad, maximize)
                sqrt_addr = 0 if fused else vml.routine("sqrt", pd.dtype)
                if sqrt_addr:
                    _kernels.adam_step_vml(*args, sqrt_addr)
                else:
                    _kernels.adam_step(*args)
                views.write_back()
                p._vc.value += 1
                m._vc.value += 1
                v._vc.value += 1
        return loss


def _host_step(state):
    """The step count as a host tensor (moved back from the device after capturable steps)."""
    step_t = state["step"]
    if _on_device(step_t):
        step_t = state["step"] = step_t.cpu()
    return step_t


def _capturable_step(p, state, lr, beta1, beta2, eps, wd, decoupled, amsgrad, maximize):
    """One ``capturable=True`` step of CUDA parameter ``p``: the step count lives on the device
    (as PyTorch keeps it) and one launch increments it, a second updates ``p`` reading it, with
    scalars that do not change from step to step (``_cuda_kernels.adam_capturable_pyfunc``)."""
    from ._cuda_kernels import launch_adam_capturable
    step_t = state["step"]
    if not _on_device(step_t):  # a state saved by a non-capturable run (or the CPU)
        step_t = state["step"] = step_t.to(p.device)
    pd = p._data
    t = pd.dtype.type
    m, v = state["exp_avg"], state["exp_avg_sq"]
    views = _DeviceFlat()
    mf, vf = views.get(m._data), views.get(v._data)
    vmf = views.get(state["max_exp_avg_sq"]._data) if amsgrad else mf
    launch_adam_capturable(views.get(pd), views.get(p._grad._data, pd.dtype), mf, vf, vmf,
                           views.get(step_t._data), t(1), t(lr), t(1 - lr * wd), t(wd), t(beta1),
                           t(1 - beta1), t(beta2), t(1 - beta2), t(eps), decoupled, wd != 0,
                           amsgrad, maximize)
    views.write_back()
    for x in (p, m, v, step_t):
        x._vc.value += 1


def _device_zeros(p, amsgrad):
    """Adam's moment buffers for a CUDA parameter, zero-filled on the device."""
    from ..ops.basic import zeros_like
    q = p.detach()
    state = {"exp_avg": zeros_like(q), "exp_avg_sq": zeros_like(q)}
    if amsgrad:
        state["max_exp_avg_sq"] = zeros_like(q)
    return state


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
