"""``t.to(other_device, [dtype,] memory_format=fmt)`` is one ``_to_copy`` in PyTorch: one
ToCopyBackward0 straight on ``t``'s node, the result in ``fmt``'s strides. jitgrad moves the
tensor across devices (host to CUDA and back) while PyTorch, the reference, converts on its CPU
(a copy there too, as the format differs from the source's): the strides, dtype, values,
grad_fn and what it points to, and the source's gradient must agree.

Run on the simulator in its own process, or on a GPU::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_to_device_format_cuda.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")

CASES = [((2, 3, 4, 5), "channels_last", None), ((2, 3, 4, 5), "channels_last", "float64"),
         ((2, 3, 2, 4, 5), "channels_last_3d", None), ((2, 3, 1, 1), "channels_last", None),
         ((0, 3, 4, 5), "channels_last", None), ((2, 3, 4, 5), "contiguous_format", "float64")]


def _convert(lib, shape, fmt, dtype, source, target, transposed=False, copy=False):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7
    t = lib.tensor(a, device=source, requires_grad=True)
    src = t.transpose(1, 2) if transposed else t  # (a non-leaf, non-contiguous source)
    kw = {"memory_format": getattr(lib, fmt)}
    if dtype is not None:
        kw["dtype"] = getattr(lib, dtype)
    y = src.to(target, copy=copy, **kw)
    gf = y.grad_fn
    out = [y.stride(), str(y.dtype).split(".")[-1], y.device.type == target,
           y.detach().cpu().tolist(), type(gf).__name__,
           [type(n).__name__ if n is not None else None for n, _ in gf.next_functions]]
    w = lib.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)) / 3,
                   dtype=y.dtype, device=target)
    (y * w).sum().backward()
    # (an empty CUDA leaf's gradient strides are AccumulateGrad's business, not the copy's)
    grad_strides = t.grad.stride() if t.numel() else None
    return out + [grad_strides, t.grad.dtype == t.dtype, t.grad.device.type == source,
                  t.grad.cpu().tolist()]


# a transposed source needs a third dim to transpose
LAYOUTS = [(shape, fmt, dtype, transposed) for shape, fmt, dtype in CASES
           for transposed in (False, True) if not transposed or len(shape) >= 3]


@pytest.mark.parametrize("shape,fmt,dtype,transposed", LAYOUTS)
@pytest.mark.parametrize("direction", ["to_cuda", "to_cpu"])
def test_to_other_device_in_format_is_one_copy(device, direction, shape, fmt, dtype,
                                               transposed):
    source, target = ("cpu", "cuda") if direction == "to_cuda" else ("cuda", "cpu")
    got = _convert(jg, shape, fmt, dtype, source, target, transposed)
    # copy=True: PyTorch's CPU reference makes the _to_copy a device change always makes (it
    # would alias a source already in the format); its devices are both cpu, so the device
    # checks compare against jitgrad's own flags
    want = _convert(torch, shape, fmt, dtype, "cpu", "cpu", transposed, copy=True)
    want[2], want[-2] = True, True
    assert got == want
