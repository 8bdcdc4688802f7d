"""gather / take_along_dim / scatter / scatter_add / scatter_reduce (and ``scatter_into_zeros``,
the gradient of a gather), CPU (NumPy) and CUDA (``backends/cuda_kernels/index.py``).

Index dtypes and ranges are checked by ``index_rules`` (PyTorch refuses negative indices in
all of these; on CUDA the kernels check and report at the next synchronizing point).
Gradients are written with recorded ops, so they are differentiable again.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .index_rules import check_range, device_check, index_data
from .out import with_out
from .parser_errors import parser_type_name

__all__ = ["gather", "gather_method", "gather_checked", "take_along_dim", "scatter",
           "scatter_add", "scatter_reduce", "scatter_into_zeros", "wrap_dim", "gather_data",
           "scatter_data"]


def wrap_dim(d, nd):
    lo, hi = (-1, 0) if nd == 0 else (-nd, nd - 1)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {d})")
    return d % max(nd, 1)


def _is_cuda(*arrays):
    return any(a is not None and a.__class__ is not np.ndarray for a in arrays)


def _kernels():
    from ..backends import cuda as B
    return B.kernels()


def _dim_size(shape, d):
    return shape[d] if shape else 1


# ----------------------------------------------------------------------------- raw kernels


def gather_data(x, d, idx, rule):
    """``gather`` on storage (NumPy or CUDA) after the rule's range check."""
    if _is_cuda(x, idx):
        from .._cuda_array import CudaArray
        return CudaArray.wrap(_kernels().index.gather(x.kview(), d, idx.kview(),
                                                      device_check(rule, d)))
    idx = check_range(idx, _dim_size(x.shape, d), d, rule)
    if idx.size == 0:
        return np.zeros(idx.shape, x.dtype)
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(-1)].reshape(idx.shape)
    return np.take_along_axis(x[tuple(slice(0, s) if i != d else slice(None)
                                      for i, s in enumerate(idx.shape))], idx, axis=d)


def _fresh_copy(x):
    """A contiguous copy of storage ``x`` the scatter kernels write into."""
    if x.__class__ is np.ndarray:
        return x.copy()
    from .._cuda_array import CudaArray
    c = x.copy()
    return CudaArray(c.buf, c.shape)


def _dst(data):
    return data.buf.reshape(data.shape) if data.ndim != 1 else data.buf


def scatter_data(dst, d, idx, src, mode, rule="scatter", checked=False):
    """Scatter ``src`` (storage, a NumPy/Python scalar, or None with ``mode='fill'``...) into
    the fresh storage ``dst`` along ``d`` at ``idx``; ``mode``: 'set', 'add', 'multiply',
    'amax', 'amin'. ``checked``: the CPU indices were range-checked already."""
    if _is_cuda(dst, idx):
        from .._cuda_array import CudaArray, unsupported
        from .index_cuda import device_value
        if dst.ndim == 0 or mode == "multiply":
            # no 0-d scatter kernel and no float atomic multiply: the CPU scatter on host
            # copies, written back (host staging, ops/host_staged.py); range-checked there
            from .host_staged import host_inplace
            return host_inplace(scatter_data, dst, d, idx, src, mode, rule)
        vi = idx.kview()
        if isinstance(src, CudaArray):
            vs = src.kview()
            if vs.ndim == 0:
                vs = vs.expand(vi.shape)
        else:  # a scalar (or a 0-d CPU value): one device element broadcast over the index
            vs = device_value(src, dst.dtype).expand(vi.shape)
        K = _kernels().index
        chk = device_check(rule, d)
        if mode == "set":
            K.scatter(_dst(dst), d, vi, vs, chk)
        elif mode == "add":
            K.scatter_add(_dst(dst), d, vi, vs, 1, chk)
        elif mode in ("amax", "amin"):
            K.scatter_add(_dst(dst), d, vi, vs, 1, chk, "max" if mode == "amax" else "min")
            if np.dtype(dst.dtype).kind == "f":
                K.scatter_add(_dst(dst), d, vi, vs, 1, chk, "nan")
        else:
            raise unsupported(f"scatter with reduction '{mode}'")
        return dst
    if not checked:
        idx = check_range(idx, _dim_size(dst.shape, d), d, rule)
    if dst.ndim == 0:
        view = dst.reshape(1)
        scatter_data(view, 0, idx.reshape(-1), np.reshape(src, -1) if np.ndim(src) else src,
                     mode, rule, True)
        return dst
    pos = list(np.indices(idx.shape, sparse=True))
    pos[d] = idx
    pos = tuple(pos)
    if np.ndim(src):
        src = src[tuple(slice(0, s) for s in idx.shape)]
    else:
        src = np.broadcast_to(np.asarray(src, dst.dtype), idx.shape)
    if mode == "set":
        dst[pos] = src
    else:
        ufunc = {"add": np.add, "multiply": np.multiply, "amax": np.maximum,
                 "amin": np.minimum}[mode]
        ufunc.at(dst, pos, src.astype(dst.dtype, copy=False))
    return dst


