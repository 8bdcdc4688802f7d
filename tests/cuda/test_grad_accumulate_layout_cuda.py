"""A second backward adds into a CUDA leaf's existing ``.grad`` in place whatever its layout
(transposed, channels-last, a slice of a larger buffer), as PyTorch's AccumulateGrad does
(``variable.grad += new_grad`` with grad mode off): the same values, the same strides, the same
tensor and its version bumped. PyTorch, the reference, runs the same program on its CPU (its
AccumulateGrad is the same code for every device).

Run on the simulator in its own process, or on a GPU::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_grad_accumulate_layout_cuda.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")

_rng = np.random.default_rng(18)
# float64 so the two libraries' sums agree to rounding; the layouts are what is under test
_BASE = {
    "transposed": _rng.standard_normal((4, 3)),
    "channels_last": _rng.standard_normal((2, 3, 4, 5)),
    "sliced": _rng.standard_normal((3, 8)),
    "contiguous": _rng.standard_normal((3, 4)),
}
_W = {k: _rng.standard_normal(v.shape) for k, v in _BASE.items()}


def _leaf(lib, layout, device):
    """A leaf whose first gradient AccumulateGrad lays out like itself (dense leaves) or
    C-contiguous (the sliced one: not dense)."""
    t = lib.tensor(_BASE[layout])
    if layout == "transposed":
        t = t.t()
    elif layout == "channels_last":
        t = t.to(memory_format=lib.channels_last)
    elif layout == "sliced":
        t = t[:, ::2]
    return t.to(device).requires_grad_()


def _weight(lib, layout, device):
    w = lib.tensor(_W[layout])
    if layout == "transposed":
        w = w.t()
    elif layout == "sliced":
        w = w[:, ::2]
    return w.to(device)


def _state(x):
    g = x.grad
    return [g.stride(), g._version, g.cpu().detach().numpy().copy()]


def _accumulate_twice(lib, layout, device="cpu"):
    x = _leaf(lib, layout, device)
    w = _weight(lib, layout, device)
    (x * w).sum().backward()
    first = x.grad
    before = _state(x)
    (x * x * w).sum().backward()  # adds 2*x*w into the same .grad
    return before, _state(x), x.grad is first


def _assigned_slice_grad(lib, device="cpu"):
    """``.grad`` set by the user to a strided slice of a larger buffer: accumulation writes
    through the slice's strides and leaves the buffer's other elements alone."""
    x = lib.tensor(_BASE["contiguous"]).to(device).requires_grad_()
    buf = lib.ones(3, 8, dtype=lib.float64).to(device)
    x.grad = buf[:, ::2]
    (x * 3).sum().backward()
    (x * x).sum().backward()
    return [x.grad.stride(), x.grad._version, buf.cpu().numpy().copy()]


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        else:
            assert g == w


@pytest.mark.parametrize("layout", sorted(_BASE))
def test_second_backward_adds_into_grad_keeping_its_layout(device, layout):
    got_before, got_after, got_same = _accumulate_twice(jg, layout, "cuda")
    want_before, want_after, want_same = _accumulate_twice(torch, layout)
    # the first gradient is the mul VJP's, laid out as PyTorch's (tests/test_vjp_grad_layout.py):
    # a leaf laid out like it adopts it (version 0), else a copy (1); then one in-place add
    _same(got_before, want_before)
    _same(got_after, want_after)
    assert got_same == want_same


@pytest.mark.filterwarnings("ignore:grad and param do not obey the gradient layout contract")
def test_accumulates_through_a_user_assigned_slice(device):
    _same(_assigned_slice_grad(jg, "cuda"), _assigned_slice_grad(torch))


@pytest.mark.parametrize("op", ["exp", "mul", "where", "fused_chain"])
def test_vjp_gradient_keeps_channels_last_on_device(device, op):
    """The elementwise VJP kernel's gradients take PyTorch's layout on CUDA too."""
    def run(lib, dev="cpu"):
        x = _leaf(lib, "channels_last", dev)
        y = {"exp": lambda: x.exp(), "mul": lambda: x * x,
             "where": lambda: lib.where(x > 0, x, x * 2),
             # one fused backward kernel in jitgrad (jitgrad/fusion/node.py)
             "fused_chain": lambda: x.exp().sin() * x}[op]()
        g, = lib.autograd.grad(y, x, lib.ones_like(y))
        return [g.stride(), g._version, g.cpu().numpy().copy()]
    _same(run(jg, "cuda"), run(torch))
