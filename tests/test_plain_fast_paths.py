"""The per-op fast paths for common small calls give what PyTorch gives: ``x[key]`` for keys of
Python ints and int slices (index_getitem._plain_getitem: values, strides, storage offset, the
chain of Select/Slice nodes, gradients, version sharing, and PyTorch's IndexError for an
out-of-range int, which leaves the fast path), cat/stack of one-dtype CPU tensors
(shape_join._plain_arrays), and ``a @ b`` of 2-D float matrices of any layout
(linalg_matmul._mm_plain, blas.matmul's compiled GEMM call: PyTorch's bits with PyTorch's MKL).
Every expected value is PyTorch's, computed in the same test."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import blas

torch = pytest.importorskip("torch")


def _chain(t):
    """grad_fn names from the output down to the leaf's accumulator."""
    names, f = [], t.grad_fn
    while f is not None:
        names.append(f.name())
        f = f.next_functions[0][0] if f.next_functions else None
    return [re.sub(r"^torch::autograd::", "", n) for n in names]


def _both(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return (torch.tensor(a, requires_grad=True), jitgrad.tensor(a, requires_grad=True))


KEYS = [0, -1, 2, (1,), (), slice(1, 3), slice(None), slice(0, 10), slice(None, None, 2),
        slice(-2, None), slice(3, 1), (0, 1), (-1, slice(1, 3)), (slice(None), 0),
        (slice(None), slice(None)), (slice(1, 3), slice(0, 1)), (1, 2, 3),
        (slice(None), 1, slice(None, None, 2)), (0, slice(0, 3), slice(1, 2))]


@pytest.mark.parametrize("shape", [(3,), (3, 4), (3, 4, 5)], ids=str)
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_plain_keys_match_pytorch(shape, key):
    (t, j) = _both(shape)
    try:
        want = t[key]
    except IndexError as e:
        with pytest.raises(IndexError) as got:
            j[key]
        assert str(got.value) == str(e)
        return
    got = j[key]
    assert tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    if want.numel():  # (an empty view reports offset 0: Tensor.storage_offset, known)
        assert got.storage_offset() == want.storage_offset()
    assert got._base is j and got._version == j._version
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert _chain(got) == _chain(want)
    if want.numel():
        w = np.arange(want.numel(), dtype=np.float64).reshape(tuple(want.shape))
        (want * torch.tensor(w)).sum().backward()
        (got * jitgrad.tensor(w)).sum().backward()
        np.testing.assert_array_equal(j.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("key", [3, -4, (0, 4), (slice(None), 7), (2, -5), (0, 0, 0),
                                 (slice(None), slice(None), 0)], ids=repr)
def test_out_of_range_and_too_many_indices_raise_pytorchs_error(key):
    t, j = _both((3, 4))
    with pytest.raises(IndexError) as want:
        t[key]
    with pytest.raises(IndexError) as got:
        j[key]
    assert str(got.value) == str(want.value)


def test_a_write_through_a_plain_view_reaches_the_base_as_in_pytorch():
    t, j = _both((3, 4))
    tb, jb = t * 1, j * 1
    tb[1, 1:3].mul_(2.0)
    jb[1, 1:3].mul_(2.0)
    tb[0].add_(1.0)
    jb[0].add_(1.0)
    np.testing.assert_array_equal(jb.detach().numpy(), tb.detach().numpy())
    assert _chain(jb) == _chain(tb)
    tb.sum().backward()
    jb.sum().backward()
    np.testing.assert_array_equal(j.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("fn", ["cat", "stack"])
@pytest.mark.parametrize("shapes,dim", [([(2,), (3,)], 0), ([(2, 3), (2, 3)], 1),
                                        ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 3)], -1),
                                        ([(0, 3), (2, 3)], 0), ([(), ()], 0),
                                        ([(2, 3), (2, 3), (2, 3)], 2), ([(3,)], 0)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_cat_and_stack_of_one_dtype_match_pytorch(fn, shapes, dim, dtype):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grad = np.dtype(dtype).kind == "f"
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    js = [jitgrad.tensor(a, requires_grad=grad) for a in arrays]
    try:
        want = getattr(torch, fn)(ts, dim)
    except (RuntimeError, IndexError) as e:
        with pytest.raises(type(e)) as got:
            getattr(jitgrad, fn)(js, dim)
        assert str(got.value) == str(e)
        return
    got = getattr(jitgrad, fn)(tuple(js), dim)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert str(got.dtype) == str(want.dtype) and got.stride() == want.stride()
    assert _chain(got)[:1] == _chain(want)[:1]
    if grad and want.numel():
        w = rng.standard_normal(tuple(want.shape)).astype(dtype)
        (want * torch.tensor(w)).sum().backward()
        (got * jitgrad.tensor(w)).sum().backward()
        for t, j in zip(ts, js):
            np.testing.assert_array_equal(j.grad.numpy(), t.grad.numpy())


def _mkl_release(text):
    found = re.search(r"Math Kernel Library Version (\S+)-Product Build (\d+)", text)
    return found.groups() if found else None


_TORCH_MKL = _mkl_release(torch.__config__.show())
_OURS = _mkl_release(blas.mkl_version())


def _layout(rng, r, c, dtype, kind):
    """(r, c) values as a C array, a transposed view, a column-strided or a row-offset slice."""
    if kind == "C":
        return rng.standard_normal((r, c)).astype(dtype)
    if kind == "F":
        return rng.standard_normal((c, r)).astype(dtype).T
    if kind == "cols":
        return rng.standard_normal((r, 2 * c)).astype(dtype)[:, ::2]
    return rng.standard_normal((r + 2, c + 1)).astype(dtype)[1:r + 1, 1:]


@pytest.mark.skipif(_TORCH_MKL is None or _OURS != _TORCH_MKL,
                    reason=f"jitgrad's MKL {_OURS} is not PyTorch's {_TORCH_MKL}: GEMM kernels "
                           "differ between MKL releases")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 4, 4), (1, 5, 3), (3, 1, 4), (3, 5, 1), (16, 16, 16),
                                   (7, 3, 2)], ids=str)
def test_small_matmul_of_any_layout_has_pytorchs_bits(threads, dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(2)
    for la in ("C", "F", "cols", "slice"):
        for lb in ("C", "F", "cols", "slice"):
            a, b = _layout(rng, m, k, dtype, la), _layout(rng, k, n, dtype, lb)
            # the same strided views on both sides: from_numpy keeps NumPy's strides
            ta, tb = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
            ja, jb = jitgrad.from_numpy(a).requires_grad_(), jitgrad.from_numpy(b).requires_grad_()
            want, got = ta @ tb, ja @ jb
            assert got.grad_fn.name() == "MmBackward0"
            assert got.stride() == want.stride()
            assert got.detach().numpy().tobytes() == want.detach().numpy().tobytes(), (la, lb)
            g = rng.standard_normal((m, n)).astype(dtype)
            want.backward(torch.from_numpy(g))
            got.backward(jitgrad.from_numpy(g))
            assert ja.grad.numpy().tobytes() == ta.grad.numpy().tobytes(), (la, lb, "grad a")
            assert jb.grad.numpy().tobytes() == tb.grad.numpy().tobytes(), (la, lb, "grad b")
