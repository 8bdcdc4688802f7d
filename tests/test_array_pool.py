"""The CPU array pool (``backends/cpu.empty``): large arrays start on a 64-byte boundary, are
handed out again only when nothing (the array, a view, a tensor) still references them, and
still count as whole allocations (so the engine adopts them as ``.grad`` without a copy)."""
import gc

import numpy as np
import pytest

import jitgrad
from jitgrad import _storage
from jitgrad.backends import cpu

SHAPE = (256, 512)  # 512 KiB of float32: above the pool's threshold


def _addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_pooled_arrays_are_aligned_and_whole(dtype):
    a = cpu.empty(SHAPE, dtype)
    assert a.shape == SHAPE and a.dtype == dtype and a.flags.c_contiguous
    assert _addr(a) % 64 == 0
    assert _storage.spans_whole_buffer(a)
    assert _storage.spans_whole_buffer(a.reshape(-1))
    assert not _storage.spans_whole_buffer(a[1:])
    assert not _storage.spans_whole_buffer(a[:, :-1])
    # a user's slice of a bigger buffer is never taken for a whole allocation
    raw = np.empty(a.nbytes + 64, np.uint8)
    assert not _storage.spans_whole_buffer(raw[16:16 + a.nbytes].view(dtype))


def test_reused_only_when_unreferenced():
    a = cpu.empty(SHAPE, np.float32)
    a[...] = 7
    first = _addr(a)
    view = a[3]  # a view keeps the buffer busy after `a` itself is dropped
    del a
    gc.collect()
    b = cpu.empty(SHAPE, np.float32)
    assert _addr(b) != first
    b[...] = 1
    assert (view == 7).all()  # not overwritten
    t = jitgrad.Tensor._make(b)  # a tensor keeps it too
    del b, view
    c = cpu.empty(SHAPE, np.float32)
    c[...] = 2
    assert (t.numpy() == 1).all()
    del t, c
    gc.collect()
    d = cpu.empty(SHAPE, np.float32)
    assert _addr(d) == first  # nothing references the first buffer any more


def test_adopted_gradient_keeps_alignment():
    w = jitgrad.zeros(512, 256, requires_grad=True)
    x = jitgrad.ones(256, 256)
    (x @ w.t()).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((512, 256), 256, np.float32))
    assert w.grad.numpy().flags.c_contiguous
