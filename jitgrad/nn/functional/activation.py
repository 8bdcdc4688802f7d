"""The core activations (relu, gelu, silu, elu, leaky_relu, softplus, ...), softmax /
log_softmax / softmin and ``normalize``."""
from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops import functional as _F
from ...ops import softmax as _softmax
from ...ops.composite import record, record_composition
from ...ops.parser_errors import input_type_error
from ...tensor import Tensor
from . import activation_kernels as K


def _float_only(input, kernel):
    """PyTorch's CPU kernels for these activations are defined for floating types only."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _named(node, input, build):
    """``build(input)`` (a composition) recorded as PyTorch's single node ``node``."""
    return record_composition(node, (input,), build)


def _inplace_named(input, node, build):
    """The in-place variant: ``input`` takes the value, its grad_fn is ``node``."""
    from ...ops.inplace import apply_inplace
    return apply_inplace(input, lambda t: _named(node, t, build))


def relu(input, inplace=False):
    if inplace:
        return input.relu_()
    return _F.relu(input)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(input, min_val, max_val)`` recorded as HardtanhBackward0; integer inputs keep
    their dtype (PyTorch's hardtanh is defined for them)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.is_floating_point() and input.dtype is not D.bool_:
        data = np.clip(input._data, min_val, max_val).astype(input._data.dtype)
        if inplace:
            input._data[...] = data
            input._vc.value += 1
            return input
        return Tensor._make(data)

    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, lambda t: _hardtanh(t, min_val, max_val))
    return _hardtanh(input, min_val, max_val)


def _hardtanh_backward(node, g):
    # ATen's vectorized hardtanh_backward: ``(x > min_val) & (x < max_val) & grad``, so exactly
    # +0 at and beyond the bounds and at a NaN x, whatever grad is (NaN and inf included).
    # (Its scalar tail, the last elements of a row that fill no vector, passes grad through at
    # a NaN x; the vector lanes' answer is the one most elements get.)
    x = node.saved("x")
    a = node.ctx.attrs
    return (g.masked_fill(~((x > a["lo"]) & (x < a["hi"])), 0.0),)


def _hardtanh(t, min_val, max_val):
    with grad_mode.no_grad():
        out = _F.clamp(t, min_val, max_val)
    # the bounds as the kernel's scalar_t (a float32 tensor compares with float32 bounds)
    lo, hi = (float(t.dtype.np.type(v)) for v in (min_val, max_val))
    return record("HardtanhBackward0", (t,), out._data, _hardtanh_backward,
                  save=(("x", t),), attrs={"lo": lo, "hi": hi})


def _gelu_backward(node, g):
    # ATen's GeluBackwardKernelImpl bit for bit (activation_kernels); with create_graph the same
    # derivative in differentiable ops
    x = node.saved("x")
    tanh = node.ctx.attrs["approximate"] == "tanh"
    if not grad_mode.is_grad_enabled() and K.supported(g._data, x._data):
        dt = x._data.dtype.type
        if tanh:
            return (Tensor._make(K.binary(
                K.gelu_tanh_backward_vec, K.gelu_tanh_backward_scl, g._data, x._data,
                K.GELU_BETA, K.GELU_KAPPA, 0.5, 1.0, dt(3) * dt(K.GELU_KAPPA))),)
        if node.ctx.attrs["onednn"]:
            return (Tensor._make(K.binary(K.gelu_onednn_backward, K.gelu_onednn_backward,
                                          g._data, x._data)),)
        return (Tensor._make(K.binary(K.gelu_backward_vec, K.gelu_backward_scl, g._data,
                                      x._data, *K.GELU_BACKWARD_PARAMS)),)
    if tanh:
        inner = K.GELU_BETA * (x + K.GELU_KAPPA * x * x * x)
        t = _F.tanh(inner)
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K.GELU_BETA
                     * (1 + 3 * K.GELU_KAPPA * x * x)),)
    cdf = 0.5 * (1 + _F.erf(x * K.GELU_ALPHA))
    return (g * (cdf + x * (K.GELU_PDF * _F.exp(x * x * -0.5))),)


def gelu(input, approximate="none"):
    """PyTorch's CPU gelu bit for bit on float32/float64 tensors (GeluBackward0): ATen's
    GeluKernelImpl, or oneDNN's eltwise_gelu_erf where PyTorch calls it (float32 'none',
    ``K.gelu_onednn``); the registry's op (fusable) elsewhere (CUDA, float16/bfloat16)."""
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        x = input._data
    except AttributeError:
        raise input_type_error("gelu", (input,), {}) from None
    if approximate not in ("none", "tanh") or not K.supported(x):
        return _F.gelu(input, approximate=approximate)
    onednn = approximate == "none" and K.gelu_onednn(x, input.is_contiguous())
    if approximate == "tanh":
        out = K.unary(K.gelu_tanh_vec, K.gelu_tanh_scl, x, K.GELU_BETA, K.GELU_KAPPA, 0.5,
                      1.0, grain=K.gelu_grain)
    elif onednn:
        out = K.unary(K.gelu_onednn_vec, K.gelu_onednn_vec, x)
    else:
        out = K.unary(K.gelu_vec, K.gelu_scl, x, *K.GELU_PARAMS, grain=K.gelu_grain)
    return record("GeluBackward0", (input,), out, _gelu_backward, save=(("x", input),),
                  attrs={"approximate": approximate, "onednn": onednn})


def _silu_composed(t):
    return t * _F.sigmoid(t)


