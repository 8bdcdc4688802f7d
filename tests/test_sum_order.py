"""float32/float64 ``sum``/``mean``/``nansum`` on the CPU give PyTorch's bits: ATen's cascade
sum, its dimension order and its thread split are reproduced (jitgrad/ops/cascade_sum.py).

Every expected value is PyTorch's, computed in the same test with the same thread count."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

# shapes x dims: contiguous and strided walks, rows shorter and longer than a vector and than
# the cascade's blocks, and sizes past ATen's GRAIN_SIZE (32768) that split across threads
CASES = [
    ((7,), None), ((1000,), None), ((40000,), None), ((32768,), None), ((37, 53), None),
    ((37, 53), 1), ((37, 53), 0), ((8, 300, 5), 1), ((8, 300, 5), (0, 2)), ((64, 512), 1),
    ((512, 64), 0), ((4, 7, 9, 11), (1, 3)), ((3, 5000), 1), ((5000, 3), 0), ((1, 5, 1), 0),
    ((300, 300), 0), ((200, 100, 3), 2), ((65536, 2), 0), ((2, 65536), 1), ((10, 10000), 0),
    ((17, 3, 2049), (1, 2)), ((), None), ((), 0),
]


def _views(base):
    """(label, torch tensor, jitgrad tensor): the same view of ``base`` in both libraries."""
    t, j = torch.from_numpy(base.copy()), jitgrad.tensor(base)
    yield "contiguous", t, j
    if base.ndim >= 2:
        yield "transposed", t.transpose(0, -1), j.transpose(0, -1)
    if base.ndim >= 1 and base.shape[-1] > 2:
        yield "sliced", t[..., ::2], j[..., ::2]



def _same(a, b):
    a = a.numpy()
    b = b.numpy()
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dims", CASES)
def test_sum_and_mean_bits_equal_pytorch(shape, dims, dtype, threads):
    rng = np.random.default_rng(abs(hash((shape, dims))) % 2**32)
    base = np.asarray(rng.standard_normal(shape) * rng.uniform(0.1, 1000, shape), dtype)
    for label, t, j in _views(base):
        # both libraries walk the same layout
        assert t.stride() == tuple(j.stride())
        for keepdim in (False, True):
            if dims is None:
                pairs = [(t.sum(), j.sum()), (t.mean(), j.mean())]
            else:
                pairs = [(t.sum(dims, keepdim=keepdim), j.sum(dims, keepdim=keepdim)),
                         (t.mean(dims, keepdim=keepdim), j.mean(dims, keepdim=keepdim))]
            for (a, b), what in zip(pairs, ("sum", "mean")):
                assert _same(a, b), (label, what, keepdim)


def test_sum_of_expanded_and_special_values():
    x = np.array([1e30, -1e30, 3.0, np.inf, -0.0, np.nan, 1e-45], np.float32)
    for sub in (x[:5], x[:4], x[4:5], x):
        assert _same(torch.from_numpy(sub.copy()).sum(), jitgrad.tensor(sub).sum())
    e = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = torch.from_numpy(e)[:, :1].expand(3, 40)
    j = jitgrad.tensor(e)[:, :1].expand(3, 40)
    assert _same(t.sum(1), j.sum(1)) and _same(t.sum(), j.sum()) and _same(t.mean(0), j.mean(0))


def test_float16_mean_sums_in_float32():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 257)).astype(np.float16)
    t, j = torch.from_numpy(x), jitgrad.tensor(x)
    for dims in (None, 0, 1):
        a = t.mean() if dims is None else t.mean(dims)
        b = j.mean() if dims is None else j.mean(dims)
        assert _same(a, b)


def test_nansum_of_contiguous_input_bits_equal_pytorch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((129, 70)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    t, j = torch.from_numpy(x), jitgrad.tensor(x)
    assert _same(t.nansum(), j.nansum())
    assert _same(t.nansum(0), j.nansum(0)) and _same(t.nansum(1), j.nansum(1))


def test_sum_gradient_unchanged():
    x = jitgrad.randn(5, 6, dtype=jitgrad.float64, requires_grad=True)
    (x.sum(1) * jitgrad.arange(5.0, dtype=jitgrad.float64)).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.repeat(np.arange(5.0)[:, None], 6, 1))
