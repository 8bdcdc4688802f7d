"""linalg.cond (inverse-based orders), tensorinv and tensorsolve on CUDA tensors (the device LU
kernels) against the CPU path; the SVD-based orders stage svdvals through the host.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_linalg_cond.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(17)
A = RNG.standard_normal((2, 3, 2, 3)) + 6 * np.eye(6).reshape(2, 3, 2, 3)
B = RNG.standard_normal((2, 3))


@pytest.mark.parametrize("fn", [
    lambda a, b: jg.linalg.cond(a.reshape(6, 6), 1),
    lambda a, b: jg.linalg.cond(a.reshape(6, 6), "fro"),
    lambda a, b: jg.linalg.tensorinv(a) * b.sum(),
    lambda a, b: jg.linalg.tensorsolve(a, b)])
def test_matches_cpu(device, fn):
    outs = []
    for dev in ("cpu", "cuda"):
        a, b = (jg.tensor(x, device=dev, requires_grad=True) for x in (A, B))
        y = fn(a, b)
        assert y.device.type == dev
        outs.append((y.detach().cpu().numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10, atol=1e-10)
    assert outs[1][1] == outs[0][1]


def test_svd_orders_are_staged_through_the_host(device):
    got = jg.linalg.cond(jg.tensor(A.reshape(6, 6), device="cuda"))
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), jg.linalg.cond(jg.tensor(A.reshape(6, 6)))
                               .numpy(), rtol=1e-12)
