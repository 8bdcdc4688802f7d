"""backends.blas: MKL's GEMM (when installed) must agree with NumPy for every operand layout."""
import os
import subprocess
import sys

import numpy as np
import pytest

from jitgrad.backends import blas

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_a", ["C", "F", "strided"])
@pytest.mark.parametrize("layout_b", ["C", "F", "strided"])
@pytest.mark.parametrize("shape", [(5, 3, 4), (1, 7, 1), (64, 33, 17)])
def test_matches_numpy(dtype, layout_a, layout_b, shape):
    m, k, n = shape

    def make(r, c, layout):
        a = RNG.standard_normal((r, 2 * c) if layout == "strided" else (r, c)).astype(dtype)
        if layout == "strided":
            return a[:, ::2]
        return np.asfortranarray(a) if layout == "F" else a
    a, b = make(m, k, layout_a), make(k, n, layout_b)
    got = blas.matmul(a, b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=tol,
                               atol=tol * k)
    assert got.dtype == dtype and got.flags.c_contiguous


def test_empty_inner_dimension_gives_zeros():
    out = blas.matmul(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))


def test_other_ranks_and_dtypes_fall_back_to_numpy():
    a = RNG.integers(0, 5, (3, 4))
    b = RNG.integers(0, 5, (4, 2))
    np.testing.assert_array_equal(blas.matmul(a, b), a @ b)
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(blas.matmul(x, x.transpose(0, 2, 1)), x @ x.transpose(0, 2, 1))


def test_env_var_forces_numpy():
    code = "from jitgrad.backends import blas; print(blas.backend())"
    env = dict(os.environ, JITGRAD_BLAS="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "numpy"


# ------------------------------------------------------------------------ stacks of matrices

def _path(monkeypatch, path):
    """Pin the route stacks take: MKL's strided batch call, its pointer-array batch call, a
    loop of single GEMMs (an MKL without batch APIs), or NumPy (no MKL)."""
    if blas.backend() != "mkl":
        if path != "numpy":
            pytest.skip("MKL is not installed")
        return
    monkeypatch.setattr(blas, "STACK_MIN_WORK", 0)  # the small test matrices too
    if path in ("pointers", "loop"):
        monkeypatch.setattr(blas, "_gemm_strided", {})
    if path == "loop":
        monkeypatch.setattr(blas, "_gemm_batch", {})
    if path == "numpy":
        monkeypatch.setattr(blas, "_gemm", {})


def _stack(shape, layout, dtype):
    """A ``shape`` stack in one of the layouts GEMM can or can't read without a copy."""
    *batch, r, c = shape
    if layout == "C":
        return RNG.standard_normal(shape).astype(dtype)
    if layout == "T":  # transposed matrices: x.transpose(-1, -2)
        return RNG.standard_normal((*batch, c, r)).astype(dtype).swapaxes(-1, -2)
    if layout == "batch-step":  # every other matrix: batch stride 2 * r * c
        return RNG.standard_normal((2 * batch[0], *batch[1:], r, c)).astype(dtype)[::2]
    if layout == "batch-reversed":  # negative batch stride
        return RNG.standard_normal(shape).astype(dtype)[::-1]
    if layout == "batch-inner":  # batch dim inside the rows: (r, B, c).transpose(0, 1)
        return np.moveaxis(RNG.standard_normal((r, *batch, c)).astype(dtype), 0, -2)
    if layout == "broadcast":  # one matrix repeated: batch stride 0
        return np.broadcast_to(RNG.standard_normal((r, c)).astype(dtype), shape)
    if layout == "strided-cols":  # no unit stride in either matrix dim: copied
        return RNG.standard_normal((*batch, r, 2 * c)).astype(dtype)[..., ::2]
    raise ValueError(layout)


STACK_LAYOUTS = ["C", "T", "batch-step", "batch-reversed", "batch-inner", "broadcast",
                 "strided-cols"]


@pytest.mark.parametrize("path", ["strided", "pointers", "loop", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_a", STACK_LAYOUTS)
@pytest.mark.parametrize("layout_b", STACK_LAYOUTS)
def test_stacks_match_numpy(monkeypatch, path, dtype, layout_a, layout_b):
    _path(monkeypatch, path)
    a, b = _stack((4, 5, 3), layout_a, dtype), _stack((4, 3, 6), layout_b, dtype)
    got = blas.matmul(a, b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=tol,
                               atol=tol * 3)
    assert got.dtype == dtype and got.shape == (4, 5, 6) and got.flags.c_contiguous


@pytest.mark.parametrize("path", ["strided", "pointers", "loop", "numpy"])
@pytest.mark.parametrize("sa,sb", [
    ((1, 5, 3), (4, 3, 6)), ((2, 1, 5, 3), (1, 4, 3, 6)), ((5, 3), (2, 4, 3, 6)),
    ((2, 3, 5, 3), (3, 6)), ((0, 5, 3), (0, 3, 6)), ((4, 0, 3), (4, 3, 6)),
    ((4, 5, 0), (4, 0, 6)), ((4, 5, 3), (4, 3, 0)), ((4, 1, 3), (4, 3, 1)),
    ((4, 5, 1), (4, 1, 6)), ((1, 1, 1), (1, 1, 1)), ((3, 1, 2, 5, 3), (4, 1, 3, 6))], ids=str)
def test_stack_shapes_and_broadcasting(monkeypatch, path, sa, sb):
    _path(monkeypatch, path)
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    got = blas.matmul(a, b)
    want = np.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("path", ["strided", "pointers", "loop", "numpy"])
def test_stack_out_and_accumulate(monkeypatch, path):
    _path(monkeypatch, path)
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 5, 2))
    bias = RNG.standard_normal((3, 4, 2))
    out = bias.copy()
    assert blas.matmul(a, b, out=out, accumulate=True) is out
    np.testing.assert_allclose(out, bias + a @ b, rtol=1e-12, atol=1e-12)
    out = np.full((3, 4, 2), np.nan)
    blas.matmul(a, b, out=out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)


def test_stack_shape_error_is_numpys():
    a, b = np.ones((2, 3, 4)), np.ones((3, 4, 5))
    with pytest.raises(ValueError):
        blas.matmul(a, b)
    with pytest.raises(ValueError):
        blas.matmul(a, np.ones((2, 5, 5)))


@pytest.mark.skipif(blas.backend() != "mkl", reason="MKL is not installed")
@pytest.mark.parametrize("layout_a,layout_b", [("C", "C"), ("T", "C"), ("C", "T"),
                                               ("batch-step", "T"), ("broadcast", "C")])
def test_stack_layouts_go_to_one_strided_call_without_copies(monkeypatch, layout_a, layout_b):
    a, b = _stack((4, 5, 3), layout_a, np.float32), _stack((4, 3, 6), layout_b, np.float32)
    monkeypatch.setattr(blas, "STACK_MIN_WORK", 0)
    calls = []
    from jitgrad.backends import cblas_calls
    real = cblas_calls.strided_entry()  # the compiled call that makes the MKL call
    monkeypatch.setattr(blas, "_strided_call", [lambda *args: calls.append(args) or real(*args)])

    def no_copy(*args, **kwargs):
        raise AssertionError("operand copied")
    monkeypatch.setattr(blas.np, "ascontiguousarray", no_copy)
    got = blas.matmul(a, b)
    monkeypatch.undo()
    assert len(calls) == 1
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=3e-5)


