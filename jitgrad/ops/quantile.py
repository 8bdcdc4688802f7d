"""quantile / nanquantile: ATen's ``quantile_impl`` (Sorting.cpp) replayed op for op.

ATen composes the result from sort, gather and an in-place lerp in the input's dtype (the
ranks ``q * (n - 1)`` are computed in that dtype too, so float32 quantiles round as PyTorch's),
then reshapes it with in-place squeeze_/unsqueeze_/transpose_. Doing the same with jitgrad's
tensor ops gives PyTorch's values bit for bit, its gradient (sort's scatter, lerp's weights) and
its visible node (SqueezeBackward4 over LerpBackward1 / GatherBackward0 / TransposeBackward1);
CUDA tensors take the same path (only the CPU range check of tensor ``q`` reads the host, as
ATen's does).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .out import _RESIZE_WARNING
from .parser_errors import parser_type_name
from .reduce_args import _wrap

__all__ = ["quantile", "nanquantile"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")
_SIGNATURES = (
    " * (Tensor input, Tensor q, int dim = None, bool keepdim = False, *, str interpolation = "
    "\"linear\", Tensor out = None)\n"
    " * (Tensor input, float q, int dim = None, bool keepdim = False, *, str interpolation = "
    "\"linear\", Tensor out = None)\n")


def _parser_error(fname, input, q, dim, keepdim, interpolation, out):
    """PyTorch's argument-parser TypeError for arguments no overload takes."""
    got = [parser_type_name(input),
           parser_type_name(q)]
    for k, v in (("dim", dim), ("keepdim", keepdim), ("interpolation", interpolation),
                 ("out", out)):
        bad = {"dim": v is not None and (isinstance(v, bool)
                                         or not isinstance(v, (int, np.integer))),
               "keepdim": not isinstance(v, bool),
               "interpolation": not isinstance(v, str),
               "out": v is not None and not isinstance(v, Tensor)}[k]
        if bad:
            got.append(f"{k}={parser_type_name(v)}")
    return TypeError(f"{fname}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{_SIGNATURES}")


def _check_args(fname, input, q, dim, keepdim, interpolation, out):
    ok = (isinstance(input, Tensor)
          and (isinstance(q, (Tensor, float, int, np.floating, np.integer)))
          and (dim is None or (isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)))
          and isinstance(keepdim, bool) and isinstance(interpolation, str)
          and (out is None or isinstance(out, Tensor)))
    if not ok:
        raise _parser_error(fname, input, q, dim, keepdim, interpolation, out)


def _out_shape(input, q, dim, wrapped, keepdim):
    """ATen's output shape: q's size (1-D q) + the reduced shape."""
    if dim is not None and input.ndim > 0:
        shape = list(input.shape)
        if keepdim:
            shape[wrapped] = 1
        else:
            del shape[wrapped]
    elif keepdim:
        shape = [1] * input.ndim
    else:
        shape = []
    if q.ndim > 0:
        shape.insert(0, q.numel())
    return shape


def _quantile(fname, input, q, dim, keepdim, interpolation, out, ignore_nan):
    _check_args(fname, input, q, dim, keepdim, interpolation, out)
    if not isinstance(q, Tensor):
        qf = float(q)
        if not 0 <= qf <= 1:  # NaN fails too
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {_fmt(qf)}")
        from .from_data import scalar_tensor
        q = scalar_tensor(qf, dtype=input.dtype, device=input.device)
    if interpolation not in _MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    # quantile_checks
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device != input.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    if out is not None:
        if out.dtype is not input.dtype:
            raise RuntimeError("quantile() out tensor must be same dtype as the input tensor")
        if out.device != input.device:
            raise RuntimeError(
                "quantile() out tensor must be on the same device as the input tensor")
    wrapped = _wrap(0 if dim is None else dim, input.ndim)
    out_shape = _out_shape(input, q, dim, wrapped, keepdim)
    if out is not None:
        _resize_output(out, out_shape)
    result = _compute(input, q, dim, wrapped, out_shape, interpolation, ignore_nan)
    if out is None:
        return result
    out.copy_(result)  # recorded (CopyBackwards), as ATen's composite out.copy_
    return out


def _fmt(v):
    """A double as c10's ostream prints it (%g-like, 6 significant digits)."""
    if v != v:
        return "nan"
    return f"{v:g}"


def _resize_output(out, shape):
    if list(out.shape) == list(shape):
        return
    if out.numel() != 0:
        warnings.warn(_RESIZE_WARNING.format(old=list(out.shape), new=list(shape)),
                      UserWarning, stacklevel=4)
    from .factories import empty
    with grad_mode.no_grad():
        out._data = empty(tuple(shape), dtype=out.dtype, device=out.device)._data
    out._vc.value += 1


def _compute(input, q, dim, wrapped, out_shape, interpolation, ignore_nan):
    from .gather_scatter import gather
    from .shape_views import broadcast_tensors
    from .sort import sort
    if input.device.type == "cpu":  # ATen checks on the CPU only (no device sync)
        if not bool(q.ge(0).logical_and(q.le(1)).all().item()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    # Flatten, or move dim to reduce last, and sort
    if dim is None:
        s = sort(input.flatten())[0]
    elif wrapped == input.ndim - 1:
        s = sort(input)[0]
    else:
        s = sort(input.unsqueeze(-1).transpose(wrapped, -1))[0]
    shape = list(out_shape)
    if q.ndim == 0:  # treat q as 1-D
        shape.insert(0, q.numel())
    in_shape = shape[1:] + [0]
    in_shape[-1] = s.shape[-1]
    s = s.view(in_shape)
    if s.shape[-1] > 2 ** 24:  # ATen: the int64 -> float ranks must stay exact
        raise RuntimeError("quantile() input tensor is too large")
    with grad_mode.no_grad():  # ranks and weights carry no gradient
        if ignore_nan:
            ranks = q * (s.isnan().logical_not().sum(-1, True) - 1)
            ranks = ranks.masked_fill(ranks < 0, 0)
        else:
            last = s.shape[-1] - 1
            r, has_nan = broadcast_tensors(q * last, s.isnan().any(-1, True))
            ranks = r.masked_fill(has_nan, last)
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()
        below = ranks.long()
    values = gather(s, -1, below)
    if interpolation in ("linear", "midpoint"):
        with grad_mode.no_grad():
            if interpolation == "midpoint":
                from .factories import full_like
                weights = full_like(ranks, 0.5)
            else:
                weights = ranks - below
            above = ranks.ceil().long()
        values.lerp_(gather(s, -1, above), weights)
    if q.ndim == 0:
        values.squeeze_(-1)
    else:
        values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)
    return values


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``torch.quantile``: the q-th quantiles along ``dim`` (all elements when None); any NaN
    in a reduced row makes its quantiles NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``torch.nanquantile``: ``quantile`` over the non-NaN values of each row (all NaN: NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, True)
