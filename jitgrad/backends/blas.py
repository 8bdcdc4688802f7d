"""CPU matrix products: Intel MKL's GEMM when the ``mkl`` wheel is installed, NumPy otherwise.

NumPy's wheels use OpenBLAS. On the machines we measure on, OpenBLAS is 10-25% slower than MKL
(the BLAS PyTorch ships) for the shapes of a small MLP, and its threads collapse when the cores
are busy (a 256x784x512 product went from 1.4 ms to 32 ms under load; MKL stayed at 1.4 ms).
So when ``libmkl_rt`` is present (``pip install "jitgrad[mkl]"``) 2-D float32/float64 products
call ``cblas_?gemm`` directly (from compiled code: ``cblas_calls.aten_gemm``, where ATen's
choice of arguments is written; MKL is loaded through ctypes), passing transposed operands as
flags instead of copying them. ``JITGRAD_BLAS=numpy`` forces NumPy.

MKL releases differ in the kernel (the order of additions) they pick for a shape, so PyTorch's
bits come from the MKL its CPU wheels link (2024.2 for PyTorch 2.13; pyproject pins the extra):
the calls below are the ones ATen makes (its column-major call with the operands swapped is
``cblas_?gemm``'s row-major call; ``addmm`` puts the bias in C with beta), and with the same MKL
they give the same bits (tests/test_blas_bits.py).

Stacks of matrices (3-D and up, batch dims broadcast as ``np.matmul`` does) go to MKL too
(stacks of tiny matrices take ATen's own loop, ``bmm_small``), in one call: NumPy's stacked
matmul calls OpenBLAS once per matrix, and those per-matrix calls are what collapses when the
cores are busy. When every operand's batch
folds into one uniform stride (contiguous stacks, broadcast stacks: stride 0, sliced stacks)
that is ``cblas_?gemm_batch_strided``; other batch layouts pass one pointer per matrix to
``cblas_?gemm_batch``; an MKL without either gets a loop of ``cblas_?gemm`` calls. Each matrix
goes in without a copy when one of its dims has unit stride (transposed views: the flag).
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys

import numpy as np

from . import cpu

__all__ = ["matmul", "matmul_batch", "addbmm", "backend", "mkl_version", "max_threads",
           "set_local_threads", "set_max_threads"]

_ROW_MAJOR, _COL_MAJOR, _NO_TRANS, _TRANS = 101, 102, 111, 112
_gemm = None  # {np.dtype: ctypes function} once loaded, {} when MKL is unavailable
_gemm_strided = {}  # {np.dtype: cblas_?gemm_batch_strided} where this MKL has it
_gemm_batch = {}  # {np.dtype: cblas_?gemm_batch (pointer arrays)} where this MKL has it
_threads = {}  # "max": MKL_Get_Max_Threads, "local": MKL_Set_Num_Threads_Local, once loaded
_version = {}  # "text": MKL_Get_Version_String's text, once loaded
_INT_MAX = 2 ** 31 - 1  # MKL_INT of the LP64 interface libmkl_rt selects by default
# Stacks of float32/float64 matrices with fewer multiply-adds each (m * n * k) than this take
# ATen's own loop (``bmm_small``), larger ones MKL, as PyTorch's bmm does: PyTorch's bits. (A
# NumPy loop was faster for small stacks, 64 x (16x16x16) 8 us vs MKL's 65 us on an AMD EPYC with
# MKL 2026.2, but OpenBLAS sums in other orders.) Tests set it to 0 to pin MKL's routes.
STACK_MIN_WORK = 400


def _find_mkl():
    names = []
    for root in {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable) + "/.."}:
        names += sorted(glob.glob(os.path.join(root, "lib", "libmkl_rt.so*")))
        names += sorted(glob.glob(os.path.join(root, "Library", "bin", "mkl_rt*.dll")))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _load():
    global _gemm
    _gemm = {}
    if os.environ.get("JITGRAD_BLAS", "").lower() == "numpy":
        return
    lib = _find_mkl()
    if lib is None:
        return
    for key, name, args in (("max", "MKL_Get_Max_Threads", []),
                            ("local", "MKL_Set_Num_Threads_Local", [ctypes.c_int]),
                            ("global", "MKL_Set_Num_Threads", [ctypes.c_int])):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_int, args
            _threads[key] = fn
    fn = getattr(lib, "MKL_Get_Version_String", None)
    if fn is not None:
        buf = ctypes.create_string_buffer(256)
        fn.restype, fn.argtypes = None, [ctypes.c_char_p, ctypes.c_int]
        fn(buf, len(buf))
        _version["text"] = buf.value.decode(errors="replace")
    vp, i = ctypes.c_void_p, ctypes.c_int
    for dt, name, scalar in ((np.float32, "cblas_sgemm", ctypes.c_float),
                             (np.float64, "cblas_dgemm", ctypes.c_double)):
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = [i, i, i, i, i, i, scalar, vp, i, vp, i, scalar, vp, i]
        _gemm[np.dtype(dt)] = fn
        fn = getattr(lib, name + "_batch_strided", None)
        if fn is not None:  # MKL 2020.2 and later
            fn.restype = None
            fn.argtypes = [i, i, i, i, i, i, scalar, vp, i, i, vp, i, i, scalar, vp, i, i, i]
            _gemm_strided[np.dtype(dt)] = fn
        fn = getattr(lib, name + "_batch", None)
        if fn is not None:
            fn.restype = None
            fn.argtypes = [i] + [vp] * 13 + [i, vp]
            _gemm_batch[np.dtype(dt)] = fn


def backend() -> str:
    if _gemm is None:
        _load()
    return "mkl" if _gemm else "numpy"


def mkl_version() -> str:
    """MKL's version line ("Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build
    ..."), as ``torch.__config__.show()`` prints its own; "" without MKL. GEMM results depend on
    the release: PyTorch's bits need the MKL it links (pyproject's ``mkl`` extra pins it)."""
    if _gemm is None:
        _load()
    return _version.get("text", "") if _gemm else ""


def max_threads() -> int:
    """The threads MKL uses for a call from this thread (1 without MKL: NumPy's BLAS is not
    told what to do)."""
    if _gemm is None:
        _load()
    fn = _threads.get("max")
    return max(1, fn()) if fn is not None and _gemm else 1


def set_local_threads(n: int) -> int:
    """MKL's thread count for calls from this thread only (0: back to the global setting);
    returns the previous local setting. A no-op (returning 0) without MKL."""
    if _gemm is None:
        _load()
    fn = _threads.get("local")
    return fn(n) if fn is not None and _gemm else 0


def set_max_threads(n: int) -> None:
    """MKL's thread count for every thread (``torch.set_num_threads``); a no-op without MKL."""
    if _gemm is None:
        _load()
    fn = _threads.get("global")
    if fn is not None and _gemm:
        fn(n)