def test_stack_integer_dtypes_fall_back_to_numpy():
    a, b = RNG.integers(-5, 5, (3, 4, 5)), RNG.integers(-5, 5, (3, 5, 2))
    np.testing.assert_array_equal(blas.matmul(a, b), a @ b)


@pytest.mark.skipif(blas.backend() != "mkl", reason="MKL is not installed")
def test_tiny_stacks_take_atens_loop(monkeypatch):
    """Below STACK_MIN_WORK (ATen's 400) multiply-adds per matrix PyTorch's bmm sums in index
    order without BLAS, and so does jitgrad (PyTorch's bits: tests/test_blas_bits.py); from
    there on MKL's batched call."""
    def refuse(*args):
        raise AssertionError("MKL called for a small stack")
    for table in (blas._gemm_strided, blas._gemm_batch):
        for dt in list(table):
            monkeypatch.setitem(table, dt, refuse)
    monkeypatch.setattr(blas, "_strided_call", [refuse])  # the compiled strided call
    a, b = RNG.standard_normal((8, 7, 8)), RNG.standard_normal((8, 8, 7))  # 392 per matrix
    got = blas.matmul(a, b)
    want = np.zeros_like(got)
    for s in range(8):  # the same order of additions, in Python
        for i in range(7):
            for j in range(7):
                acc = 0.0
                for k in range(8):
                    acc += a[s, i, k] * b[s, k, j]
                want[s, i, j] = acc
    np.testing.assert_array_equal(got, want)
    with pytest.raises(AssertionError, match="MKL called"):
        blas.matmul(RNG.standard_normal((8, 8, 7)), RNG.standard_normal((8, 7, 8)))  # 448


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("accumulate", [False, True])
def test_matmul_batch_at_any_batch_strides(dtype, accumulate):
    """One strided batch call for stacks whose matrices sit at uneven batch strides (padded
    rows, as the Winograd convolution's buffers) and transposed operands; the same numbers as
    NumPy's per-matrix products, ``out``'s padding untouched. One matrix and an integer dtype
    take the per-matrix fallback."""
    x = RNG.standard_normal((6, 9, 5)).astype(dtype)[:, :7]          # rows padded
    y = RNG.standard_normal((6, 4, 5)).astype(dtype).transpose(0, 2, 1)  # (6, 5, 4), transposed
    buf = RNG.standard_normal((6, 8, 4)).astype(dtype)
    out = buf[:, :7]
    before, padding = out.copy(), buf[:, 7].copy()
    blas.matmul_batch(x, y, out, accumulate=accumulate)
    want = np.matmul(x.astype(np.float64), y.astype(np.float64)) + (before if accumulate else 0)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(buf[:, 7], padding)
    xi, yi = RNG.integers(0, 5, (1, 3, 2)), RNG.integers(0, 5, (1, 2, 4))
    oi = np.zeros((1, 3, 4), np.int64)
    np.testing.assert_array_equal(blas.matmul_batch(xi, yi, oi), xi @ yi)