# ----------------------------------------------------------------------------- gather


def _gather_backward(node, g):
    a = node.ctx.attrs
    return (scatter_into_zeros(g, a["shape"], a["dim"], a["index"]),)


def _check_ndim(input, index, what="input"):
    if max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {what} "
                           "tensor")


def _index_shape_error(index, input, d, src=None, op="gather"):
    """PyTorch's gather/scatter shape checks (index no larger than self apart from ``d``, and
    no larger than src)."""
    ishape, xshape = list(index.shape), list(input.shape)
    if not index.numel():
        return None
    for i in range(index.ndim):
        if i != d and xshape and ishape[i] > xshape[i]:
            if op == "gather":
                return RuntimeError(f"Size does not match at dimension {i} expected index "
                                    f"{ishape} to be no larger than self {xshape} apart from "
                                    f"dimension {d}")
            break
    else:
        if src is None or all(a <= b for a, b in zip(ishape, list(src.shape) or [1])):
            return None
    if src is None:
        return RuntimeError(f"Expected index {ishape} to be no larger than self {xshape} apart "
                            f"from dimension {d}")
    return RuntimeError(f"Expected index {ishape} to be no larger than self {xshape} apart from "
                        f"dimension {d} and to be no larger size than src {list(src.shape)}")


def _parser_fits(v, kind) -> bool:
    if kind == "Tensor":
        return isinstance(v, Tensor)
    # int: Python/NumPy integers (not bools) and 0-d integer tensors
    if isinstance(v, Tensor):
        return v._data.ndim == 0 and v._data.dtype.kind in "iu"
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


_GATHER_PARAMS = (("input", "Tensor"), ("dim", "int"), ("index", "Tensor"))


def _gather_args(args, kwargs, method):
    """``(input, dim, index)`` of ``gather(input, dim, index, *, sparse_grad=False)`` with the
    errors of PyTorch's parser (gather has one signature, so it names the argument at fault):
    the method form ``method=True`` counts positions after ``self``."""
    shown = len(args) - method
    if shown > len(_GATHER_PARAMS) - method:
        raise TypeError(f"gather() takes {len(_GATHER_PARAMS) - method} positional arguments "
                        f"but {shown} were given")
    values = []
    for i, (name, kind) in enumerate(_GATHER_PARAMS):
        where = ""
        if i < len(args):
            if name in kwargs:
                raise TypeError(f"gather() got multiple values for argument '{name}'")
            v, where = args[i], f" (position {i + 1 - method})"
        elif name in kwargs:
            v = kwargs[name]
        else:  # the parser lists every required argument from the first one missing on
            rest = [n for n, _ in _GATHER_PARAMS[i:]]
            raise TypeError(f"gather() missing {len(rest)} required positional argument"
                            f"{'s' if len(rest) == 1 else ''}: "
                            + ", ".join(f'"{n}"' for n in rest))
        if not _parser_fits(v, kind):
            raise TypeError(f"gather(): argument '{name}'{where} must be {kind}, not "
                            f"{parser_type_name(v)}")
        values.append(int(v) if kind == "int" else v)
    sparse_grad = kwargs.get("sparse_grad", False)
    if sparse_grad.__class__ is not bool:
        raise TypeError(f"gather(): argument 'sparse_grad' must be bool, not "
                        f"{parser_type_name(sparse_grad)}")
    for k in kwargs:
        if k not in ("input", "dim", "index", "sparse_grad"):
            raise TypeError(f"gather() got an unexpected keyword argument '{k}'")
    return values


