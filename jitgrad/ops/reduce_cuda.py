"""The CUDA half of the reductions (``ops/reduce_*.py``): reductions of device tensors with the
kernel layer's tree reductions and scans (``backends/cuda_kernels/reduce.py``, ``scan.py``),
composed with registered elementwise ops where a formula needs them. Nothing here reads device
data back to the host: where the CPU path branches on values (prod's gradient with zeros), both
branches are computed on the device and a device-side ``where`` selects.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .composite import record
from .reduce_args import _dims, _kept_shape, _wrap


def device_reduce(op, x, axes, keepdim, dtype):
    """``op`` in sum/mean/amax/amin over ``axes`` of a CUDA tensor: the kernel layer's tree
    reduction, reading the (possibly strided) storage in place."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    R = B.kernels().reduce
    v = x._data.kview()
    if not axes:  # a 0-d tensor: the reduction is a copy
        return x._data.astype(dtype)
    if op == "sum":
        out = R.sum(v, axes, keepdim, dtype)
    elif op == "mean":
        out = R.mean(v, axes, keepdim, dtype)
    elif op == "amax":
        out = R.amax(v, axes, keepdim)
    else:
        out = R.amin(v, axes, keepdim)
    return CudaArray.wrap(out)


def kred(op, data, axes, keepdim, dtype=None, scale=None):
    """Tree reduction ``op`` (sum/prod/max/min/all/any) of the CudaArray ``data`` over ``axes``
    (``scale`` multiplies a sum) as a CudaArray; a 0-d input is reduced as a 1-element row so
    the dtype rules and ``scale`` apply to it too."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    if data.ndim == 0:
        data, axes, keepdim = data.reshape((1,)), (0,), False
    out = B.kernels().reduce.reduce(data.kview(), axes, op, keepdim, dtype, scale)
    return CudaArray.wrap(out)


def dev(data) -> Tensor:
    """A device array as a constant Tensor (device forwards compose registered elementwise ops
    on these: no graph is recorded, the op's own node is attached by ``record``)."""
    from .._cuda_array import CudaArray
    return Tensor._make(data if isinstance(data, CudaArray) else CudaArray.wrap(data))


def dev_nan(shape, dtype):
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    return CudaArray.wrap(B.full(shape, np.nan, dtype))


def reduced_shape(shape, axes, keepdim):
    return _kept_shape(shape, axes) if keepdim else tuple(
        s for i, s in enumerate(shape) if i not in axes)


def device_var(input, axes, keepdim, denom, n):
    """Mean of squared deviations on the device: tree mean, ``(x - mu)**2`` with the registered
    elementwise ops, then a tree sum scaled by ``1/denom`` (two passes, like ``np.var``)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dt = input._data.dtype
    if n == 0:  # an empty row: the mean is 0/0
        return dev_nan(reduced_shape(input._data.shape, axes, keepdim), dt)
    x = input.detach()
    mu = dev(kred("sum", x._data, axes, True, dt, 1.0 / n))
    d = x - mu
    if denom <= 0:  # ATen's M2 / max(0, N - correction): inf, or nan where M2 is 0
        return (dev(kred("sum", (d * d)._data, axes, keepdim, dt, 1.0)) / 0.0)._data
    return kred("sum", (d * d)._data, axes, keepdim, dt, 1.0 / denom)


def device_prod_backward(node, x, ge):
    """The CPU rule without its host branch: ``out / x`` if the input has no zero, else the
    product of all *other* elements of the row (an exclusive cumprod from each end, read and
    written through reversed views, multiplied). Both are computed on the device and the
    0-d ``all(x)`` (no zero) selects, so no value crosses to the host."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    from .functional import where
    a = node.ctx.attrs
    S = B.kernels().scan
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    xd = x.detach()
    if xd.ndim == 0:  # a 0-d product: the other elements' product is the empty product 1
        others = dev(B.full((), 1, xd._data.dtype))
    else:
        v = xd._data.kview()
        left = S.scan(v, a["axes"], "prod", exclusive=True)
        right = S.scan(v, a["axes"], "prod", exclusive=True, reverse=True)
        others = dev(CudaArray.wrap(left)) * dev(CudaArray.wrap(right))
    no_zero = dev(kred("all", xd._data, _dims(None, xd.ndim), False))  # 0-d, on the device
    # divide by 1 where the branch is unused: its 0/0 would turn into NaN in a double backward
    safe_x = where(no_zero, x, 1.0)
    return where(no_zero, ge * out / safe_x, ge * others)


def device_arg(input, dim, keepdim, which):
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    R = B.kernels().reduce
    fn = R.argmax if which == "max" else R.argmin
    d = None if dim is None else _wrap(dim, input.ndim)
    return Tensor._make(CudaArray.wrap(fn(input._data.kview(), d, keepdim)))


def device_norm(input, p, axes, keepdim):
    """The CPU formulas with tree reductions and registered elementwise ops."""
    dt = input._data.dtype
    x = input.detach()
    if p == 2:
        return dev(kred("sum", (x * x)._data, axes, keepdim, dt)).sqrt()._data
    if p == 0:  # count of nonzeros (NaN counts), summed in the float dtype
        return kred("sum", x._data.astype(np.bool_), axes, keepdim, dt)
    a = x.abs()
    if p == 1:
        return kred("sum", a._data, axes, keepdim, dt)
    if p in (float("inf"), -float("inf")):
        return kred("max" if p > 0 else "min", a._data, axes, keepdim)
    return (dev(kred("sum", (a ** p)._data, axes, keepdim, dt)) ** (1.0 / p))._data


def device_logsumexp(x, axes, keepdim):
    """``max + log(sum(exp(x - max)))`` with tree max/sum; a non-finite max shifts by 0 as on
    the CPU (``m - m == 0`` is ``isfinite(m)`` in registered ops)."""
    from .functional import where
    t = dev(x)
    m = dev(kred("max", x, axes, True))
    m = where(m - m == 0, m, 0.0)
    data = (dev(kred("sum", (t - m).exp()._data, axes, True)).log() + m)._data
    return data if keepdim else data.reshape(reduced_shape(x.shape, axes, False))


def reverse_cumsum(g, d):
    """``flip(cumsum(flip(g, d), d), d)`` on the device as one reversed scan (no flip copies);
    recorded with cumsum as its gradient so ``create_graph`` works through it."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    data = CudaArray.wrap(B.kernels().scan.scan(g._data.kview(), d, "sum", reverse=True))
    return record("FlipBackward0", (g,), data,
                  lambda node, gg: (gg.cumsum(node.ctx.attrs["dim"]),), attrs={"dim": d})


def device_cumsum(input, d, out_dt):
    """Inclusive scan along ``d`` (a 0-d input is a cast)."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    if input.ndim == 0:
        return input._data.astype(out_dt.np)
    return CudaArray.wrap(B.kernels().scan.scan(input._data.kview(), d, "sum", out_dt.np))
