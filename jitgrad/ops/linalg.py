"""Matrix products: matmul/@ (1-D, 2-D, batched with broadcasting: PyTorch's dispatch, so the
nodes, dtype checks and shape errors are the ones its mm/mv/bmm/dot give), mm, bmm, mv, dot,
vdot, inner, outer, tensordot, kron, trace, and the fused forms addmm, baddbmm, addbmm, addmv,
addr (``beta * input + alpha * product``). CPU products go through backends.blas (MKL when
installed, else NumPy's BLAS); float16 on the CPU is computed in float32 and rounded once, as
PyTorch's CPU kernels do. Backward functions are written with registered ops, so every product
is differentiable to any order."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..backends import blas
from ..tensor import Tensor
from .composite import record
from .out import write_out

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "baddbmm", "addbmm", "addmv", "addr", "tensordot", "trace", "kron", "chain_matmul",
           "multi_dot", "vecdot"]

_ctype = D.c_name  # "float", "long int": the C++ names some of PyTorch's messages use
_legacy = D.scalar_name  # "Float", "Long"


def _tensor_arg(fname, argname, pos, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _no_bool(kernel, t):
    if t.dtype.name == "bool":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _same_dtype(a, b, what="mm"):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_ctype(a.dtype)} != {_ctype(b.dtype)}")


def _on_host(*ts):
    return all(t._data.__class__ is np.ndarray for t in ts)


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


def _mT(x):
    return x.transpose(-1, -2)


def _write_out(fname, result, out):
    """``out=`` (``ops/out.py``): products need ``out`` of the result's exact dtype."""
    if out is None:
        return result
    _tensor_arg(fname, "out", 3, out)
    return write_out(fname, result, out, cast="exact")


# ---------------------------------------------------------------------------- mm / bmm / mv / dot

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


def mm(input, mat2, *, out=None):
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
                 save=_saves(input, mat2), attrs={"mat2_transposed": _transposed(mat2)})
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


def bmm(input, mat2, *, out=None):
    _tensor_arg("bmm", "input", 1, input)
    _tensor_arg("bmm", "mat2", 2, mat2)
    _check_bmm(input, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(input.dtype)} but found "
                           f"{_legacy(mat2.dtype)}")
    _no_bool("bmm", input)
    res = record("BmmBackward0", (input, mat2), _matmul_data(input, mat2),
                 _mm_backward, save=_saves(input, mat2))
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
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got "
                           f"{1 if bias is None else bias.ndim}, {mat.ndim}, {vec.ndim}")
    n = mat.shape[0] if bias is None or bias.ndim == 0 or bias.shape[0] == 1 else \
        bias.shape[0]
    if mat.shape[1] != vec.shape[0] or n != mat.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({mat.shape[0]}"
                           f"x{mat.shape[1]}), vec ({vec.shape[0]})")


def mv(input, vec, *, out=None):
    _tensor_arg("mv", "input", 1, input)
    _tensor_arg("mv", "vec", 2, vec)
    _check_mv(input, vec)
    if input.dtype is not vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_legacy(vec.dtype)}, {_legacy(input.dtype)}, and "
                           f"{_legacy(vec.dtype)}")
    _no_bool("addmv_impl_cpu", input)
    save = []
    if vec._requires_grad:
        save.append(("a", input))
    if input._requires_grad:
        save.append(("v", vec))
    res = record("MvBackward0", (input, vec), _matmul_data(input, vec), _mv_backward,
                 save=tuple(save))
    return _write_out("mv", res, out)


def _dot_backward(node, g):
    need_a, need_b = node.ctx.needs_input_grad
    return (g * node.saved("b") if need_a else None, g * node.saved("a") if need_b else None)


def _dot(fname, node_name, input, other, out):
    _tensor_arg(fname, "input", 1, input)
    _tensor_arg(fname, "other", 2, other)
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
    _no_bool("dot", input)
    if _on_host(input, other):
        x, y = input._data, other._data
        if x.dtype == np.float16:
            data = np.asarray(np.dot(x.astype(np.float32), y.astype(np.float32)), np.float16)
        else:
            data = np.asarray(np.dot(x, y))
    else:
        data = _matmul_data(input, other)
    res = record(node_name, (input, other), data, _dot_backward, save=_saves(input, other))
    return _write_out(fname, res, out)


def dot(input, other, *, out=None):
    return _dot("dot", "DotBackward0", input, other, out)