def gather(*args, **kwargs):
    """``torch.gather(input, dim, index, *, sparse_grad=False, out=None)``."""
    if len(args) == 3 and not kwargs and args[0].__class__ is Tensor and \
            args[1].__class__ is int and args[2].__class__ is Tensor:  # the common call
        return gather_checked(*args, "gather")
    if kwargs.get("out") is not None:
        return _gather_out(*args, **kwargs)
    kwargs.pop("out", None)
    return _gather_parsed(*args, **kwargs)


def _gather_parsed(*args, **kwargs):
    return gather_checked(*_gather_args(args, kwargs, method=False), "gather")


# gather's out= (PyTorch's structured kernel): the input's dtype exactly, resized as out= is
_gather_out = with_out("gather", mode="exact")(_gather_parsed)


def gather_method(*args, **kwargs):
    """``Tensor.gather(dim, index, *, sparse_grad=False)``."""
    if len(args) == 3 and not kwargs and args[1].__class__ is int and \
            args[2].__class__ is Tensor:
        return gather_checked(*args, "gather")
    return gather_checked(*_gather_args(args, kwargs, method=True), "gather")


def gather_checked(input, dim, index, rule):
    """``gather`` whose out-of-range indices raise ``rule``'s error (``index_rules``): loss
    targets on CUDA are gathered with their own "Target ... is out of bounds." check."""
    d = wrap_dim(dim, input._data.ndim)
    idx = index_data(index, "gather")
    _check_ndim(input, index)
    if _is_cuda(input._data, idx):
        from .elementwise_call import check_same_device
        check_same_device((input, index))
    err = _index_shape_error(index, input, d)
    if err is not None:
        raise err
    data = gather_data(input._data, d, idx, rule)
    return record("GatherBackward0", (input,), data, _gather_backward,
                  attrs={"shape": tuple(input._data.shape), "dim": d, "index": idx})


def take_along_dim(input, indices, dim=None):
    """PyTorch's: ``input`` and ``indices`` broadcast against each other except along ``dim``,
    then ``gather`` (GatherBackward0 after ExpandBackward0, as PyTorch records); indices are
    taken modulo the size of ``dim`` first (PyTorch 2.13 wraps them, even out-of-range ones);
    ``dim=None`` gathers from the flattened input (gather's rule: no wrapping)."""
    if not isinstance(indices, Tensor) or indices.dtype != D.int64:
        got = D.scalar_name(indices.dtype) if isinstance(indices, Tensor) else type(indices)
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{got}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input._data.ndim
    if indices._data.ndim != nd:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {nd} dimensions for input, and "
                           f"{indices._data.ndim} dimensions for indices")
    d = wrap_dim(dim, nd)
    from .elementwise_call import broadcast_shapes
    rest = broadcast_shapes(*(tuple(1 if i == d else s for i, s in enumerate(t._data.shape))
                              for t in (input, indices)))

    def along(t):
        return tuple(t._data.shape[d] if i == d else s for i, s in enumerate(rest))
    size = input._data.shape[d]
    idx = indices.expand(along(indices))
    if idx.numel():
        if size == 0:
            raise RuntimeError("ZeroDivisionError")  # PyTorch's integer ``%`` by zero
        from .functional import remainder
        idx = remainder(idx, size)
    return gather(input.expand(along(input)), d, idx)


# ----------------------------------------------------------------------------- scatter


def _scatter_zeros_backward(node, g):
    a = node.ctx.attrs
    return (gather(g, a["dim"], Tensor._make(a["index"])),)


def scatter_into_zeros(g: Tensor, shape, dim, index) -> Tensor:
    """Zeros of ``shape`` with ``g`` scatter-added along ``dim`` at ``index`` (storage made or
    checked by jitgrad: CPU indices may be negative and wrap)."""
    if g._data.__class__ is not np.ndarray:
        from .factory_args import _device_full
        if index.__class__ is np.ndarray:
            raise NotImplementedError("jitgrad: max/min(dim) gradients are not implemented "
                                      "for device 'cuda:0' yet")
        data = _device_full(shape, 0, g._data.dtype)
        _kernels().index.scatter_add(data.buf.reshape(tuple(shape)) if len(shape) != 1
                                     else data.buf, dim, index.kview(), g._data.kview())
    else:
        data = np.zeros(shape, dtype=g._data.dtype)
        pos = list(np.indices(index.shape, sparse=True))
        if data.ndim == 0:
            np.add.at(data.reshape(1), index.reshape(-1), g._data.reshape(-1))
        else:
            pos[dim] = index
            np.add.at(data, tuple(pos), g._data[tuple(slice(0, s) for s in index.shape)])
    return record("ScatterAddBackward0", (g,), data, _scatter_zeros_backward,
                  attrs={"dim": dim, "index": index})


