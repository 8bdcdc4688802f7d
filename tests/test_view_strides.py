"""``view``'s stride rule (``jitgrad/_storage.view_strides``, ATen's computeStride): one
implementation for CPU and CUDA tensors, checked against PyTorch's ``view`` on random
non-contiguous layouts (slices, transposes, split pieces, size-1 and empty dims)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad._storage import view_strides

torch = pytest.importorskip("torch")


def _factorizations(n, max_len=4):
    """Every shape of up to ``max_len`` dims (size-1 dims included) with ``n`` elements."""
    if max_len == 1:
        return [(n,)]
    out = [(n,)]
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d,) + rest for rest in _factorizations(n // d, max_len - 1)]
    return sorted(set(out))


def _layouts():
    """(name, fn) building a non-trivially strided view from a base tensor of 2*3*12 elements."""
    return [
        ("contiguous", lambda t: t),
        ("split_last", lambda t: t.split(4, dim=2)[1]),
        ("narrow_mid", lambda t: t.narrow(1, 1, 2)),
        ("transpose", lambda t: t.transpose(0, 1)),
        ("unsqueeze_slice", lambda t: t[:, :, ::2].unsqueeze(1)),
        ("row_slice", lambda t: t[1:]),
        ("expand", lambda t: t[:, :1, :4].expand(2, 3, 4)),
    ]


@pytest.mark.parametrize("name,fn", _layouts(), ids=[n for n, _ in _layouts()])
def test_view_strides_match_pytorch(name, fn):
    base = np.arange(72, dtype=np.float32).reshape(2, 3, 12)
    tt, tj = fn(torch.tensor(base)), fn(jg.tensor(base))
    assert tj.stride() == tt.stride()
    n = tt.numel()
    for shape in _factorizations(n, 4):
        try:
            ref = tt.view(shape)
        except RuntimeError:
            ref = None
        got = view_strides(tuple(tt.shape), tt.stride(), shape)
        if ref is None:
            assert got is None, (name, shape, got)
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                tj.view(shape)
        else:
            assert got == ref.stride(), (name, shape, got, ref.stride())
            v = tj.view(shape)
            np.testing.assert_array_equal(v.numpy(), ref.numpy())
            assert v._base is not None or tj._base is not None or name == "contiguous"


@pytest.mark.parametrize("old,new", [((0, 3), (3, 0)), ((0, 3), (0, 3)), ((2, 0), (0,)),
                                     ((), (1, 1)), ((1,), ()), ((4, 1, 3), (12,))])
def test_view_strides_empty_and_scalar(old, new):
    t = torch.zeros(old)
    assert view_strides(old, t.stride(), new) == t.view(new).stride()
    assert jg.zeros(old).view(new).stride() == t.view(new).stride()


def test_cpu_split_view_transpose_is_a_view_with_pytorchs_strides():
    x = np.arange(2 * 3 * 24, dtype=np.float32).reshape(2, 3, 24)
    q, k, v = jg.tensor(x).split(8, dim=2)
    qt, kt, vt = torch.tensor(x).split(8, dim=2)
    a = k.view(2, 3, 2, 4).transpose(1, 2)
    b = kt.view(2, 3, 2, 4).transpose(1, 2)
    assert a.stride() == b.stride() and a._base is not None
    np.testing.assert_array_equal(a.numpy(), b.numpy())