def vdot(input, other, *, out=None):
    """Real dtypes only (no complex tensors): the conjugate is the identity."""
    return _dot("vdot", "VdotBackward0", input, other, out)


def outer(input, vec2, *, out=None):
    _tensor_arg("outer", "input", 1, input)
    _tensor_arg("outer", "vec2", 2, vec2)
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return _write_out("outer", input.reshape(-1, 1) * vec2, out)


def ger(input, vec2, *, out=None):
    return outer(input, vec2, out=out)


def inner(input, other, *, out=None):
    _tensor_arg("inner", "input", 1, input)
    _tensor_arg("inner", "other", 2, other)
    if input.ndim == 0 or other.ndim == 0:
        return _write_out("inner", input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return _write_out("inner", _tensordot(input, other, [-1], [-1]), out)


# ------------------------------------------------------------------------------------- matmul

def _unsafe_view_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _unsafe_view(x, shape):
    """PyTorch's matmul folds batched products through _unsafe_view (UnsafeViewBackward0)."""
    shape = tuple(shape)
    return record("UnsafeViewBackward0", (x,), x._data.reshape(shape), _unsafe_view_backward,
                  attrs={"shape": tuple(x._data.shape)})


def _squeeze4_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _squeeze_inplace_like(x, dim):
    # matmul(1-D, 2-D) squeezes the temporary row in place in PyTorch: SqueezeBackward4
    shape = tuple(x._data.shape)
    return record("SqueezeBackward4", (x,), x._data.reshape(shape[:dim] + shape[dim + 1:]),
                  _squeeze4_backward, attrs={"shape": shape})


def _strides(t):
    s = getattr(t._data, "strides", None)
    return tuple(s) if s is not None else None


def _should_fold(t1, t2):
    """PyTorch's should_fold: fold the larger operand's batch into mm/mv rows."""
    larger = t1.ndim >= t2.ndim
    big, small = (t1, t2) if larger else (t2, t1)
    if not (big.ndim >= 3 and small.ndim <= 2):
        return False
    if small._requires_grad:
        return True
    if t1.ndim == 2:
        return False
    if big.numel() == 0:
        return True
    shape = tuple(big.shape)
    strides = _strides(big)
    if strides is None:
        return False
    if not larger:  # big is tensor2.mT
        shape = shape[:-2] + (shape[-1], shape[-2])
        strides = strides[:-2] + (strides[-1], strides[-2])
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 1))


def _broadcast_batch(a, b):
    """infer_size's error for the batch dims of matmul's operands."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def matmul(input, other, *, out=None):
    _tensor_arg("matmul", "input", 1, input)
    _tensor_arg("matmul", "other", 2, other)
    res = _matmul(input, other)
    return _write_out("matmul", res, out)


def _matmul(t1, t2):
    d1, d2 = t1.ndim, t2.ndim
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return dot(t1, t2)
    if d1 == 2 and d2 == 1:
        return mv(t1, t2)
    if d1 == 1 and d2 == 2:
        return _squeeze_inplace_like(mm(t1.unsqueeze(0), t2), 0)
    if d1 == 2 and d2 == 2:
        return mm(t1, t2)
    if _should_fold(t1, t2):
        transpose = d2 > d1
        a = _mT(t2) if transpose else t1
        b = t2 if not transpose else (t1.t() if d1 == 2 else t1)
        out_shape = tuple(a.shape[:-1])
        rows = int(np.prod(out_shape))
        folded = a.reshape(rows, a.shape[-1])
        if b.ndim == 2:
            res = _unsafe_view(mm(folded, b), out_shape + (b.shape[1],))
            return _mT(res).contiguous() if transpose else res
        return _unsafe_view(mv(folded, b), out_shape)
    if d1 == 3 and d2 == 3 and t1.shape[0] != t2.shape[0]:
        # PyTorch folds a broadcast unit batch of an operand that requires grad (should_fold's
        # gradient argument): (1, n, m) @ (b, m, p) is (n, m) @ (b, m, p)
        if t1.shape[0] == 1 and t1._requires_grad:
            return _matmul(t1.squeeze(0), t2)
        if t2.shape[0] == 1 and t2._requires_grad:
            return _matmul(t1, t2.squeeze(0))
    n = t1.shape[-2] if d1 > 1 else 1
    m1 = t1.shape[-1]
    m2 = t2.shape[-2] if d2 > 1 else t2.shape[0]
    p = t2.shape[-1] if d2 > 1 else 1
    batch = _broadcast_batch(tuple(t1.shape[:-2]), tuple(t2.shape[:-2]))
    nb = int(np.prod(batch))
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    # matmul(1-D, N-D) and (N-D, 1-D): the vector is a row / column (unsqueeze, as PyTorch)
    a = t1.unsqueeze(0) if d1 == 1 else t1
    a = a.expand(batch + (n, m1)).reshape(nb, n, m1)
    if d2 == 1:
        b = t2.unsqueeze(-1).expand(batch + (m2, p)).reshape(nb, m2, p)
        return _unsafe_view(bmm(a, b).squeeze(-1), out_shape)
    b = t2.expand(batch + (m2, p)).reshape(nb, m2, p)
    return _unsafe_view(bmm(a, b), out_shape)


def __matmul__(self, other):
    """``a @ b``: Python's TypeError (NotImplemented) for a non-Tensor operand, as PyTorch."""
    if not isinstance(other, Tensor):
        return NotImplemented
    return _matmul(self, other)