def _scattered_mask(g, dim, idx):
    """``ones_like(g)`` with zeros at the scattered positions (as a Tensor of g's dtype)."""
    mask = _fresh_copy(_ones(g))
    scatter_data(mask, dim, idx, 0, "set", checked=True)
    return Tensor._make(mask)


def _ones(t):
    if t._data.__class__ is np.ndarray:
        return np.ones(t._data.shape, t._data.dtype)
    from .factory_args import _device_full
    return _device_full(t._data.shape, 1, t._data.dtype)


def _scatter_backward(node, g):
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    gs = gsrc = None
    if need_self:
        gs = g if a["add"] else g * _scattered_mask(g, a["dim"], a["index"])
    if need_src:
        gsrc = gather(g, a["dim"], Tensor._make(a["index"]))
    return (gs, gsrc)


_REDUCE_WARNING = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
    "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options. "
    "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
    "TensorAdvancedIndexing.cpp:225.)")


def _scatter_checks(input, dim, index, src):
    d = wrap_dim(dim, input._data.ndim)
    idx = index_data(index, "scatter")
    is_t = isinstance(src, Tensor)
    _check_ndim(input, index, "self")
    if is_t:
        _check_ndim(src, index, "src")
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if _is_cuda(input._data, idx, src._data if is_t else None):
        from .elementwise_call import check_same_device
        check_same_device((input, index) + ((src,) if is_t else ()))
    err = _index_shape_error(index, input, d, src if is_t else None, "scatter")
    if err is not None:
        raise err
    return d, idx, is_t


def _not_implemented_backward(node, g):
    raise RuntimeError("derivative for aten::scatter is not implemented")


def _scatter(input, dim, index, src, mode, reduced=False):
    d, idx, is_t = _scatter_checks(input, dim, index, src)
    data = scatter_data(_fresh_copy(input._data), d, idx, src._data if is_t else src, mode)
    if reduced:  # PyTorch records scatter(reduce=...) as a node whose backward raises
        return _record_not_implemented(input, src if is_t else None, data)
    name = "ScatterAddBackward0" if mode == "add" else (
        "ScatterBackward0" if is_t else "ScatterBackward1")
    return record(name, (input, src if is_t else None), data, _scatter_backward,
                  attrs={"dim": d, "index": idx, "add": mode == "add"})


def _record_not_implemented(input, src, data):
    return record("NotImplemented", (input, src), data, _not_implemented_backward)


_reduce_warned = False


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    if src is None:
        src = value
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        global _reduce_warned
        if isinstance(src, Tensor) and not _reduce_warned:
            _reduce_warned = True  # PyTorch: TORCH_WARN_ONCE (once per process)
            warnings.warn(_REDUCE_WARNING, UserWarning, stacklevel=2)
        return _scatter(input, dim, index, src, reduce, reduced=True)
    return _scatter(input, dim, index, src, "set")


def scatter_add(input, dim, index, src):
    return _scatter(input, dim, index, src, "add")


# ----------------------------------------------------------------------------- scatter_reduce


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
# ATen's get_reduction_enum also takes the old names "max"/"min" for amax/amin; the derivative
# (scatter_reduce_backward) knows only the five above and refuses them when the backward runs
_ALIASES = {"max": "amax", "min": "amin"}


def _identity(mode, dtype):
    if mode in ("sum", "mean"):
        return 0
    if mode == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if mode == "amax" else np.inf
    if dtype.kind == "b":
        return mode != "amax"
    info = np.iinfo(dtype)
    return info.min if mode == "amax" else info.max


