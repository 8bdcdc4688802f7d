"""The matrix products that record their own nodes: mm, bmm, mv, dot, vdot, and the product's
data on the host or the device that every product (matmul, addmm & co) computes with. CPU
products go through backends.blas (MKL when installed, else NumPy's BLAS); float16 on the CPU
is computed in float32 and rounded once, as PyTorch's CPU kernels do. Backward functions are
written with registered ops, so every product is differentiable to any order."""
from __future__ import annotations

import numpy as np

from ..backends import blas
from ..tensor import Tensor
from .composite import record
from .linalg_args import _legacy, _no_bool, _same_dtype, _tensor_arg, _write_out


def _on_host(*ts):
    for t in ts:  # a loop, not all(<generator>): this runs on every small product
        if t._data.__class__ is not np.ndarray:
            return False
    return True


def _np_matmul(x, y):
    """``x @ y`` of NumPy arrays; float16 is multiplied in float32 (PyTorch's CPU kernels
    accumulate half products in float): the caller rounds."""
    if x.dtype == np.float16:
        return blas.matmul(x.astype(np.float32), y.astype(np.float32))
    return blas.matmul(x, y)


def _matmul_data(a, b):
    """``np.matmul(a._data, b._data)``; on CUDA the tiled kernel (1-D operands are unsqueezed
    views, as torch.matmul does), after PyTorch's device check."""
    x, y = a._data, b._data
    if x.__class__ is np.ndarray and y.__class__ is np.ndarray:
        out = _np_matmul(x, y)
        return out.astype(np.float16) if x.dtype == np.float16 else out
    from .elementwise_call import check_same_device
    check_same_device((a, b))
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    xv = x.expand_dims(0) if x.ndim == 1 else x
    yv = y.expand_dims(1) if y.ndim == 1 else y
    out = CudaArray.wrap(B.kernels().matmul.matmul(xv.kview(), yv.kview()))
    shape = out.shape
    if y.ndim == 1:
        shape = shape[:-1]
    if x.ndim == 1:
        shape = shape[:-2] + shape[-1:] if y.ndim > 1 else shape[:-1]
    return out.reshape(shape) if shape != out.shape else out


def _host_blas(*ts):
    """Operands whose product makes ATen's BLAS call here: float32/float64 on the host."""
    # the NumPy dtype's one-letter code: 'f' float32, 'd' float64 (a cheaper test than the
    # jitgrad dtype's name on mv/dot's per-call path)
    return _on_host(*ts) and ts[0]._data.dtype.char in "fd"


_blas_vector = []  # backends.blas_vector once imported (it imports Numba: not at jitgrad's import)


def _vector_blas():
    if not _blas_vector:
        from ..backends import blas_vector
        _blas_vector.append(blas_vector)
    return _blas_vector[0]


def _addmv_data(mat, vec, bias=None, alpha=1, beta=0):
    """``addmv_out_cpu``: the result holds ``bias`` (expanded) when ``beta != 0``, then one
    gemv with ATen's arguments (backends/blas_vector.py): PyTorch's bits."""
    m = mat._data
    out = np.empty(m.shape[0], m.dtype)
    if beta != 0:
        out[...] = bias._data
    return (_blas_vector[0] if _blas_vector else _vector_blas()).addmv(m, vec._data, out, alpha,
                                                                        beta)


def _mT(x):
    return x.transpose(-1, -2)


# ---------------------------------------------------------------------------- mm / bmm / mv / dot

def _mm_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    a = node.saved("a") if need_b else None
    b = node.saved("b") if need_a else None
    return (_mat1_grad(node, b, g) if need_a else None, _mat2_grad(node, a, g) if need_b else None)


def _mat1_grad(node, m2, g):
    """g m2^T as ATen's mm_mat1_backward computes it: ``(m2 g^T)^T`` when mat1 was column-major
    (its gradient comes out column-major too), ``g m2^T`` otherwise. The two are different
    GEMM calls, and BLAS may sum them in different orders: PyTorch's bits need PyTorch's."""
    if node.ctx.attrs.get("mat1_column_major"):
        return _mT(m2 @ _mT(g))
    return g @ _mT(m2)