def _address(a) -> int:
    # half the cost of ``a.ctypes.data`` (which builds a ctypes helper object per call)
    return a.__array_interface__["data"][0]


_gemm_addr = {}  # {np.dtype: its cblas_?gemm's address}, for the compiled call
_cblas_calls = []  # cblas_calls.gemm_entry() once imported (it imports Numba)
_strided_call = []  # cblas_calls.strided_entry() once imported
_cblas_module = []  # backends.cblas_calls once imported


def _cblas():
    if not _cblas_module:
        from . import cblas_calls
        _cblas_module.append(cblas_calls)
    return _cblas_module[0]


def _compiled_gemm(fn, x, y, out, alpha, beta) -> bool:
    """``out = beta * out + alpha * x @ y`` by one ``cblas_?gemm`` call with the arguments ATen's
    ``addmm_impl_cpu_`` passes, made from compiled code (``cblas_calls.aten_gemm``, where that
    choice is written: about a microsecond instead of ~20 us of ctypes argument conversion and
    Python layout tests); False, having written nothing, where ATen would not call BLAS."""
    addr = _gemm_addr.get(x.dtype)
    if addr is None:
        addr = _gemm_addr[x.dtype] = ctypes.cast(fn, ctypes.c_void_p).value
    if not _cblas_calls:
        _cblas_calls.append(_cblas().gemm_entry())
    try:
        return _cblas_calls[0](addr, x, y, out, float(alpha), float(beta))
    except TypeError:  # an operand no compiled signature takes (a non-native byte order)
        return False


