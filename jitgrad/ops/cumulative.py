"""Scans beyond cumsum: cumprod, cummax/cummin, logcumsumexp, and the trapezoid rules.

Each op is written once over one device-array primitive, ``_running`` (NumPy's ``accumulate`` on
the CPU, the kernel layer's scan on CUDA, ``backends/cuda_kernels/scan.py``), plus registered
ops; the VJPs use registered ops only, so gradients of any order follow. Node names are
PyTorch's (CumprodBackward0, CummaxBackward0, CumminBackward0, LogcumsumexpBackward0; the
trapezoid rules are compositions, as PyTorch's CompositeImplicit ones: MulBackward1,
DivBackward1, CumsumBackward0).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import ieee_quiet, record, record_composition
from .out import with_out
from .parser_errors import parser_errors, parser_type_name
from .reduce_args import _cast_for, _wrap
from .return_types import _return_type

__all__ = ["cumprod", "cummax", "cummin", "logcumsumexp", "trapezoid", "trapz",
           "cumulative_trapezoid"]

CummaxResult = _return_type("cummax")
CumminResult = _return_type("cummin")

from .reduce_sums import _SCAN_ACC  # noqa: E402

_NP_ACCUMULATE = {"max": np.maximum, "min": np.minimum, "prod": np.multiply,
                  "logaddexp": np.logaddexp}


def _running(data, d, op, dtype=None):
    """The inclusive running ``op`` of array ``data`` along ``d`` (a fresh array of ``dtype``,
    default ``data``'s); a 0-d array is copied."""
    dtype = np.dtype(dtype or data.dtype)
    if data.__class__ is np.ndarray:
        if data.ndim == 0:
            return data.astype(dtype)
        # ATen's CPU scans accumulate in acc_type: double for float32, float for float16
        acc = _SCAN_ACC.get(dtype, dtype) if op == "prod" else dtype
        with np.errstate(all="ignore"):
            return _NP_ACCUMULATE[op].accumulate(data, axis=d, dtype=acc).astype(dtype,
                                                                                 copy=False)
    if data.ndim == 0:
        return data.astype(dtype)
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    return CudaArray.wrap(B.kernels().scan.scan(data.kview(), d, op, dtype))


def _const(like, value, dtype=None):
    """A 0-d tensor on ``like``'s device (``like``'s dtype unless given)."""
    from .basic import full
    return full((), value, dtype=dtype or like.dtype, device=like.device)


def _rev_cumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


# ----------------------------------------------------------------------------- cumprod


def _cumprod_backward(node, g):
    """d out_j / d x_i = prod_{k <= j, k != i} x_k, summed against g over j >= i. Without zeros
    that is ``rev_cumsum(g * out) / x``. With zeros: first order (no create_graph) uses masks
    (before a row's first zero as above; at it, the reversed cumsum of g times the cumprod with
    that zero replaced by 1; after it, 0); with create_graph, PyTorch's unrolled O(n^2) form,
    whose own derivative is cumprod's second derivative (the masked form's is not)."""
    from ..autograd import grad_mode
    from .functional import where
    d = node.ctx.attrs["dim"]
    if g.ndim == 0 or g.shape[d] <= 1:
        return (g,)
    x = node.saved("x")
    out = node.saved("out")
    zero = x == 0
    if x._data.__class__ is np.ndarray and not zero._data.any():
        return (_rev_cumsum(g * out, d) / x,)
    if grad_mode.is_grad_enabled():
        return (_cumprod_backward_unrolled(g, x, d),)
    seen = zero.cumsum(d)
    before = seen == 0
    first = zero & (seen == 1)
    one = _const(x, 1)
    a = _rev_cumsum(g * out, d) / where(before, x, one)
    b = _rev_cumsum(g * cumprod(where(first, one, x), d), d)
    return (where(before, a, where(first, b, _const(x, 0))),)


def _cumprod_backward_unrolled(g, x, d):
    """grad_k = sum_{j >= k} g_j * prod(x[:k]) * prod(x[k+1:j+1]), one k at a time."""
    from .reduce_sums import prod
    from .shape_join import cat, narrow, stack
    n = x.shape[d]
    cols = []
    for k in range(n):
        after = cumprod(narrow(x, d, k + 1, n - k - 1), d) if k < n - 1 else None
        if k == 0:
            omitted = cat([_const(x, 1).expand(narrow(x, d, 0, 1).shape), after], d)
        else:
            until = prod(narrow(x, d, 0, k), d, keepdim=True)
            omitted = until if after is None else cat([until, until * after], d)
        cols.append((narrow(g, d, k, n - k) * omitted).sum(d))
    return stack(cols, d)


@with_out("cumprod", "dtype")
@ieee_quiet
@parser_errors
def cumprod(input, dim, *, dtype=None):
    d = _wrap(dim, input._data.ndim)
    input = _cast_for(input, dtype)
    # an explicit dtype is the result's; else integers and bool accumulate in int64
    out_dt = input.dtype if input.dtype.is_floating_point or dtype is not None else D.int64
    data = _running(input._data, d, "prod", out_dt.np)
    return record("CumprodBackward0", (input,), data, _cumprod_backward, save=(("x", input),),
                  save_outputs=(("out", 0),), attrs={"dim": d})


# ----------------------------------------------------------------------------- cummax / cummin


def _cumextreme_backward(node, g):
    # each output took its value from input[indices]: the gradient goes back there
    from .basic import zeros_like
    from .index import scatter_add
    if g.ndim == 0:
        return (g,)
    return (scatter_add(zeros_like(g), node.ctx.attrs["dim"], node.ctx.attrs["indices"], g),)


def _cumextreme(input, dim, which):
    from .basic import arange
    from .functional import where
    d = _wrap(dim, input._data.ndim)
    x = input.detach()
    values = Tensor._make(_running(x._data, d, which))
    if input.ndim == 0:
        indices = _const(x, 0, D.int64)
    else:
        # the index of the extreme so far is the last position whose element equals it (ties
        # go to the later element, as PyTorch's >= / <=), or the last NaN (NaN wins and stays)
        match = x == values
        if x.dtype.is_floating_point:
            match = match | x.isnan()
        n = x.shape[d]
        pos = arange(n, device=x.device).reshape((n,) + (1,) * (x.ndim - 1 - d))
        candidates = where(match, pos, _const(x, 0, D.int64))
        indices = Tensor._make(_running(candidates._data, d, "max"))
    name = "CummaxBackward0" if which == "max" else "CumminBackward0"
    values = record(name, (input,), values._data, _cumextreme_backward,
                    attrs={"dim": d, "indices": indices})
    return (CummaxResult if which == "max" else CumminResult)(values, indices)


@parser_errors
def cummax(input, dim):
    """Running maximum along ``dim`` and the index it came from (values, indices)."""
    return _cumextreme(input, dim, "max")


@parser_errors
def cummin(input, dim):
    """Running minimum along ``dim`` and the index it came from (values, indices)."""
    return _cumextreme(input, dim, "min")


# ----------------------------------------------------------------------------- logcumsumexp


def _logcumsumexp_backward(node, g):
    """grad_i = sum_{j >= i} g_j exp(x_i - out_j), in log space with g split by sign (so nothing
    overflows): exp(x_i + reversed logcumsumexp(log|g| - out)), positive minus negative part.
    PyTorch's formula; the masked entries get the dtype's lowest finite value, not -inf (an
    -inf there gives inf - inf in the second derivative)."""
    from .functional import exp, log, where
    d = node.ctx.attrs["dim"]
    if g.ndim == 0 or g.numel() == 0:
        return (g,)
    x = node.saved("x")
    out = node.saved("out")
    lowest = _const(g, float(np.finfo(g._data.dtype).min))
    log_abs = log(g.abs())

    def part(mask):
        lg = where(mask, log_abs, lowest)
        return exp(logcumsumexp((lg - out).flip(d), d).flip(d) + x)
    return (part(g > 0) - part(g < 0),)


@with_out("logcumsumexp", iterator=False)
@ieee_quiet
@parser_errors
def logcumsumexp(input, dim):
    d = _wrap(dim, input._data.ndim)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")
    data = _running(input._data, d, "logaddexp")
    return record("LogcumsumexpBackward0", (input,), data, _logcumsumexp_backward,
                  save=(("x", input),), save_outputs=(("out", 0),), attrs={"dim": d})


# ----------------------------------------------------------------------------- trapezoid rules


def _trapezoid_args(name, y, x, dx, dim):
    if not isinstance(y, Tensor) or (x is not None and not isinstance(x, Tensor)) or (
            x is not None and dx is not None):
        got = ", ".join(parser_type_name(a)
                        for a in (y, x) if a is not None)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (Tensor y, Tensor x, *, int dim = -1)\n"
                        " * (Tensor y, *, Number dx = 1, int dim = -1)\n")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap(dim, y.ndim)
    if isinstance(dx, Tensor):
        dx = dx.item()
    return d, (1 if dx is None else dx)


