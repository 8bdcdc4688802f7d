"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, unique.

Forward runs NumPy on the CPU (a stable argsort; NaN sorts as the largest value, as in PyTorch).
The value outputs record the nodes PyTorch records (SortBackward0, TopkBackward0,
KthvalueBackward0, MedianBackward0/1, NanmedianBackward0/1); their VJP scatters the gradient
to the selected indices with ``index.scatter_into_zeros``, itself a recorded op, so double
backward works. The global median()/nanmedian() share the gradient evenly among the elements
equal to the result (PyTorch's evenly_distribute_backward, as max()).

Ties: sort/argsort with ``stable=True`` keep equal values in order (descending too); without,
they leave them where ATen's ``std::sort`` does. topk and kthvalue pick among equal values as
ATen's selection algorithms do (``_select_kernels`` replays libstdc++'s
partial_sort/nth_element/sort and ATen's quickselect); median/nanmedian with ``dim`` break ties
by index (ATen's comparator ``(x[i], i) < (x[j], j)``),
i.e. the position in a stable sort.

CUDA tensors: sort/argsort/msort/topk run on the device (``cuda_kernels.sort``: a stable rank
sort, the same order as the CPU path); kthvalue/median/nanmedian/unique are staged through
the host (``host_staged``: NumPy on a host copy, the same nodes on the device tensors, the
gradient scattered on the device).
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .composite import ieee_quiet, record
from .host_staged import host_staged, like_device
from .parser_errors import (
    argument_type_error,
    input_type_error,
    invalid_combination,
    is_bool,
    parser_type_name,
)
from .reduce_args import _wrap
from .reduce_extremes import _evenly_backward
from .return_types import _return_type

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "unique"]

SortResult = _return_type("sort")
TopkResult = _return_type("topk")
KthvalueResult = _return_type("kthvalue")
MedianResult = _return_type("median")
NanmedianResult = _return_type("nanmedian")


def _is_cuda(input) -> bool:
    return input._data.__class__ is not np.ndarray


def _device_sort(a, d, descending):
    """(values, indices) CudaArrays of CudaArray ``a`` sorted along ``d`` (stable)."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    vals, idx = B.kernels().sort.sort(a.kview(), d, descending)
    return CudaArray.wrap(vals), CudaArray.wrap(idx)


def _zero_index(a):
    """The int64 index 0 as a 0-d array on ``a``'s device."""
    if a.__class__ is np.ndarray:
        return np.zeros((), np.int64)
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    return CudaArray.wrap(B.zeros((), np.int64))


def _refuse_bool(input, kernel):
    if input._data.dtype == np.bool_:
        if kernel == "topk":
            raise RuntimeError("topk does not support bool dtypes on CPU")
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _check_int(name, argname, v):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{name}(): argument '{argname}' must be int, not {parser_type_name(v)}")


def _argsort(a, axis, descending, stable=True):
    """Argsort along ``axis`` (NaN last ascending, first descending, as PyTorch); not
    ``stable``: equal values in the order ATen's ``std::sort`` leaves them (the same as
    stable where no two values along ``axis`` are equal, and up to 16 elements, where it is
    an insertion sort)."""
    if not descending:
        idx = np.argsort(a, axis=axis, kind="stable").astype(np.int64)
    else:  # descending and stable: sort the reversed array ascending, reverse the order back
        n = a.shape[axis]
        idx = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
        idx = (n - 1 - np.flip(idx, axis)).astype(np.int64)
    if stable or a.shape[axis] <= 16:
        return idx
    tied = _tied(np.take_along_axis(a, idx, axis), axis)
    if not tied.any():
        return idx
    # only the slices with equal values are re-sorted (ATen's std::sort order)
    out = np.moveaxis(idx, axis, -1).copy()
    flat = out.reshape(-1, a.shape[axis])
    rows = np.moveaxis(a, axis, -1).reshape(-1, a.shape[axis])[tied.reshape(-1)]
    flat[tied.reshape(-1)] = _select_rows(rows, 1, rows.shape[1], lambda r, o: _kernels(
        ).sort_rows(r, bool(descending), o))
    return np.moveaxis(flat.reshape(out.shape), -1, axis)


def _tied(s, axis):
    """Per slice along ``axis``: whether sorted ``s`` holds two equal neighbours (two NaN count
    as equal)."""
    n = s.shape[axis]
    lo = np.take(s, np.arange(n - 1), axis=axis)
    hi = np.take(s, np.arange(1, n), axis=axis)
    eq = lo == hi
    if s.dtype.kind == "f":
        eq |= np.isnan(lo) & np.isnan(hi)
    return eq.any(axis=axis)


def _selection_backward(node, g, _indices_grad=None):
    """Values picked at ``indices`` along ``dim``: the gradient scattered back there."""
    from .index import scatter_into_zeros
    a = node.ctx.attrs
    if not a["shape"]:  # a 0-d input: the value is the input
        return (g.reshape(()),)
    idx = a["indices"]
    d = a["dim"]
    if not a["keepdim"]:
        g = g.unsqueeze(d)
        idx = np.expand_dims(idx, d)
    # a host-staged op's indices stay on the host: the scatter runs beside the gradient
    return (scatter_into_zeros(g, a["shape"], d, like_device(idx, g)),)


def _record_selection(node_name, input, values, indices, dim, keepdim, cls):
    attrs = {"shape": tuple(input._data.shape), "dim": dim, "keepdim": keepdim,
             "indices": indices}
    if values.__class__ is np.ndarray or np.isscalar(values):
        values, indices = np.asarray(values), np.asarray(indices, dtype=np.int64)
    v = record(node_name, (input,), values, _selection_backward, attrs=attrs)
    return cls(v, Tensor._make(indices))


SORT_OVERLOADS = (
    "(Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of Tensors out "
    "= None)",
    "(Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None)")
# the method form's (Tensor.sort: parser_errors.counted_from_self lists these)
SORT_METHOD_OVERLOADS = ("(*, bool stable, int dim = -1, bool descending = False)",
                         "(int dim = -1, bool descending = False)")


@ieee_quiet
def sort(input, dim=-1, descending=False, stable=False):
    """``torch.sort``: (values, indices) along ``dim`` (ties: ``_argsort``)."""
    if isinstance(dim, bool):  # sort(x, stable=True) positional forms are not PyTorch's
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    if not (is_bool(descending) and is_bool(stable)):  # no overload takes it: the listing
        given = (input, dim, descending) if stable is False else (input, dim)
        raise invalid_combination("sort", given, {} if stable is False else
                                  {"descending": descending, "stable": stable}, SORT_OVERLOADS)
    _check_int("sort", "dim", dim)
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        a = input._data
    except AttributeError:
        raise input_type_error("sort", (input,), {}) from None
    d = _wrap(dim, a.ndim)
    node = "SortBackward1" if stable else "SortBackward0"  # sort.stable is its own overload
    if a.ndim == 0:
        return _record_selection(node, input, a.copy(), _zero_index(a), 0, True, SortResult)
    if _is_cuda(input):
        return _record_selection(node, input, *_device_sort(a, d, descending), d, True,
                                 SortResult)
    idx = _argsort(a, d, descending, stable)
    return _record_selection(node, input, np.take_along_axis(a, idx, d), idx, d, True,
                             SortResult)


def argsort(input, dim=-1, descending=False, stable=False):
    """``torch.argsort``: the indices of ``sort`` (no gradient)."""
    _check_int("argsort", "dim", dim)
    a = input._data
    d = _wrap(dim, a.ndim)
    if a.ndim == 0:
        return Tensor._make(_zero_index(a))
    if _is_cuda(input):
        return Tensor._make(_device_sort(a, d, descending)[1])
    return Tensor._make(_argsort(a, d, descending, stable))


def msort(input):
    """``torch.msort``: ``sort(input, dim=0).values``."""
    return sort(input, 0).values


@ieee_quiet
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
    """``torch.topk``: the ``k`` largest (or smallest) along ``dim``, in sorted order (also
    with ``sorted=False``, which leaves the order unspecified in PyTorch)."""
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        _refuse_bool(input, "topk")
    except AttributeError:
        raise input_type_error("topk", (input,), {}) from None
    _check_int("topk", "k", k)
    _check_int("topk", "dim", dim)
    for arg, position, v in (("largest", 4, largest), ("sorted", 5, sorted)):
        if not is_bool(v):  # (0/1 would pass as flags: PyTorch refuses them)
            raise argument_type_error("topk", arg, position, "bool", v)
    a = input._data
    d = _wrap(dim, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if a.ndim == 0:  # PyTorch returns the value itself, also for k=0
        return _record_selection("TopkBackward0", input, a.copy(), _zero_index(a), 0,
                                 True, TopkResult)
    if _is_cuda(input):
        vals, idx = _device_sort(a, d, largest)
        key = (slice(None),) * d + (slice(0, k),)
        return _record_selection("TopkBackward0", input, vals[key].contiguous(),
                                 idx[key].contiguous(), d, True, TopkResult)
    idx = _select_rows(a, d, k, lambda rows, out: _kernels().topk_rows(
        rows, k, bool(largest), bool(sorted), out))
    return _record_selection("TopkBackward0", input, np.take_along_axis(a, idx, d), idx, d,
                             True, TopkResult)


def _kernels():
    from . import _select_kernels  # Numba: compiled on first use, not with jitgrad
    return _select_kernels


def _select_rows(a, d, k, run):
    """The (k-wide along ``d``) int64 indices ``run(rows, out)`` writes for each slice of
    ``a`` along ``d``, the slices laid out as the rows of a contiguous 2-D array."""
    moved = np.moveaxis(a, d, -1)
    if moved.dtype == np.float16:  # Numba has no float16 compares: float32 keeps the order
        moved = moved.astype(np.float32)
    elif moved.dtype == np.bool_:
        moved = moved.view(np.uint8)
    rows = np.ascontiguousarray(moved.reshape(-1, a.shape[d]))
    out = np.empty((rows.shape[0], k), np.int64)
    if k and rows.shape[0]:
        run(rows, out)
    return np.moveaxis(out.reshape(moved.shape[:-1] + (k,)), -1, d)


def _keep(arr, axis, keepdim):
    return np.expand_dims(arr, axis) if keepdim else arr


@host_staged
@ieee_quiet
def kthvalue(input, k, dim=-1, keepdim=False):
    """``torch.kthvalue``: the ``k``-th smallest value (1-based) along ``dim`` and its index."""
    _refuse_bool(input, "kthvalue_cpu")
    _check_int("kthvalue", "k", k)
    _check_int("kthvalue", "dim", dim)
    a = input._data
    d = _wrap(dim, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if a.ndim == 0:
        return _record_selection("KthvalueBackward0", input, a.copy(), np.zeros((), np.int64),
                                 0, keepdim, KthvalueResult)
    idx = _select_rows(a, d, 1, lambda rows, out: _kernels().kth_rows(rows, k - 1,
                                                                      out.reshape(-1)))
    vals = np.take_along_axis(a, idx, d).squeeze(d)
    idx = idx.squeeze(d)
    return _record_selection("KthvalueBackward0", input, _keep(vals, d, keepdim),
                             _keep(idx, d, keepdim), d, keepdim, KthvalueResult)


def _median_dim(input, dim, keepdim, ignore_nan):
    name = "nanmedian" if ignore_nan else "median"
    _check_int(name, "dim", dim)
    a = input._data
    d = _wrap(dim, a.ndim)
    _refuse_bool(input, "median_out")
    cls = NanmedianResult if ignore_nan else MedianResult
    node = "NanmedianBackward1" if ignore_nan else "MedianBackward1"
    if a.ndim == 0:
        return _record_selection(node, input, a.copy(), np.zeros((), np.int64), 0, keepdim, cls)
    if a.shape[d] == 0:  # PyTorch says median() for nanmedian too
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    n = a.shape[d]
    order = np.argsort(a, axis=d, kind="stable")  # NaN last; ties by index, as ATen's
    if a.dtype.kind == "f":
        nans = np.isnan(a)
        if ignore_nan:  # the lower median of the non-NaN elements
            m = n - nans.sum(axis=d)
            idx = np.take_along_axis(order, np.expand_dims(np.maximum(m - 1, 0) // 2, d),
                                     d).squeeze(d)
            if not m.all():  # all NaN: where nth_element leaves a run of equivalent keys
                idx = np.where(m == 0, _kernels().all_nan_nth(n, 0), idx)
        else:  # a NaN in the slice makes the median NaN: its first one
            idx = np.where(nans.any(axis=d), np.argmax(nans, axis=d),
                           np.take(order, (n - 1) // 2, axis=d))
    else:
        idx = np.take(order, (n - 1) // 2, axis=d)
    idx = idx.astype(np.int64)
    vals = np.take_along_axis(a, np.expand_dims(idx, d), d).squeeze(d)
    return _record_selection(node, input, _keep(vals, d, keepdim), _keep(idx, d, keepdim), d,
                             keepdim, cls)


def _median_all(input, ignore_nan):
    _refuse_bool(input, "median_cpu")
    a = input._data.reshape(-1)
    if a.dtype.kind == "f" and ignore_nan:
        a = a[~np.isnan(a)]
    if a.size == 0:
        val = np.asarray(np.nan if input._data.dtype.kind == "f" else 0, input._data.dtype)
    elif a.dtype.kind == "f" and np.isnan(a).any():
        val = np.asarray(np.nan, a.dtype)
    else:
        val = np.asarray(np.sort(a)[(a.size - 1) // 2])
    node = "NanmedianBackward0" if ignore_nan else "MedianBackward0"
    return record(node, (input,), val, _evenly_backward, save=(("x", input),),
                  save_outputs=(("out", 0),))


@host_staged
@ieee_quiet
def median(input, dim=None, keepdim=False):
    """``torch.median``: the lower median (of all elements: a 0-d tensor; along ``dim``:
    (values, indices)). NaN propagates."""
    if dim is None:
        return _median_all(input, False)
    return _median_dim(input, dim, keepdim, False)


@host_staged
@ieee_quiet
def nanmedian(input, dim=None, keepdim=False):
    """``torch.nanmedian``: ``median`` ignoring NaN."""
    if dim is None:
        return _median_all(input, True)
    return _median_dim(input, dim, keepdim, True)


def _unique_backward(node, g):
    raise NotImplementedError(f"the derivative for '{node.ctx.attrs['op']}' is not "
                              "implemented.")


@host_staged
def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """``torch.unique``: the distinct values (sorted; PyTorch's CPU kernel sorts also with
    ``sorted=False``), with the inverse indices and counts on request. Not differentiable."""
    a = input._data
    if dim is None:
        flat = a.reshape(-1)
        res = np.unique(flat, return_inverse=True, return_counts=True, equal_nan=False)
        out, inv, counts = res
        inv = inv.reshape(a.shape)
    else:
        _check_int("unique", "dim", dim)
        if a.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = _wrap(dim, a.ndim)
        out, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    # PyTorch records Unique2Backward0 / UniqueDimBackward0, whose backward is not implemented
    node = "Unique2Backward0" if dim is None else "UniqueDimBackward0"
    outs = [record(node, (input,), np.ascontiguousarray(out), _unique_backward,
                   attrs={"op": "_unique2" if dim is None else "unique_dim"})]
    if return_inverse:
        outs.append(Tensor._make(np.asarray(inv, dtype=np.int64)))
    if return_counts:
        outs.append(Tensor._make(np.asarray(counts, dtype=np.int64)))
    return outs[0] if len(outs) == 1 else tuple(outs)


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser), as on the reductions, and
# median's keepdim a strict bool (reduce_args.reduction_entry; the methods' TypeErrors count
# positions from self)
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402
from .reduce_args import reduction_entry as _reduction_entry  # noqa: E402

median_method = _reduction_entry(median, method=True)
nanmedian_method = _reduction_entry(nanmedian, method=True)
for _name in __all__:
    globals()[_name] = (_reduction_entry if _name in ("median", "nanmedian") else _aliases)(
        globals()[_name])
del _name
