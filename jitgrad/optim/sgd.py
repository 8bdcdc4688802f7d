"""``SGD`` with momentum, dampening, Nesterov, weight decay and maximize; one fused Numba kernel
per parameter (``_kernels.sgd_step``)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import _kernels
from .optimizer import Optimizer, _closure_loss, _DeviceFlat, _FlatView, _on_device, _to_scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = float(_to_scalar(group["lr"]))
            momentum = float(group["momentum"])
            dampening = float(group["dampening"])
            wd = float(_to_scalar(group["weight_decay"]))
            nesterov = bool(group["nesterov"])
            maximize = bool(group["maximize"])
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if _on_device(p):
                    self._device_update(p, g, lr, momentum, dampening, wd, nesterov, maximize)
                    continue
                pd = p._data
                t = pd.dtype.type
                gd = g._data if g._data.dtype == pd.dtype else g._data.astype(pd.dtype)
                first = False
                views = _FlatView()
                pf = views.get(pd)
                # unused by the kernel without momentum: pf itself, not a second copy of a
                # non-contiguous pd, whose stale write-back would undo the update
                bf = pf
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = Tensor._make(np.empty_like(pd))
                        state["momentum_buffer"] = buf
                        first = True
                    bf = views.get(buf._data)
                _kernels.sgd_step(pf, views.get(gd), bf, t(-lr), t(wd),
                                  t(momentum), t(1 - dampening), wd != 0, momentum != 0, first,
                                  nesterov, maximize)
                views.write_back()
                p._vc.value += 1
                if momentum != 0:
                    buf._vc.value += 1
        return loss

    def _device_update(self, p, g, lr, momentum, dampening, wd, nesterov, maximize):
        """The CUDA twin of the loop body above: one ``_cuda_kernels.sgd_step`` launch, the
        momentum buffer allocated on the device, nothing copied to or from the host."""
        from ..ops.basic import empty_like
        from . import _cuda_kernels
        pd = p._data
        t = pd.dtype.type
        first = False
        views = _DeviceFlat()
        pf = views.get(pd)
        bd = pf  # unused by the kernel without momentum
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = empty_like(p.detach())
                state["momentum_buffer"] = buf
                first = True
            bd = views.get(buf._data)
        _cuda_kernels.launch_sgd(pf, views.get(g._data, pd.dtype), bd, t(-lr), t(wd),
                                 t(momentum), t(1 - dampening), wd != 0, momentum != 0, first,
                                 nesterov, maximize)
        views.write_back()
        p._vc.value += 1
        if momentum != 0:
            buf._vc.value += 1
