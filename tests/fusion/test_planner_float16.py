"""float16 chains are not fused: each node rounds its gradient to float16 as PyTorch's nodes do
(and Numba's CPU target cannot type float16 arithmetic inside a fused kernel)."""
import numpy as np
import pytest

import jitgrad as jg


def test_float16_chain_backward_runs_unfused_and_matches_torch():
    torch = pytest.importorskip("torch")
    data = np.linspace(-1, 1, 6).astype(np.float16)
    x = jg.tensor(data, requires_grad=True)
    ((x * x).sin() * 3 + x).tanh().sum().backward()
    tx = torch.tensor(data, requires_grad=True)
    ((tx * tx).sin() * 3 + tx).tanh().sum().backward()
    assert x.grad.dtype is jg.float16
    # per-node float32 math rounded to float16: at most 1 float16 ulp from PyTorch
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64),
                               tx.grad.numpy().astype(np.float64), rtol=2 ** -10, atol=2 ** -14)
