"""``Optimizer``: param groups, per-parameter state, state_dict, zero_grad (PyTorch's base)."""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from .._compile.capture import boundary as _boundary
from ..autograd import grad_mode
from ..tensor import Tensor
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"


def _flat(a: np.ndarray):
    """A flat view of ``a`` when it is contiguous, else None (the caller copies)."""
    return a.reshape(-1) if a.flags.c_contiguous else None


class _FlatView:
    """Flat contiguous arrays for a kernel; non-contiguous ones are copied and written back."""

    __slots__ = ("pairs",)

    def __init__(self):
        self.pairs = []

    def get(self, a: np.ndarray) -> np.ndarray:
        f = _flat(a)
        if f is None:
            f = np.ascontiguousarray(a).reshape(-1)
            self.pairs.append((a, f))
        return f

    def write_back(self):
        for a, f in self.pairs:
            a[...] = f.reshape(a.shape)


class _DeviceFlat:
    """``_FlatView`` for CUDA storages: flat contiguous device arrays for a kernel; a
    non-contiguous storage is copied (on the device) and written back after the launch."""

    __slots__ = ("pairs",)

    def __init__(self):
        self.pairs = []

    def get(self, a, dtype=None):
        """The flat buffer of CudaArray ``a`` (cast to ``dtype``: a read-only copy)."""
        if dtype is not None and dtype != a.dtype:
            return a.flat(None, dtype)
        f = a.flat()
        if not a.is_contiguous():
            self.pairs.append((a, f))
        return f

    def write_back(self):
        if self.pairs:
            from ..backends.cuda_kernels import View
            from ..backends.cuda_kernels.layout import copy_into
            for a, f in self.pairs:
                copy_into(a.kview(), View(f, a.shape))


def _on_device(p) -> bool:
    """Is parameter ``p`` a CUDA tensor (its update then runs as one numba.cuda kernel)?"""
    return p._data.__class__ is not np.ndarray


def _to_scalar(x):
    return x.item() if isinstance(x, Tensor) else x


class Optimizer:
    """Base class of the optimizers: ``param_groups`` (list of dicts) and ``state``
    (per-parameter dict). Subclasses implement ``step``; their updates run as one Numba kernel
    per parameter, under no-grad semantics, bumping each parameter's version counter."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            # a boundary: jitgrad.compile records (and replays) the whole step as one call;
            # set here, not at recording time, since LR schedulers capture opt.step early
            cls.step = _boundary(_with_hooks(cls.__dict__["step"]), f"{cls.__name__}.step")

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ------------------------------------------------------------------ hooks

    def register_step_pre_hook(self, hook):
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        handle = RemovableHandle(self._optimizer_state_dict_pre_hooks)
        self._optimizer_state_dict_pre_hooks[handle.id] = hook
        if prepend:
            self._optimizer_state_dict_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_post_hook(self, hook, prepend=False):
        handle = RemovableHandle(self._optimizer_state_dict_post_hooks)
        self._optimizer_state_dict_post_hooks[handle.id] = hook
        if prepend:
            self._optimizer_state_dict_post_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        handle = RemovableHandle(self._optimizer_load_state_dict_pre_hooks)
        self._optimizer_load_state_dict_pre_hooks[handle.id] = hook
        if prepend:
            self._optimizer_load_state_dict_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        handle = RemovableHandle(self._optimizer_load_state_dict_post_hooks)
        self._optimizer_load_state_dict_post_hooks[handle.id] = hook
        if prepend:
            self._optimizer_load_state_dict_post_hooks.move_to_end(handle.id, last=False)
        return handle

    # ------------------------------------------------------------------ state dict

    def state_dict(self):
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups,
                                                 key=None):
        if key == "step":
            return value.clone() if isinstance(value, Tensor) else value
        if param.is_floating_point():
            # PyTorch moves the state to the parameter's device too (a CPU checkpoint loaded
            # into a CUDA optimizer: one upload per state tensor, at load time only)
            return value.to(dtype=param.dtype, device=param.device, copy=True) \
                if value.is_floating_point() else value.to(device=param.device, copy=True)
        return value.to(device=param.device, copy=True)

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, param_id=param_id,
                                         param_groups=param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            key = int(k) if isinstance(k, str) and k.isdigit() else k
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, v, param_id=key,
                                     param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ grads and groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is not None:
                    if set_to_none:
                        p._grad = None
                    else:
                        if g._grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        if _on_device(g):
                            g.zero_()  # filled on the device; bumps the version itself
                        else:
                            g._data[...] = 0
                            g._vc.value += 1

    def step(self, closure=None):
        raise NotImplementedError

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = ("with names" if "param_names" in param_group
                                     else "without names")
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _with_hooks(step):
    """Run step pre/post hooks around ``step`` and the update itself under no_grad."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for pre_hook in list(self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = step(self, *args, **kwargs)
        self._opt_called = True
        for post_hook in list(self._optimizer_step_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    return wrapper


def _closure_loss(closure):
    if closure is None:
        return None
    with grad_mode.enable_grad():
        return closure()


Optimizer.zero_grad = _boundary(Optimizer.zero_grad, "zero_grad")