def _silu_backward(node, g):
    # ATen's silu_backward: dy * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)); with
    # create_graph the same formula in differentiable ops (sigmoid's bits, not exp's)
    x = node.saved("x")
    if not grad_mode.is_grad_enabled() and K.supported(g._data, x._data):
        return (Tensor._make(K.binary(K.silu_backward_vec, K.silu_backward_scl, g._data,
                                      x._data, 1.0)),)
    s = _F.sigmoid(x)
    return (g * s * (1 + x * (1 - s)),)


def _silu(t):
    if not K.supported(t._data):  # float16/bfloat16, CUDA: the composition
        return _named("SiluBackward0", t, _silu_composed)
    out = K.unary(K.silu_vec, K.silu_scl, t._data, 1.0)
    return record("SiluBackward0", (t,), out, _silu_backward, save=(("x", t),))


def silu(input, inplace=False):
    """``x / (1 + exp(-x))`` as ATen's silu kernel (SiluBackward0, also in place)."""
    _float_only(input, "silu_cpu")
    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, _silu)
    return _silu(input)


def elu(input, alpha=1.0, inplace=False):
    _float_only(input, "elu_cpu")

    from .activation_extra import _elu_family
    # EluBackward0 (elu_: EluBackward1, through the result), ATen's elu_backward
    return _elu_family(input, alpha, 1.0, 1.0, "EluBackward", inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:  # PyTorch's leaky_relu_ records LeakyReluBackward1
        return _inplace_named(input, "LeakyReluBackward1",
                              lambda t: _F.leaky_relu(t, negative_slope))
    return _F.leaky_relu(input, negative_slope)


def _softplus_backward(node, g):
    # ATen's softplus_backward: x * beta > threshold ? grad : grad * z / (z + 1), z = exp(x *
    # beta); with create_graph the same formula in differentiable ops
    x = node.saved("x")
    a = node.ctx.attrs
    beta, threshold = a["beta"], a["threshold"]
    if not grad_mode.is_grad_enabled() and K.supported(g._data, x._data):
        return (Tensor._make(K.binary(K.softplus_backward_vec, K.softplus_backward_scl,
                                      g._data, x._data, beta, threshold, 1.0)),)
    z = _F.exp(x * beta)
    return (_F.where(x * beta > threshold, g, g * z / (z + 1)),)


def softplus(input, beta=1.0, threshold=20.0):
    """ATen's softplus kernel bit for bit on float32/float64 CPU tensors (SoftplusBackward0);
    the registry's op (fusable) elsewhere."""
    if not K.supported(input._data) or not isinstance(beta, (int, float)) or \
            not isinstance(threshold, (int, float)):
        return _F.softplus(input, beta=beta, threshold=threshold)
    _float_only(input, "softplus_cpu")
    out = K.unary(K.softplus_vec, K.softplus_scl, input._data, beta, threshold)
    return record("SoftplusBackward0", (input,), out, _softplus_backward,
                  save=(("x", input),), attrs={"beta": beta, "threshold": threshold})


def _log_sigmoid_backward(node, g):
    # ATen's log_sigmoid_backward over the forward's buffer exp(-|x|) (recomputed: the same
    # bits): (max_deriv - sign * (b / (1 + b))) * grad, max_deriv/sign by x < 0
    x = node.saved("x")
    if not grad_mode.is_grad_enabled() and K.supported(g._data, x._data):
        return (Tensor._make(K.binary(K.log_sigmoid_backward_vec, K.log_sigmoid_backward_vec,
                                      g._data, x._data, 0.0, 1.0)),)
    b = _F.exp(-x.abs())
    neg = x < 0
    return ((_F.where(neg, 1.0, 0.0) - _F.where(neg, 1.0, -1.0) * (b / (1 + b))) * g,)


def logsigmoid(input):
    """``min(x, 0) - log1p(exp(-|x|))`` as ATen's log_sigmoid kernel (LogSigmoidBackward0)."""
    _float_only(input, "log_sigmoid_cpu")
    if not K.supported(input._data):  # float16/bfloat16, CUDA: -softplus(-x), stably
        return _named("LogSigmoidBackward0", input, lambda t: -_F.softplus(-t))
    # every element is a vector lane in ATen's loop (a masked last vector): no scalar tail
    # ATen's log_sigmoid_forward_cpu runs on input.contiguous() into a contiguous result
    out = K.unary(K.log_sigmoid_vec, K.log_sigmoid_vec, input._data, 0.0, contiguous=True)
    return record("LogSigmoidBackward0", (input,), out, _log_sigmoid_backward,
                  save=(("x", input),))


def tanh(input):
    return _F.tanh(input)


def sigmoid(input):
    return _F.sigmoid(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    _softmax.check_dim("softmax", dim, 1)  # (PyTorch's F.softmax calls the method)
    return _softmax.softmax(input, dim, _stacklevel, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``(-input).softmax(dim)`` (SoftmaxBackward0 over NegBackward0); the implicit-dim warning
    names softmin, as PyTorch's."""
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning,
                      stacklevel=max(_stacklevel - 1, 1))
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return _softmax.softmax(-input, dim, _stacklevel, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    _softmax.check_dim("log_softmax", dim, 1)
    return _softmax.log_softmax(input, dim, _stacklevel, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is None:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        return input / denom
    # written into ``out`` (spectral_norm's power iteration updates its u/v buffers so)
    from ... import div  # the out= spelling
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    return div(input, denom, out=out)