def matmul(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None,
           accumulate: bool = False, alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """``x @ y`` for NumPy arrays (any ranks NumPy accepts); with ``accumulate``,
    ``out += x @ y`` (GEMM's beta = 1: ``linear`` pre-fills ``out`` with the bias, which saves
    the separate read-modify-write pass of adding it afterwards). ``alpha`` (2-D, with
    ``accumulate``): ``out += alpha * x @ y`` (GEMM's alpha: a compiled step folds SGD's
    ``W -= lr * g^T h`` into the weight-gradient product). ``beta`` (2-D, with ``accumulate``):
    ``out = beta * out + alpha * x @ y`` as one GEMM (``addmm``'s call: PyTorch's bits); with
    ``beta == 0`` ``out`` is not read (BLAS's rule: NaN in it does not propagate)."""
    if accumulate and out is None:
        raise ValueError("blas.matmul: accumulate=True needs out=")
    if alpha != 1.0 or beta != 1.0:
        if not accumulate or x.ndim < 2 or y.ndim < 2:
            raise ValueError("blas.matmul: alpha/beta need accumulate=True and 2-D operands")
        if _gemm is None:
            _load()
        if not _gemm or _gemm.get(x.dtype) is None or y.dtype != x.dtype or \
                out.dtype != x.dtype or not out.flags.c_contiguous:
            prod = np.matmul(x, y)
            if beta == 0:
                out[...] = alpha * prod
            else:
                out *= beta
                out += alpha * prod
            return out
    if _gemm is None:
        _load()
    fn = _gemm.get(x.dtype) if _gemm else None
    if fn is not None and x.ndim >= 2 and y.ndim >= 2 and (x.ndim > 2 or y.ndim > 2) and \
            y.dtype == x.dtype:
        res = _matmul_stack(fn, x, y, out, accumulate, alpha, beta)
        if res is not None:
            return res
    if fn is None or x.ndim != 2 or y.ndim != 2 or y.dtype != x.dtype or (
            out is not None and not out.flags.c_contiguous):
        if accumulate:
            prod = np.matmul(x, y)
            if beta == 0:
                out[...] = alpha * prod if alpha != 1.0 else prod
            else:
                if beta != 1.0:
                    out *= beta
                out += alpha * prod if alpha != 1.0 else prod
            return out
        return np.matmul(x, y, out=out) if out is not None else np.matmul(x, y)
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0]:
        return np.matmul(x, y)  # NumPy raises its shape error
    if out is None:
        # pooled when large: no page faults per step (cpu.empty's own test, inlined: it costs
        # more than a small product's np.empty)
        out = np.empty((m, n), x.dtype) if m * n * x.itemsize < cpu.POOL_MIN_BYTES else \
            cpu.empty((m, n), x.dtype)
    if m and n:
        if k == 0:
            if not accumulate or beta == 0:
                out[...] = 0
            elif beta != 1.0:
                out *= beta
            return out
        if out.dtype == x.dtype and _compiled_gemm(fn, x, y, out, alpha,
                                                   beta if accumulate else 0.0):
            return out
        # layouts ATen leaves to its own loop: NumPy's product
        prod = np.matmul(x, y)
        if not accumulate or beta == 0:
            out[...] = alpha * prod if alpha != 1.0 else prod
        else:
            out *= beta
            out += alpha * prod if alpha != 1.0 else prod
    return out


# ------------------------------------------------------------------------------ stacks of matrices

def _matrix_layout(a):
    """(transpose flag, leading dimension) of the matrices (last two dims) of ``a`` as GEMM reads
    them, or None when neither dim has unit stride (``cblas_calls.matrix_layout``'s rule, which
    the compiled strided call applies too)."""
    rows, cols = a.shape[-2:]
    trans, ld = _cblas().matrix_layout(rows, cols, *a.strides[-2:], a.itemsize)
    return (trans, ld) if trans else None


def _batch_strides(a, batch):
    """Element strides of ``a``'s batch dims broadcast to ``batch`` (0 where broadcast)."""
    lead = len(batch) - (a.ndim - 2)
    item = a.itemsize
    return [0] * lead + [s // item if d > 1 else 0
                         for d, s in zip(a.shape[:-2], a.strides[:-2])]


def _fold(batch, strides, span):
    """One stride that walks every matrix of the batch in C order, or None when the batch dims
    don't fold into one (or a stride is negative, or matrices would overlap: then MKL may reject
    the stride, the pointer-per-matrix call takes it)."""
    last = None
    for d, s in zip(batch, strides):
        if d == 1:
            continue
        if last is not None and last[1] != s * d:
            return None
        last = (d, s)
    stride = 0 if last is None else last[1]
    return stride if stride == 0 or stride >= span else None


def _offsets(batch, strides, item):
    """Byte offset of each matrix of the batch, C order."""
    off = np.zeros((), np.int64)
    for d, s in zip(batch, strides):
        off = np.add.outer(off, np.arange(d, dtype=np.int64) * (s * item))
    return off.reshape(-1)