def _mat2_grad(node, m1, g):
    """m1^T g, laid out like mat2 (ATen's mm_mat2_backward): when mat2 is column-major (a Linear
    weight's w.t()), computing (g^T m1)^T makes the weight's gradient come out C-contiguous, so
    the leaf adopts it without a copy."""
    if node.ctx.attrs.get("mat2_column_major"):
        return _mT(_mT(g) @ m1)
    return _mT(m1) @ g


def _column_major(t):
    """ATen's test in mm_mat1/mm_mat2_backward: ``strides[0] == 1 && strides[1] == sizes[0]``
    (a transposed contiguous matrix; size-1 dims are not ignored, unlike NumPy's flags)."""
    if t.ndim != 2:
        return False
    s0, s1 = t.stride()
    return s0 == 1 and s1 == t.shape[0]


def _layout_attrs(mat1, mat2):
    return {"mat1_column_major": _column_major(mat1), "mat2_column_major": _column_major(mat2)}


def _save_pair(a, b, na, nb):
    """What a product's backward needs of its two operands, saved as ``na``/``nb``: each
    operand's gradient needs the other, so ``a`` is kept only when ``b`` requires grad."""
    save = []
    if b._requires_grad:
        save.append((na, a))
    if a._requires_grad:
        save.append((nb, b))
    return tuple(save)


def _column_major_host(a):
    """linalg_products._column_major for a non-empty host matrix, from its NumPy strides
    (``Tensor.stride()``'s elements) without building the tuple."""
    item = a.itemsize
    st0, st1 = a.strides
    return st0 // item == 1 and st1 // item == a.shape[0]


def _mm_plain(t1, t2):
    """``mm(t1, t2)`` for non-empty float32/float64 host matrices of one dtype whose inner sizes
    agree, so that none of mm's checks can fail: mm's node (MmBackward0, its backward, saved
    operands and layout attributes) and its product (blas.matmul, which is what mm's
    ``_matmul_data`` calls for these dtypes) without the checks. None otherwise: mm checks and
    raises. Per-op overhead: ``a @ b`` of small matrices is common."""
    x, y = t1._data, t2._data
    if x.__class__ is not np.ndarray or y.__class__ is not np.ndarray:
        return None
    dt = x.dtype
    if y.dtype is not dt or dt.char not in "fd" or x.shape[1] != y.shape[0] or not x.size or \
            not y.size:
        return None
    return record("MmBackward0", (t1, t2), blas.matmul(x, y), _mm_backward,
                  save=_save_pair(t1, t2, "a", "b"),
                  attrs={"mat1_column_major": _column_major_host(x),
                         "mat2_column_major": _column_major_host(y)})


def mm(input, mat2, *, out=None):
    # the common call first: operands none of the checks below can fail on (_mm_plain)
    if out is None and isinstance(input, Tensor) and isinstance(mat2, Tensor) and \
            input._data.ndim == 2 and mat2._data.ndim == 2:
        res = _mm_plain(input, mat2)
        if res is not None:
            return res
    _tensor_arg("mm", "input", 1, input)
    _tensor_arg("mm", "mat2", 2, mat2)
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x"
                           f"{input.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(input, mat2, "mm")
    _no_bool("addmm_impl_cpu_", input)
    res = record("MmBackward0", (input, mat2), _matmul_data(input, mat2), _mm_backward,
                 save=_save_pair(input, mat2, "a", "b"),
                 attrs=_layout_attrs(input, mat2))
    return _write_out("mm", res, out)


def _check_bmm(input, mat2):
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")


def _bmm_plain(t1, t2):
    """``bmm(t1, t2)`` for float32/float64 host stacks of one dtype whose batch and inner sizes
    agree, so that none of bmm's checks can fail: bmm's node and product (blas.matmul, what
    ``_matmul_data`` calls for them) without the checks' Size objects and calls, which cost
    more than a small stack's product; None otherwise (the checked path)."""
    x, y = t1._data, t2._data
    if x.__class__ is not np.ndarray or y.__class__ is not np.ndarray:
        return None
    xs, ys = x.shape, y.shape
    if y.dtype is not x.dtype or x.dtype.char not in "fd" or len(xs) != 3 or len(ys) != 3 or \
            xs[0] != ys[0] or xs[2] != ys[1]:
        return None
    return record("BmmBackward0", (t1, t2), blas.matmul(x, y), _mm_backward,
                  save=_save_pair(t1, t2, "a", "b"))


