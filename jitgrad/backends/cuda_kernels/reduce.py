"""Axis reductions on the device: sum / prod / amax / amin / all / any and max/min/argmax/argmin
with indices, along any set of dimensions.

One block per output element (grid-stride over outputs when there are more than the grid holds):
each thread folds a strided slice of its row into a register, then the block combines the
threads' partials with a shared-memory tree (``BLOCK/2, BLOCK/4, ... 1``). The input is read
through a :class:`View`, so reducing non-trailing or non-adjacent dimensions needs no transpose
copy: an output's row is addressed by unravelling its index over the kept dimensions and each
element's by unravelling over the reduced ones.

NaN propagates through max/min like PyTorch's (``torch.max`` of a row holding NaN is NaN, and
argmax points at the first NaN); ties pick the first index.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import device_jit, kernel_jit
from .common import (
    View,
    as_view,
    block_size,
    cuda,
    half_as_float32,
    highest,
    lowest,
    max_blocks,
    offset_of,
    pad,
    prod,
    scalar_type,
)

__all__ = ["reduce", "sum", "mean", "prod_", "amax", "amin", "all_", "any_", "max_dim",
           "min_dim", "argmax", "argmin", "make_tree_kernel", "make_arg_kernel", "reduce_layout"]


@device_jit
def _add(a, b):
    return a + b


@device_jit
def _mul(a, b):
    return a * b


@device_jit
def _max(a, b):
    if a != a:
        return a
    if b != b or b > a:
        return b
    return a


@device_jit
def _min(a, b):
    if a != a:
        return a
    if b != b or b < a:
        return b
    return a


@device_jit
def _better_max(v, i, bv, bi):
    """Should (v, i) replace the running (bv, bi) for a max? NaN beats numbers; ties: lower i."""
    if v != v:
        return bv == bv or i < bi
    if bv != bv:
        return False
    return v > bv or (v == bv and i < bi)


@device_jit
def _better_min(v, i, bv, bi):
    if v != v:
        return bv == bv or i < bi
    if bv != bv:
        return False
    return v < bv or (v == bv and i < bi)


@device_jit
def _and(a, b):
    return a and b


@device_jit
def _or(a, b):
    return a or b


# all/any accumulate in bool: the load's cast ``bool(x)`` is ``x != 0`` (NaN counts as true,
# as in PyTorch), so they need no separate ``x != 0`` pass over the input.
_COMBINE = {"sum": _add, "prod": _mul, "max": _max, "min": _min, "all": _and, "any": _or}
_BETTER = {"max": _better_max, "min": _better_min}


def _identity(op, acc_dtype):
    if op in ("sum", "prod", "all", "any"):
        return {"sum": 0, "prod": 1, "all": True, "any": False}[op]
    return lowest(acc_dtype) if op == "max" else highest(acc_dtype)


_tree_cache: dict = {}


def make_tree_kernel(op: str, acc_dtype, tpb: int):
    """``(pyfunc, kernel)`` of the tree reduction ``op`` accumulating in ``acc_dtype``.

    Signature: ``(x, off, kshape, kstrides, rshape, rstrides, m_total, k_total, scale, out)``;
    ``out[m] = scale * fold(row m)`` for ``op == "sum"`` (mean passes 1/K), else the fold.
    """
    key = (op, np.dtype(acc_dtype).str, tpb)
    hit = _tree_cache.get(key)
    if hit is not None:
        return hit
    acc = scalar_type(acc_dtype)
    combine = _COMBINE[op]
    init = _identity(op, acc_dtype)
    scaled = op == "sum"
    half = tpb // 2

    def tree_reduce(x, off, kshape, kstrides, rshape, rstrides, m_total, k_total, scale, out):
        sm = cuda.shared.array(tpb, acc)
        tid = cuda.threadIdx.x
        for m in range(cuda.blockIdx.x, m_total, cuda.gridDim.x):
            base = off + offset_of(m, kshape, kstrides)
            a = acc(init)
            for r in range(tid, k_total, tpb):
                a = combine(a, acc(x[base + offset_of(r, rshape, rstrides)]))
            sm[tid] = a
            cuda.syncthreads()
            s = half
            while s > 0:
                if tid < s:
                    sm[tid] = combine(sm[tid], sm[tid + s])
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                if scaled:
                    out[m] = sm[0] * scale
                else:
                    out[m] = sm[0]
            cuda.syncthreads()

    hit = _tree_cache[key] = (tree_reduce, kernel_jit(tree_reduce))
    return hit


_arg_cache: dict = {}


def make_arg_kernel(op: str, dtype, tpb: int):
    """``(pyfunc, kernel)`` of max/min with the index of the (first) extreme element.

    Signature: ``(x, off, kshape, kstrides, rshape, rstrides, m_total, k_total, out_v, out_i)``;
    ``out_i`` is the C-order flat index within the reduced dimensions.
    """
    key = (op, np.dtype(dtype).str, tpb)
    hit = _arg_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)
    i64 = scalar_type(np.int64)
    better = _BETTER[op]
    init = lowest(dtype) if op == "max" else highest(dtype)
    half = tpb // 2

    def arg_reduce(x, off, kshape, kstrides, rshape, rstrides, m_total, k_total, out_v, out_i):
        sv = cuda.shared.array(tpb, ty)
        si = cuda.shared.array(tpb, i64)
        tid = cuda.threadIdx.x
        for m in range(cuda.blockIdx.x, m_total, cuda.gridDim.x):
            base = off + offset_of(m, kshape, kstrides)
            bv = ty(init)
            bi = i64(k_total)
            for r in range(tid, k_total, tpb):
                v = x[base + offset_of(r, rshape, rstrides)]
                if better(v, r, bv, bi):
                    bv = v
                    bi = r
            sv[tid] = bv
            si[tid] = bi
            cuda.syncthreads()
            s = half
            while s > 0:
                if tid < s:
                    if better(sv[tid + s], si[tid + s], sv[tid], si[tid]):
                        sv[tid] = sv[tid + s]
                        si[tid] = si[tid + s]
                cuda.syncthreads()
                s //= 2
            if tid == 0:
                out_v[m] = sv[0]
                out_i[m] = si[0]
            cuda.syncthreads()

    hit = _arg_cache[key] = (arg_reduce, kernel_jit(arg_reduce))
    return hit


# ----------------------------------------------------------------------------- host side


def _axes(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if not dim:
            return tuple(range(ndim))
        return tuple(sorted({int(d) % max(ndim, 1) for d in dim}))
    return (int(dim) % max(ndim, 1),)


def scalar_as_row(v: View, dim, keepdim):
    """PyTorch reduces a 0-d tensor along dim 0 / -1 (or all dims) as one element, and the
    result stays 0-d with or without ``keepdim``: the kernels see a 1-element row instead (a
    0-d view has no dim for ``reduce_layout`` to index)."""
    if v.ndim:
        return v, dim, keepdim
    return View(v.base, (1,), (1,), v.offset), None, False


def reduce_layout(v: View, axes):
    """Kernel geometry of reducing ``axes`` of ``v``: (kshape, kstrides, rshape, rstrides, M, K,
    kept shape)."""
    kept = [d for d in range(v.ndim) if d not in axes]
    kshape, kstrides = pad([v.shape[d] for d in kept], [v.strides[d] for d in kept])
    rshape, rstrides = pad([v.shape[d] for d in axes], [v.strides[d] for d in axes])
    return (kshape, kstrides, rshape, rstrides, prod(v.shape[d] for d in kept),
            prod(v.shape[d] for d in axes), tuple(v.shape[d] for d in kept))


def _out_shape(v, axes, keepdim):
    if keepdim:
        return tuple(1 if d in axes else s for d, s in enumerate(v.shape))
    return tuple(s for d, s in enumerate(v.shape) if d not in axes)


def _launch_rows(kernel, m_total, k_total, args):
    from .. import cuda as backend
    tpb = kernel[1]
    blocks = max(1, min(m_total, max_blocks()))
    backend.launch_kernel(kernel[0], blocks, tpb, args)


@half_as_float32
def reduce(x, dim=None, op="sum", keepdim=False, dtype=None, scale=None):
    """Reduce ``x`` (View or device array) with ``op`` in sum/prod/max/min over ``dim``.

    ``dtype`` is the accumulation and output dtype (default: the input's, int64 for integer and
    bool sums/products, as PyTorch). ``scale`` multiplies a sum (``mean``)."""
    from .. import cuda as backend
    v, dim, keepdim = scalar_as_row(as_view(x), dim, keepdim)
    axes = _axes(dim, v.ndim)
    if dtype is None:
        dtype = v.dtype if (v.dtype.kind == "f" or op in ("max", "min")) else np.dtype(np.int64)
    if op in ("all", "any"):
        dtype = np.bool_
    dtype = np.dtype(dtype)
    kshape, kstrides, rshape, rstrides, m_total, k_total, _ = reduce_layout(v, axes)
    out = backend.empty(_out_shape(v, axes, keepdim), dtype)
    if m_total == 0:
        return out
    tpb = block_size(k_total)
    _, kern = make_tree_kernel(op, dtype, tpb)
    sc = dtype.type(1 if scale is None else scale)
    _launch_rows((kern, tpb), m_total, k_total,
                 (v.base, np.int64(v.offset), kshape, kstrides, rshape, rstrides,
                  np.int64(m_total), np.int64(k_total), sc, out.reshape(m_total)))
    return out


def sum(x, dim=None, keepdim=False, dtype=None):  # noqa: A001 - torch.sum
    return reduce(x, dim, "sum", keepdim, dtype)


def mean(x, dim=None, keepdim=False, dtype=None):
    v, dim, keepdim = scalar_as_row(as_view(x), dim, keepdim)
    axes = _axes(dim, v.ndim)
    k = prod(v.shape[d] for d in axes)
    return reduce(v, dim, "sum", keepdim, dtype or v.dtype, scale=1.0 / k if k else float("nan"))


def prod_(x, dim=None, keepdim=False, dtype=None):
    return reduce(x, dim, "prod", keepdim, dtype)


def amax(x, dim=None, keepdim=False):
    return reduce(x, dim, "max", keepdim)


def amin(x, dim=None, keepdim=False):
    return reduce(x, dim, "min", keepdim)


def all_(x, dim=None, keepdim=False):
    """``torch.all``: bool, True where every element of the row is nonzero (NaN is nonzero)."""
    return reduce(x, dim, "all", keepdim)


def any_(x, dim=None, keepdim=False):
    return reduce(x, dim, "any", keepdim)


@half_as_float32
def _extreme(x, dim, keepdim, op):
    from .. import cuda as backend
    v, dim, keepdim = scalar_as_row(as_view(x), dim, keepdim)
    axes = _axes(dim, v.ndim)
    kshape, kstrides, rshape, rstrides, m_total, k_total, _ = reduce_layout(v, axes)
    shape = _out_shape(v, axes, keepdim)
    out_v = backend.empty(shape, v.dtype)
    out_i = backend.empty(shape, np.int64)
    if m_total == 0:
        return out_v, out_i
    tpb = block_size(k_total)
    _, kern = make_arg_kernel(op, v.dtype, tpb)
    _launch_rows((kern, tpb), m_total, k_total,
                 (v.base, np.int64(v.offset), kshape, kstrides, rshape, rstrides,
                  np.int64(m_total), np.int64(k_total), out_v.reshape(m_total),
                  out_i.reshape(m_total)))
    return out_v, out_i


def max_dim(x, dim, keepdim=False):
    """``torch.max(x, dim)``: (values, indices)."""
    return _extreme(x, dim, keepdim, "max")


def min_dim(x, dim, keepdim=False):
    return _extreme(x, dim, keepdim, "min")


def argmax(x, dim=None, keepdim=False):
    """Indices only; ``dim=None`` gives the flat index over the whole tensor (a 0-d array, or
    all-ones shape with ``keepdim``)."""
    return _extreme(x, dim, keepdim, "max")[1]


def argmin(x, dim=None, keepdim=False):
    return _extreme(x, dim, keepdim, "min")[1]
