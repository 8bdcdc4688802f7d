"""CPU matrix products: Intel MKL's GEMM when the ``mkl`` wheel is installed, NumPy otherwise.

NumPy's wheels use OpenBLAS. On the machines we measure on, OpenBLAS is 10-25% slower than MKL
(the BLAS PyTorch ships) for the shapes of a small MLP, and its threads collapse when the cores
are busy (a 256x784x512 product went from 1.4 ms to 32 ms under load; MKL stayed at 1.4 ms).
So when ``libmkl_rt`` is present (``pip install "jitgrad[mkl]"``) 2-D float32/float64 products
call ``cblas_?gemm`` directly through ctypes, passing transposed operands as flags instead of
copying them. ``JITGRAD_BLAS=numpy`` forces NumPy.

Stacks of matrices (3-D and up, batch dims broadcast as ``np.matmul`` does) of large enough
matrices go to MKL too, in one call: NumPy's stacked matmul calls OpenBLAS once per matrix, and
those per-matrix calls are what collapses when the cores are busy. When every operand's batch
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

__all__ = ["matmul", "matmul_batch", "backend", "max_threads", "set_local_threads",
           "set_max_threads"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_gemm = None  # {np.dtype: ctypes function} once loaded, {} when MKL is unavailable
_gemm_strided = {}  # {np.dtype: cblas_?gemm_batch_strided} where this MKL has it
_gemm_batch = {}  # {np.dtype: cblas_?gemm_batch (pointer arrays)} where this MKL has it
_threads = {}  # "max": MKL_Get_Max_Threads, "local": MKL_Set_Num_Threads_Local, once loaded
_INT_MAX = 2 ** 31 - 1  # MKL_INT of the LP64 interface libmkl_rt selects by default
# Stacks go to MKL only when each product has at least this many multiply-adds (m * n * k):
# below it MKL's batched call costs more than NumPy's per-matrix loop (on an AMD EPYC, MKL
# 2026.2: 64 x (16x16x16) 65 us vs 8 us, 64 x (32x32x32) 115 vs 42; even at 1 thread); from
# 64 x (128x64x128) up they are level at best and MKL keeps its speed when the cores are busy
# (NumPy's median went 2-4x its best there). benchmarks/compare_bmm.py measures.
STACK_MIN_WORK = 1 << 19


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


def _operand(a):
    """(transpose flag, leading dimension) for a 2-D operand, or None if it needs a copy."""
    s0, s1 = a.strides
    item = a.itemsize
    if a.flags.c_contiguous and s1 == item:
        return _NO_TRANS, max(a.shape[1], 1)
    if a.flags.f_contiguous and s0 == item:
        return _TRANS, max(a.shape[0], 1)
    return None


def matmul(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None,
           accumulate: bool = False, alpha: float = 1.0) -> np.ndarray:
    """``x @ y`` for NumPy arrays (any ranks NumPy accepts); with ``accumulate``,
    ``out += x @ y`` (GEMM's beta = 1: ``linear`` pre-fills ``out`` with the bias, which saves
    the separate read-modify-write pass of adding it afterwards). ``alpha`` (2-D, with
    ``accumulate``): ``out += alpha * x @ y`` (GEMM's alpha: a compiled step folds SGD's
    ``W -= lr * g^T h`` into the weight-gradient product)."""
    if accumulate and out is None:
        raise ValueError("blas.matmul: accumulate=True needs out=")
    if alpha != 1.0:
        if not accumulate or x.ndim != 2 or y.ndim != 2:
            raise ValueError("blas.matmul: alpha needs accumulate=True and 2-D operands")
        if _gemm is None:
            _load()
        if not _gemm or _gemm.get(x.dtype) is None or y.dtype != x.dtype or \
                out.dtype != x.dtype or not out.flags.c_contiguous:
            out += alpha * np.matmul(x, y)
            return out
    if _gemm is None:
        _load()
    fn = _gemm.get(x.dtype) if _gemm else None
    if fn is not None and x.ndim >= 2 and y.ndim >= 2 and (x.ndim > 2 or y.ndim > 2) and \
            y.dtype == x.dtype:
        res = _matmul_stack(fn, x, y, out, accumulate)
        if res is not None:
            return res
    if fn is None or x.ndim != 2 or y.ndim != 2 or y.dtype != x.dtype or (
            out is not None and not out.flags.c_contiguous):
        if accumulate:
            out += np.matmul(x, y)
            return out
        return np.matmul(x, y, out=out) if out is not None else np.matmul(x, y)
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0]:
        return np.matmul(x, y)  # NumPy raises its shape error
    ta, tb = _operand(x), _operand(y)
    if ta is None:
        x = np.ascontiguousarray(x)
        ta = (_NO_TRANS, max(k, 1))
    if tb is None:
        y = np.ascontiguousarray(y)
        tb = (_NO_TRANS, max(n, 1))
    if out is None:
        out = cpu.empty((m, n), x.dtype)  # pooled: no page faults per step
    if m and n:
        if k == 0:
            if not accumulate:
                out[...] = 0
        else:
            fn(_ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, _address(x), ta[1], _address(y),
               tb[1], 1.0 if accumulate else 0.0, _address(out), max(n, 1))
    return out


# ------------------------------------------------------------------------------ stacks of matrices

def _matrix_layout(a):
    """(transpose flag, leading dimension) of the matrices (last two dims) of ``a`` as GEMM reads
    them, or None when neither dim has unit stride. A dim of size 1 has no stride to honour."""
    rows, cols = a.shape[-2:]
    item = a.itemsize
    sr, sc = a.strides[-2:]
    if sr % item or sc % item:
        return None
    sr = sr // item if rows > 1 else None
    sc = sc // item if cols > 1 else None
    if sc in (None, 1) and (sr is None or sr >= cols):
        return _NO_TRANS, sr if sr is not None else max(cols, 1)
    if sr in (None, 1) and (sc is None or sc >= rows):
        return _TRANS, sc if sc is not None else max(rows, 1)
    return None


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


def _matmul_stack(gemm, x, y, out, accumulate):
    """``x @ y`` for stacks (``np.matmul``'s broadcasting of the batch dims) through MKL, or None
    when NumPy must do it: small matrices (``STACK_MIN_WORK``), a shape error (NumPy raises its
    own), an ``out`` that isn't a C-contiguous array of the result's shape, sizes past
    MKL_INT."""
    m, k = x.shape[-2:]
    n = y.shape[-1]
    if y.shape[-2] != k or m * n * k < STACK_MIN_WORK:
        return None
    try:
        batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    except ValueError:
        return None
    shape = batch + (m, n)
    if out is None:
        out = cpu.empty(shape, x.dtype)  # pooled, as the 2-D path
    elif out.shape != shape or out.dtype != x.dtype or not out.flags.c_contiguous:
        return None
    if out.size == 0:
        return out
    if k == 0:
        if not accumulate:
            out[...] = 0
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
    if sx is not None and sy is not None and \
            _gemm_batch_strided(x, y, out, nb, (sx, sy, m * n), n, accumulate):
        return out
    beta = 1.0 if accumulate else 0.0
    item = x.itemsize
    ax = _address(x) + _offsets(batch, xs, item)
    ay = _address(y) + _offsets(batch, ys, item)
    ac = _address(out) + np.arange(nb, dtype=np.int64) * (m * n * item)
    pointers = _gemm_batch.get(x.dtype)
    if pointers is not None:
        i32, scalar = np.intc, x.dtype.type
        args = [np.array([v], i32) for v in (la[0], lb[0], m, n, k)]
        args += [np.array([1.0], scalar), ax, np.array([la[1]], i32), ay,
                 np.array([lb[1]], i32), np.array([beta], scalar), ac, np.array([n], i32),
                 np.array([nb], i32)]  # one group: every pointer array has nb entries
        *addresses, group_size = [_address(a) for a in args]  # args keeps the arrays alive
        pointers(_ROW_MAJOR, *addresses, 1, group_size)
        return out
    for px, py, pc in zip(ax.tolist(), ay.tolist(), ac.tolist()):  # an MKL before batch APIs
        gemm(_ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, px, la[1], py, lb[1], beta, pc, n)
    return out


def _gemm_batch_strided(x, y, out, nb, strides, ldc, accumulate):
    """``out[i] (+)= x[i] @ y[i]`` for ``i < nb`` as one ``cblas_?gemm_batch_strided`` call, or
    False (nothing done) where this MKL lacks it or GEMM can't read ``x``'s or ``y``'s matrices in
    place. The matrices are the last two dims of ``x``, ``y`` and ``out`` (its rows ``ldc``
    elements apart); matrix ``i`` of each lies ``i * strides[j]`` elements past its first. Both
    stack entries make their one MKL call here: ``matmul_batch`` with the stacks' own batch
    strides, ``matmul``'s broadcast stacks with the batch dims folded into one stride each."""
    strided = _gemm_strided.get(x.dtype)
    la, lb = _matrix_layout(x), _matrix_layout(y)
    if strided is None or la is None or lb is None:
        return False
    m, k = x.shape[-2:]
    n = y.shape[-1]
    sx, sy, sc = strides
    strided(_ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, _address(x), la[1], sx, _address(y), lb[1],
            sy, 1.0 if accumulate else 0.0, _address(out), ldc, sc, nb)
    return True


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
    if ok and _gemm_batch_strided(x, y, out, nb, [a.strides[0] // item for a in (x, y, out)],
                                  out.strides[1] // item, accumulate):
        return out
    for i in range(nb):
        matmul(x[i], y[i], out=out[i], accumulate=accumulate)
    return out