def _scatter_reduce_data(x, d, idx, src, mode, include_self):
    out = _fresh_copy(x)
    if not include_self:
        scatter_data(out, d, idx, _identity(mode, np.dtype(x.dtype)), "set")
    kernel_mode = {"sum": "add", "mean": "add", "prod": "multiply"}.get(mode, mode)
    scatter_data(out, d, idx, src, kernel_mode)
    if mode == "mean":
        count = _fresh_copy(_ones(Tensor._make(x)) if include_self else
                            _zeros_like_data(x))
        scatter_data(count, d, idx, 1, "add", checked=True)
        out = _mean_divide(out, count)
    return out


def _zeros_like_data(x):
    if x.__class__ is np.ndarray:
        return np.zeros(x.shape, x.dtype)
    from .factory_args import _device_full
    return _device_full(x.shape, 0, x.dtype)


def _mean_divide(total, count):
    """total / max(count, 1) (floor division for integers, as PyTorch)."""
    from ..autograd import grad_mode
    from .functional import clamp_min, div, floor_divide
    t, c = Tensor._make(total), Tensor._make(count)
    with grad_mode.no_grad():
        c = clamp_min(c, 1)
        r = div(t, c) if t.dtype.is_floating_point else floor_divide(t, c)
    return r._data.astype(total.dtype, copy=False) if r.dtype is not t.dtype else r._data


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``torch.scatter_reduce``: sum/prod/mean/amax/amin of ``src`` scattered into ``input``
    (``include_self=False``: the scattered-to elements of ``input`` take no part)."""
    if reduce not in _REDUCTIONS and reduce not in _ALIASES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d, idx, _ = _scatter_checks(input, dim, index, src)
    if input._data.__class__ is np.ndarray:
        idx = check_range(idx, _dim_size(input._data.shape, d), d, "scatter")
    data = _scatter_reduce_data(input._data, d, idx, src._data, _ALIASES.get(reduce, reduce),
                                include_self)
    return record("ScatterReduceBackward0", (input, src), data, _scatter_reduce_backward,
                  attrs={"dim": d, "index": idx, "reduce": reduce,
                         "include_self": include_self},
                  save=(("self", input), ("src", src)), save_outputs=(("result", 0),))


def _scatter_reduce_backward(node, g):
    """PyTorch's ``scatter_reduce_backward`` (derivatives.yaml), in recorded ops."""
    from .functional import where
    a = node.ctx.attrs
    d, mode, include_self = a["dim"], a["reduce"], a["include_self"]
    if mode not in _REDUCTIONS:
        raise RuntimeError("Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {mode}.")
    idx = Tensor._make(a["index"])
    need_self, need_src = node.ctx.needs_input_grad
    self_t, src, result = node.saved("self"), node.saved("src"), node.saved("result")
    if mode == "sum":
        gs, gsrc = g, gather(g, d, idx)
    elif mode == "mean":
        n = _fresh_copy(_ones(g) if include_self else _zeros_like_data(g._data))
        n = Tensor._make(scatter_data(n, d, a["index"], 1, "add", checked=True))
        n = where(n == 0, 1, n)
        gs = g / n
        gsrc = gather(g, d, idx) / gather(n, d, idx)
    elif mode == "prod":
        masked_self = where(self_t == 0, 1, self_t)
        masked_result = scatter_reduce(masked_self, d, idx, src, "prod",
                                       include_self=include_self)
        gs = g * masked_result / masked_self
        src_zero = src == 0
        nz = scatter_add(Tensor._make(_zeros_like_data(self_t._data)), d, idx,
                         src_zero.to(self_t.dtype))
        single_zero = src_zero & (gather(nz, d, idx) == 1)
        masked_src = where(single_zero, 1, src)
        masked_src_result = scatter_reduce(self_t, d, idx, masked_src, "prod",
                                           include_self=include_self)
        gsrc = where(single_zero, gather(g * masked_src_result, d, idx),
                     gather(g * result, d, idx) / where(src_zero, 1, src))
    else:  # amax / amin: the gradient is shared evenly among the elements equal to the result
        value = gather(result, d, idx)
        self_is = (self_t == result).to(self_t.dtype)
        src_is = (src == value).to(self_t.dtype)
        share = g / scatter_add(self_is, d, idx, src_is)
        gs = self_is * share
        gsrc = src_is * gather(share, d, idx)
    if need_self and not include_self:
        gs = gs * _scattered_mask(g, d, a["index"])
    return (gs if need_self else None, gsrc if need_src else None)
