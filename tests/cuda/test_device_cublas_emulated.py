"""``backends/cuda_cublas.gemm``'s calls into CuPy's cuBLAS binding, checked without a GPU.

Under the CUDA simulator device arrays live in host memory, so a stand-in for
``cupy_backends.cuda.libs.cublas`` can do what the reference cuBLAS does with the very arguments
jitgrad passes (CuPy 14's argument order: ``sgemm(handle, transa, transb, m, n, k, alpha, A,
lda, B, ldb, beta, C, ldc)``, the strided-batched forms with ``strideA/B/C`` after each ``ld``
and ``batchCount`` last; column-major, ``ld >= max(1, rows)`` enforced, alpha/beta read from
host pointers). matmul/bmm/addmm/linear forward and backward then run through it and are
compared with the CPU path: a wrong pointer, offset, leading dimension, transpose flag, operand
order or batch stride shows up as wrong numbers (or a rejected argument).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_cublas_emulated.py
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest
from cublas_cases import CASES, DTYPES, RTOL, close, r, run

import jitgrad as jg


class FakeCublas:
    """The GEMM subset of CuPy's cuBLAS binding, on host memory (the simulator's arrays)."""

    def __init__(self):
        self.calls = []

    def setPointerMode(self, handle, mode):
        assert mode == 0, "alpha/beta are host pointers"

    def setMathMode(self, handle, mode):
        assert mode == 0, "CUBLAS_DEFAULT_MATH (no TF32)"

    @staticmethod
    def _mem(addr, count, dtype):
        ctype = ctypes.c_double if dtype == np.float64 else ctypes.c_float
        return np.ctypeslib.as_array((ctype * count).from_address(addr))

    def _op(self, trans, addr, ld, rows, cols, dtype):
        """op(M) (rows x cols) of the column-major M at ``addr``, checked as cuBLAS does."""
        assert trans in (0, 1)
        srows, scols = (rows, cols) if trans == 0 else (cols, rows)
        if ld < max(1, srows):
            raise ValueError("CUBLAS_STATUS_INVALID_VALUE: ld < max(1, rows)")
        idx = np.arange(srows)[:, None] + np.arange(scols)[None, :] * ld
        stored = self._mem(addr, int(idx.max()) + 1, dtype)[idx]
        return stored if trans == 0 else stored.T

    def _gemm(self, dtype, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        a = self._op(transa, A, lda, m, k, dtype)
        b = self._op(transb, B, ldb, k, n, dtype)
        if ldc < max(1, m):
            raise ValueError("CUBLAS_STATUS_INVALID_VALUE: ldc < max(1, m)")
        al, be = self._mem(alpha, 1, dtype)[0], self._mem(beta, 1, dtype)[0]
        c = self._mem(C, ldc * (n - 1) + m, dtype)
        idx = np.arange(m)[:, None] + np.arange(n)[None, :] * ldc
        prod = al * (a.astype(np.float64) @ b.astype(np.float64))
        c[idx] = prod if be == 0 else prod + be * c[idx]  # beta == 0: C is never read (NaN-safe)

    def sgemm(self, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        self.calls.append("sgemm")
        self._gemm(np.float32, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)

    def dgemm(self, handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        self.calls.append("dgemm")
        self._gemm(np.float64, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)

    def _batched(self, dtype, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C,
                 ldc, sC, count):
        isz = np.dtype(dtype).itemsize
        for i in range(count):
            self._gemm(dtype, transa, transb, m, n, k, alpha, A + i * sA * isz, lda,
                       B + i * sB * isz, ldb, beta, C + i * sC * isz, ldc)

    def sgemmStridedBatched(self, handle, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb,
                            sB, beta, C, ldc, sC, count):
        self.calls.append("sgemmStridedBatched")
        self._batched(np.float32, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta,
                      C, ldc, sC, count)

    def dgemmStridedBatched(self, handle, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb,
                            sB, beta, C, ldc, sC, count):
        self.calls.append("dgemmStridedBatched")
        self._batched(np.float64, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta,
                      C, ldc, sC, count)


@pytest.fixture
def fake(device, monkeypatch):
    if not device.simulator_active():
        pytest.skip("emulates cuBLAS on the simulator's host-memory arrays; on a GPU "
                    "tests/cuda/test_device_cublas.py runs the real one")
    from jitgrad.backends import cuda_cublas
    lib = FakeCublas()
    monkeypatch.setattr(cuda_cublas, "_usable", True)
    monkeypatch.setattr(cuda_cublas, "_lib", (lib, lambda: 0))
    monkeypatch.setattr(cuda_cublas, "_null_stream", contextlib.nullcontext)
    monkeypatch.setattr(cuda_cublas, "_address", lambda arr: arr._ary.ctypes.data)
    return lib


# every case in float64 (sgemm/dgemm take the same path); float32 and float16 (converted to
# float32 by half_as_float32) on a few, to keep the simulator run short
NAMES = ["mm", "mm_1x1", "mm_both_transposed", "mm_sliced", "mm_step_sliced", "row_times_matrix",
         "matrix_times_col", "matmul_vector", "bmm_transposed_sliced", "matmul_broadcast_batch",
         "matmul_broadcast_2d", "addmm", "linear"]
PARAMS = [(n, "f64") for n in NAMES] + [
    (n, dt) for n in ("mm_both_transposed", "bmm_transposed_sliced", "linear")
    for dt in ("f32", "f16")]


@pytest.mark.parametrize("name,dt", PARAMS)
def test_ops_through_emulated_cublas_match_cpu(fake, name, dt):
    from jitgrad.backends import cuda_cublas
    fn, arrays = CASES[name]
    yc, gc, _ = run(fn, arrays, "cpu", DTYPES[dt])
    before = cuda_cublas.stats.calls
    yd, gd, _ = run(fn, arrays, "cuda", DTYPES[dt])
    assert cuda_cublas.stats.calls > before and fake.calls
    assert {c[0] for c in fake.calls} == {"d" if dt == "f64" else "s"}
    for got, want in zip([yd] + gd, [yc] + gc):
        close(got, want, RTOL[dt], f"{name} {dt}")


def test_batched_uses_strided_batched_with_broadcast_stride(fake):
    """A 2-D operand broadcast over a batch is read with batch stride 0, not copied."""
    from jitgrad.backends import cuda_cublas
    a, b = r(3, 4), r(5, 4, 2)
    copies = cuda_cublas.stats.copies
    got = (jg.tensor(a, device="cuda") @ jg.tensor(b, device="cuda")).cpu().numpy()
    assert fake.calls == ["dgemmStridedBatched"] and cuda_cublas.stats.copies == copies
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)


def test_a_graphed_step_replays_its_cublas_calls(fake):
    """A step recorded for a CUDA graph tapes each GEMM as an external call
    (``cuda_graph.Tape.external``) and the graph re-issues it at every launch: over changing
    batches the graphed step's losses, parameters, gradients and optimizer state are eager's
    bitwise, and as many GEMMs ran (a GEMM missing from the graph would leave the last taped
    run's products in place)."""
    from test_device_cuda_graphs import _assert_same, _batches, _sgd, _train
    batches = _batches(5)
    fake.calls.clear()
    eager = _train(_sgd(momentum=0.9), batches, "eager")
    eager_gemms = len(fake.calls)
    fake.calls.clear()
    graphed = _train(_sgd(momentum=0.9), batches, "reduce-overhead")
    p = graphed["profile"]
    # call 1 records, calls 2 and 3 are taped, calls 4 and 5 launch the graph
    assert (p.compile_cuda_graphs, p.compile_cuda_graph_replays) == (1, 2), p.compile_reasons
    assert len(fake.calls) == eager_gemms > 0
    _assert_same(graphed, eager)