def _spacing(x, y, d, name):
    """The sample spacing along ``d``: ``diff(x)`` broadcast against ``y`` (a 1-D ``x`` lies
    along ``d``), with PyTorch's size check."""
    from .shape_join import narrow
    n = y.shape[d]
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        spacing = x[1:] - x[:-1]
        return spacing.reshape((max(n - 1, 0),) + (1,) * (y.ndim - 1 - d))
    xd = _wrap(d - y.ndim, x.ndim) if x.ndim else 0
    if x.shape[xd] != n:
        raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
    return narrow(x, xd, 1, n - 1) - narrow(x, xd, 0, n - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``."""
    from .shape_join import narrow
    d, dx = _trapezoid_args("trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        from .basic import zeros
        return zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype,
                     device=y.device)
    if x is not None:
        _spacing(x, y, d, "trapezoid")  # PyTorch's size check, before recording anything
        return record_composition("DivBackward1", (y, x), lambda yy, xx: (
            _spacing(xx, yy, d, "trapezoid")
            * (narrow(yy, d, 1, n - 1) + narrow(yy, d, 0, n - 1))).sum(d) / 2.0)
    return record_composition("MulBackward1", (y,), lambda yy: (
        yy.sum(d) - (yy.select(d, 0) + yy.select(d, -1)) * 0.5) * dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element fewer than ``y`` there)."""
    from .shape_join import narrow
    d, dx = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    m = max(n - 1, 0)
    pairs = narrow(y, d, 1, m) + narrow(y, d, 0, m) if n else y
    if x is not None:
        _spacing(x, y, d, "cumulative_trapezoid")  # PyTorch's size check
        return record_composition("DivBackward1", (y, x), lambda yy, xx: (
            _spacing(xx, yy, d, "cumulative_trapezoid")
            * (narrow(yy, d, 1, m) + narrow(yy, d, 0, m))).cumsum(d) / 2.0)
    return (dx / 2.0 * pairs).cumsum(d)


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser), as on the reductions
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402

for _name in ("cumprod", "cummax", "cummin", "logcumsumexp"):
    globals()[_name] = _aliases(globals()[_name])
del _name
