"""batch_norm: one NativeBatchNormBackward0 node (PyTorch's CPU name).

On the CPU, float32/float64 run ATen's arithmetic both ways (``_batch_norm_aten`` forward,
``_batch_norm_backward_aten`` backward: PyTorch's bits for the output, running buffers, saved
statistics and the three gradients); a channels-last 4-D/5-D input takes ATen's channels-last
kernels as its ``(N * spatial, C)`` rows (its output keeps the layout); an input and output
gradient not both contiguous in one memory format (an expanded gradient, mixed layouts) take
Normalization.cpp's TensorIterator route in the backward (``_backward_general``). Other dtypes
(float16) run ``_norm_kernels``' float64 row kernels.

The composition of differentiable ops (``_batch_norm_graph``) is the CUDA forward (shown as the
one node by ``record_composition``) and the backward when a graph of the gradient is asked for
(``create_graph=True``, so double backward works on both devices).
"""
from __future__ import annotations

import numpy as np

from ...autograd import grad_mode
from ...backends.cpu import empty
from ...ops.composite import record, record_composition
from ...tensor import Tensor
from .. import _device
from ._norm_common import (
    _channel_shape,
    _check_float,
    _check_param_dtypes,
    _check_tensor,
    _creating_graph,
    _kernel_array,
    _kernels,
    _save_inputs,
    _vjp_of_graph,
)

__all__ = ["batch_norm"]


