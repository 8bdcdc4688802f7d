"""``out=`` on another device than the result (``ops/out.write_out``): refused with PyTorch's
error, never written across devices or silently moved (the old behaviour: a CPU ``out`` of a
CUDA result became a CUDA tensor). Factories make their result on ``out``'s device.

The expected messages: with PyTorch built for CUDA (a GPU run), PyTorch's own; otherwise the two
texts ATen raises, read off its source: TensorIterator's ``compute_types`` ("Expected all
tensors to be on the same device, but found at least two devices, <first non-CPU device> and
<the other>!", checked before the dtype) for the elementwise family, and the structured kernels'
``resize_out`` ("Expected out tensor to have device <result's>, but got <out's> instead",
checked after the dtype; PyTorch's test_sum_cpu_device_mismatch asserts it for ``sum``).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_out_device.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

try:
    import torch
    TORCH_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch, TORCH_CUDA = None, False

ITERATOR = ("Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!")


def _structured(result, out):
    return f"Expected out tensor to have device {result}, but got {out} instead"


# (label, call(T, out, dev), device of the result, out's device, shape, expected message)
CASES = [
    ("add", lambda T, o, d: T.add(T.ones(3, device=d), T.ones(3, device=d), out=o),
     "cuda", "cpu", (3,), ITERATOR),
    ("add_cpu_inputs", lambda T, o, d: T.add(T.ones(3, device=d), 2, out=o),
     "cpu", "cuda", (3,), ITERATOR),
    ("exp_resized", lambda T, o, d: T.exp(T.ones(3, device=d), out=o),
     "cuda", "cpu", (0,), ITERATOR),
    ("mul_wrong_dtype_too", lambda T, o, d: T.mul(T.ones(3, device=d), 2, out=o.long()),
     "cuda", "cpu", (3,), ITERATOR),
    ("clamp", lambda T, o, d: T.clamp(T.arange(3., device=d), 0, 1, out=o),
     "cuda", "cpu", (3,), ITERATOR),
    ("where", lambda T, o, d: T.where(T.ones(3, device=d) > 0, T.ones(3, device=d),
                                      T.zeros(3, device=d), out=o),
     "cuda", "cpu", (3,), ITERATOR),
    ("sum", lambda T, o, d: T.sum(T.ones(2, 3, device=d), 0, out=o),
     "cuda", "cpu", (3,), _structured("cuda:0", "cpu")),
    ("mean", lambda T, o, d: T.mean(T.ones(2, 3, device=d), 0, out=o),
     "cuda", "cpu", (3,), _structured("cuda:0", "cpu")),
    ("amax", lambda T, o, d: T.amax(T.ones(2, 3, device=d), 0, out=o),
     "cuda", "cpu", (3,), _structured("cuda:0", "cpu")),
    ("mm", lambda T, o, d: T.mm(T.ones(2, 3, device=d), T.ones(3, 2, device=d), out=o),
     "cuda", "cpu", (2, 2), _structured("cuda:0", "cpu")),
    ("mm_to_cuda", lambda T, o, d: T.mm(T.ones(2, 3, device=d), T.ones(3, 2, device=d), out=o),
     "cpu", "cuda", (2, 2), _structured("cpu", "cuda:0")),
    ("cat", lambda T, o, d: T.cat([T.ones(2, device=d), T.zeros(2, device=d)], out=o),
     "cuda", "cpu", (4,), _structured("cuda:0", "cpu")),
    ("gather", lambda T, o, d: T.gather(T.ones(2, 3, device=d), 1,
                                        T.zeros(2, 2, dtype=T.long, device=d), out=o),
     "cuda", "cpu", (2, 2), _structured("cuda:0", "cpu")),
]


def _outcome(T, call, dev, out_dev, shape):
    out = T.full(shape, 5.0, device=out_dev)
    try:
        call(T, out, dev)
    except RuntimeError as e:
        return str(e), out
    return None, out


@pytest.mark.parametrize("label,call,dev,out_dev,shape,message", CASES,
                         ids=[c[0] for c in CASES])
def test_out_on_another_device_is_refused(device, label, call, dev, out_dev, shape, message):
    if TORCH_CUDA:
        message, _ = _outcome(torch, call, dev, out_dev, shape)
    got, out = _outcome(jg, call, dev, out_dev, shape)
    assert got == message
    # out untouched: its device, shape and values as they were
    assert out.device.type == out_dev and tuple(out.shape) == shape
    np.testing.assert_array_equal(out.cpu().numpy(), np.full(shape, 5.0, np.float32))


@pytest.mark.parametrize("make", [
    lambda T, o: T.zeros(2, 3, out=o),
    lambda T, o: T.full((2, 3), 7.0, out=o),
    lambda T, o: T.arange(6, out=o),
    lambda T, o: T.linspace(0, 1, 4, out=o),
], ids=["zeros", "full", "arange", "linspace"])
def test_factories_fill_out_on_its_device(device, make):
    out = jg.empty(0, device="cuda")
    res = make(jg, out)
    assert res is out and out.device.type == "cuda" and out.dtype == jg.float32
    want = make(torch, torch.empty(0)) if torch is not None else None
    if want is not None:
        np.testing.assert_array_equal(out.cpu().numpy(), want.numpy())
