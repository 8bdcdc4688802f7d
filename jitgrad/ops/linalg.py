"""Matrix products: matmul/@ (1-D, 2-D, batched with broadcasting), mm, bmm, mv, dot, outer,
addmm. CPU products go through backends.blas (MKL when installed, else NumPy's BLAS)."""
from __future__ import annotations

import numpy as np

from ..backends import blas
from ..tensor import Tensor
from .composite import record

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm"]


def _ctype(dt):
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int"}.get(
        dt.name, dt.name)


def _same_dtype(a, b, what="mm"):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_ctype(a.dtype)} != {_ctype(b.dtype)}")


def _matmul_data(a, b):
    """``np.matmul(a._data, b._data)``; on CUDA the tiled kernel (1-D operands are unsqueezed
    views, as torch.matmul does), after PyTorch's device check."""
    x, y = a._data, b._data
    if x.__class__ is np.ndarray and y.__class__ is np.ndarray:
        return blas.matmul(x, y)
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


def _mT(x):
    return x.transpose(-1, -2)


def _mm_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    a = node.saved("a") if need_b else None
    b = node.saved("b") if need_a else None
    return (g @ _mT(b) if need_a else None, _mat2_grad(node, a, g) if need_b else None)


def _mat2_grad(node, m1, g):
    """m1^T g, laid out like mat2: when mat2 is a transposed view (a Linear weight's w.t()),
    computing (g^T m1)^T makes the weight's gradient come out C-contiguous (as PyTorch's
    mm_mat2_backward does), so the leaf adopts it without a copy."""
    if node.ctx.attrs.get("mat2_transposed"):
        return _mT(_mT(g) @ m1)
    return _mT(m1) @ g


def _transposed(t):
    d = t._data
    return d.ndim == 2 and d.flags.f_contiguous and not d.flags.c_contiguous


def _saves(a, b):
    save = []
    if b._requires_grad:
        save.append(("a", a))
    if a._requires_grad:
        save.append(("b", b))
    return tuple(save)


def mm(input, mat2):
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x"
                           f"{input.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(input, mat2, "mm")
    return record("MmBackward0", (input, mat2), _matmul_data(input, mat2), _mm_backward,
                  save=_saves(input, mat2), attrs={"mat2_transposed": _transposed(mat2)})


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3
                           else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    _same_dtype(input, mat2, "bmm")
    return record("BmmBackward0", (input, mat2), _matmul_data(input, mat2),
                  _mm_backward, save=_saves(input, mat2))


def _mv_backward(node, g):
    need_a, need_v = node.ctx.needs_input_grad
    ga = gv = None
    if need_a:
        ga = g.unsqueeze(-1) * node.saved("v")
    if need_v:
        gv = _mT(node.saved("a")) @ g
    return (ga, gv)


def mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec.ndim}, {input.ndim}, "
                           f"{vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}"
                           f"x{input.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype(input, vec, "mv")
    save = []
    if vec._requires_grad:
        save.append(("a", input))
    if input._requires_grad:
        save.append(("v", vec))
    return record("MvBackward0", (input, vec), _matmul_data(input, vec), _mv_backward,
                  save=tuple(save))


def _dot_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    return (g * node.saved("b") if need_a else None, g * node.saved("a") if need_b else None)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
            f"[{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
            f"and {other.shape[0]} elements respectively")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_legacy(input.dtype)} and {_legacy(other.dtype)}")
    data = _matmul_data(input, other) if input.is_cuda or other.is_cuda else \
        np.asarray(np.dot(input._data, other._data))
    return record("DotBackward0", (input, other), data,
                  _dot_backward, save=_saves(input, other))


def _legacy(dt):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int"}.get(
        dt.name, dt.name)


vdot = dot


def inner(input, other):
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    return matmul(input, _mT(other) if other.ndim > 1 else other)


def outer(input, vec2):
    return input.reshape(-1, 1) * vec2


ger = outer


def _unsafe_view_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _unsafe_view(x, shape):
    """PyTorch's matmul folds batched products through _unsafe_view (UnsafeViewBackward0)."""
    return record("UnsafeViewBackward0", (x,), x._data.reshape(shape), _unsafe_view_backward,
                  attrs={"shape": tuple(x._data.shape)})