def _verify_batch_size(size):
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _inv_std(var, eps):
    """ATen's batch-statistics inverse std (``InvStd``): 0 where ``var == 0`` and ``eps == 0``
    (a constant channel then normalizes to 0, not NaN), else ``1 / sqrt(var + eps)``.
    ``var`` is a float64 array; NumPy's divide warning is not PyTorch's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / np.sqrt(var + eps)
    if eps == 0:
        inv = np.where(var == 0, 0.0, inv)
    return inv


def _inv_std_graph(var, eps):
    """``_inv_std`` as differentiable ops (the CUDA forward and the double backward): the
    rsqrt is taken of 1 where masked, so its derivative there is finite and masked to 0."""
    if eps != 0:
        return (var + eps).rsqrt()
    from ...ops.functional import where
    zero = var == 0
    return where(zero, 0.0, where(zero, 1.0, var).rsqrt())


def _batch_norm_graph(x, w, b, training, mean, var, eps):
    """The composition: statistics of ``x`` (training) or the given ``mean``/``var`` Tensors."""
    cs = _channel_shape(x)
    if training:
        dims = (0,) + tuple(range(2, x.ndim))
        mean = x.mean(dims, keepdim=True)
        xc = x - mean
        y = xc * _inv_std_graph((xc * xc).mean(dims, keepdim=True), eps)
    else:
        y = (x - mean.reshape(cs)) * (var.reshape(cs) + eps).rsqrt()
    if w is not None:
        y = y * w.reshape(cs)
    if b is not None:
        y = y + b.reshape(cs)
    return y


def _update_running(running, value, momentum):
    """``running = momentum * value + (1 - momentum) * running``, computed in float64 as
    ATen's CPU kernel does (its accumulate type), written in place (no autograd) and, as
    ATen's kernels write the buffer directly, without a version bump (PyTorch's
    ``running_mean._version`` stays where it was).

    On the CPU this is array arithmetic written straight into the buffer's storage: the
    Tensor-op route costs ~10 dispatches per buffer, more than the whole batch-norm kernel work
    of a small CNN."""
    data = running._data
    if data.__class__ is np.ndarray and value._data.__class__ is np.ndarray \
            and data.flags.writeable:
        new = value._data.astype(np.float64, copy=False) * momentum \
            + data.astype(np.float64) * (1.0 - momentum)
        np.copyto(data, new, casting="unsafe")
        return
    version = running._vc.value
    with grad_mode.no_grad():
        new = value.double() * momentum + running.double() * (1.0 - momentum)
        running.copy_(new)
    running._vc.value = version


def _batch_stats(input):
    """(mean, biased var, unbiased var) per channel as float64 Tensors, on the GPU (the CPU
    computes them in ``_norm_kernels.batch_norm_stats``)."""
    with grad_mode.no_grad():
        dims = (0,) + tuple(range(2, input.ndim))
        x = input.detach()  # in its own dtype, as ATen's CUDA kernel accumulates float
        mean = x.mean(dims)
        var = (x - mean.reshape(_channel_shape(input))).pow(2).mean(dims)
    n = input.numel() // input.shape[1]  # > 1: batch_norm's callers checked
    correction = n / (n - 1) if n > 1 else float("nan")  # torch.batch_norm skips the check
    return mean.double(), var.double(), var.double() * correction


def _batch_norm_backward(node, g):
    a = node.ctx.attrs
    if _creating_graph():
        dt = g._data.dtype  # the statistics enter the composition in the input's dtype
        mean_t = Tensor._make(a["mean64"].astype(dt))
        var_t = Tensor._make(a["var64"].astype(dt))
        return _vjp_of_graph(lambda x, w, b: _batch_norm_graph(
            x, w, b, a["training"], mean_t, var_t, a["eps"]), node, g,
            "NativeBatchNormBackwardBackward0")
    need_x, need_w, need_b = node.ctx.needs_input_grad
    if g._data.dtype in _ATEN_DTYPES and node.saved_array("x").dtype == g._data.dtype:
        return _batch_norm_backward_aten(node, g, need_x, need_w, need_b)
    K = _kernels()
    x = _kernel_array(node.saved_array("x"))
    n_, c = x.shape[0], x.shape[1]
    x2 = x.reshape(n_ * c, -1)
    g2 = _kernel_array(g._data).reshape(x2.shape)
    dt = g._data.dtype
    mean, invstd = a["mean64"], a["invstd"]
    w = node.saved_array("w").astype(np.float64) if "w" in node.ctx._saved else np.ones(c)
    sg = sgx = gx = gw = gb = None
    if need_x and a["training"]:
        sg, sgx, gx = K.batch_norm_backward(g2, x2, mean, invstd, w)
    else:
        if need_w or need_b:
            sg, sgx = K.channel_grad_sums(g2, x2, mean)
        if need_x:  # eval: the statistics are constants, g is scaled per channel
            gx = K.affine(g2, w * invstd, np.zeros(c))
    if gx is not None:
        gx = Tensor._make(gx.reshape(x.shape).astype(dt, copy=False))
    if need_w and "w" in node.ctx._saved:
        gw = Tensor._make((sgx * invstd).astype(dt))
    if need_b and a["has_bias"]:
        gb = Tensor._make(sg.astype(dt))
    return (gx, gw, gb)


def _channels_last_rows(a):
    """A 4-D/5-D array laid out channels-last (and not also contiguous, which ATen's kernels
    check first) as its ``(N * spatial, C)`` rows, a C-contiguous view; else None."""
    if a.__class__ is not np.ndarray or a.ndim not in (4, 5) or a.flags.c_contiguous:
        return None
    rows = a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))
    return rows.reshape(-1, a.shape[1]) if rows.flags.c_contiguous else None


def _from_channels_last_rows(rows, shape):
    """``(N * spatial, C)`` rows as an array of dims ``shape`` (N, C, *) in channels-last
    layout (a transposed view)."""
    nd = len(shape)
    lead = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return rows.reshape(lead).transpose((0, nd - 1) + tuple(range(1, nd - 1)))


def _batch_norm_backward_aten(node, g, need_x, need_w, need_b):
    """The float32/float64 CPU backward in ATen's arithmetic (``_batch_norm_backward_aten``):
    PyTorch's bits for all three gradients."""
    from . import _batch_norm_backward_aten as BA
    a = node.ctx.attrs
    x = node.saved_array("x")
    dt = x.dtype
    has_w = "w" in node.ctx._saved
    w = node.saved_array("w") if has_w else None
    train = a["training"]  # eval: ATen transforms the running variance itself
    stats = (a["mean64"].astype(dt), (a["invstd"] if train else a["var64"]).astype(dt))
    x_rows = _channels_last_rows(x)
    g_rows = _channels_last_rows(g._data) if x_rows is not None else None
    if g_rows is not None:  # both channels-last: ATen's channels-last backward, by rows
        gx, gw, gb = BA.batch_norm_backward(x_rows, g_rows, *stats, w, train, a["eps"], need_x)
        if gx is not None:
            gx = _from_channels_last_rows(gx, x.shape)
    elif x.flags.c_contiguous and g._data.flags.c_contiguous:
        gx, gw, gb = BA.batch_norm_backward(x, g._data, *stats, w, train, a["eps"], need_x)
    else:
        gx, gw, gb = _backward_general(BA, x, g, stats, w, train, a["eps"], need_x)
    return (Tensor._make(gx) if need_x else None,
            Tensor._make(gw) if need_w and has_w else None,
            Tensor._make(gb) if need_b and a["has_bias"] else None)