def __rmatmul__(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return _matmul(other, self)


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        m = matrices[0]
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {m.ndim}D tensor")
        return _write_out("chain_matmul", m.clone(), out)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {m.ndim}D tensor")
    return _write_out("chain_matmul", multi_dot(list(matrices)), out)


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the first/last operand may be 1-D (a row / column vector); the
    product is taken left to right (PyTorch orders by cost; the values agree up to rounding)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype is not first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {first.dtype} and tensor {i} {t.dtype}")
    if last.dtype is not first.dtype:
        raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                           f"{first.dtype} and tensor {len(tensors) - 1} {last.dtype}")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(1) if last.ndim == 1 else last]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(mats[i].shape)} and "
                f"{list(mats[i + 1].shape)} cannot be multiplied")
    res = mats[0]
    for m in mats[1:]:
        res = mm(res, m)
    shape = tuple(res.shape)
    if first.ndim == 1:
        shape = shape[1:]
    if last.ndim == 1:
        shape = shape[:-1]
    res = res.view(shape)  # PyTorch views the product to the result's shape (ViewBackward0)
    return _write_out("multi_dot", res, out)


def vecdot(x, y, *, dim=-1, out=None):
    """torch.linalg.vecdot for real dtypes: ``(x * y).sum(dim)``."""
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but x has "
                           f"dtype {x.dtype} and y has dtype {y.dtype} instead.")
    return _write_out("vecdot", (x * y).sum(dim), out)


# ---------------------------------------------------------------------------------- tensordot

def _wrap_dim(d, nd):
    lo, hi = -max(nd, 1), max(nd, 1) - 1
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {d})")
    return d % max(nd, 1)


def _dim_set(dims, nd):
    seen = []
    for d in dims:
        w = _wrap_dim(d, nd)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return seen


def _tensordot(a, b, dims_a, dims_b):
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = [_wrap_dim(int(d), a.ndim) for d in dims_a]
    db = [_wrap_dim(int(d), b.ndim) for d in dims_b]
    csize = 1
    t1, t2 = a, b
    for x, y, rx, ry in zip(da, db, dims_a, dims_b):
        s1, s2 = a.shape[x], b.shape[y]
        if s2 == 1:  # broadcast dimensions are summed right away
            t1 = t1.sum(x, keepdim=True)
        elif s1 == 1:
            t2 = t2.sum(y, keepdim=True)
        else:
            if s1 != s2:
                raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} "
                                   f"in dim {rx} and second has size {s2} in dim {ry}")
            csize *= s1
    c1, c2 = _dim_set(da, a.ndim), _dim_set(db, b.ndim)
    p1 = [i for i in range(a.ndim) if i not in c1]
    p2 = [i for i in range(b.ndim) if i not in c2]
    rsizes = [t1.shape[i] for i in p1] + [t2.shape[i] for i in p2]
    size1 = int(np.prod([t1.shape[i] for i in p1]))
    size2 = int(np.prod([t2.shape[i] for i in p2]))
    t1 = t1.permute(p1 + da).reshape(size1, csize)
    t2 = t2.permute(db + p2).reshape(csize, size2)
    return mm(t1, t2).reshape(rsizes)