_bmm_small = []  # bmm_small.bmm_small once imported


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _matmul_stack(gemm, x, y, out, accumulate, alpha=1.0, beta=1.0):
    """``x @ y`` for stacks (``np.matmul``'s broadcasting of the batch dims) through MKL (ATen's
    loop for tiny matrices: ``STACK_MIN_WORK``), or None when NumPy must do it: a shape error
    (NumPy raises its own), an ``out`` that isn't a C-contiguous array of the result's shape,
    sizes past MKL_INT. With ``accumulate``: ``out = beta * out + alpha * x @ y`` (baddbmm's
    call: its bias in C)."""
    m, k = x.shape[-2:]
    n = y.shape[-1]
    if y.shape[-2] != k:
        return None
    batch = x.shape[:-2]
    if batch != y.shape[:-2]:  # (np.broadcast_shapes costs more than a small bmm's product)
        try:
            batch = tuple(np.broadcast_shapes(batch, y.shape[:-2]))
        except ValueError:
            return None
    shape = batch + (m, n)
    if out is None:  # pooled when large, as the 2-D path
        out = np.empty(shape, x.dtype) if m * n * x.itemsize * _prod(batch) < \
            cpu.POOL_MIN_BYTES else cpu.empty(shape, x.dtype)
    elif out.shape != shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        return None
    if out.size == 0:
        return out
    if not accumulate:
        alpha, beta = 1.0, 0.0
    if k == 0:
        if beta == 0:
            out[...] = 0
        elif beta != 1:
            out *= beta
        return out
    if m * n * k < STACK_MIN_WORK:
        if not _bmm_small:
            from .bmm_small import bmm_small  # Numba: imported on first use
            _bmm_small.append(bmm_small)
        return _bmm_small[0](x, y, out, accumulate, alpha, beta)
    if x.ndim == 3 and y.ndim == 3 and x.shape[0] == y.shape[0]:
        # bmm's stacks: one compiled call reads the layouts and calls MKL (the general path
        # below, in Python, costs more than a small stack's product); it declines what the
        # general path must copy or check
        nb = x.shape[0]
        if _gemm_batch_strided(x, y, out, nb, (x.strides[0] if nb > 1 else 0,
                                               y.strides[0] if nb > 1 else 0,
                                               m * n * x.itemsize), n, True, alpha, beta):
            return out
    la, lb = _matrix_layout(x), _matrix_layout(y)
    if la is None or not x.flags.aligned:
        x = np.ascontiguousarray(x)  # copies the stack once, not the broadcast
        la = (_NO_TRANS, k)
    if lb is None or not y.flags.aligned:
        y = np.ascontiguousarray(y)
        lb = (_NO_TRANS, n)
    nb = out.size // (m * n)
    xs, ys = _batch_strides(x, batch), _batch_strides(y, batch)
    if max(m, n, k, nb, la[1], lb[1], *xs, *ys) > _INT_MAX or m * n * nb > _INT_MAX:
        return None
    sx = _fold(batch, xs, la[1] * (m if la[0] == _NO_TRANS else k))
    sy = _fold(batch, ys, lb[1] * (k if lb[0] == _NO_TRANS else n))
    item = x.itemsize
    if sx is not None and sy is not None and \
            _gemm_batch_strided(x, y, out, nb, (sx * item, sy * item, m * n * item), n, True,
                                alpha, beta):
        return out
    ax = _address(x) + _offsets(batch, xs, item)
    ay = _address(y) + _offsets(batch, ys, item)
    ac = _address(out) + np.arange(nb, dtype=np.int64) * (m * n * item)
    pointers = _gemm_batch.get(x.dtype)
    if pointers is not None:
        i32, scalar = np.intc, x.dtype.type
        args = [np.array([v], i32) for v in (la[0], lb[0], m, n, k)]
        args += [np.array([alpha], scalar), ax, np.array([la[1]], i32), ay,
                 np.array([lb[1]], i32), np.array([beta], scalar), ac, np.array([n], i32),
                 np.array([nb], i32)]  # one group: every pointer array has nb entries
        *addresses, group_size = [_address(a) for a in args]  # args keeps the arrays alive
        pointers(_ROW_MAJOR, *addresses, 1, group_size)
        return out
    for px, py, pc in zip(ax.tolist(), ay.tolist(), ac.tolist()):  # an MKL before batch APIs
        gemm(_ROW_MAJOR, la[0], lb[0], m, n, k, alpha, px, la[1], py, lb[1], beta, pc, n)
    return out


_strided_addr = {}  # {np.dtype: its cblas_?gemm_batch_strided's address}, for the compiled call


