"""einsum, the fused products (addmm/baddbmm/addbmm/addmv/addr), matmul's rank combinations,
trace, kron, tensordot and torch.linalg's norms on CUDA tensors: forward and backward against
the CPU path (tested against PyTorch in tests/test_linalg_parity.py and tests/test_einsum.py).

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_einsum.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(5)

CASES = {
    "matmul_2d_3d": (lambda a, b: a @ b, (2, 3), (4, 3, 2)),
    "matmul_3d_1d": (lambda a, b: a @ b, (4, 2, 3), (3,)),
    "matmul_1d_2d": (lambda a, b: a @ b, (3,), (3, 2)),
    "matmul_1d_1d": (lambda a, b: a @ b, (3,), (3,)),
    "matmul_broadcast": (lambda a, b: a @ b, (2, 1, 2, 3), (3, 3, 2)),
    "einsum_mm": (lambda a, b: jg.einsum("ij,jk->ik", a, b), (2, 3), (3, 4)),
    "einsum_diag": (lambda a: jg.einsum("ii->i", a), (3, 3)),
    "einsum_trace": (lambda a: jg.einsum("ii", a), (3, 3)),
    "einsum_outer": (lambda a, b: jg.einsum("i,j->ij", a, b), (3,), (2,)),
    "einsum_ellipsis": (lambda a, b: jg.einsum("...ij,...jk->...ik", a, b), (2, 1, 2, 3),
                        (3, 3, 2)),
    "einsum_attention": (lambda a, b: jg.einsum("bhqd,bhkd->bhqk", a, b), (2, 2, 3, 4),
                         (2, 2, 5, 4)),
    "einsum_three": (lambda a, b, c: jg.einsum("ij,jk,kl->il", a, b, c), (2, 3), (3, 4), (4, 2)),
    "einsum_sum": (lambda a: jg.einsum("ijk->ki", a), (2, 3, 4)),
    "addmm": (lambda c, a, b: jg.addmm(c, a, b, beta=0.5, alpha=2), (4,), (3, 5), (5, 4)),
    "baddbmm": (lambda c, a, b: jg.baddbmm(c, a, b, beta=0.5, alpha=2), (3, 4), (2, 3, 5),
                (2, 5, 4)),
    "addbmm": (lambda c, a, b: jg.addbmm(c, a, b, beta=0.5, alpha=2), (3, 4), (2, 3, 5),
               (2, 5, 4)),
    "addmv": (lambda c, a, b: jg.addmv(c, a, b, beta=0.5, alpha=2), (3,), (3, 4), (4,)),
    "addr": (lambda c, a, b: jg.addr(c, a, b, beta=0.5, alpha=2), (3, 4), (3,), (4,)),
    "trace": (lambda a: jg.trace(a), (3, 4)),
    "kron": (lambda a, b: jg.kron(a, b), (2, 3), (2, 2)),
    "tensordot": (lambda a, b: jg.tensordot(a, b, 2), (2, 3, 4), (3, 4, 2)),
    "inner": (lambda a, b: jg.inner(a, b), (2, 3), (4, 3)),
    "vdot": (lambda a, b: jg.vdot(a, b), (3,), (3,)),
    "multi_dot": (lambda a, b, c: jg.linalg.multi_dot([a, b, c]), (3,), (3, 4), (4,)),
    "matrix_norm_1": (lambda a: jg.linalg.matrix_norm(a, 1), (3, 4)),
    "vecdot": (lambda a, b: jg.linalg.vecdot(a, b), (2, 3), (2, 3)),
}


def _run(fn, arrays, dev):
    xs = [jg.tensor(a, device=dev, requires_grad=True) for a in arrays]
    y = fn(*xs)
    (y * y).sum().backward()
    return y.detach().cpu().numpy(), [x.grad.cpu().numpy() for x in xs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_products_forward_and_backward_match_cpu(device, name):
    fn, *shapes = CASES[name]
    arrays = [RNG.standard_normal(s) for s in shapes]
    yc, gc = _run(fn, arrays, "cpu")
    yd, gd = _run(fn, arrays, "cuda")
    assert yd.shape == yc.shape and yd.dtype == yc.dtype
    np.testing.assert_allclose(yd, yc, rtol=1e-12, atol=1e-12)
    for a, b in zip(gd, gc):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_results_stay_on_the_device(device):
    a = jg.tensor(RNG.standard_normal((2, 3)), device="cuda")
    b = jg.tensor(RNG.standard_normal((3, 4)), device="cuda")
    assert jg.einsum("ij,jk->ik", a, b).is_cuda
    assert jg.baddbmm(a @ b, a.unsqueeze(0), b.unsqueeze(0)).is_cuda
