"""The LU family on CUDA tensors: lu_factor(_ex)/lu/lu_unpack/lu_solve through the device getf2
kernel (square matrices) against the CPU path (LAPACK), forward, pivots, info and gradients;
non-square LU is staged through the host's getrf; pivot=False raises NotImplementedError.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_linalg_lu.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(9)
A23 = RNG.standard_normal((2, 3, 3))
B32 = RNG.standard_normal((3, 2))
PIVOT = np.array([[0.1, 2.0, 1.0], [3.0, 1.0, -1.0], [1.0, -2.0, 4.0]])

CASES = {
    "lu_factor": (lambda a: jg.linalg.lu_factor(a).LU, [A23]),
    "lu_L": (lambda a: jg.linalg.lu(a).L, [PIVOT]),
    "lu_U": (lambda a: jg.linalg.lu(a).U, [A23]),
    "lu_P": (lambda a: jg.linalg.lu(a).P * a, [A23]),
    "lu_solve": (lambda a, b: jg.linalg.lu_solve(*jg.linalg.lu_factor(a), b), [PIVOT, B32]),
    "lu_solve_adjoint": (lambda a, b: jg.linalg.lu_solve(*jg.linalg.lu_factor(a), b,
                                                         adjoint=True), [A23, B32]),
    "lu_solve_right": (lambda a, b: jg.linalg.lu_solve(*jg.linalg.lu_factor(a), b.mT,
                                                       left=False), [PIVOT, B32]),
}


def _run(fn, arrays, dev):
    xs = [jg.tensor(a, device=dev, requires_grad=True) for a in arrays]
    y = fn(*xs)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), [x.grad.cpu().numpy() for x in xs], y


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(device, name):
    fn, arrays = CASES[name]
    yc, gc, tc = _run(fn, arrays, "cpu")
    yd, gd, td = _run(fn, arrays, "cuda")
    assert td.is_cuda and yd.shape == yc.shape
    assert type(td.grad_fn).__name__ == type(tc.grad_fn).__name__
    np.testing.assert_allclose(yd, yc, rtol=1e-10, atol=1e-10)
    for a, b in zip(gd, gc):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_pivots_and_info(device):
    stack = np.stack([PIVOT, np.zeros((3, 3)), np.diag([1.0, 0.0, 2.0])])
    c, d = jg.linalg.lu_factor_ex(jg.tensor(stack)), \
        jg.linalg.lu_factor_ex(jg.tensor(stack, device="cuda"))
    for x, y in zip(c, d):
        assert y.is_cuda and y.dtype is x.dtype
        np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())
    with pytest.raises(RuntimeError) as ec:
        jg.linalg.lu_factor(jg.tensor(stack))
    with pytest.raises(RuntimeError) as ed:
        jg.linalg.lu_factor(jg.tensor(stack, device="cuda"))
    assert str(ed.value) == str(ec.value)


def test_without_pivoting_says_so(device):
    with pytest.raises(NotImplementedError, match=r"linalg\.lu_factor: jitgrad's CUDA LU"):
        jg.linalg.lu(jg.tensor(PIVOT, device="cuda"), pivot=False)


def test_rectangular_lu_is_staged_through_the_host(device):
    got = jg.linalg.lu_factor(jg.tensor(PIVOT, device="cuda")[:, :2])
    want = jg.linalg.lu_factor(jg.tensor(PIVOT)[:, :2])
    for g, w in zip(got, want):
        assert g.device.type == "cuda" and g.dtype is w.dtype
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
