"""Elementwise outputs on CUDA tensors take PyTorch's layout (TensorIterator's output strides),
as on the host: the same ops, layouts and comparisons as tests/test_elementwise_output_layout.py
with jitgrad on the CUDA device and PyTorch (the reference) on its CPU.

Run on the simulator in its own process, or on a GPU::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_elementwise_output_layout_cuda.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")

LAYOUTS = ["contiguous", "reversed", "rotated", "channels_last", "sliced", "expanded"]
SHAPES = [(3, 4), (2, 3, 4), (2, 3, 4, 5), (2, 3, 1, 1)]


def _stored(L, a, dev):
    """A C-contiguous tensor of ``a``'s values, its size-1 dims' strides C's too (NumPy's
    ascontiguousarray of a transposed view keeps other strides there, which torch.tensor keeps
    and jitgrad.tensor does not)."""
    return L.tensor(np.ascontiguousarray(a).reshape(-1), device=dev).reshape(a.shape)


def _layout(L, a, how):
    dev = "cuda" if L is jitgrad else "cpu"
    nd = a.ndim
    if how == "contiguous":
        return L.tensor(a, device=dev)
    if how == "reversed":
        return _stored(L, a.transpose(), dev).permute(*range(nd - 1, -1, -1))
    if how == "rotated":
        p = (nd - 1, *range(nd - 1))
        inv = tuple(p.index(i) for i in range(nd))
        return _stored(L, a.transpose(p), dev).permute(*inv)
    if how == "channels_last":
        return L.tensor(a, device=dev).contiguous(memory_format=L.channels_last)
    if how == "sliced":
        return L.tensor(np.repeat(a, 2, axis=-1), device=dev)[..., ::2]
    if how == "expanded":
        return L.tensor(np.ascontiguousarray(a[:1]), device=dev).expand(*a.shape)
    raise AssertionError(how)


def _describe(t):
    return {"shape": tuple(t.shape), "stride": t.stride(), "contiguous": t.is_contiguous(),
            "dtype": str(t.dtype).split(".")[-1], "values": t.detach().cpu().numpy().tolist()}


def _check(fn):
    def run(L):
        out = fn(L)
        return [_describe(t) for t in (out if isinstance(out, tuple) else (out,))]
    assert run(jitgrad) == run(torch)


OPS = {
    "unary": lambda L, x, y: (x.relu(), -x, x * 2, x > 0),
    "binary": lambda L, x, y: (x + y, y * x, x < y),
    "broadcast": lambda L, x, y: (x + y[..., :1], y[:1] * x),
    "where": lambda L, x, y: (L.where(x > 0, x, y), L.where(y > 0, x, 0.0)),
    "promotion": lambda L, x, y: (x + y.double(), (x * 10).int() + 1.5, x.half() + 1),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape,how", [(s, h) for s in SHAPES for h in LAYOUTS
                                       if h != "channels_last" or len(s) == 4])
def test_output_layout_matches_pytorch(device, op, shape, how):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    _check(lambda L: OPS[op](L, _layout(L, a, how), L.tensor(b, device="cuda" if L is jitgrad
                                                                else "cpu")))


# size-1 dims: TensorIterator's sort reads their strides (a scalar or broadcasting rules out its
# fast setup), and its dense fast setup copies them (tests/test_elementwise_output_layout.py);
# views of a (12,) tensor (CUDA tensors have no as_strided)
UNIT_DIM_VIEWS = {
    "transposed_column": lambda t: t.reshape(4, 3).t()[:, :1],
    "row_transposed": lambda t: t.reshape(3, 4)[:1].t(),
    "unsqueezed_transpose": lambda t: t.reshape(2, 6).t().unsqueeze(1),
    "permuted_slice": lambda t: t.reshape(2, 3, 2).permute(2, 0, 1)[:, :1],
    "permuted_4d": lambda t: t.reshape(2, 3, 1, 2).permute(1, 2, 3, 0),
    "channels_last_unit": lambda t: t.reshape(2, 6, 1, 1).contiguous(
        memory_format=jitgrad.channels_last if isinstance(t, jitgrad.Tensor)
        else torch.channels_last),
}


@pytest.mark.parametrize("view", sorted(UNIT_DIM_VIEWS))
def test_size_one_dims_strides(device, view):
    def run(L):
        t = UNIT_DIM_VIEWS[view](L.arange(12.0, device="cuda" if L is jitgrad else "cpu"))
        return t * 2, t > 3, t + t.new_ones(t.shape[-1:]), t + t, t.relu(), L.where(t > 3, t, 0.0)

    _check(run)
