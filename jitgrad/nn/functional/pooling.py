"""Pooling: max/avg pools (1-3 d), adaptive pools, max unpool, lp pools.

Argument checks follow PyTorch's (``ATen/native/Pool.h``: ``pooling_output_shape`` and
``pool2d/3d_shape_check``, in that order, with their messages). The work is ``ops/pool.py``:
max pools are ``window_max`` over per-dim :class:`Windows`; average pools are ``resample``
over per-dim :class:`Taps` (a rectangular window's count is the product of its per-dim counts,
so the divisor is separable too). The 1-d forms are the 2-d ones on an unsqueezed input, as in
PyTorch (so their grad_fn is ``SqueezeBackward1``, as PyTorch's).
"""
from __future__ import annotations

import functools
import numbers

import numpy as np

from ... import _dtype as D
from ...ops import pool as P
from ...tensor import Tensor

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "lp_pool1d", "lp_pool2d", "lp_pool3d",
]

_DIMS = {1: "", 2: "H", 3: "T"}


def _tuple(v, n, msg, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * n
    v = tuple(int(e) for e in v)
    if allow_none and len(v) == 0:
        return None
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(msg)
    return v


def _out_size(n_in, k, pad, stride, dil, ceil):
    """PyTorch's ``pooling_output_shape`` (with its checks)."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > ((k - 1) * dil + 1) // 2:
        raise RuntimeError("pad should be at most half of effective kernel size, but got "
                           f"pad={pad}, kernel_size={k} and dilation={dil}")
    out = (n_in + 2 * pad - dil * (k - 1) - 1 + (stride - 1 if ceil else 0)) // stride + 1
    if ceil and (out - 1) * stride >= n_in + pad:
        out -= 1
    return out


def _sizes_msg(names, values):
    return " ".join(f"{n}: {v}" for n, v in zip(names, values))


def _geometry(op, nsp, shape, kernel_size, stride, padding, dilation, ceil_mode, avg=False):
    """Parse and check a pool's arguments for an input of ``shape`` (a tuple); returns
    (k, s, p, d, out spatial sizes)."""
    words = {2: "two", 3: "three"}[nsp]
    k = _tuple(kernel_size, nsp, f"{op}: kernel_size must either be a single int, or a tuple "
                                 f"of {words} ints")
    s = _tuple(stride, nsp, f"{op}: stride must either be omitted, a single int, or a tuple of "
                            f"{words} ints", allow_none=True) or k
    p = _tuple(padding, nsp, f"{op}: padding must either be a single int, or a tuple of "
                             f"{words} ints")
    d = _tuple(dilation, nsp, f"{op}: dilation must be either a single int, or a tuple of "
                              f"{words} ints")
    nd = len(shape)
    if not avg and nd not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"non-empty {nsp + 1}D or {nsp + 2}D (batch mode) tensor expected "
                           "for input")
    if avg and nsp == 2 and nd < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
                         f"{max(nd, 1) - 1}], but got -3)")
    if avg and nsp == 3 and nd not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    in_sp = shape[-nsp:]
    out_sp = tuple(_out_size(n, kk, pp, ss, dd, ceil_mode)
                   for n, kk, pp, ss, dd in zip(in_sp, k, p, s, d))
    dn = ("dT", "dH", "dW")[3 - nsp:]
    if min(k) <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got " +
                           _sizes_msg(("kT", "kH", "kW")[3 - nsp:], k))
    if min(s) <= 0:
        raise RuntimeError("stride should be greater than zero, but got " + _sizes_msg(dn, s))
    if min(d) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got " +
                           _sizes_msg(("dilationT", "dilationH", "dilationW")[3 - nsp:], d))
    if nsp == 2:
        if nd not in (3, 4) or 0 in shape[1:] or (nd == 3 and shape[0] == 0):
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                               f"size for input, but got:{list(shape)}")
    else:
        lead = 1 if nd == 5 else 0
        for i, n in enumerate(shape[lead:]):
            if n == 0:
                raise RuntimeError(f"{op}_with_indices_out_cpu_template(): Expected input's "
                                   "non-batch dimensions to have positive length, but input has"
                                   f" a shape of {list(shape)} and non-batch dimension {i} has "
                                   "length zero!" if not avg else
                                   "non-empty 4D or 5D (batch mode) tensor expected for input")
        if avg and any(n < kk for n, kk in zip(in_sp, k)):
            raise RuntimeError(f"input image (T: {in_sp[0]} H: {in_sp[1]} W: {in_sp[2]}) smaller "
                               f"than kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(kk // 2 < pp for kk, pp in zip(k, p)):  # PyTorch checks this without dilation too
        if nsp == 2:
            raise RuntimeError("pad should be smaller than or equal to half of kernel size, but "
                               f"got padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}")
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} "
                           f"padH: {p[1]}")
    planes = shape[-nsp - 1]
    if min(out_sp) < 1:
        raise RuntimeError(f"Given input size: ({planes}x{'x'.join(map(str, in_sp))}). "
                           f"Calculated output size: ({planes}x{'x'.join(map(str, out_sp))}). "
                           "Output size is too small")
    return k, s, p, d, out_sp


def _not_implemented(name, input):
    return NotImplementedError(f'"{name}" not implemented for '
                               f"'{D.scalar_name(input.dtype)}'")


# ----------------------------------------------------------------------------- max pools


@functools.lru_cache(maxsize=512)
def _max_windows(n_in, k, s, p, d, n_out) -> P.Windows:
    start = np.arange(n_out, dtype=np.int64) * s - p
    skip = np.where(start < 0, (-start + d - 1) // d, 0)
    lo = start + skip * d
    hi = np.minimum(start + (k - 1) * d + 1, n_in)
    return P.Windows(lo, hi, d, n_in)


def _max_pool_windows(nsp, shape, kernel_size, stride, padding, dilation, ceil_mode):
    """The checked geometry of a max pool as per-dim :class:`Windows`."""
    k, s, p, d, out_sp = _geometry(f"max_pool{nsp}d", nsp, shape, kernel_size, stride, padding,
                                   dilation, ceil_mode)
    return tuple(_max_windows(n, kk, ss, pp, dd, o)
                 for n, kk, ss, pp, dd, o in zip(shape[-nsp:], k, s, p, d, out_sp))


# A training loop pools the same shape with the same arguments every step: parsing and checking
# them again costs more than the kernel of a small pool (5 us). Unhashable arguments (lists)
# take the uncached call; errors are raised, never cached.
_cached_max_pool_windows = functools.lru_cache(maxsize=512)(_max_pool_windows)


def _max_pool(nsp, input, kernel_size, stride, padding, dilation, ceil_mode):
    args = (nsp, tuple(input.shape), kernel_size, stride, padding, dilation, ceil_mode)
    try:
        windows = _cached_max_pool_windows(*args)
    except TypeError:  # unhashable arguments (or a TypeError of the checks: raised again)
        windows = _max_pool_windows(*args)
    if input.dtype == D.bool_:
        raise _not_implemented(f"max_pool{nsp}d", input)
    name = f"MaxPool{nsp}DWithIndices"
    return P.window_max(input, windows, f"{name}Backward0", f"{name}BackwardBackward0")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    out, idx = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    out, idx = _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


_ONE_MSG = {"kernel_size": "an int, list of ints or tuple of ints",
            "stride": "None, an int, list of ints, or tuple of ints",
            "padding": "an int, list of ints, or tuple of ints",
            "dilation": "an int, list of ints or tuple of ints"}


def _one(v, what, allow_none=False):
    """One int from ``v`` with ``max_pool1d``'s own messages (its non-indices path)."""
    if v is None and allow_none:
        return None
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    v = tuple(v)
    if allow_none and not v:
        return None
    if len(v) != 1:
        raise RuntimeError(f"max_pool1d() {what} must be {_ONE_MSG[what]} of size 1 but got "
                           f"size {len(v)}")
    return int(v[0])


def _max_pool1d_checks(input, kernel_size, stride, padding, dilation, ceil_mode):
    """PyTorch's ``max_pool1d`` checks (its own messages, ``max_pool1d() ...``)."""
    shape = tuple(input.shape)
    if input.ndim not in (2, 3) or 0 in shape[-2:] or (input.ndim == 3 and shape[1] == 0):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(shape)}")
    k = _one(kernel_size, "kernel_size")
    s = _one(stride, "stride", allow_none=True)
    s = k if s is None else s
    p = _one(padding, "padding")
    d = _one(dilation, "dilation")
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _out_size(shape[-1], k, p, s, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    return k, s, p, d


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    _check_1d(input, "max_pool1d")
    k = _one_arg(kernel_size, "max_pool1d", "kernel_size")
    no_stride = stride is None or (not isinstance(stride, numbers.Integral) and not len(stride))
    s = k if no_stride else _one_arg(stride, "max_pool1d", "stride")
    p = _one_arg(padding, "max_pool1d", "padding")
    d = _one_arg(dilation, "max_pool1d", "dilation")
    out, idx = _max_pool(2, input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return out.squeeze(-2), idx.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    k, s, p, d = _max_pool1d_checks(input, kernel_size, stride, padding, dilation, ceil_mode)
    out, _ = _max_pool(2, input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return out.squeeze(-2)


# ----------------------------------------------------------------------------- average pools


@functools.lru_cache(maxsize=512)
def _avg_taps(n_in, k, s, p, n_out, count_include_pad, divisor) -> P.Taps:
    """``divisor``: None (the window's count), or the divisor this dim contributes."""
    rows, div = [], []
    for o in range(n_out):
        start = o * s - p
        end = min(start + k, n_in + p)
        pool = end - start
        lo, hi = max(start, 0), min(end, n_in)
        rows.append([(i, 1.0) for i in range(lo, hi)])
        div.append(divisor if divisor is not None else pool if count_include_pad else hi - lo)
    return P.Taps.from_lists(rows, n_in, np.asarray(div, np.float64))


def _linear_pool(input, taps, node, back, name):
    """``resample`` with PyTorch's dtype rules for pools: floats compute; integers (avg pools)
    sum exactly in float64 and truncate toward zero, as ATen's integer division."""
    if input.dtype == D.bool_:
        raise _not_implemented(name, input)
    if input.dtype.is_floating_point:
        return P.resample(input, taps, node, back, save_input=True)
    out = P.resample(input.detach().to(D.float64), taps, node, back)
    return out.trunc().to(input.dtype)


def _avg_pool(nsp, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, name=None):
    op = name or f"avg_pool{nsp}d"
    words = {2: "two", 3: "three"}[nsp]
    _tuple(kernel_size, nsp, f"{op}: kernel_size must either be a single int, or a tuple of "
                             f"{words} ints")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, _, out_sp = _geometry(op, nsp, tuple(input.shape), kernel_size, stride, padding, 1,
                                   ceil_mode, avg=True)
    taps = []
    for i, (n, kk, ss, pp, o) in enumerate(zip(input.shape[-nsp:], k, s, p, out_sp)):
        div = None if divisor_override is None else (float(divisor_override) if i == 0 else 1.0)
        taps.append(_avg_taps(n, kk, ss, pp, o, bool(count_include_pad), div))
    node = f"AvgPool{nsp}D"
    return _linear_pool(input, taps, f"{node}Backward0", f"{node}BackwardBackward0", op)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _check_1d(input, fn):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {fn})")


def _one_arg(v, fn, arg):
    if isinstance(v, numbers.Integral):
        return int(v)
    v = tuple(v)
    if len(v) != 1:
        raise RuntimeError(f"{fn}() argument '{arg}' should contain one int (got {len(v)})")
    return int(v[0])


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    _check_1d(input, "avg_pool1d")
    k = _one_arg(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (not isinstance(stride, numbers.Integral) and not len(stride)) \
        else _one_arg(stride, "avg_pool1d", "stride")
    p = _one_arg(padding, "avg_pool1d", "padding")
    out = _avg_pool(2, input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode,
                    count_include_pad, None, name="avg_pool2d")
    return out.squeeze(-2)


# ----------------------------------------------------------------------------- adaptive pools


def _adaptive_bounds(n_in, n_out):
    o = np.arange(n_out, dtype=np.int64)
    return (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out


@functools.lru_cache(maxsize=512)
def _adaptive_taps(n_in, n_out) -> P.Taps:
    lo, hi = _adaptive_bounds(n_in, n_out)
    rows = [[(i, 1.0) for i in range(a, b)] for a, b in zip(lo.tolist(), hi.tolist())]
    return P.Taps.from_lists(rows, n_in, (hi - lo).astype(np.float64))


@functools.lru_cache(maxsize=512)
def _adaptive_windows(n_in, n_out) -> P.Windows:
    lo, hi = _adaptive_bounds(n_in, n_out)
    return P.Windows(lo, hi, 1, n_in)


def _adaptive_size(output_size, input, nsp, fn):
    if isinstance(output_size, numbers.Integral) or output_size is None:
        sizes = (output_size,) * nsp
    else:
        sizes = tuple(output_size)
        if len(sizes) != nsp:
            raise RuntimeError(f"{fn}: output_size must be {nsp}" if "avg" in fn else
                               f"{fn}(): internal error: output_size.size() must be {nsp}")
    in_sp = tuple(input.shape[-nsp:]) if input.ndim >= nsp else ()
    return tuple(int(in_sp[i]) if s is None else int(s) for i, s in enumerate(sizes))


def _adaptive_checks(input, nsp, out_sp, fn):
    nd = input.ndim
    if nd not in (nsp + 1, nsp + 2):
        got = list(input.shape)
        raise RuntimeError(f"{fn}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got"
                           f"{':' if 'max' in fn else ''} {got}")
    if "avg" in fn and min(out_sp) < 0:
        inner = ", ".join(map(str, out_sp)) if nsp == 2 else ", ".join(map(str, out_sp[:2])) \
            + "," + str(out_sp[2])
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{inner}}}")
    if min(out_sp) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out_sp)}: "
                           f"{list(input.shape[:-nsp]) + list(out_sp)}")
    for i in range(nd - nsp, nd):
        if input.shape[i] == 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def _adaptive_avg(nsp, input, output_size):
    fn = f"adaptive_avg_pool{nsp}d"
    out_sp = _adaptive_size(output_size, input, nsp, fn)
    _adaptive_checks(input, nsp, out_sp, fn)
    if not input.dtype.is_floating_point:
        raise _not_implemented(fn if nsp == 2 else f"{fn}_cpu", input)
    if all(o == 1 for o in out_sp):  # PyTorch's shortcut: a mean (MeanBackward1)
        return input.mean(tuple(range(-nsp, 0)), keepdim=True)
    taps = [_adaptive_taps(n, o) for n, o in zip(input.shape[-nsp:], out_sp)]
    node = f"AdaptiveAvgPool{nsp}D"
    return P.resample(input, taps, f"{node}Backward0", f"{node}BackwardBackward0",
                      save_input=True)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(3, input, output_size)