def bmm(input, mat2, *, out=None):
    # the common call first: operands none of the checks below can fail on (_bmm_plain)
    if out is None and isinstance(input, Tensor) and isinstance(mat2, Tensor):
        res = _bmm_plain(input, mat2)
        if res is not None:
            return res
    _tensor_arg("bmm", "input", 1, input)
    _tensor_arg("bmm", "mat2", 2, mat2)
    _check_bmm(input, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(input.dtype)} but found "
                           f"{_legacy(mat2.dtype)}")
    _no_bool("bmm", input)
    res = record("BmmBackward0", (input, mat2), _matmul_data(input, mat2),
                 _mm_backward, save=_save_pair(input, mat2, "a", "b"))
    return _write_out("bmm", res, out)


def _mv_backward(node, g):
    need_a, need_v = node.ctx.needs_input_grad
    ga = gv = None
    if need_a:
        ga = g.unsqueeze(-1) * node.saved("v")
    if need_v:
        gv = _mT(node.saved("a")) @ g
    return (ga, gv)


def _check_mv(mat, vec, bias=None):
    ms, vs = mat._data.shape, vec._data.shape  # plain tuples: no Size built per read
    if len(ms) != 2 or len(vs) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got "
                           f"{1 if bias is None else bias.ndim}, {len(ms)}, {len(vs)}")
    n = ms[0] if bias is None or bias.ndim == 0 or bias.shape[0] == 1 else bias.shape[0]
    if ms[1] != vs[0] or n != ms[0]:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({ms[0]}x{ms[1]}), vec "
                           f"({vs[0]})")


def mv(input, vec, *, out=None):
    _tensor_arg("mv", "input", 1, input)
    _tensor_arg("mv", "vec", 2, vec)
    _check_mv(input, vec)
    if input.dtype is not vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_legacy(vec.dtype)}, {_legacy(input.dtype)}, and "
                           f"{_legacy(vec.dtype)}")
    _no_bool("addmv_impl_cpu", input)
    data = _addmv_data(input, vec) if _host_blas(input, vec) else _matmul_data(input, vec)
    res = record("MvBackward0", (input, vec), data, _mv_backward,
                 save=_save_pair(input, vec, "a", "v"))
    return _write_out("mv", res, out)


def _dot_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    return (g * node.saved("b") if need_a else None, g * node.saved("a") if need_b else None)


def _dot(fname, node_name, input, other, out):
    _tensor_arg(fname, "input", 1, input)
    _tensor_arg(fname, "tensor" if fname == "dot" else "other", 2, other)  # (PyTorch's names)
    xs, ys = input._data.shape, other._data.shape
    if len(xs) != 1 or len(ys) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(xs)}D and {len(ys)}D tensors")
    if xs[0] != ys[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{xs[0]}] and src [{ys[0]}] to have the "
            f"same number of elements, but got {xs[0]} and {ys[0]} elements respectively")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_legacy(input.dtype)} and {_legacy(other.dtype)}")
    _no_bool("dot", input)
    if _host_blas(input, other):  # dot_impl's ?dot: PyTorch's bits
        data = (_blas_vector[0] if _blas_vector else _vector_blas()).dot(input._data,
                                                                         other._data)
    elif _on_host(input, other):
        x, y = input._data, other._data
        if x.dtype == np.float16:
            data = np.asarray(np.dot(x.astype(np.float32), y.astype(np.float32)), np.float16)
        else:
            data = np.asarray(np.dot(x, y))
    else:
        data = _matmul_data(input, other)
    res = record(node_name, (input, other), data, _dot_backward,
                 save=_save_pair(input, other, "a", "b"))
    return _write_out(fname, res, out)


def dot(input, other, *, out=None):
    return _dot("dot", "DotBackward0", input, other, out)


def vdot(input, other, *, out=None):
    """Real dtypes only (no complex tensors): the conjugate is the identity."""
    return _dot("vdot", "VdotBackward0", input, other, out)
