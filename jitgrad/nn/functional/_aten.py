"""The top-level ATen spellings of the pools, normalizations and dropouts (``torch.max_pool2d``,
``torch.batch_norm``, ``torch.native_batch_norm``, ``torch.dropout``, ...), bound lazily by
``jitgrad.__getattr__``; they are not part of ``jitgrad.nn.functional``.

They are not aliases of ``F``: each has ATen's own signature (``torch.batch_norm`` takes weight
and bias before the running statistics, every argument positional and required) and skips the
Python-level checks ``F`` adds (batch size, ``eps > 0`` in training), as PyTorch's do. The
pools have ATen's narrower signatures: no ``return_indices`` (``max_pool1d_with_indices`` and
``adaptive_max_pool1d`` always return the pair), no ``divisor_override`` on ``avg_pool1d``, and
``stride=()`` for "the kernel size", so a call PyTorch rejects raises the same ``TypeError``.
"""
from __future__ import annotations

from ...autograd import grad_mode
from ...tensor import Tensor
from . import channel_dropout, dropouts, layernorm
from . import normalization as N
from . import pooling as _p

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_max_pool1d", "batch_norm", "native_batch_norm", "instance_norm",
           "group_norm", "layer_norm", "native_layer_norm", "rms_norm", "dropout", "alpha_dropout",
           "feature_alpha_dropout"]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """``torch.batch_norm`` (ATen's argument order; ``cudnn_enabled`` has no effect here)."""
    N._check_tensor(input, "batch_norm")
    return N._batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                         eps)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(out, save_mean, save_invstd)``: the batch's mean and inverse std in training (in the
    input's dtype), empty tensors in evaluation (as ATen's CPU kernel)."""
    N._check_tensor(input, "native_batch_norm")
    N._check_batch_norm_args(input, weight, bias, running_mean, running_var, training)
    out, mean, var = N._native_batch_norm(input, weight, bias, running_mean, running_var,
                                          training, momentum, eps)
    dt = input.dtype
    if not training:
        empty = Tensor._make(mean._data[:0].astype(dt.np)).to(input.device)
        return out, empty, empty.clone()
    invstd = Tensor._make(N._inv_std(var.detach().cpu()._data, eps)).to(input.device)
    return out, mean.to(dt), invstd.to(dt)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    """``torch.instance_norm`` (ATen's argument order)."""
    N._check_tensor(input, "instance_norm")
    return N._instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                            momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """``torch.group_norm``."""
    N._check_tensor(input, "group_norm")
    return N._group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """``torch.layer_norm`` (ATen spells the last argument ``cudnn_enable``)."""
    return layernorm.layer_norm(input, normalized_shape, weight, bias, eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(out, mean, rstd)``, the statistics shaped ``input.shape[:-k] + (1,) * k``."""
    out = layernorm.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    with grad_mode.no_grad():
        x = input.detach()
        mean = x.mean(dims, keepdim=True)
        rstd = ((x - mean).pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``torch.rms_norm``."""
    return N.rms_norm(input, normalized_shape, weight, eps)


def _check_p(p):
    if p < 0.0 or p > 1.0:  # ATen's check raises RuntimeError (F's raises ValueError)
        # C++'s ostream prints the double as %g does (-1.0 as -1)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")


def dropout(input, p, train):
    """``torch.dropout``."""
    _check_p(p)
    return dropouts.dropout(input, p, train)


def alpha_dropout(input, p, train):
    """``torch.alpha_dropout``."""
    _check_p(p)
    return channel_dropout.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    """``torch.feature_alpha_dropout``."""
    _check_p(p)
    return channel_dropout.feature_alpha_dropout(input, p, train)


# ----------------------------------------------------------------------------- pools
def _stride(stride):
    return None if stride == () else stride  # ATen's empty stride: the kernel size


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _p.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                      ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    return _p.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                         count_include_pad)


def adaptive_max_pool1d(input, output_size):
    return _p.adaptive_max_pool1d_with_indices(input, output_size)
