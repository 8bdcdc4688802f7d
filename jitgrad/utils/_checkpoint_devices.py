"""The device and RNG-state helpers both checkpoint variants share (PyTorch's names:
``detach_variable``, ``get_device_states``, ...), and the input checks."""
from __future__ import annotations

import warnings

import jitgrad as torch


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, torch.Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                       f"{type(inputs).__name__}")


def check_backward_validity(inputs) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, torch.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _tree_leaves(obj, out):
    if isinstance(obj, (tuple, list)):
        for o in obj:
            _tree_leaves(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tree_leaves(o, out)
    else:
        out.append(obj)
    return out


class DefaultDeviceType:
    """The device type whose RNG state is stashed when no input is on an accelerator."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = (
                "cuda" if torch.cuda.is_available() else "cpu")
        return DefaultDeviceType._default_device_type


def _infer_device_type(*args):
    device_types = [a.device.type for a in _tree_leaves(args, [])
                    if isinstance(a, torch.Tensor) and a.device.type != "cpu"]
    kinds = set(device_types)
    if len(kinds) > 1:
        warnings.warn(
            "Tensor arguments, excluding CPU tensors, are detected on at least two types of "
            "devices. Device state will only be saved for devices of a single device type, and "
            "the remaining devices will be ignored. Consequently, if any checkpointed functions "
            "involve randomness, this may result in incorrect gradients. (Note that if CUDA "
            "devices are among the devices detected, it will be prioritized; otherwise, the "
            "first device encountered will be selected.)"
            f"\nDevice types: {sorted(kinds)} first device type: {device_types[0]}",
            stacklevel=2)
    if not device_types:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in kinds else device_types[0]


def get_device_states(*args):
    """(device ids, RNG states) of the accelerator devices the tensors in ``args`` are on."""
    ids = []
    for a in _tree_leaves(args, []):
        if isinstance(a, torch.Tensor) and a.device.type not in ("cpu", "meta"):
            ids.append(a.get_device())
    # jitgrad drives one CUDA device: one generator
    states = [torch.cuda.get_rng_state() for _ in ids]
    return ids, states


def set_device_states(devices, states, *, device_type=None) -> None:
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    for _, state in zip(devices, states):
        torch.cuda.set_rng_state(state)


def _has_device_tensor(args) -> bool:
    return any(isinstance(a, torch.Tensor) and a.device.type == "cuda"
               for a in _tree_leaves(args, []))
