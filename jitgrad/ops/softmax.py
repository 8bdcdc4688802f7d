"""softmax / log_softmax along a dim, numerically stable (max-subtracted)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from .composite import ieee_quiet, record
from .parser_errors import argument_type_error, input_type_error, is_int, raise_instead

__all__ = ["softmax", "log_softmax"]


def check_dim(name, dim, position):
    """PyTorch's TypeError for a dim that is no int (``softmax(x, 0.5)``); ``position``: 2 in
    torch.softmax, 1 in the method and in F.softmax (which calls the method)."""
    if dim is not None and dim.__class__ is not int and not is_int(dim):
        raise argument_type_error(name, "dim", position, "int", dim)


def _softmax_dim(ndim, dim, name, stacklevel=3):
    check_dim(name, dim, 2)
    if dim is None:
        # PyTorch's _stacklevel counts from its _get_softmax_dim called by F.softmax; here
        # softmax's ieee_quiet wrapper adds a frame and F.softmax calls this module's softmax
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning,
                      stacklevel=stacklevel + 2)
        dim = 0 if ndim in (0, 1, 3) else 1
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return dim % max(ndim, 1)


def _prepare(input, dtype):
    if dtype is not None:
        input = input.to(dtype)
    return input


def _not_float(input, d, name):
    """PyTorch's kernels are defined for floating types only: an integer (or bool) input
    raises NotImplementedError naming the kernel; an empty one comes back unchanged."""
    if input._data.size == 0:
        return input.clone()
    last = "_lastdim" if d == input.ndim - 1 or input.ndim == 0 else ""
    raise NotImplementedError(f'"{name}{last}_kernel_impl" not implemented for '
                              f"'{D.scalar_name(input.dtype)}'")


def _softmax_np(x, axis):
    if x.ndim == 0:
        return np.ones_like(x)
    m = np.max(x, axis=axis, keepdims=True) if x.size else x
    # shifted by the max even when it is inf, as PyTorch: a row with +inf is all NaN
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def _device(input, d, log):
    """softmax/log_softmax of a CUDA tensor: the kernel layer's block-per-row kernel."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    S = B.kernels().softmax
    v = input._data.kview()
    return CudaArray.wrap(S.log_softmax(v, d) if log else S.softmax(v, d))


_ROWS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _host_forward(x, d, log):
    """softmax/log_softmax of a host array: ATen's kernels' bits for float32/float64
    (_softmax_aten), NumPy's expression for the other dtypes and empty or 0-d inputs."""
    if x.dtype in _ROWS_DTYPES and x.size and x.ndim:
        from .._settings import get_num_threads
        from ._softmax_aten import softmax_forward
        return softmax_forward(x, d, log, get_num_threads())
    if not log:
        return _softmax_np(x, d).astype(x.dtype, copy=False)
    if x.ndim == 0:
        return np.zeros_like(x)
    m = np.max(x, axis=d, keepdims=True) if x.size else x
    shifted = x - m  # by the max even when infinite, as PyTorch (see _softmax_np)
    with np.errstate(divide="ignore"):
        data = shifted - np.log(np.sum(np.exp(shifted), axis=d, keepdims=True))
    return data.astype(x.dtype, copy=False)


def _direct_backward(y, g, d, log):
    """The input gradient on arrays, when no graph is being recorded: one NumPy expression (or
    one device kernel) instead of four recorded Tensor ops (~100 us of dispatch per call)."""
    from ..tensor import Tensor
    yd, gd = y._data, g._data
    if yd.__class__ is np.ndarray:
        if gd.dtype != yd.dtype or gd.shape != yd.shape or yd.ndim == 0:
            return None
        if yd.dtype in _ROWS_DTYPES and yd.size and not (log and d in (-1, yd.ndim - 1)):
            # ATen's backward kernels in their order of operations: PyTorch's bits
            from .._settings import get_num_threads
            from ._softmax_backward_aten import softmax_backward
            return Tensor._make(softmax_backward(yd, gd, d % yd.ndim, log, get_num_threads()))
        if log:
            if d in (-1, yd.ndim - 1) and yd.dtype in _ROWS_DTYPES and yd.size:
                # the last dim: ATen's lastdim kernel, PyTorch's bits (_loss_kernels)
                from ..nn.functional._loss_kernels import log_softmax_rows_backward
                y2 = np.ascontiguousarray(yd).reshape(-1, yd.shape[-1])
                g2 = np.ascontiguousarray(gd).reshape(y2.shape)
                out = np.empty(y2.shape, yd.dtype)
                log_softmax_rows_backward(y2, g2, out)
                return Tensor._make(out.reshape(yd.shape))
            return Tensor._make(gd - np.exp(yd) * gd.sum(d, keepdims=True))
        return Tensor._make(yd * (gd - (gd * yd).sum(d, keepdims=True)))
    if gd.__class__ is not yd.__class__ or gd.dtype != yd.dtype or gd.shape != yd.shape or \
            yd.ndim == 0:
        return None
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    S = B.kernels().softmax
    fn = S.log_softmax_backward if log else S.softmax_backward
    return Tensor._make(CudaArray.wrap(fn(yd.kview(), gd.kview(), d)))


def _softmax_backward(node, g):
    y = node.saved("out")
    d = node.ctx.attrs["dim"]
    if not grad_mode.is_grad_enabled():
        direct = _direct_backward(y, g, d, False)
        if direct is not None:
            return (direct,)
    return (y * (g - (g * y).sum(d, keepdim=True)),)


@ieee_quiet
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``jitgrad.softmax`` / ``F.softmax`` (``dim`` may be omitted, with PyTorch's warning)."""
    try:  # (free until raised)
        input = _prepare(input, dtype)
        d = _softmax_dim(input.ndim, dim, "softmax", _stacklevel)
        floating = input.dtype.is_floating_point
    except Exception:
        raise_instead(input_type_error("softmax", (input,), {}))  # a non-Tensor input
    if not floating:
        return _not_float(input, d, "softmax")
    if input._data.__class__ is not np.ndarray:
        return record("SoftmaxBackward0", (input,), _device(input, d, False), _softmax_backward,
                      save_outputs=(("out", 0),), attrs={"dim": d})
    return record("SoftmaxBackward0", (input,), _host_forward(input._data, d, False),
                  _softmax_backward, save_outputs=(("out", 0),), attrs={"dim": d})


def _log_softmax_backward(node, g):
    y = node.saved("out")
    d = node.ctx.attrs["dim"]
    if not grad_mode.is_grad_enabled():
        direct = _direct_backward(y, g, d, True)
        if direct is not None:
            return (direct,)
    return (g - y.exp() * g.sum(d, keepdim=True),)


@ieee_quiet
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    try:  # (free until raised)
        input = _prepare(input, dtype)
        d = _softmax_dim(input.ndim, dim, "log_softmax", _stacklevel)
        floating = input.dtype.is_floating_point
    except Exception:
        raise_instead(input_type_error("log_softmax", (input,), {}))  # a non-Tensor input
    if not floating:
        return _not_float(input, d, "log_softmax")
    x = input._data
    if x.__class__ is not np.ndarray:
        return record("LogSoftmaxBackward0", (input,), _device(input, d, True),
                      _log_softmax_backward, save_outputs=(("out", 0),), attrs={"dim": d})
    return record("LogSoftmaxBackward0", (input,), _host_forward(x, d, True),
                  _log_softmax_backward, save_outputs=(("out", 0),), attrs={"dim": d})
