"""Statistics-based normalizations: instance_norm, group_norm, rms_norm, local_response_norm,
and batch_norm re-exported from ``batchnorm`` (the channel-wise dropouts are in
``channel_dropout``).

group_norm is one node (NativeGroupNormBackward0, PyTorch's CPU name), written once as a
composition of differentiable ops (``_group_norm_graph``): that composition is the CUDA forward
(shown as the one node by ``record_composition``) and the backward when a graph of the
gradient is asked for (``create_graph=True``, so double backward works on both devices). On the
CPU the forward and the plain backward instead run the row kernels of ``_norm_kernels`` (two
passes over the tensor each way), which is what makes them as fast as ATen's.

instance_norm is PyTorch's own composition: batch_norm over the input viewed as
``(1, N*C, ...)`` with weights and running statistics repeated N times (ViewBackward0 over
NativeBatchNormBackward0), and rms_norm is ATen's composition (MulBackward0 / RsqrtBackward0).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...autograd import grad_mode
from ...ops.composite import record, record_composition
from ...ops.parser_errors import parser_type_name
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

# batch_norm, and the private names the ATen spellings (_aten.py) reach through this module
from .batchnorm import (  # noqa: F401
    _batch_norm,
    _check_batch_norm_args,
    _inv_std,
    _native_batch_norm,
    _verify_batch_size,
    batch_norm,
)

__all__ = ["batch_norm", "instance_norm", "group_norm", "rms_norm", "local_response_norm"]


# ----------------------------------------------------------------------------- instance_norm


def _verify_spatial_size(size):
    prod = 1
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Per-sample, per-channel normalization: ATen's composition, batch_norm over the input
    viewed as ``(1, N*C, ...)`` (ViewBackward0 over NativeBatchNormBackward0)."""
    _check_tensor(input, "instance_norm")
    if use_input_stats:
        _verify_spatial_size(input.shape)
    return _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                          momentum, eps)


def _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                   eps):
    """ATen's ``instance_norm`` (``torch.instance_norm``: no Python-level size check)."""
    n, c = input.shape[0], input.shape[1]

    def rep(t):
        return None if t is None else t.repeat(n)

    rm, rv = rep(running_mean), rep(running_var)
    shape = (1, n * c) + tuple(input.shape[2:])
    out = _batch_norm(input.contiguous().view(*shape), rep(weight), rep(bias), rm, rv,
                      use_input_stats, momentum, eps)
    with grad_mode.no_grad():
        if running_mean is not None:
            running_mean.copy_(rm.view(n, c).mean(0))
        if running_var is not None:
            running_var.copy_(rv.view(n, c).mean(0))
    return out.view(*tuple(input.shape))


# ----------------------------------------------------------------------------- group_norm


