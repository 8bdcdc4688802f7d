"""Batched products (bmm, batched matmul, baddbmm, einsum contractions, scaled dot-product
attention) against PyTorch (2.13 CPU) on every route backends.blas takes for stacks: MKL's
strided batch call, its pointer-array batch call, a loop of single GEMMs, and NumPy. Values and
gradients for batched shapes with broadcast batch dims, transposed views, non-contiguous batch
strides, empty batches and size-1 dims; float32 to float32 tolerance, float64 tight."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends import blas

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
PATHS = ["strided", "pointers", "loop", "numpy"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Pin the route stacks of matrices take through backends.blas."""
    name = request.param
    if blas.backend() != "mkl":
        if name != "numpy":
            pytest.skip("MKL is not installed")
        return name
    monkeypatch.setattr(blas, "STACK_MIN_WORK", 0)  # the small test matrices too
    if name in ("pointers", "loop"):
        monkeypatch.setattr(blas, "_gemm_strided", {})
    if name == "loop":
        monkeypatch.setattr(blas, "_gemm_batch", {})
    if name == "numpy":
        monkeypatch.setattr(blas, "_gemm", {})
    return name


def check(fn, *shapes, dtype=np.float64):
    """``fn(lib, *tensors)`` under PyTorch and jitgrad: same values, shape, dtype, grad_fn name
    and input gradients (a random output cotangent)."""
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    tol = 2e-5 if dtype == np.float32 else 1e-11
    outs, grads = [], []
    v = None  # the output cotangent, drawn once PyTorch gives the output's shape
    for lib in (torch, jg):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        y = fn(lib, *xs)
        outs.append(y)
        if v is None:
            v = RNG.standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(lib.tensor(v))
        grads.append([x.grad for x in xs])
    t, j = outs
    assert tuple(j.shape) == tuple(t.shape) and str(j.dtype) == str(t.dtype)
    assert type(j.grad_fn).__name__ == type(t.grad_fn).__name__
    np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    for gt, gj in zip(*grads):
        if gt is None:
            assert gj is None or not np.any(gj.numpy())
            continue
        assert tuple(gj.shape) == tuple(gt.shape)
        np.testing.assert_allclose(gj.numpy(), gt.numpy(), rtol=tol, atol=tol)


DTYPES = [np.float32, np.float64]

BMM_CASES = {
    "contiguous": (lambda L, a, b: L.bmm(a, b), (4, 5, 3), (4, 3, 6)),
    "transposed-left": (lambda L, a, b: L.bmm(a.transpose(-1, -2), b), (4, 3, 5), (4, 3, 6)),
    "transposed-both": (lambda L, a, b: L.bmm(a.transpose(-1, -2), b.transpose(-1, -2)),
                        (4, 3, 5), (4, 6, 3)),
    "batch-step": (lambda L, a, b: L.bmm(a[::2], b[1::2]), (8, 5, 3), (8, 3, 6)),
    "batch-inner": (lambda L, a, b: L.bmm(a.permute(1, 0, 2), b), (5, 4, 3), (4, 3, 6)),
    "column-step": (lambda L, a, b: L.bmm(a[..., ::2], b), (4, 5, 6), (4, 3, 6)),
    "expanded-batch": (lambda L, a, b: L.bmm(a.expand(4, 5, 3), b), (1, 5, 3), (4, 3, 6)),
    "empty-batch": (lambda L, a, b: L.bmm(a, b), (0, 5, 3), (0, 3, 6)),
    "empty-rows": (lambda L, a, b: L.bmm(a, b), (4, 0, 3), (4, 3, 6)),
    "empty-inner": (lambda L, a, b: L.bmm(a, b), (4, 5, 0), (4, 0, 6)),
    "size-1-rows-cols": (lambda L, a, b: L.bmm(a, b), (4, 1, 3), (4, 3, 1)),
    "size-1-inner": (lambda L, a, b: L.bmm(a, b), (4, 5, 1), (4, 1, 6)),
    "size-1-all": (lambda L, a, b: L.bmm(a, b), (1, 1, 1), (1, 1, 1)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(BMM_CASES))
def test_bmm(path, case, dtype):
    fn, sa, sb = BMM_CASES[case]
    check(fn, sa, sb, dtype=dtype)


MATMUL_CASES = {
    "4-D": ((2, 3, 5, 4), (2, 3, 4, 6)),
    "broadcast-unit-batch": ((1, 5, 3), (4, 3, 6)),
    "broadcast-both": ((2, 1, 5, 3), (1, 4, 3, 6)),
    "broadcast-matrix": ((5, 3), (2, 4, 3, 6)),
    "broadcast-rank": ((2, 1, 1, 5, 3), (3, 4, 3, 6)),
    "vector-right": ((2, 3, 5, 4), (4,)),
    "empty-batch": ((0, 2, 5, 3), (0, 2, 3, 6)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(MATMUL_CASES))
def test_batched_matmul(path, case, dtype):
    check(lambda L, a, b: L.matmul(a, b), *MATMUL_CASES[case], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_shaped_products(path, dtype):
    """q @ k^T and attn @ v as attention runs them: 4-D, a transposed key."""
    check(lambda L, q, k: q @ k.transpose(-1, -2), (2, 3, 7, 4), (2, 3, 5, 4), dtype=dtype)
    check(lambda L, q, k: q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2),
          (2, 7, 3, 4), (2, 5, 3, 4), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_baddbmm_einsum_sdpa(path, dtype):
    check(lambda L, c, a, b: L.baddbmm(c, a, b.transpose(-1, -2), beta=0.5, alpha=2.0),
          (4, 5, 6), (4, 5, 3), (4, 6, 3), dtype=dtype)
    check(lambda L, c, a, b: L.baddbmm(c, a, b), (6,), (4, 5, 3), (4, 3, 6), dtype=dtype)
    check(lambda L, a, b: L.einsum("bhqd,bhkd->bhqk", a, b), (2, 3, 5, 4), (2, 3, 6, 4),
          dtype=dtype)
    check(lambda L, a, b: L.einsum("bij,bjk->bik", a, b), (0, 5, 3), (0, 3, 6), dtype=dtype)
    check(lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v),
          (2, 3, 7, 4), (2, 3, 5, 4), (2, 3, 5, 4), dtype=dtype)
    check(lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                          is_causal=True),
          (2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), dtype=dtype)


def test_float64_gradcheck_through_batched_products(path):
    def f(a, b, c):
        return jg.bmm(a.transpose(-1, -2), b) @ c[::2].transpose(-1, -2)
    args = [jg.tensor(RNG.standard_normal(s), requires_grad=True)
            for s in ((3, 4, 2), (3, 4, 5), (6, 3, 5))]
    assert jg.autograd.gradcheck(f, args)


@pytest.mark.parametrize("dtype", ["int64", "int32", "float16"])
def test_other_dtypes_keep_their_paths(dtype):
    a = RNG.integers(-4, 5, (3, 4, 5)).astype(dtype)
    b = RNG.integers(-4, 5, (3, 5, 2)).astype(dtype)
    t = torch.bmm(torch.tensor(a), torch.tensor(b).transpose(-1, -2).contiguous()
                  .transpose(-1, -2))
    j = jg.bmm(jg.tensor(a), jg.tensor(b).transpose(-1, -2).contiguous().transpose(-1, -2))
    assert str(j.dtype) == str(t.dtype)
    np.testing.assert_array_equal(j.numpy(), t.numpy())
