"""cuBLAS operand layouts (``backends/cuda_cublas.gemm_operand``), checked without a GPU.

For each pair of strided operands, the plan ``(trans, ld, batch_stride)`` is turned into exactly
the reads cuBLAS would do (column-major, ``C^T = op(B) @ op(A)`` with the swapped ``m``/``n``
that ``cuda_cublas.gemm`` passes) over the flat buffers, by index arithmetic, and the product is
compared with NumPy's ``a @ b`` of the logical arrays. Integer-valued float64 data makes both
exact, so a wrong leading dimension, transpose flag or batch stride shows as a mismatch (or as
an out-of-bounds read, which the emulation reports as an error instead of reading garbage).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from jitgrad.backends.cuda_cublas import gemm_operand


def _elements(view, buf):
    """(shape, element strides, element offset) of a NumPy view of the flat buffer ``buf``."""
    isz = buf.itemsize
    off = (view.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // isz
    return view.shape, tuple(s // isz for s in view.strides), off


def _cublas_read(buf, ptr, trans, ld, rows, cols):
    """``op(M)`` (``rows x cols``) as cuBLAS reads it: ``M`` column-major at ``ptr`` with
    leading dimension ``ld``; ``M`` is ``rows x cols`` for 'N', ``cols x rows`` for 'T'."""
    srows, scols = (rows, cols) if trans == "N" else (cols, rows)
    assert ld >= max(1, srows), "cuBLAS rejects ld < max(1, rows of the stored matrix)"
    idx = ptr + np.arange(srows)[:, None] + np.arange(scols)[None, :] * ld
    if idx.size and (idx.min() < 0 or idx.max() >= buf.size):
        raise IndexError("the plan reads outside the operand's buffer")
    stored = buf[idx]
    return stored if trans == "N" else stored.T


def _emulate(bufa, a, bufb, b):
    """``a @ b`` (NumPy views of ``bufa``/``bufb``, batch dims already broadcast to the same
    shape) through the plans, or None when either operand needs a copy first."""
    sa, sta, offa = _elements(a, bufa)
    sb, stb, offb = _elements(b, bufb)
    pa, pb = gemm_operand(sa, sta), gemm_operand(sb, stb)
    if pa is None or pb is None:
        return None
    (ta, lda, bsa), (tb, ldb, bsb) = pa, pb
    m, k = sa[-2:]
    n = sb[-1]
    batch = sa[:-2]
    nbatch = int(np.prod(batch, dtype=np.int64))
    out = np.empty((nbatch, m, n))
    for i in range(nbatch):
        # cuBLAS: C^T (n x m) = op(B^T) (n x k) @ op(A^T) (k x m); C^T column-major = C row-major
        opb = _cublas_read(bufb, offb + i * bsb, tb, ldb, n, k)
        opa = _cublas_read(bufa, offa + i * bsa, ta, lda, k, m)
        out[i] = (opb @ opa).T
    return out.reshape(batch + (m, n))


def _buf(size, seed):
    return np.random.default_rng(seed).integers(-9, 10, size).astype(np.float64)


def _operands():
    """Named ``(builder(buf) -> view, buffer size)`` operands of logical shape ``batch+(r,c)``."""
    cases = {}

    def add(name, size, fn):
        cases[name] = (size, fn)

    # 2-D: contiguous, transposed, row/column slices (ld > extent), offsets, size-1 dims
    add("contig", 12, lambda x: x.reshape(3, 4))
    add("transposed", 12, lambda x: x.reshape(4, 3).T)
    add("col_slice", 30, lambda x: x.reshape(3, 10)[:, 2:6])
    add("row_slice_T", 30, lambda x: x.reshape(10, 3)[1:5].T.T.T)  # (3, 4) with sr=1, sc=3
    add("wide_ld_T", 40, lambda x: x.reshape(4, 10)[:, 3:6].T)      # (3, 4): sr=1, sc=10
    add("row_vector", 8, lambda x: x[3:7].reshape(1, 4))
    add("row_vector_strided", 20, lambda x: x[1::5].reshape(1, 4))  # r == 1, sc == 5
    add("col_vector", 8, lambda x: x[2:5].reshape(3, 1))
    add("col_vector_strided", 20, lambda x: x[::6].reshape(4, 1)[:3])  # c == 1, sr == 6
    add("scalar_matrix", 4, lambda x: x[2:3].reshape(1, 1))
    # batched: contiguous, transposed inner, sliced batch, broadcast batch (stride 0)
    add("batch_contig", 24, lambda x: x.reshape(2, 3, 4))
    add("batch_T", 24, lambda x: x.reshape(2, 4, 3).transpose(0, 2, 1))
    add("batch_stride_gap", 60, lambda x: x.reshape(5, 12)[::2].reshape(3, 3, 4)[:2])
    add("batch_broadcast", 12, lambda x: np.broadcast_to(x.reshape(3, 4), (2, 3, 4)))
    add("batch_broadcast_T", 12, lambda x: np.broadcast_to(x.reshape(4, 3).T, (2, 3, 4)))
    add("batch_4d", 72, lambda x: x.reshape(2, 3, 3, 4)[:, :2])  # collapses? no: gap
    add("batch_4d_contig", 48, lambda x: x.reshape(2, 2, 3, 4))
    add("batch_size1", 12, lambda x: x.reshape(1, 3, 4)[:, :, :].reshape(1, 3, 4))
    # not GEMM-able in place: both strides > 1, broadcast inner dim, permuted batch dims
    add("both_strided", 48, lambda x: x.reshape(6, 8)[::2, ::2])
    add("broadcast_rows", 4, lambda x: np.broadcast_to(x[:4], (3, 4)))
    add("permuted_batch", 48, lambda x: x.reshape(2, 2, 3, 4).transpose(1, 0, 2, 3))
    add("mixed_broadcast_batch", 24, lambda x: np.broadcast_to(x.reshape(1, 2, 3, 4), (2, 2, 3, 4)))
    add("overlapping_rows", 8, lambda x: np.lib.stride_tricks.as_strided(
        x, (3, 4), (2 * x.itemsize, x.itemsize)))
    return cases


OPERANDS = _operands()
NOT_GEMMABLE = {"both_strided", "broadcast_rows", "permuted_batch", "mixed_broadcast_batch",
                "overlapping_rows", "batch_4d"}


def _shaped(name, seed):
    """``(buffer, view)``: the operand ``name`` over a fresh buffer of integer values."""
    size, fn = OPERANDS[name]
    buf = _buf(size, seed)
    view = fn(buf)
    assert np.shares_memory(view, buf), f"{name} must be a view of its buffer, not a copy"
    return buf, view


def _copy(x):
    """What ``cuda_cublas`` does with an operand it cannot read in place: a C-contiguous copy
    (a buffer of its own)."""
    buf = np.ascontiguousarray(x).reshape(-1).copy()
    return buf, buf.reshape(x.shape)


@pytest.mark.parametrize("name", sorted(OPERANDS))
def test_plan_matches_numpy_against_contiguous_partner(name):
    """Each operand as the left and as the right factor of a product with a contiguous one."""
    buf, x = _shaped(name, 1)
    batch, (r, c) = x.shape[:-2], x.shape[-2:]
    for side in ("left", "right"):
        if side == "left":
            pbuf = _buf(int(np.prod(batch + (c, 5))), 2)
            other = pbuf.reshape(batch + (c, 5))
            got = _emulate(buf, x, pbuf, other)
            want = x @ other
        else:
            pbuf = _buf(int(np.prod(batch + (5, r))), 3)
            other = pbuf.reshape(batch + (5, r))
            got = _emulate(pbuf, other, buf, x)
            want = other @ x
        if name in NOT_GEMMABLE:
            assert got is None, f"{name}: needs a copy, got plan {gemm_operand(*_elements(x, buf)[:2])}"
        else:
            assert got is not None, f"{name}: GEMM-able in place but planned a copy"
            np.testing.assert_array_equal(got, want)


def _chained(a, b):
    """``b`` (or its transpose) chained to ``a`` with batches broadcast, or None."""
    if a.shape[-1] != b.shape[-2]:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


IN_PLACE = sorted(set(OPERANDS) - NOT_GEMMABLE)
PAIRS = [(x, y) for x, y in itertools.product(IN_PLACE, repeat=2)
         if _chained(_shaped(x, 0)[1], _shaped(y, 0)[1]) is not None]


@pytest.mark.parametrize("na,nb", PAIRS)
def test_plan_pairs(na, nb):
    """Every pair of in-place operands whose shapes chain (``b`` transposed if needed; the
    batch dims broadcast, which may need a copy when a stride-0 dim lands beside a real one)."""
    bufa, a = _shaped(na, 4)
    bufb, b = _shaped(nb, 5)
    a, b = _chained(a, b)
    got = _emulate(bufa, a, bufb, b)
    if got is None:  # broadcasting put a stride-0 dim beside a real one: copy, as gemm does
        if gemm_operand(*_elements(a, bufa)[:2]) is None:
            bufa, a = _copy(a)
        if gemm_operand(*_elements(b, bufb)[:2]) is None:
            bufb, b = _copy(b)
        got = _emulate(bufa, a, bufb, b)
    np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("shape,strides,plan", [
    ((3, 4), (4, 1), ("N", 4, 0)),            # row-major: X^T is column-major, ld = row stride
    ((3, 4), (1, 3), ("T", 3, 0)),            # a transposed (4, 3): cuBLAS transposes it back
    ((3, 4), (10, 1), ("N", 10, 0)),          # a column slice: ld is the parent's row length
    ((1, 4), (0, 1), ("N", 4, 0)),            # size-1 row: its stride is irrelevant
    ((1, 4), (1, 7), ("T", 7, 0)),            # a strided row vector: 1 x 4, ld 7
    ((3, 1), (5, 9), ("N", 5, 0)),            # size-1 column: its stride is irrelevant
    ((1, 1), (0, 0), ("N", 1, 0)),
    ((2, 3, 4), (12, 4, 1), ("N", 4, 12)),
    ((2, 3, 4), (0, 4, 1), ("N", 4, 0)),      # broadcast batch
    ((2, 1, 3, 4), (12, 99, 4, 1), ("N", 4, 12)),   # size-1 batch dim ignored
    ((2, 3, 3, 4), (36, 12, 4, 1), ("N", 4, 12)),   # batch dims collapse
    ((2, 3, 3, 4), (0, 0, 4, 1), ("N", 4, 0)),
])
def test_plan_values(shape, strides, plan):
    assert gemm_operand(shape, strides) == plan


@pytest.mark.parametrize("shape,strides", [
    ((3, 4), (8, 2)),          # no unit stride
    ((3, 4), (0, 1)),          # broadcast rows: ld 0 < 4
    ((3, 4), (2, 1)),          # overlapping rows: ld 2 < 4
    ((3, 4), (1, 2)),          # 'T' with ld 2 < 3
    ((3, 4), (-4, 1)),         # negative leading dimension
    ((2, 3, 3, 4), (12, 36, 4, 1)),   # permuted batch dims
    ((2, 3, 3, 4), (0, 12, 4, 1)),    # broadcast over a real batch dim
    ((2, 3, 4), (-12, 4, 1)),         # negative batch stride
    ((3, 4), (2**31, 1)),             # ld beyond cuBLAS's int
])
def test_plan_needs_copy(shape, strides):
    assert gemm_operand(shape, strides) is None


def test_copy_is_always_gemmable():
    """What ``cuda_cublas`` falls back to (a C-contiguous copy) always has a plan."""
    for shape in [(1, 1), (1, 5), (5, 1), (3, 4), (2, 1, 3, 4), (4, 1, 1)]:
        strides = np.empty(shape).strides
        assert gemm_operand(shape, tuple(s // 8 for s in strides)) is not None
