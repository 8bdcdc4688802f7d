"""ctc_loss on CUDA tensors: no device kernel yet, so F.ctc_loss / nn.CTCLoss /
torch.ctc_loss raise NotImplementedError naming ctc_loss instead of computing on the host.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_ctc_loss.py
"""
from __future__ import annotations

import pytest

import jitgrad as jg


@pytest.mark.parametrize("call", [
    lambda x, t: jg.nn.functional.ctc_loss(x, t, [4, 4], [2, 1]),
    lambda x, t: jg.nn.CTCLoss(reduction="sum")(x, t, jg.tensor([4, 4]), jg.tensor([2, 1])),
    lambda x, t: jg.ctc_loss(x, t, [4, 4], [2, 1], 0, 1, False),
])
def test_ctc_loss_refuses_cuda_tensors(device, call):
    x = jg.randn(4, 2, 3).log_softmax(2).to("cuda")
    t = jg.tensor([[1, 2], [2, 0]], device="cuda")
    with pytest.raises(NotImplementedError, match="ctc_loss"):
        call(x, t)