def _backward_general(BA, x, g, stats, w, train, eps, need_x):
    """Normalization.cpp's TensorIterator route, taken when the input and the output gradient
    are not both contiguous in one memory format (``y.sum().backward()``'s expanded gradient,
    mixed layouts, strided views): each channel's elements walked in the order TensorIterator
    gives the input and gradient strides (channel dim squashed), the gradient's sum by
    ``at::sum`` (jitgrad's sum, the same bits); the input gradient laid out as
    ``empty_like(input, suggest_memory_format)``."""
    from ..._iter_layout import reorder_dimensions
    gd = g._data
    shape = list(x.shape)
    shape[1] = 1  # declare_static_shape(sizes, squash_dims=1)
    perm = reorder_dimensions(shape, (x.strides, gd.strides))
    order = [1] + [d for d in reversed(perm) if d != 1]  # channel, then outermost first
    pad = (slice(None),) + (None,) * (5 - x.ndim)  # 5-D views (C, a, b, c, d), no copies

    def view(a):
        return a.transpose(order)[pad]

    with grad_mode.no_grad():
        dy_sum = g.sum(dim=(0,) + tuple(range(2, x.ndim)))._data
    gx = None
    if need_x:
        if _channels_last_rows(x) is not None:
            c = x.shape[1]
            gx = _from_channels_last_rows(empty((x.size // c, c), x.dtype), x.shape)
        else:
            gx = empty(x.shape, x.dtype)
    gw, gb = BA.batch_norm_backward_general(view(x), view(gd), None if gx is None else view(gx),
                                            dy_sum, *stats, w, train, eps)
    return gx, gw, gb


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """ATen's ``batch_norm`` (no Python-level checks: instance_norm calls it directly)."""
    _check_batch_norm_args(input, weight, bias, running_mean, running_var, training)
    if input.numel() == 0:  # ATen returns before its dtype checks
        return input.clone()
    out, _, _ = _native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   momentum, eps)
    return out


def _check_batch_norm_args(input, weight, bias, running_mean, running_var, training):
    _check_float(input, "batch_norm")
    c = input.shape[1] if input.ndim >= 2 else 0  # ATen's num_features of a 1-D input is 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    if input.ndim < 2:
        d = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-d}, {d - 1}], "
                         "but got 1)")


def _check_stats_not_differentiable(running_mean, running_var):
    """native_batch_norm has no derivative for the running statistics (autograd's check)."""
    if not grad_mode.is_grad_enabled():
        return
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.requires_grad:
            raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with "
                               f"respect to argument '{name}'. This input cannot have "
                               "requires_grad True.")


def _native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """ATen's ``native_batch_norm``: ``(out, mean, var)``, the statistics used (float64
    Tensors: the batch's in training, the running ones otherwise)."""
    _check_stats_not_differentiable(running_mean, running_var)
    _check_param_dtypes(input, weight, bias, running_mean, running_var)
    if not _device.is_cuda(input):
        return _native_batch_norm_cpu(input, weight, bias, running_mean, running_var, training,
                                      momentum, eps)
    if training:
        mean, var, unbiased = _batch_stats(input)
        if running_mean is not None:
            _update_running(running_mean, mean, momentum)
        if running_var is not None:
            _update_running(running_var, unbiased, momentum)
    else:
        mean, var = running_mean.detach().double(), running_var.detach().double()
    return record_composition("NativeBatchNormBackward0", (input, weight, bias),
                              lambda x, w, b: _batch_norm_graph(
                                  x, w, b, training, mean.to(x.dtype), var.to(x.dtype), eps),
                              "NativeBatchNormBackwardBackward0"), mean, var


