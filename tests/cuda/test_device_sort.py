"""sort / argsort / msort / topk on CUDA tensors (``cuda_kernels/sort.py``) against PyTorch:
values, indices (stable: ties keep their order; NaN largest), any dim, descending, integer and
float16 dtypes, 0-d and empty tensors, gradients (SortBackward0 / TopkBackward0 on the device).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_sort.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(12)


def _data(dtype, shape=(3, 5, 4)):
    if np.dtype(dtype).kind == "f":
        a = RNG.integers(-3, 4, shape).astype(dtype)  # many ties
        a.flat[[i % a.size for i in (1, 7, 8, 31)]] = np.nan
        a.flat[[i % a.size for i in (2, 40)]] = np.inf
        a.flat[5] = -np.inf
        return a
    return RNG.integers(-3, 4, shape).astype(dtype)


def _same(r, rt):
    assert r.is_cuda and tuple(r.shape) == tuple(rt.shape) and str(r.dtype) == str(rt.dtype)
    np.testing.assert_array_equal(r.cpu().numpy(), rt.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16"])
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_pytorch_stable(device, dtype, dim, descending):
    a = _data(dtype)
    x, xt = jg.tensor(a, device="cuda"), torch.tensor(a)
    v, i = x.sort(dim=dim, descending=descending, stable=True)
    vt, it = xt.sort(dim=dim, descending=descending, stable=True)
    _same(v, vt)
    _same(i, it)
    _same(x.argsort(dim=dim, descending=descending, stable=True),
          xt.argsort(dim=dim, descending=descending, stable=True))


def test_sort_of_a_strided_view_and_msort(device):
    a = _data("float32", (6, 5))
    x, xt = jg.tensor(a, device="cuda"), torch.tensor(a)
    _same(x.t()[1:, ::2].sort(dim=0, stable=True).values,
          xt.t()[1:, ::2].sort(dim=0, stable=True).values)
    _same(jg.msort(x), torch.msort(xt))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k,dim", [(3, -1), (1, 0), (0, 1), (5, 1)])
def test_topk_matches_pytorch(device, largest, k, dim):
    a = RNG.permutation(60).reshape(3, 5, 4).astype(np.float32)  # distinct: order defined
    x, xt = jg.tensor(a, device="cuda"), torch.tensor(a)
    v, i = x.topk(k, dim, largest=largest)
    vt, it = xt.topk(k, dim, largest=largest)
    _same(v, vt)
    _same(i, it)


def test_gradients_flow_to_the_sorted_positions(device):
    a = RNG.standard_normal((4, 6)).astype(np.float64)
    w = RNG.standard_normal((4, 3))
    x = jg.tensor(a, device="cuda", requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    v = x.sort(1, descending=True).values[:, :3] * jg.tensor(w, device="cuda")
    vt = xt.sort(1, descending=True).values[:, :3] * torch.tensor(w)
    (v.sum() + (x.topk(2, 0).values ** 2).sum()).backward()
    (vt.sum() + (xt.topk(2, 0).values ** 2).sum()).backward()
    assert type(x.sort(0).values.grad_fn).__name__ == "SortBackward0"
    assert type(x.topk(1).values.grad_fn).__name__ == "TopkBackward0"
    np.testing.assert_allclose(x.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-12)


def test_zero_dim_and_empty(device):
    s = jg.tensor(2.5, device="cuda")
    v, i = s.sort()
    assert v.item() == 2.5 and i.item() == 0 and i.is_cuda and v.shape == ()
    assert s.argsort().item() == 0 and s.topk(1).values.item() == 2.5
    e = jg.zeros(0, 3, device="cuda")
    _same(e.sort(0).values, torch.zeros(0, 3).sort(0).values)
    _same(e.topk(2, 1).indices, torch.zeros(0, 3).topk(2, 1).indices)


def test_selection_ops_are_staged_through_the_host(device):
    """kthvalue/median/unique have no device kernel: host-staged (test_host_staged_ops.py)."""
    x = jg.tensor([2.0, 1.0, 2.0], device="cuda")
    for f in (lambda t: t.median(0).indices, lambda t: t.unique(), lambda t: t.kthvalue(1)[1]):
        got, want = f(x), f(x.cpu())
        assert got.device.type == "cuda"
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