def adaptive_avg_pool1d(input, output_size):
    _check_1d(input, "adaptive_avg_pool1d")
    o = _one_arg(output_size, "adaptive_avg_pool1d", "output_size")
    return _adaptive_avg(2, input.unsqueeze(-2), (1, o)).squeeze(-2)


def _adaptive_max(nsp, input, output_size):
    fn = f"adaptive_max_pool{nsp}d"
    out_sp = _adaptive_size(output_size, input, nsp, fn)
    _adaptive_checks(input, nsp, out_sp, fn)
    if not input.dtype.is_floating_point:
        raise _not_implemented(fn, input)
    windows = [_adaptive_windows(n, o) for n, o in zip(input.shape[-nsp:], out_sp)]
    node = f"AdaptiveMaxPool{nsp}D"
    return P.window_max(input, windows, f"{node}Backward0", f"{node}BackwardBackward0")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(2, input, output_size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(2, input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(3, input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(3, input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    _check_1d(input, "adaptive_max_pool1d")
    o = _one_arg(output_size, "adaptive_max_pool1d", "output_size")
    out, idx = _adaptive_max(2, input.unsqueeze(-2), (1, o))
    return out.squeeze(-2), idx.squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


# ----------------------------------------------------------------------------- max unpool


def _unpool_output_size(input, kernel_size, stride, padding, output_size, nsp):
    in_sp = tuple(input.shape[-nsp:])
    default = [(in_sp[d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(nsp)]
    if output_size is None:
        return tuple(default)
    output_size = tuple(int(s) for s in output_size)
    if len(output_size) == nsp + 2:
        output_size = output_size[2:]
    if len(output_size) != nsp:
        raise ValueError(f"output_size should be a sequence containing {nsp} or {nsp + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nsp):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{lo} and {hi})")
    return output_size


def _max_unpool(nsp, input, indices, kernel_size, stride, padding, output_size):
    k = _tuple(kernel_size, nsp, "kernel_size")
    s = k if stride is None else _tuple(stride, nsp, "stride")
    p = _tuple(padding, nsp, "padding")
    out_sp = _unpool_output_size(input, k, s, p, output_size, nsp)
    if indices.dtype != D.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{D.scalar_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.ndim not in (nsp + 1, nsp + 2) or 0 in input.shape[1:]:
        raise RuntimeError(f"Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with optional "
                           f"0 dim batch size for input, but got:{list(input.shape)}")
    size = int(np.prod(out_sp))
    idx = indices._data
    if idx.__class__ is np.ndarray and idx.size:  # CUDA: unchecked (a host read), as in docs
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise RuntimeError(f"Found an invalid max index: {int(idx[bad].reshape(-1)[0])} "
                               f"(output volumes are of size {'x'.join(map(str, out_sp))})")
    out_shape = tuple(input.shape[:-nsp]) + tuple(out_sp)
    return _unpool_scatter(input, idx, out_shape, nsp)


def _unpool_scatter(input, idx, out_shape, nsp):
    """Zeros of ``out_shape`` with ``input`` written at ``idx`` (MaxUnpool2DBackward0; its
    backward gathers at the same indices)."""
    from ...autograd import grad_mode
    from ...ops.composite import record
    lead = out_shape[:-nsp]
    planes = int(np.prod(lead)) if lead else 1
    with grad_mode.no_grad():
        dst = input.new_zeros((planes, int(np.prod(out_shape[-nsp:]))))
        src = input.reshape(planes, -1)
        out = dst.scatter(1, Tensor._make(idx.reshape(planes, -1)), src).reshape(out_shape)
    return record(f"MaxUnpool{nsp}DBackward0", (input,), out._data, _unpool_backward,
                  attrs={"idx": idx, "shape": tuple(input.shape), "nsp": nsp})


def _unpool_backward(node, g):
    a = node.ctx.attrs
    return (P.gather_planes(g, a["idx"], a["shape"], a["nsp"]),)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    k = _one_arg(kernel_size, "max_unpool1d", "kernel_size")
    s = k if stride is None else _one_arg(stride, "max_unpool1d", "stride")
    p = _one_arg(padding, "max_unpool1d", "padding")
    if output_size is not None:
        output_size = tuple(output_size) + (1,)
    out = _max_unpool(2, input.unsqueeze(-1), indices.unsqueeze(-1), (k, 1), (s, 1), (p, 0),
                      output_size)
    return out.squeeze(-1)


# ----------------------------------------------------------------------------- lp pools


def _lp_pool(nsp, input, norm_type, kernel_size, stride, ceil_mode):
    """PyTorch's composition: ``(sign(a) * relu(|a|) * prod(k)) ** (1/p)``, ``a`` the average
    of ``x ** p`` over each window; p = +-inf is a max pool of ``|x|`` (negated for -inf)."""
    from . import relu
    max_pool = (max_pool1d, max_pool2d, max_pool3d)[nsp - 1]
    avg_pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nsp - 1]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    size = kernel_size if nsp == 1 else int(np.prod(_tuple(kernel_size, nsp, "kernel_size")))
    return (out.sign() * relu(out.abs())).mul(size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)
