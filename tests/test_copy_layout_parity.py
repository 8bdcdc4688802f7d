"""preserve_format copies keep PyTorch's strides: ``clone()``, ``to(dtype)``, ``float()``/
``double()`` and ``to(dtype, copy=True)`` of permuted tensors with size-1 dims (ATen keeps a
dense input's exact strides, size-1 dims included) and of sliced or expanded tensors (ATen's
infer_dense_strides; NumPy's order-K copy orders stride-0 and size-1 dims differently)."""
from __future__ import annotations

import itertools

import pytest

from tests._parity import agree, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

SHAPES = [(2, 1, 3), (1, 4), (1, 1, 2), (2, 3, 1, 1), (1, 2, 1, 3), (3, 1, 2, 2)]
CASES = [(shape, perm, how) for shape in SHAPES
         for perm in itertools.permutations(range(len(shape)))
         for how in ("dense", "sliced", "expanded")]
COPIES = {
    "clone": lambda L, x: x.clone(),
    "to_float64": lambda L, x: x.to(L.float64),
    "double": lambda L, x: x.double(),
    "to_int32": lambda L, x: x.to(L.int32),
    "to_bool": lambda L, x: x.to(L.bool),
    "to_same_copy": lambda L, x: x.to(L.float32, copy=True),
}


def _source(L, shape, perm, how):
    n = 1
    for s in shape:
        n *= s
    x = L.arange(float(n)).reshape(shape).permute(perm)
    if how == "sliced" and x.shape[-1] > 1:
        x = x[..., ::2]
    elif how == "expanded":
        x = x.expand(2, *x.shape)
    return x


@pytest.mark.parametrize("copy", sorted(COPIES))
@pytest.mark.parametrize("shape,perm,how", CASES)
def test_copy_keeps_pytorchs_strides(shape, perm, how, copy):
    def run(L):
        y = COPIES[copy](L, _source(L, shape, perm, how))
        return y, y.stride(), y.storage_offset()
    agree(run)
