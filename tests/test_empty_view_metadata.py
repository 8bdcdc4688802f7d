"""``stride()`` and ``storage_offset()`` where the NumPy array cannot say them (``jitgrad/_layout``):
empty views (NumPy gives fresh empty arrays zero strides, and an empty slice does not move the
data pointer) and tensors loaded from a file in which they shared a storage. Every case runs
the same calls on PyTorch and compares the shape, strides and offset."""
from __future__ import annotations

import io

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")


def _meta(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


EMPTY_VIEWS = {
    "x[3:3]": lambda lib: lib.zeros(4, 5)[3:3],
    "x[:, 2:2]": lambda lib: lib.zeros(4, 5)[:, 2:2],
    "x[1:1, 3:]": lambda lib: lib.zeros(4, 5)[1:1, 3:],
    "x[5:5]": lambda lib: lib.zeros(4, 5)[5:5],
    "x[4:4, ::2]": lambda lib: lib.zeros(4, 5)[4:4, ::2],
    "x[-1:-1]": lambda lib: lib.zeros(4, 5)[-1:-1],
    "x[3:3][None]": lambda lib: lib.zeros(4, 5)[3:3][None],
    "x[:, 2:2][1]": lambda lib: lib.zeros(4, 5)[:, 2:2][1],
    "x[1, 2:2]": lambda lib: lib.zeros(4, 5)[1, 2:2],
    "x[..., 2:2]": lambda lib: lib.zeros(3, 4, 5)[..., 2:2],
    "x[1:3, 1:1, 2]": lambda lib: lib.zeros(3, 4, 5)[1:3, 1:1, 2],
    "empty(0,3).t()": lambda lib: lib.empty(0, 3).t(),
    "zeros(0,3,4).permute(2,0,1)": lambda lib: lib.zeros(0, 3, 4).permute(2, 0, 1),
    "zeros(0,3,4).transpose(0,2)": lambda lib: lib.zeros(0, 3, 4).transpose(0, 2),
    "zeros(0,3,4).movedim(0,2)": lambda lib: lib.zeros(0, 3, 4).movedim(0, 2),
    "x[:, 2:2].t()": lambda lib: lib.zeros(4, 5)[:, 2:2].t(),
    "x[:, 2:2].transpose(0, 1)": lambda lib: lib.zeros(4, 5)[:, 2:2].transpose(0, 1),
    "x[3:3].view(0, 5)": lambda lib: lib.zeros(4, 5)[3:3].view(0, 5),
    "x[:, 2:2].reshape(2, 0, 2)": lambda lib: lib.zeros(4, 5)[:, 2:2].reshape(2, 0, 2),
    "x[1:1].flatten()": lambda lib: lib.zeros(4, 5)[1:1].flatten(),
    "x[1:1].unflatten(1, (5, 1))": lambda lib: lib.zeros(4, 5)[1:1].unflatten(1, (5, 1)),
    "x[:, 2:2].expand(3, 4, 0)": lambda lib: lib.zeros(4, 5)[:, 2:2].expand(3, 4, 0),
    "zeros(1, 0).expand(3, 0)": lambda lib: lib.zeros(1, 0).expand(3, 0),
    "x[2:2].unsqueeze(0)": lambda lib: lib.zeros(4, 5)[2:2].unsqueeze(0),
    "zeros(3, 0).unsqueeze(1)": lambda lib: lib.zeros(3, 0).unsqueeze(1),
    "x[:, 2:2].unsqueeze(-1)": lambda lib: lib.zeros(4, 5)[:, 2:2].unsqueeze(-1),
    "x[:, 2:2][:, None].squeeze(1)": lambda lib: lib.zeros(4, 5)[:, 2:2][:, None].squeeze(1),
    "zeros(3, 1, 0).squeeze()": lambda lib: lib.zeros(3, 1, 0).squeeze(),
    "x.narrow(1, 2, 0)": lambda lib: lib.zeros(4, 5).narrow(1, 2, 0),
    "x[:, 2:2].select(0, 1)": lambda lib: lib.zeros(4, 5)[:, 2:2].select(0, 1),
    "x.as_strided((2, 0), (3, 1), 4)": lambda lib: lib.zeros(4, 5).as_strided((2, 0), (3, 1), 4),
    "x[:, 2:2].as_strided((2, 0), (3, 1))":
        lambda lib: lib.zeros(4, 5)[:, 2:2].as_strided((2, 0), (3, 1)),
    "empty(0, 3)": lambda lib: lib.empty(0, 3),
    "zeros(2, 0, 3)": lambda lib: lib.zeros(2, 0, 3),
}


@pytest.mark.parametrize("case", sorted(EMPTY_VIEWS))
def test_empty_view_strides_and_offset(case):
    make = EMPTY_VIEWS[case]
    assert _meta(make(jg)) == _meta(make(torch))


def test_non_empty_views_unchanged():
    """The calls beside them: non-empty views keep reading their array."""
    for make in (lambda lib: lib.zeros(4, 5)[1:3, 2:],
                 lambda lib: lib.zeros(4, 5).t()[1:],
                 lambda lib: lib.zeros(2, 3, 4).permute(2, 0, 1)[1]):
        assert _meta(make(jg)) == _meta(make(torch))


@pytest.mark.parametrize("shape", [(2, 3), (3, 0)])
def test_layout_dropped_when_data_replaced(shape):
    """The recorded layout belongs to one array: ``.data =`` another forgets it."""
    metas = []
    for lib in (jg, torch):
        v = lib.zeros(4, 5)[:, 2:2]
        v.data = lib.zeros(*shape)
        metas.append(_meta(v))
    assert metas[0] == metas[1]


def _roundtrip(lib, objs):
    buf = io.BytesIO()
    lib.save(objs, buf)
    buf.seek(0)
    return lib.load(buf)


SAVED = {
    "base and views": lambda lib, b: [b, b[2:10], b.view(4, 5)[1:, 2:], b[5:5],
                                      b.view(4, 5)[:, 2:2]],
    "views without their base": lambda lib, b: [b[2:10], b.view(4, 5)[1:, 2:]],
    "one view": lambda lib, b: [b[3:9]],
    "empty views": lambda lib, b: [b[7:7], b.view(4, 5)[:, 3:3].t()],
}


@pytest.mark.parametrize("case", sorted(SAVED))
def test_load_keeps_offsets_of_shared_storage(case):
    got = [_meta(t) for t in _roundtrip(jg, SAVED[case](jg, jg.arange(20.0)))]
    want = [_meta(t) for t in _roundtrip(torch, SAVED[case](torch, torch.arange(20.0)))]
    assert got == want


def test_loaded_view_values_and_as_strided():
    """The recorded offset is PyTorch's number only: as_strided, resize_ and views of a loaded
    tensor still read its own elements (checked against NumPy)."""
    ref = np.arange(20.0)
    a, = _roundtrip(jg, [jg.arange(20.0)[3:9]])
    assert a.storage_offset() == 3
    np.testing.assert_array_equal(a.numpy(), ref[3:9])
    np.testing.assert_array_equal(a.as_strided((3,), (2,)).numpy(), ref[3:9:2])
    w = a[2:]
    assert w.storage_offset() == 5
    np.testing.assert_array_equal(w.numpy(), ref[5:9])
    np.testing.assert_array_equal(w.as_strided((2,), (1,)).numpy(), ref[5:7])
    a.resize_(2, 2)
    np.testing.assert_array_equal(a.numpy(), ref[3:7].reshape(2, 2))


@pytest.mark.parametrize("case", ["x[3:3]", "x[:, 2:2]", "empty(0,3).t()",
                                  "zeros(0,3,4).permute(2,0,1)", "empty(0, 3)"])
def test_deepcopy_and_pickle_keep_empty_layout(case):
    import copy
    import pickle
    make = EMPTY_VIEWS[case]
    for clone in (copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))):
        assert _meta(clone(make(jg))) == _meta(clone(make(torch)))