def _squeeze4_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _squeeze_inplace_like(x, dim):
    # matmul(1-D, 2-D) squeezes the temporary row in place in PyTorch: SqueezeBackward4
    shape = tuple(x._data.shape)
    data = np.squeeze(x._data, axis=dim)
    return record("SqueezeBackward4", (x,), data, _squeeze4_backward, attrs={"shape": shape})


def _broadcast_matmul(a, b, inner_name):
    """Batched matmul with broadcasting: one BLAS call per batch through np.matmul."""
    data = _matmul_data(a, b)
    out = record(inner_name, (a, b), data, _mm_backward, save=_saves(a, b))
    return _unsafe_view(out, data.shape) if out.requires_grad else out


def matmul(input, other):
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): arguments must be Tensors")
    da, db = input.ndim, other.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    _same_dtype(input, other)
    k_a = input.shape[-1]
    k_b = other.shape[-2] if db > 1 else other.shape[0]
    if k_a != k_b:
        sa = f"{input.shape[-2] if da > 1 else 1}x{k_a}"
        sb = f"{k_b}x{other.shape[-1] if db > 1 else 1}"
        if da <= 2 and db <= 2:
            if da == 1 and db == 1:
                return dot(input, other)
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{int(np.prod(input.shape[:-2])) if da > 2 else 1}, {k_a}] but got: "
            f"[{int(np.prod(other.shape[:-2])) if db > 2 else 1}, {k_b}].")
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 2:
        return mm(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        return _squeeze_inplace_like(mm(input.unsqueeze(0), other), 0)
    if db == 1:
        data = _matmul_data(input, other)
        out = record("MvBackward0", (input, other), data, _mv_batched_backward,
                     save=_saves(input, other))
        return _unsafe_view(out, data.shape) if out.requires_grad else out
    if da == 1:
        data = _matmul_data(input, other)
        out = record("MvBackward0", (input, other), data, _mm_1d_left_backward,
                     save=_saves(input, other))
        return _unsafe_view(out, data.shape) if out.requires_grad else out
    return _broadcast_matmul(input, other, "MmBackward0" if db == 2 else "BmmBackward0")


def _mv_batched_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    ga = gb = None
    if need_a:
        ga = g.unsqueeze(-1) * node.saved("b")
    if need_b:
        gb = (_mT(node.saved("a")) @ g.unsqueeze(-1)).squeeze(-1)
    return (ga, gb)


def _mm_1d_left_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    ga = gb = None
    if need_a:
        ga = (g.unsqueeze(-2) @ _mT(node.saved("b"))).squeeze(-2)
    if need_b:
        gb = node.saved("a").unsqueeze(-1) * g.unsqueeze(-2)
    return (ga, gb)


def _addmm_backward(node, g):
    a = node.ctx.attrs
    need_bias, need_m1, need_m2 = node.ctx.needs_input_grad
    alpha, beta = a["alpha"], a["beta"]
    gb = g1 = g2 = None
    if need_bias:
        gb = g if beta == 1 else g * beta
    if need_m1:
        g1 = g @ _mT(node.saved("m2"))
        g1 = g1 if alpha == 1 else g1 * alpha
    if need_m2:
        g2 = _mat2_grad(node, node.saved("m1"), g)
        g2 = g2 if alpha == 1 else g2 * alpha
    return (gb, g1, g2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1.ndim != 2 else "mat2 must be a matrix")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    if mat1.is_cuda or mat2.is_cuda or input.is_cuda:
        from .elementwise_call import check_same_device
        check_same_device((input, mat1, mat2))
        from ..autograd import grad_mode
        with grad_mode.no_grad():
            p = Tensor._make(_matmul_data(mat1, mat2))
            data = (p if alpha == 1 else p * alpha) + (input if beta == 1 else input * beta)
        data = data._data
        prod = None
    else:
        prod = blas.matmul(mat1._data, mat2._data)
        if alpha != 1:
            prod *= alpha
        bias = input._data if beta == 1 else input._data * beta
        data = np.add(prod, bias, out=prod) if np.broadcast_shapes(bias.shape, prod.shape) == \
            prod.shape and prod.dtype == np.result_type(bias, prod) else prod + bias
    save = []
    if mat2._requires_grad:
        save.append(("m1", mat1))
    if mat1._requires_grad:
        save.append(("m2", mat2))
    return record("AddmmBackward0", (input, mat1, mat2), data, _addmm_backward, save=tuple(save),
                  attrs={"alpha": alpha, "beta": beta, "mat2_transposed": _transposed(mat2)})
