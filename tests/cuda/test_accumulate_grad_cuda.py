"""AccumulateGrad on CUDA leaves: a hook's result or the engine's gradient laid out like the
leaf (channels-last included) is stored itself, keeping its version and memory, as PyTorch
does; one the user keeps is copied. The programs are tests/test_grad_version_parity.py's, run
on the device here (PyTorch, the reference, on its CPU: its AccumulateGrad is the same code for
every device).

Run on the simulator in its own process, or on a GPU::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_accumulate_grad_cuda.py
"""
from __future__ import annotations

import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")
from tests.test_grad_version_parity import (  # noqa: E402 - after the skip
    HOOKS,
    _hook_returns_users_detach,
    _hooked_leaf,
)


@pytest.mark.parametrize("channels_last", [True, False], ids=["channels_last", "contiguous"])
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hook_result_stolen_or_copied_on_device(device, hook, channels_last):
    got = _hooked_leaf(jg, hook, channels_last, device="cuda")
    assert got == _hooked_leaf(torch, hook, channels_last)


def test_hook_result_detached_from_users_tensor_is_stored_itself_on_device(device):
    assert _hook_returns_users_detach(jg, "cuda") == _hook_returns_users_detach(torch)


def _engine_grad_like_leaf(lib, device="cpu"):
    # the hook's channels-last temporary, stored itself: its version (0) and its layout
    x = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last).to(device).requires_grad_()
    x.register_hook(lambda g: g.to(memory_format=lib.channels_last) * 1)
    (x * 2).sum().backward()
    return [x.grad._version, x.grad.stride(), x.grad.is_contiguous(),
            x.grad.is_contiguous(memory_format=lib.channels_last), x.grad.sum().item()]


def test_channels_last_hook_result_on_device(device):
    assert _engine_grad_like_leaf(jg, "cuda") == _engine_grad_like_leaf(torch)
