"""ctc_loss on CUDA tensors: no device kernel, so F.ctc_loss / nn.CTCLoss / torch.ctc_loss stage
``_ctc_loss`` and its backward through the host (``ops/host_staged.py``): the CPU path's
losses, on the device, and the gradient back on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_ctc_loss.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg


@pytest.mark.parametrize("call", [
    lambda x, t: jg.nn.functional.ctc_loss(x, t, [4, 4], [2, 1]),
    lambda x, t: jg.nn.CTCLoss(reduction="sum")(x, t, jg.tensor([4, 4], device=x.device),
                                                jg.tensor([2, 1], device=x.device)),
    lambda x, t: jg.ctc_loss(x, t, [4, 4], [2, 1], 0, 1, False),
])
def test_ctc_loss_is_staged_through_the_host(device, call):
    lp = jg.randn(4, 2, 3, dtype=jg.float64).log_softmax(2)
    t = jg.tensor([[1, 2], [2, 0]])
    res = []
    for dev in ("cpu", "cuda"):
        x = lp.to(dev).detach().requires_grad_()
        y = call(x, t.to(dev))
        y.backward()
        assert y.device.type == dev and x.grad.device.type == dev
        res.append((y.detach().cpu().numpy(), x.grad.cpu().numpy(), y.grad_fn.name()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)  # reduced on the device
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12, atol=1e-14)
    assert res[1][2] == res[0][2]
