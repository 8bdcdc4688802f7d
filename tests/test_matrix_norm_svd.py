"""The singular-value matrix norms (ord 2, -2, 'nuc') of linalg.matrix_norm / linalg.norm /
torch.norm: ATen's permute + svdvals + amax/amin/sum, so PyTorch's shapes, node names
(AmaxBackward0, AminBackward0, SumBackward1, PermuteBackward0 with keepdim) and gradients."""
import numpy as np
import pytest

from tests._parity import agree, compare

A = np.random.default_rng(0).standard_normal((2, 3, 4, 5))


@pytest.mark.parametrize("ord_", ["nuc", 2, -2])
@pytest.mark.parametrize("dim", [(-2, -1), (0, 2), (3, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matrix_norm_svd_orders(ord_, dim, keepdim, dtype):
    tol = 1e-10 if dtype == "float64" else 2e-5
    compare(lambda T, a: T.linalg.matrix_norm(a, ord=ord_, dim=dim, keepdim=keepdim),
            [A], dtype=dtype, grad=True, rtol=tol, atol=tol)


@pytest.mark.parametrize("code", [
    "T.linalg.norm(a[0, 0], ord=2)", "T.linalg.norm(a, ord='nuc', dim=(1, 3))",
    "T.norm(a[0, 0], p='nuc')", "T.norm(a, p='nuc', dim=(0, 2), keepdim=True)",
    "a[1, 2].norm(p='nuc')", "T.linalg.cond(a[0])"])
def test_norm_entry_points(code):
    compare(lambda T, a: eval(code, {"T": T, "a": a}), [A], dtype="float64", grad=True,
            rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("code", [
    "T.norm(T.ones(2, 3, 4), p='nuc')",           # all three dims: not a 2-tuple
    "T.norm(T.ones(3, 4), p='abc')",
    "T.linalg.matrix_norm(T.ones(3, 4), ord=3)",
    "T.linalg.matrix_norm(T.ones(3, 4, dtype=T.int64), ord='nuc')",
])
def test_errors(code):
    agree(lambda T: eval(code, {"T": T}))
