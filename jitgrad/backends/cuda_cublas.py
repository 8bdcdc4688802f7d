"""cuBLAS GEMM for the device matmul, through CuPy's low-level binding (issue 12).

``cuda_kernels/matmul.py:matmul`` is the one place every CUDA matrix product goes through
(matmul/mm/bmm/addmm/linear and their VJPs, conv's im2col products). On a real GPU with CuPy
installed it hands the product to cuBLAS here; the tiled kernel stays the portable fallback (the
simulator, no CuPy, ``JITGRAD_CUBLAS=0``, other dtypes). A step recorded for a CUDA graph
(``backends/cuda_graph.py``) tapes each GEMM as an external call, re-issued on the capture
stream when the graph is built.

Layout: row-major ``C = A @ B`` is column-major ``C^T = B^T A^T``, so cuBLAS gets ``B`` as its
first operand and ``A`` as its second, with ``m`` and ``n`` swapped. :func:`gemm_operand` decides
from an operand's element strides how cuBLAS can read it in place (pure Python, tested without a
GPU); operands it cannot describe are copied to a contiguous layout first.

Precision follows PyTorch's defaults: float32 in full FP32 (``allow_tf32`` is False, so the
handle's math mode is ``CUBLAS_DEFAULT_MATH``, no TF32), float64 with dgemm; float16 arrives
here already converted to float32 by ``half_as_float32`` (float32 accumulation and one rounding
to float16, as PyTorch's fp16 GEMM and the tiled path do).
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["gemm_operand", "usable", "gemm", "stats"]

# cuBLAS enum values (cublas_api.h; stable across CUDA versions)
OP_N, OP_T = 0, 1
DEFAULT_MATH = 0          # CUBLAS_DEFAULT_MATH: no TF32 tensor-op down-conversion
POINTER_MODE_HOST = 0     # alpha/beta read from host memory
INT32_MAX = 2**31 - 1


class _Stats:
    """``calls``: GEMMs run by cuBLAS; ``copies``: operands copied to a GEMM-able layout first."""

    def __init__(self):
        self.calls = 0
        self.copies = 0


stats = _Stats()


def gemm_operand(shape, strides):
    """How cuBLAS reads a row-major operand ``X`` of ``shape = batch + (r, c)`` in place.

    Returns ``(trans, ld, batch_stride)`` or None (copy it first). cuBLAS is column-major and
    gets ``X^T`` (``c x r``): with unit stride along the last dim, ``X^T`` *is* a column-major
    matrix with leading dimension ``strides[-2]`` (``'N'``); with unit stride along dim -2,
    ``X`` itself is column-major with leading dimension ``strides[-1]`` and cuBLAS transposes
    it (``'T'``). The leading dimension must cover the stored matrix's rows (``c`` for 'N', ``r``
    for 'T'; cuBLAS rejects ``ld < max(1, rows)``) and fit an int. The batch dims must collapse
    to one non-negative stride (``offset(b) = b * batch_stride`` for the C-order flat batch index
    ``b``; stride 0 for a broadcast batch). Size-1 dims never move the pointer, so their stride
    does not matter and is normalised away."""
    shape = tuple(int(s) for s in shape)
    strides = tuple(int(s) for s in strides)
    if len(shape) < 2 or len(shape) != len(strides):
        raise ValueError("gemm_operand needs shape and strides of the same rank >= 2")
    r, c = shape[-2:]
    sr, sc = strides[-2:]
    plan = None
    # 'N': unit stride along columns (any stride there when c == 1); ld = row stride
    if sc == 1 or c == 1:
        ld = max(c, 1) if r == 1 else sr
        if max(c, 1) <= ld <= INT32_MAX:
            plan = ("N", ld)
    # 'T': unit stride along rows (any stride there when r == 1); ld = column stride
    if plan is None and (sr == 1 or r == 1):
        ld = max(r, 1) if c == 1 else sc
        if max(r, 1) <= ld <= INT32_MAX:
            plan = ("T", ld)
    if plan is None:
        return None
    batch_stride = _uniform_batch_stride(shape[:-2], strides[:-2])
    if batch_stride is None:
        return None
    return plan + (batch_stride,)


def _uniform_batch_stride(shape, strides):
    """The one stride ``s`` with ``offset(b) = b * s`` over the C-order batch index, or None."""
    dims = [(n, st) for n, st in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    step = dims[-1][1]
    if step < 0:
        return None
    expect = step
    for n, st in reversed(dims):
        if st != expect:
            return None
        expect = st * n
    return step


_usable = None
_lib = None   # (cublas module, get_cublas_handle)


def _cupy_loaded() -> bool:
    """Import CuPy's cuBLAS binding once; any failure means the tiled kernel, never an error."""
    global _lib
    try:
        from cupy.cuda import device as cupy_device
        from cupy_backends.cuda.libs import cublas
        cupy_device.get_cublas_handle()
    except Exception:  # noqa: BLE001 - not installed, wrong CUDA build, no driver: all fallback
        return False
    _lib = (cublas, cupy_device.get_cublas_handle)
    return True