def tensordot(a, b, dims=2, out=None):
    _tensor_arg("tensordot", "a", 1, a)
    _tensor_arg("tensordot", "b", 2, b)
    if isinstance(dims, Tensor):
        if dims.numel() > 1:
            dims = (dims[0].tolist(), dims[1].tolist())
        else:
            dims = int(dims.item())
            if dims < 0:
                raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
            dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
            return _write_out("tensordot", _tensordot(a, b, dims_a, dims_b), out)
    if isinstance(dims, (bool, float, str)) or not isinstance(dims, (int, np.integer, tuple,
                                                                      list)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
        for name, pos, d in (("dims_self", 3, dims_a), ("dims_other", 4, dims_b)):
            if not isinstance(d, (tuple, list)):
                raise TypeError(f"tensordot(): argument '{name}' (position {pos}) must be tuple "
                                f"of ints, not {type(d).__name__}")
    else:
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    return _write_out("tensordot", _tensordot(a, b, list(dims_a), list(dims_b)), out)


# ---------------------------------------------------------------------------------- trace, kron

def _trace_backward(node, g):
    n, m = node.ctx.attrs["shape"]
    from .basic import eye
    return (g * eye(n, m, dtype=g.dtype, device=g.device),)


def trace(input):
    _tensor_arg("trace", "input", 1, input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    _no_bool("trace", input)
    n, m = input.shape
    k = min(n, m)
    with grad_mode.no_grad():
        diag = input.reshape(-1)[0:k * (m + 1):m + 1]
        data = diag.sum()._data
    return record("TraceBackward0", (input,), data, _trace_backward,
                  attrs={"shape": (n, m)})


def kron(input, other, *, out=None):
    """``a[i] * b[j]`` at ``i * b.shape + j`` per dim: interleaved broadcast product, folded
    through _unsafe_view as PyTorch does."""
    _tensor_arg("kron", "input", 1, input)
    _tensor_arg("kron", "other", 2, other)
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(tuple(x for s in sa for x in (s, 1)))
    b = other.reshape(tuple(x for s in sb for x in (1, s)))
    prod = a * b
    res = _unsafe_view(prod, tuple(x * y for x, y in zip(sa, sb)))
    return _write_out("kron", res, out)


# ------------------------------------------------------- addmm and the other beta*x + alpha*prod

def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def _coef(v, dt, name, strict=False):
    """alpha/beta for a result of dtype ``dt``: integers truncate floats (PyTorch's Scalar
    conversion); ``strict`` ops refuse them (addr)."""
    v = _scalar(v)
    if strict and dt.name != "bool" and isinstance(v, bool):
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if strict and not dt.is_floating_point and isinstance(v, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           "floating point number.")
    if dt.name == "bool":
        return bool(v)
    if not dt.is_floating_point:
        return int(v)
    return v


def _check_bias(bias, shape):
    """``bias.expand(shape)``'s checks (addmm & co expand ``input`` to the product's shape)."""
    bs = tuple(bias.shape)
    if len(bs) > len(shape):
        raise RuntimeError(
            f"expand(torch.{_legacy(bias.dtype)}Tensor{{{list(bs)}}}, size={list(shape)}): the "
            f"number of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(bs)})")
    lead = len(shape) - len(bs)
    for i, s in enumerate(bs):
        if s != shape[lead + i] and s != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[lead + i]}) must match the existing "
                f"size ({s}) at non-singleton dimension {lead + i}.  Target sizes: "
                f"{list(shape)}.  Tensor sizes: {list(bs)}")


def _combine(bias, prod, beta, alpha, dtype):
    """``beta * bias + alpha * prod`` as data; ``prod`` is float32 for float16 operands on the
    CPU (rounded once here). ``beta == 0`` ignores ``bias`` (NaN and inf too), as PyTorch."""
    if prod.__class__ is np.ndarray and bias._data.__class__ is np.ndarray:
        if dtype.name == "bool":
            res = prod.astype(bool) if alpha else np.zeros(prod.shape, bool)
            if beta:
                res = res | bias._data
            return np.ascontiguousarray(np.broadcast_to(res, prod.shape))
        if alpha != 1:
            prod = prod * prod.dtype.type(alpha) if prod.dtype.kind == "f" else prod * alpha
        if beta != 0:
            b = bias._data.astype(prod.dtype, copy=False)
            if beta != 1:
                b = b * (prod.dtype.type(beta) if prod.dtype.kind == "f" else beta)
            prod = prod + b
        return np.ascontiguousarray(prod.astype(dtype.np, copy=False))
    from .elementwise_call import check_same_device
    check_same_device((bias, Tensor._make(prod)))
    with grad_mode.no_grad():
        p = Tensor._make(prod)
        res = p if alpha == 1 else p * alpha
        if beta != 0:
            res = res + (bias if beta == 1 else bias * beta)
        res = res.expand(tuple(p.shape)).contiguous() if tuple(res.shape) != tuple(p.shape) \
            else res
        if res.dtype is not dtype:
            res = res.to(dtype)
    return res._data


