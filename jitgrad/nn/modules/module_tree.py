"""``Module``'s walks over the module tree: the named_* iterators, train/eval, requires_grad_
and zero_grad, apply/_apply and the dtype/device conversions built on it."""
from __future__ import annotations

import numpy as np

from ...autograd import grad_mode
from ...tensor import Tensor


class _ModuleTree:
    """``Module``'s traversal and conversion methods (a mixin over ``_parameters``,
    ``_buffers`` and ``_modules``, which live in ``Module.__init__``)."""

    # ------------------------------------------------------------------ traversal

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: bool = True):
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _name, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes and grads

    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    if g._data.__class__ is not np.ndarray:
                        g.zero_()  # CUDA: filled on the device, bumps the version itself
                    else:
                        g._data[...] = 0
                        g._vc.value += 1

    def share_memory(self):
        return self

    # ------------------------------------------------------------------ conversions

    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter, gradient and buffer, keeping Parameter objects."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with grad_mode.no_grad():
                param_applied = fn(param)
            if param_applied is not param:
                # PyTorch's set_data: the Parameter object (and optimizers holding it) stays
                param._data = param_applied._data
            if param._grad is not None:
                with grad_mode.no_grad():
                    grad_applied = fn(param._grad)
                if grad_applied is not param._grad:
                    param._grad = Tensor._make(grad_applied._data)
        for key, buf in self._buffers.items():
            if buf is not None:
                with grad_mode.no_grad():
                    self._buffers[key] = fn(buf)
        return self

    def to_empty(self, *, device, recurse=True):
        """Every parameter and buffer replaced by uninitialised memory on ``device``."""
        from ...ops.factories import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        from ... import _dtype as D
        from ..._size import check_device
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, bool):
                continue  # non_blocking given positionally
            elif a is not None:
                device = a
        check_device(device)
        if dtype is not None:
            dtype = D.to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                                f"got desired dtype={dtype}")

        dev = check_device(device) if device is not None else None

        def convert(t):
            kw = {}
            if dtype is not None and t.is_floating_point() and t.dtype is not dtype:
                kw["dtype"] = dtype
            if dev is not None and t.device != dev:  # "cpu" moves CUDA tensors back too
                kw["device"] = dev
            if memory_format is not None and t.dim() in (4, 5):  # as PyTorch: 4-D and 5-D only
                kw["memory_format"] = memory_format
            return t.to(**kw) if kw else t
        return self._apply(convert)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)