def usable(dtype) -> bool:
    """Should ``matmul`` of this dtype go to cuBLAS now?"""
    global _usable
    if np.dtype(dtype) not in (_F32, _F64):
        return False
    from . import cuda as backend
    if _usable is None:
        _usable = (os.environ.get("JITGRAD_CUBLAS", "1") != "0"
                   and not backend.simulator_active() and _cupy_loaded())
    return _usable


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
# alpha = 1, beta = 0 in host memory, kept alive for the process (POINTER_MODE_HOST)
_SCALARS = {_F32: (np.ones(1, _F32), np.zeros(1, _F32)),
            _F64: (np.ones(1, _F64), np.zeros(1, _F64))}


def _address(arr) -> int:
    """Device address of a (numba) device array's first element."""
    return arr.device_ctypes_pointer.value or 0


def _plan_or_copy(view):
    """``(view, plan)`` for an operand already broadcast to the full batch; copies it to a
    contiguous layout when cuBLAS cannot read it in place."""
    from .cuda_kernels.common import as_view
    from .cuda_kernels.layout import contiguous
    plan = gemm_operand(view.shape, view.strides)
    if plan is None:
        stats.copies += 1
        view = as_view(contiguous(view))
        plan = gemm_operand(view.shape, view.strides)
    return view, plan


def gemm(ea, eb, out, nbatch: int, m: int, n: int, k: int) -> bool:
    """``out[b] = ea[b] @ eb[b]`` (Views broadcast to the full batch; ``out`` contiguous,
    ``m, n, k >= 1``). False when the sizes exceed cuBLAS's int arguments (caller falls back)."""
    if max(m, n, k, nbatch) > INT32_MAX:
        return False
    ea, (ta, lda, sa) = _plan_or_copy(ea)
    eb, (tb, ldb, sb) = _plan_or_copy(eb)
    double = np.dtype(out.dtype) == _F64
    # column-major: C^T (n x m, ldc = n) = op(B^T) (n x k) @ op(A^T) (k x m)
    op_b = OP_N if tb == "N" else OP_T
    op_a = OP_N if ta == "N" else OP_T
    call = (double, nbatch, op_b, op_a, n, m, k, eb.base, eb.offset, ldb, sb,
            ea.base, ea.offset, lda, sa, out)
    from . import cuda as backend
    if backend._tape is not None:
        # a step being recorded for a CUDA graph: the graph re-issues this call on its capture
        # stream (cuBLAS calls can be captured; alpha/beta, host pointers, are captured by value)
        backend._tape.external(_issue_gemm, call)
    _issue_gemm(None, *call)
    stats.calls += 1
    backend.stats.launches += 1  # device work submitted, as a kernel launch is
    return True


def _issue_gemm(stream_handle, double, nbatch, op_b, op_a, n, m, k, b, b_offset, ldb, sb,
                a, a_offset, lda, sa, out):
    """One (strided-batched) GEMM as :func:`gemm` planned it, on the default stream
    (``stream_handle`` None) or on the CUDA stream with that raw handle (a graph's capture)."""
    cublas, get_handle = _lib
    dtype = _F64 if double else _F32
    alpha, beta = _SCALARS[dtype]
    handle = get_handle()
    # Every jitgrad kernel runs on the legacy default stream 0. CuPy's wrappers set the handle's
    # stream to CuPy's *current* stream inside each call (a setStream of ours would be undone),
    # so the call runs with CuPy's null stream made current (_null_stream): in order with our
    # kernels even when the user entered another CuPy stream. The pointer and math modes are
    # set every call too: the handle is CuPy's, shared with cupy.matmul & co.
    cublas.setPointerMode(handle, POINTER_MODE_HOST)
    cublas.setMathMode(handle, DEFAULT_MATH)
    isz = dtype.itemsize
    pa, pb, pc = _address(a) + a_offset * isz, _address(b) + b_offset * isz, _address(out)
    with _null_stream() if stream_handle is None else _external_stream(stream_handle):
        if nbatch == 1:
            fn = cublas.dgemm if double else cublas.sgemm
            fn(handle, op_b, op_a, n, m, k, alpha.ctypes.data, pb, ldb, pa, lda,
               beta.ctypes.data, pc, n)
        else:
            fn = cublas.dgemmStridedBatched if double else cublas.sgemmStridedBatched
            fn(handle, op_b, op_a, n, m, k, alpha.ctypes.data, pb, ldb, sb, pa, lda, sa,
               beta.ctypes.data, pc, n, m * n, nbatch)


def _external_stream(stream_handle):
    """The CUDA stream with raw handle ``stream_handle`` as CuPy's current stream."""
    import cupy
    return cupy.cuda.ExternalStream(stream_handle)


_null = None


def _null_stream():
    """CuPy's null stream as the current stream (CuPy's wrappers call ``cublasSetStream`` with
    the current one), so cuBLAS runs in order with jitgrad's stream-0 kernels."""
    global _null
    if _null is None:
        import cupy
        _null = cupy.cuda.Stream.null
    return _null