def _host_prod(a, b):
    """The product's data without rounding float16 (see _combine): float32 for float16
    operands, on the host and on the device alike."""
    if _on_host(a, b):
        return _np_matmul(a._data, b._data)
    if a.dtype.name == "float16":
        with grad_mode.no_grad():
            return _matmul_data(a.float(), b.float())
    return _matmul_data(a, b)


def _beta_alpha_backward(node, g, vjp_1, vjp_2):
    """Gradients of ``beta * input + alpha * f(x1, x2)`` (addmm, baddbmm, addbmm, addmv, addr):
    ``vjp_1(g)`` / ``vjp_2(g)`` are f's VJPs, called only for the inputs that need one."""
    a = node.ctx.attrs
    need_bias, need_1, need_2 = node.ctx.needs_input_grad
    alpha, beta = a["alpha"], a["beta"]

    def scaled(t, k):
        return t if k == 1 else t * k

    return (scaled(g, beta) if need_bias else None,
            scaled(vjp_1(g), alpha) if need_1 else None,
            scaled(vjp_2(g), alpha) if need_2 else None)


def _addmm_backward(node, g):
    return _beta_alpha_backward(node, g, lambda g: g @ _mT(node.saved("m2")),
                                lambda g: _mat2_grad(node, node.saved("m1"), g))


def _save_pair(a, b, na, nb):
    save = []
    if b._requires_grad:
        save.append((na, a))
    if a._requires_grad:
        save.append((nb, b))
    return tuple(save)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("mat1", mat1), ("mat2", mat2)), 1):
        _tensor_arg("addmm", n, i, t)
    for n, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{n} must be a matrix, got {t.ndim}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_legacy(input.dtype)} and {_legacy(mat2.dtype)}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_legacy(mat1.dtype)} and {_legacy(mat2.dtype)}")
    _no_bool("addmm_impl_cpu_", mat1)
    shape = (mat1.shape[0], mat2.shape[1])
    _check_bias(input, shape)
    alpha, beta = _coef(alpha, mat1.dtype, "alpha"), _coef(beta, mat1.dtype, "beta")
    if _on_host(input, mat1, mat2) and mat1.dtype.name != "float16":
        prod = blas.matmul(mat1._data, mat2._data)
        if alpha != 1:
            prod *= alpha
        if beta != 0:
            bias = input._data if beta == 1 else input._data * beta
            data = np.add(prod, bias, out=prod)
        else:
            data = prod
    else:
        if not _on_host(input, mat1, mat2):
            from .elementwise_call import check_same_device
            check_same_device((input, mat1, mat2))
        data = _combine(input, _host_prod(mat1, mat2), beta, alpha, mat1.dtype)
    res = record("AddmmBackward0", (input, mat1, mat2), data, _addmm_backward,
                 save=_save_pair(mat1, mat2, "m1", "m2"),
                 attrs={"alpha": alpha, "beta": beta, "mat2_transposed": _transposed(mat2)})
    return _write_out("addmm", res, out)