def _native_batch_norm_cpu(input, weight, bias, running_mean, running_var, training, momentum,
                           eps):
    """The CPU forward: the statistics and coefficients from one kernel call in training
    (``_norm_kernels.batch_norm_stats``), then one affine pass."""
    if input._data.dtype in _ATEN_DTYPES:
        rows = _channels_last_rows(input._data)
        if rows is not None:  # ATen's channels-last kernels: (N * spatial, C) rows
            return _native_batch_norm_aten(input, rows.reshape(-1, 1), weight, bias,
                                           running_mean, running_var, training, momentum, eps,
                                           channels_last=True)
    x = _kernel_array(input._data)
    n_, c = x.shape[0], x.shape[1]
    x2 = x.reshape(n_ * c, -1)
    if input._data.dtype in _ATEN_DTYPES:
        return _native_batch_norm_aten(input, x2, weight, bias, running_mean, running_var,
                                       training, momentum, eps)
    w = weight._data.astype(np.float64) if weight is not None else None
    b = bias._data.astype(np.float64) if bias is not None else None
    K = _kernels()
    if training:
        mean64, total, invstd, ca, cb = K.batch_norm_stats(
            x2, c, eps, w if w is not None else np.ones(c), b if b is not None else np.zeros(c))
        n = x2.size // c
        var64 = total / n
        if running_mean is not None:
            _update_running(running_mean, Tensor._make(mean64), momentum)
        if running_var is not None:
            unbiased = total / (n - 1) if n > 1 else np.full(c, np.nan)
            _update_running(running_var, Tensor._make(unbiased), momentum)
    else:  # ATen's eval transform: 1 / sqrt(running_var + eps), inf/NaN included
        mean64 = running_mean._data.astype(np.float64)
        var64 = running_var._data.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            invstd = 1.0 / np.sqrt(var64 + eps)
        ca = invstd * w if w is not None else invstd
        cb = (b if b is not None else 0.0) - mean64 * ca
    y = K.affine(x2, ca, cb)
    dt = input._data.dtype
    y = y.reshape(x.shape).astype(dt, copy=False)
    out = record("NativeBatchNormBackward0", (input, weight, bias), y, _batch_norm_backward,
                 save=_save_inputs(input, weight, bias),
                 attrs={"training": training, "eps": eps, "mean64": mean64, "invstd": invstd,
                        "var64": var64, "has_bias": bias is not None})
    return out, Tensor._make(mean64), Tensor._make(var64)


_ATEN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _write_running(running, new):
    """``running``'s values become ``new``, without a version bump (ATen's kernels write the
    buffer directly)."""
    data = running._data
    if data.__class__ is np.ndarray and data.flags.writeable:
        np.copyto(data, new, casting="unsafe")
        return
    version = running._vc.value
    with grad_mode.no_grad():
        running.copy_(Tensor._make(np.asarray(new)))
    running._vc.value = version


def _native_batch_norm_aten(input, x2, weight, bias, running_mean, running_var, training,
                            momentum, eps, channels_last=False):
    """The float32/float64 CPU forward in ATen's arithmetic (``_batch_norm_aten``): output,
    saved mean/invstd and running buffers bit for bit with PyTorch's. ``x2``: the ``(N*C,
    spatial)`` rows, or with ``channels_last`` the ``(N*spatial*C, 1)`` values of a
    channels-last input."""
    from . import _batch_norm_aten as A
    c = input.shape[1]
    w = weight._data if weight is not None else None
    b = bias._data if bias is not None else None
    if training:
        mean, var_sum, invstd, alpha, beta = A.training_stats(x2, c, eps, w, b)
        n = x2.size // c
        if running_mean is not None:
            _write_running(running_mean, A.updated_running_mean(running_mean._data, mean,
                                                                momentum))
        if running_var is not None:
            _write_running(running_var, A.updated_running_var(running_var._data, var_sum, n,
                                                              momentum))
        mean64 = mean.astype(np.float64)
        var64 = (var_sum / var_sum.dtype.type(n)).astype(np.float64)
    else:
        dt = x2.dtype
        mean64 = running_mean._data.astype(np.float64)
        var64 = running_var._data.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            invstd, alpha, beta = A.eval_coefficients(running_mean._data.astype(dt),
                                                      running_var._data.astype(dt), eps, w, b)
    y = A.affine(x2, alpha, beta)
    if channels_last:  # the rows back to (N, C, *) dims, the layout kept (as ATen's output)
        y = _from_channels_last_rows(y, input._data.shape)
    else:
        y = y.reshape(input._data.shape)
    out = record("NativeBatchNormBackward0", (input, weight, bias), y, _batch_norm_backward,
                 save=_save_inputs(input, weight, bias),
                 attrs={"training": training, "eps": eps, "mean64": mean64,
                        "invstd": invstd.astype(np.float64), "var64": var64,
                        "has_bias": bias is not None})
    return out, Tensor._make(mean64), Tensor._make(var64)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalizes each channel (dim 1) by batch statistics (training) or the running ones;
    in training the running statistics are updated in place with ``momentum`` (the variance
    unbiased, as PyTorch). One NativeBatchNormBackward0 node."""
    _check_tensor(input, "batch_norm")
    if training:
        _verify_batch_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is None:
        raise TypeError("batch_norm(): argument 'momentum' (position 7) must be float, not "
                        "NoneType")
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
