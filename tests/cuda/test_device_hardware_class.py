"""Issue 11: what the simulator hid and an H100 showed — the device-array interface, views of
split/chunk/narrow pieces, and 0-d reductions — checked on the device against the CPU path and
PyTorch.

Under the simulator, ``conftest.py`` makes the device arrays answer like a GPU's
(``hardware_like.py``: ``flags`` is a dict, no NumPy attributes), so these fail here exactly
where they failed on the hardware::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_hardware_class.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


# ----------------------------------------------------------------------------- interface


def test_simulator_device_arrays_answer_like_the_hardware(device):
    """The patch is in force: a raw device buffer's flags is a dict and NumPy-only attributes
    are refused (else every test below could pass on the simulator and fail on a GPU)."""
    buf = jg.zeros(4, device="cuda")._data.buf
    assert isinstance(buf.flags, dict) and buf.flags["C_CONTIGUOUS"]
    if device.simulator_active():
        with pytest.raises(AttributeError, match="DeviceNDArray on a GPU"):
            buf.base  # noqa: B018
    with pytest.raises(AttributeError):
        buf.flags.owndata  # noqa: B018


def test_cuda_storage_never_hands_out_the_raw_buffer(device):
    x = jg.ones(3, 4, device="cuda")
    v = x.t()._data
    from jitgrad._cuda_array import CudaArray
    assert isinstance(v.base, CudaArray) and v.base.shape == (12,)
    assert v.flags.owndata is False and x._data.flags.owndata is True
    assert x._data.base is None


@pytest.mark.parametrize("make", ["linear", "reshape", "transpose", "slice", "expand", "split"])
def test_leaf_gradient_arriving_as_a_view_is_adopted_or_copied(device, make):
    """accumulate_into_leaf with a gradient that is a view (a transposed weight gradient, a
    slice of a bigger buffer): the first backward of every training step (issue 11, b)."""
    w0 = RNG.standard_normal((3, 4)).astype(np.float32)
    x0 = RNG.standard_normal((5, 3)).astype(np.float32)

    def step(lib, dev):
        w = lib.tensor(w0, device=dev, requires_grad=True) if lib is jg else \
            torch.tensor(w0, requires_grad=True)
        x = lib.tensor(x0, device=dev) if lib is jg else torch.tensor(x0)
        if make == "linear":  # nn.Linear's x @ w.t(): TBackward0 hands back a transposed view
            out = x @ (w.t() * 2).t()
        elif make == "reshape":  # ViewBackward0: a reshape of the whole gradient buffer
            out = w.reshape(-1) * 3
        elif make == "transpose":
            out = (x @ w).sum(0)  # grad of w = x.t() @ g: laid out transposed on the way back
        elif make == "slice":
            out = lib.cat([w, w * 2], 0)[1:4]
        elif make == "expand":
            out = w.sum() * lib.ones(3, 4, device=dev) if lib is jg else \
                w.sum() * torch.ones(3, 4)
        else:
            out = lib.cat([w, x.t()], 1).split(4, 1)[0] * 3
        (out * out).sum().backward()
        return w, w.grad.detach().clone()

    w, g = step(jg, "cuda")
    _, gt = step(torch, None)
    assert w.grad.is_cuda and w.grad.is_contiguous()
    np.testing.assert_allclose(g.cpu().numpy(), gt.numpy(), rtol=1e-5, atol=1e-5)
    # a second backward accumulates into the adopted gradient in place
    before = w.grad.clone()
    (w * 2).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), before.cpu().numpy() + 2, rtol=1e-6)