def _baddbmm_backward(node, g):
    a = node.ctx.attrs

    def per_batch(g):  # addbmm: the output is the sum over the batch
        return g.unsqueeze(0).expand(a["batch"], *g.shape) if a["sum_batch"] else g

    return _beta_alpha_backward(node, g, lambda g: per_batch(g) @ _mT(node.saved("b2")),
                                lambda g: _mT(node.saved("b1")) @ per_batch(g))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), 1):
        _tensor_arg("baddbmm", n, i, t)
    _check_bmm(batch1, batch2)
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_ctype(input.dtype)}, "
                           f"batch1: {_ctype(batch1.dtype)}, batch2: {_ctype(batch2.dtype)}")
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(batch1.dtype)} but found "
                           f"{_legacy(batch2.dtype)}")
    _no_bool("baddbmm", batch1)
    _check_bias(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    alpha, beta = _coef(alpha, batch1.dtype, "alpha"), _coef(beta, batch1.dtype, "beta")
    data = _combine(input, _host_prod(batch1, batch2), beta, alpha, batch1.dtype)
    res = record("BaddbmmBackward0", (input, batch1, batch2), data, _baddbmm_backward,
                 save=_save_pair(batch1, batch2, "b1", "b2"),
                 attrs={"alpha": alpha, "beta": beta, "sum_batch": False})
    return _write_out("baddbmm", res, out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), 1):
        _tensor_arg("addbmm", n, i, t)
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")
    if input.dtype is not batch2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_legacy(input.dtype)} and {_legacy(batch2.dtype)}")
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_legacy(batch1.dtype)} and {_legacy(batch2.dtype)}")
    _no_bool("addmm_impl_cpu_", batch1)
    _check_bias(input, (batch1.shape[1], batch2.shape[2]))
    alpha, beta = _coef(alpha, batch1.dtype, "alpha"), _coef(beta, batch1.dtype, "beta")
    if _on_host(batch1, batch2):
        # one GEMM: (n, B*k) @ (B*k, p)
        b, n, k = batch1._data.shape
        x = np.ascontiguousarray(batch1._data.transpose(1, 0, 2)).reshape(n, b * k)
        prod = _np_matmul(x, batch2._data.reshape(b * k, batch2._data.shape[2]))
    else:
        with grad_mode.no_grad():
            prod = Tensor._make(_matmul_data(batch1, batch2)).sum(0)._data
    data = _combine(input, prod, beta, alpha, batch1.dtype)
    res = record("AddbmmBackward0", (input, batch1, batch2), data, _baddbmm_backward,
                 save=_save_pair(batch1, batch2, "b1", "b2"),
                 attrs={"alpha": alpha, "beta": beta, "sum_batch": True,
                        "batch": batch1.shape[0]})
    return _write_out("addbmm", res, out)


def _addmv_backward(node, g):
    return _beta_alpha_backward(node, g, lambda g: g.unsqueeze(-1) * node.saved("v"),
                                lambda g: _mT(node.saved("m")) @ g)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("mat", mat), ("vec", vec)), 1):
        _tensor_arg("addmv", n, i, t)
    if input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    _check_mv(mat, vec, input)
    if not (input.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_legacy(input.dtype)}, {_legacy(mat.dtype)}, and "
                           f"{_legacy(vec.dtype)}")
    _no_bool("addmv_impl_cpu", mat)
    alpha, beta = _coef(alpha, mat.dtype, "alpha"), _coef(beta, mat.dtype, "beta")
    data = _combine(input, _host_prod(mat, vec), beta, alpha, mat.dtype)
    res = record("AddmvBackward0", (input, mat, vec), data, _addmv_backward,
                 save=_save_pair(mat, vec, "m", "v"), attrs={"alpha": alpha, "beta": beta})
    return _write_out("addmv", res, out)


def _addr_backward(node, g):
    # the vectors may have a narrower dtype than the (promoted) result
    return _beta_alpha_backward(node, g, lambda g: g @ node.saved("v2").to(g.dtype),
                                lambda g: _mT(g) @ node.saved("v1").to(g.dtype))


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """PyTorch's addr promotes its operands' dtypes (bool: logical and/or)."""
    for i, (n, t) in enumerate((("input", input), ("vec1", vec1), ("vec2", vec2)), 1):
        _tensor_arg("addr", n, i, t)
    for n, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {n}, but got {v.ndim}-D")
    from .. import _dtype as D
    dt = D.promote_types(D.promote_types(input.dtype, vec1.dtype), vec2.dtype)
    _check_bias(input, (vec1.shape[0], vec2.shape[0]))
    beta, alpha = _coef(beta, dt, "beta", True), _coef(alpha, dt, "alpha", True)
    with grad_mode.no_grad():
        v1, v2 = vec1.to(dt), vec2.to(dt)
        bias = input.to(dt)
    if _on_host(v1, v2):
        x, y = v1._data, v2._data
        if dt.name == "float16":
            x, y = x.astype(np.float32), y.astype(np.float32)
        prod = np.multiply.outer(x, y) if dt.name != "bool" else np.logical_and.outer(x, y)
    else:
        with grad_mode.no_grad():
            prod = (v1.reshape(-1, 1) * v2)._data
    data = _combine(bias, prod, beta, alpha, dt)
    res = record("AddrBackward0", (input, vec1, vec2), data, _addr_backward,
                 save=_save_pair(vec1, vec2, "v1", "v2"), attrs={"alpha": alpha, "beta": beta})
    return _write_out("addr", res, out)
