"""Products written as compositions of other ops: tensordot (permute + reshape + mm) and inner
(a tensordot over the last dims), linalg.vecdot, trace; outer/ger and kron (broadcast products,
no sum)."""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .linalg_args import _no_bool, _tensor_arg, _write_out
from .linalg_matmul import _unsafe_view
from .linalg_products import dot, mm
from .parser_errors import parser_type_name


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
    if size1 == 1 and size2 == 1:
        # PyTorch 2.13 takes a dot product here (its ?dot's bits, not a 1 x k x 1 GEMM's)
        return dot(t1.reshape(csize), t2.reshape(csize)).reshape(rsizes)
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
                                f"of ints, not {parser_type_name(d)}")
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