def _gemm_batch_strided(x, y, out, nb, strides, ldc, apart, alpha=1.0, beta=0.0):
    """``out[i] = beta * out[i] + alpha * x[i] @ y[i]`` for ``i < nb`` as one
    ``cblas_?gemm_batch_strided`` call made from compiled code (``cblas_calls``), or False
    (nothing done) where this MKL lacks it or GEMM can't read ``x``'s or ``y``'s matrices in
    place (or, with ``apart``, a stack's matrices overlap). The matrices are the last two dims of
    ``x``, ``y`` and ``out`` (its rows ``ldc`` elements apart); matrix ``i`` of each lies ``i *
    strides[j]`` bytes past its first. Every stack entry makes its one MKL call here:
    ``matmul_batch`` with the stacks' own batch strides, ``matmul``'s stacks with the batch dims
    folded into one stride each."""
    strided = _gemm_strided.get(x.dtype)
    if strided is None:
        return False
    addr = _strided_addr.get(x.dtype)
    if addr is None:
        addr = _strided_addr[x.dtype] = ctypes.cast(strided, ctypes.c_void_p).value
    if not _strided_call:
        _strided_call.append(_cblas().strided_entry())
    lead = (0,) * (x.ndim - 2)
    x0 = x[lead] if lead else x
    y0 = y[(0,) * (y.ndim - 2)] if y.ndim > 2 else y
    out0 = out[(0,) * (out.ndim - 2)] if out.ndim > 2 else out
    try:
        return _strided_call[0](addr, x0, y0, out0, nb, *strides, ldc, apart, float(alpha),
                                float(beta))
    except TypeError:  # an unaligned operand: no compiled signature takes it
        return False


def matmul_batch(x: np.ndarray, y: np.ndarray, out: np.ndarray, accumulate: bool = False):
    """``out[i] (+)= x[i] @ y[i]`` for 3-D stacks of equal length whose matrices GEMM reads in
    place (one unit-stride dim each, ``out``'s rows contiguous) at any batch strides, as one
    ``cblas_?gemm_batch_strided`` call: for the many small products of one step (a Winograd
    convolution's 16 per chunk) the Python cost of one ``matmul`` call each was most of the
    time. Falls back to ``matmul`` per matrix where that call or a layout is missing."""
    if _gemm is None:
        _load()
    nb, m, k = x.shape
    n = y.shape[2]
    item = x.itemsize
    ok = (_gemm and y.dtype == x.dtype == out.dtype and out.strides[2] == item and
          out.strides[1] % item == 0 and
          all(a.strides[0] % item == 0 and a.strides[0] >= 0 for a in (x, y, out)) and
          m and n and k and nb > 1)
    if ok and _gemm_batch_strided(x, y, out, nb, [a.strides[0] for a in (x, y, out)],
                                  out.strides[1] // item, False, 1.0, 1.0 if accumulate else 0.0):
        return out
    for i in range(nb):
        matmul(x[i], y[i], out=out[i], accumulate=accumulate)
    return out


def addbmm(x: np.ndarray, y: np.ndarray, out: np.ndarray, alpha=1.0, beta=1.0) -> np.ndarray:
    """``out = beta * out + alpha * sum_i x[i] @ y[i]`` as ATen's ``addbmm_impl_`` runs it: one
    ``addmm_`` per matrix, in batch order, beta for the first and 1 after it (``out``: 2-D,
    C-contiguous; ``beta == 0`` does not read it). Every matrix of a stack has the same strides,
    so ATen's GEMM arguments are worked out once and the calls differ only in addresses."""
    nb = x.shape[0]
    if nb == 0:
        if beta == 0:
            out[...] = 0
        elif beta != 1:
            out *= out.dtype.type(beta)
        return out
    if _gemm is None:
        _load()
    fn = _gemm.get(x.dtype) if _gemm else None
    x0, y0 = x[0], y[0]
    plan = None
    if fn is not None and y.dtype == x.dtype == out.dtype and out.flags.c_contiguous and \
            out.size and x.shape[2]:
        try:
            plan = _cblas().plan_entry()(x0, y0, out)
        except TypeError:  # (a non-native byte order)
            plan = None
    if plan is None or not plan[0]:
        # no GEMM, or a contiguous copy of an operand: the per-matrix path (a copy each)
        for i in range(nb):
            matmul(x[i], y[i], out=out, accumulate=True, alpha=alpha,
                   beta=beta if i == 0 else 1.0)
        return out
    _, swapped, ta, tb, m, n, k, lda, ldb, ldc = plan
    pa, pb = (y, x) if swapped else (x, y)  # swapped for a row-major result
    base_a, base_b, c = _address(pa[0]), _address(pb[0]), _address(out)
    step_a, step_b = pa.strides[0], pb.strides[0]
    for i in range(nb):
        fn(_COL_MAJOR, ta, tb, m, n, k, alpha, base_a + i * step_a, lda, base_b + i * step_b,
           ldb, beta if i == 0 else 1.0, c, ldc)
    return out
