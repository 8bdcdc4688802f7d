"""``skip_init``: build a module without running its parameter initialisation.

PyTorch builds the module on the ``meta`` device (where the init functions draw nothing) and
then ``to_empty``s it onto the requested device. jitgrad has no meta device, so the module is
built on its final device and the generators' states are put back afterwards (the initial
draws leave no trace, as on meta), then every parameter and buffer is replaced by
uninitialised memory (``empty_like``), as ``to_empty`` does.
"""
from __future__ import annotations

import inspect

import jitgrad as torch

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Instantiate ``module_cls(*args, **kwargs)`` with uninitialised parameters / buffers."""
    if not issubclass(module_cls, torch.nn.Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    cpu_state = torch.random.get_rng_state()
    on_cuda = torch.device(final_device).type == "cuda"
    cuda_state = torch.cuda.get_rng_state() if on_cuda else None
    try:
        module = module_cls(*args, **kwargs)
    finally:
        torch.random.set_rng_state(cpu_state)
        if cuda_state is not None:
            torch.cuda.set_rng_state(cuda_state)
    return module.to_empty(device=final_device)