def _group_norm_graph(x, w, b, groups, eps):
    per_group = (x.shape[1] // groups) * int(np.prod(tuple(x.shape[2:]), dtype=np.int64))
    xg = x.reshape(x.shape[0], groups, per_group)
    mean = xg.mean(2, keepdim=True)
    xc = xg - mean
    y = (xc * ((xc * xc).mean(2, keepdim=True) + eps).rsqrt()).reshape(*tuple(x.shape))
    cs = _channel_shape(x)
    if w is not None:
        y = y * w.reshape(cs)
    if b is not None:
        y = y + b.reshape(cs)
    return y


def _group_norm_backward(node, g):
    a = node.ctx.attrs
    groups, eps = a["groups"], a["eps"]
    if _creating_graph():
        return _vjp_of_graph(lambda x, w, b: _group_norm_graph(x, w, b, groups, eps), node, g)
    need_x, need_w, need_b = node.ctx.needs_input_grad
    K = _kernels()
    x = _kernel_array(node.saved_array("x"))
    n, c = x.shape[0], x.shape[1]
    cg = c // groups
    x2 = x.reshape(n * c, -1)
    g2 = _kernel_array(g._data).reshape(x2.shape)
    dt = g._data.dtype
    mean, invstd = a["mean"], a["invstd"]  # (n, groups) float64
    mean_c = np.repeat(mean, cg, axis=1)  # (n, c)
    inv_c = np.repeat(invstd, cg, axis=1)
    sg, sgx = K.grad_sums(g2, x2, mean_c.reshape(-1))
    sg, sgx = sg.reshape(n, c), sgx.reshape(n, c)
    has_w = "w" in node.ctx._saved
    w = node.saved_array("w").astype(np.float64) if has_w else np.ones(c)
    gx = gw = gb = None
    if need_x:
        k = x2.shape[1] * cg
        s1 = (w * sg).reshape(n, groups, cg).sum(2)
        s2 = invstd * (w * sgx).reshape(n, groups, cg).sum(2)
        cb_g = -invstd ** 2 * s2 / k
        cc_g = -invstd * s1 / k + mean * invstd ** 2 * s2 / k
        ca = inv_c * w
        cb = np.repeat(cb_g, cg, axis=1)
        cc = np.repeat(cc_g, cg, axis=1)
        gx = K.affine2(g2, x2, ca.reshape(-1), cb.reshape(-1), cc.reshape(-1))
        gx = Tensor._make(gx.reshape(x.shape).astype(dt, copy=False))
    if need_w and has_w:
        gw = Tensor._make((sgx * inv_c).sum(0).astype(dt))
    if need_b and a["has_bias"]:
        gb = Tensor._make(sg.sum(0).astype(dt))
    return (gx, gw, gb)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes groups of channels per sample (NativeGroupNormBackward0)."""
    _check_tensor(input, "group_norm")
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    _verify_batch_size([input.shape[0] * input.shape[1] // num_groups, num_groups]
                       + list(input.shape[2:]))
    return _group_norm(input, num_groups, weight, bias, eps)


def _group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """ATen's ``group_norm`` (``torch.group_norm``: no Python-level size check)."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups="
                           f"{num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    _check_float(input, "group_norm")
    _check_param_dtypes(input, weight, bias)
    if _device.is_cuda(input) or input.numel() == 0:
        return record_composition("NativeGroupNormBackward0", (input, weight, bias),
                                  lambda x, w, b: _group_norm_graph(x, w, b, num_groups, eps))
    K = _kernels()
    x = _kernel_array(input._data)
    cg = c // num_groups
    x2 = x.reshape(n * c, -1)
    m = x2.shape[1]
    mr, m2r = K.moments(x2)
    mr, m2r = mr.reshape(n, num_groups, cg), m2r.reshape(n, num_groups, cg)
    mean = mr.mean(2)
    var = (m2r.sum(2) + m * ((mr - mean[..., None]) ** 2).sum(2)) / (m * cg)
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN as ATen, without NumPy's warning
        invstd = 1.0 / np.sqrt(var + eps)
    w = weight._data.astype(np.float64) if weight is not None else np.ones(c)
    b = bias._data.astype(np.float64) if bias is not None else np.zeros(c)
    ca = np.repeat(invstd, cg, axis=1) * w
    cb = b - np.repeat(mean, cg, axis=1) * ca
    y = K.affine(x2, ca.reshape(-1), cb.reshape(-1)).reshape(x.shape)
    y = y.astype(input._data.dtype, copy=False)
    return record("NativeGroupNormBackward0", (input, weight, bias), y, _group_norm_backward,
                  save=_save_inputs(input, weight, bias),
                  attrs={"groups": num_groups, "eps": eps, "mean": mean, "invstd": invstd,
                         "has_bias": bias is not None})


# ----------------------------------------------------------------------------- rms_norm


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x * rsqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (ATen's composition; ``eps`` defaults to the dtype's machine epsilon)."""
    _check_tensor(input, "rms_norm")
    if isinstance(normalized_shape, numbers.Integral):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {parser_type_name(normalized_shape)}")
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    shape = tuple(input.shape)
    if k == 0 or len(shape) < k or shape[len(shape) - k:] != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError("Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps) if input.is_floating_point() else None
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


# ----------------------------------------------------------------------------- local_response_norm


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over size neighbouring channels) ** beta`` (PyTorch's
    window: ``size // 2`` channels before, ``(size - 1) // 2`` after, zero padded)."""
    _check_tensor(input, "local_response_norm")
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    from ...ops.shape_join import cat
    c = input.shape[1]
    sq = input * input
    # Zero padding of the channel dim by concatenation (works on every device, as F.pad's
    # constant mode does not on CUDA yet); the window is then a sum of shifted slices.
    before, after = size // 2, (size - 1) // 2
    rest = tuple(input.shape[2:])
    parts = [sq.new_zeros((input.shape[0], n) + rest) for n in (before, after)]
    sq = cat([parts[0], sq, parts[1]], 1)
    window = sq.narrow(1, 0, c)
    for i in range(1, size):
        window = window + sq.narrow(1, i, c)
    div = (window / size).mul(alpha).add(k).pow(beta)
    return input / div
