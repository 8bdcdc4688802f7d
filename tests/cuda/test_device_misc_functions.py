"""The misc torch.* functions (ops/distances.py, combine.py, counting.py) on CUDA tensors:
forward and backward against the CPU path (itself checked against PyTorch in
tests/test_misc_functions.py), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_misc_functions.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(5)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((3, 3))
B[1] = A[2]  # a zero distance: the subgradient 0

CASES = {
    "diff": lambda x: jg.diff(x, n=2, dim=0, prepend=x[:1] * 2),
    "cdist_p2": lambda x: jg.cdist(x, x.flip(0)[:3].detach() + 0.5),
    "cdist_p1_ties": lambda x: jg.cdist(x, jg.tensor(B, device=x.device), p=1),
    "cdist_mm": lambda x: jg.cdist(x, x[:2] * 2, compute_mode="use_mm_for_euclid_dist"),
    "pdist": lambda x: jg.pdist(x, 3),
    "cov": lambda x: jg.cov(x, aweights=jg.tensor([0.5, 1.0, 2.0], device=x.device)),
    "corrcoef": lambda x: jg.corrcoef(x),
    "block_diag": lambda x: jg.block_diag(x, x[0]),
    "cartesian_prod": lambda x: jg.cartesian_prod(x[0], x[1]),
    "combinations": lambda x: jg.combinations(x[0], 2, with_replacement=True),
    "rot90": lambda x: x.rot90(3),
}


def _run(fn, dev):
    x = jg.tensor(A, device=dev, requires_grad=True)
    y = fn(x)
    assert y.device.type == ("cuda" if dev == "cuda" else "cpu")
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), x.grad.cpu().numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(device, name):
    yc, gc, nc = _run(CASES[name], "cpu")
    yd, gd, nd = _run(CASES[name], "cuda")
    assert yd.shape == yc.shape and yd.dtype == yc.dtype and nd == nc
    np.testing.assert_allclose(yd, yc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gd, gc, rtol=1e-12, atol=1e-12)


def test_integer_functions_match_cpu(device):
    idx = np.array([1, 3, 3, 0])
    for fn in (lambda t: jg.bincount(t, minlength=6), lambda t: jg.isin(t, t[1:3] * 1),
               lambda t: jg.unravel_index(t, (2, 2))[1]):
        c, d = fn(jg.tensor(idx)), fn(jg.tensor(idx, device="cuda"))
        assert d.device.type == "cuda" and d.dtype is c.dtype
        np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())
    got = jg.tensor(idx, device="cuda").unique_consecutive()  # staged through the host
    assert got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), jg.tensor(idx).unique_consecutive().numpy())
