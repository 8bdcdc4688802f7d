"""More activations: softsign, hardswish/hardsigmoid, mish, selu, celu, glu, prelu,
threshold and the shrink family, with their in-place forms."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops import functional as _F
from ...ops.composite import record, record_composition
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from . import activation_kernels as K
from ._common import _check_tensor
from .activation import _float_only, _inplace_named, _named

# Compositions of core ops; where PyTorch's CPU path records one node (HardswishBackward0,
# EluBackward0 for selu, GluBackward0, ...), the composition is a ``record_composition`` under
# that name, so the gradient and double backward are the composition's. Values follow ATen's
# formulas in the same operation order.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _in_dtype(value, dt):
    """A Python scalar rounded to ``dt`` (ATen converts its Scalars to the kernel's type)."""
    return float(np.dtype(dt.np).type(value)) if dt.is_floating_point else value


def _elu_build(alpha, scale, input_scale, dt):
    """ATen's elu kernel: ``x > 0 ? x * scale : (exp(x * input_scale) - 1) * alpha * scale``
    (alpha * scale multiplied in the tensor's dtype, as ATen's coefficients are)."""
    negcoef = _in_dtype(_in_dtype(alpha, dt) * _in_dtype(scale, dt), dt)

    def build(t):
        neg = _F.clamp(t, max=0.0)
        if input_scale != 1.0:
            neg = neg * input_scale
        pos = t * scale if scale != 1.0 else t
        return _F.where(t > 0, pos, (_F.exp(neg) - 1) * negcoef)
    return build


def softsign(input):
    """``input / (input.abs() + 1)`` (DivBackward0), PyTorch's Python definition."""
    return input / (input.abs() + 1)


def _relu6_shifted(t):
    """``clamp(t + 3, 0, 6)`` whose derivative is 1 strictly inside (-3, 3) and 0 at and
    beyond the kinks (ATen's hardswish/hardsigmoid gradients): outside, a constant."""
    inside = (t > -3.0) & (t < 3.0)
    return _F.where(inside, t + 3, _F.clamp(t.detach() + 3, 0.0, 6.0))


def _hardswish_backward(node, g):
    # ATen's vectorized hardswish_backward: exactly +0 up to -3 (a NaN or infinite grad does
    # not leak), grad from 3 up, grad * (x / 3 + 0.5) between (NaN for a NaN x in the vector
    # lanes; the scalar tail passes grad there: the kernels reproduce both)
    x = node.saved("x")
    if _exact(g, x):
        return (Tensor._make(K.binary(K.hardswish_backward_vec, K.hardswish_backward_scl,
                                      g._data, x._data, -3.0, 3.0, 0.5, 0.0)),)
    return (_F.where(x <= -3.0, 0.0, _F.where(x >= 3.0, g, g * (x / 3.0 + 0.5))),)


def _hardswish(t):
    with grad_mode.no_grad():
        out = t * _relu6_shifted(t) / 6
    return record("HardswishBackward0", (t,), out._data, _hardswish_backward,
                  save=(("x", t),))


def hardswish(input, inplace=False):
    """``x * clamp(x + 3, 0, 6) / 6`` (HardswishBackward0, also in place)."""
    _check_tensor(input, "hardswish")
    _float_only(input, "hardswish_cpu")
    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, _hardswish)
    return _hardswish(input)


def _hardsigmoid_backward(node, g):
    # ATen: g * (1.0f / 6.0f) strictly inside (-3, 3), else 0 (the float constant even for
    # float64, so its gradients carry float32's 1/6)
    x = node.saved("x")
    inside = (x > -3.0) & (x < 3.0)
    return ((g * float(np.float32(1.0) / np.float32(6.0))).masked_fill(~inside, 0.0),)


def _hardsigmoid(t):
    with grad_mode.no_grad():
        out = _F.clamp(t + 3, 0.0, 6.0) / 6
    return record("HardsigmoidBackward0", (t,), out._data, _hardsigmoid_backward,
                  save=(("x", t),))


def hardsigmoid(input, inplace=False):
    """``clamp(x + 3, 0, 6) / 6`` (HardsigmoidBackward0, also in place)."""
    _check_tensor(input, "hardsigmoid")
    _float_only(input, "hardsigmoid_cpu")
    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, _hardsigmoid)
    return _hardsigmoid(input)


def _mish_composed(t):
    return t * _F.tanh(_F.softplus(t))


def _mish_backward(node, g):
    # ATen's mish_backward; with create_graph PyTorch's infinitely_differentiable_mish_backward
    # (sigmoid, softplus and tanh ops): dy * (tsp + x * s * (1 - tsp * tsp))
    x = node.saved("x")
    if _exact(g, x):
        return (Tensor._make(K.binary(K.mish_backward_vec, K.mish_backward_scl, g._data,
                                      x._data, 1.0)),)
    s = _F.sigmoid(x)
    tsp = _F.tanh(_F.softplus(x))
    return (g * (tsp + x * s * (1 - tsp * tsp)),)


def _mish(t):
    if not K.supported(t._data):  # float16/bfloat16, CUDA: the composition
        return _named("MishBackward0", t, _mish_composed)
    out = K.unary(K.mish_vec, K.mish_scl, t._data)
    return record("MishBackward0", (t,), out, _mish_backward, save=(("x", t),))


def mish(input, inplace=False):
    """``x * tanh(log1p(exp(x)))`` as ATen's mish kernel (MishBackward0, also in place)."""
    _check_tensor(input, "mish")
    _float_only(input, "mish_cpu")
    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, _mish)
    return _mish(input)


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with PyTorch's constants: EluBackward0 (in place
    EluBackward1), as ATen computes it with its elu kernel."""
    _check_tensor(input, "selu")
    _float_only(input, "elu_cpu")
    return _elu_family(input, _SELU_ALPHA, _SELU_SCALE, 1.0, "EluBackward", inplace)


def _elu_family(input, alpha, scale, input_scale, node, inplace, ipt=None):
    """elu/selu/celu as ATen's elu kernel, one node (``node`` + "0"; in place + "1") whose
    backward is ATen's vectorized elu_backward: ``x > 0 ? grad * scale : grad * input_scale *
    negcoef * exp(x * input_scale)`` (NaN at a NaN x; -0 at -inf for a negative grad), in place
    through the result (``is_result``). ``ipt``: the input scale the backward uses, if not
    ``input_scale``."""
    dt = input.dtype
    build = _elu_build(alpha, scale, input_scale, dt)
    attrs = {"negcoef": _in_dtype(_in_dtype(alpha, dt) * _in_dtype(scale, dt), dt),
             "ipt": _in_dtype(input_scale if ipt is None else ipt, dt),
             "pos": _in_dtype(scale, dt)}

    # the kernels' coefficients: (negcoef, poscoef, forward input scale)
    coefs = (attrs["negcoef"], attrs["pos"], _in_dtype(input_scale, dt))

    def forward(t):
        if K.supported(t._data):
            return K.unary(K.elu_vec, K.elu_scl, t._data, *coefs)
        with grad_mode.no_grad():  # float16/bfloat16, CUDA: the composition
            return build(t)._data

    def fn(t):
        return record(node + "0", (t,), forward(t), _elu_backward, save=(("x", t),),
                      attrs=attrs)

    def fn_(t):  # elu_/selu_/celu_ differentiate through their result (ATen's is_result form)
        return record(node + "1", (t,), forward(t), _elu_backward_result,
                      save_outputs=(("out", 0),), attrs=attrs)

    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, fn_)
    return fn(input)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (CeluBackward0; in place
    CeluBackward1)."""
    _check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _float_only(input, "elu_cpu")
    # PyTorch's derivative scales the input by 1.0 / float(alpha) (float32's alpha even for
    # float64 tensors), not by the forward's 1 / alpha: its own backward, so gradients match
    return _elu_family(input, alpha, 1.0, 1.0 / alpha, "CeluBackward", inplace,
                       ipt=1.0 / float(np.float32(alpha)))


def _pos(g, a):
    return g if a["pos"] == 1.0 else g * a["pos"]


def _exact(g, t):
    """Whether a backward computes its arrays with the kernels (not under create_graph, whose
    gradient must be recorded in differentiable ops)."""
    return not grad_mode.is_grad_enabled() and K.supported(g._data, t._data)


def _elu_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    if _exact(g, x):
        return (Tensor._make(K.binary(K.elu_backward_vec, K.elu_backward_scl, g._data, x._data,
                                      a["negcoef"], a["pos"], a["ipt"])),)
    neg = g * a["ipt"] * a["negcoef"] * _F.exp(_F.clamp(x, max=0.0) * a["ipt"])
    return (_F.where(x > 0, _pos(g, a), neg),)


def _elu_backward_result(node, g):
    a = node.ctx.attrs
    y = node.saved("out")
    if _exact(g, y):
        return (Tensor._make(K.binary(K.elu_backward_result_vec, K.elu_backward_result_scl,
                                      g._data, y._data, a["negcoef"], a["pos"], a["ipt"])),)
    return (_F.where(y > 0, _pos(g, a), g * a["ipt"] * (y + a["negcoef"])),)


def threshold(input, threshold, value, inplace=False):
    """``x <= threshold ? value : x`` (ThresholdBackward0; in place ThresholdBackward1). Integer
    tensors keep their dtype (the scalars converted to it, as ATen does)."""
    _check_tensor(input, "threshold")
    if input.dtype is D.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if not input.is_floating_point():
        x = input._data
        if x.__class__ is not np.ndarray:
            raise NotImplementedError("threshold of an integer CUDA tensor")
        data = np.where(x <= int(threshold), x.dtype.type(int(value)), x)
        if inplace:
            x[...] = data
            input._vc.value += 1
            return input
        return Tensor._make(data)

    def build(t):
        return _F.where(t <= threshold, value, t)

    if inplace:
        return _inplace_named(input, "ThresholdBackward1", build)
    return _named("ThresholdBackward0", input, build)


def _shrink_lambda_check(input, lambd):
    if input.is_floating_point():
        top = float(np.finfo(input.dtype.np).max)
        if not 0 <= lambd <= top:
            raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                               f"{D.scalar_name(input.dtype)}, but found {lambd:g}")


def softshrink(input, lambd=0.5):
    """``x - l`` above ``l``, ``x + l`` below ``-l``, 0 between (SoftshrinkBackward0)."""
    _check_tensor(input, "softshrink")
    _float_only(input, "softshrink_check")
    _shrink_lambda_check(input, lambd)
    lam = _in_dtype(lambd, input.dtype)

    if K.supported(input._data):
        out = K.unary(K.softshrink_vec, K.softshrink_scl, input._data, lam, 0.0, vectors=1)
    else:
        with grad_mode.no_grad():
            out = _F.where(input > lam, input - lam,
                           _F.where(input < -lam, input + lam, input * 0))._data
    return record("SoftshrinkBackward0", (input,), out, _shrink_backward,
                  save=(("x", input),), attrs={"lambd": lam})


def _shrink_backward(node, g):
    # ATen's vectorized softshrink/hardshrink_backward: ``((x < -lambd) | (x > lambd)) & grad``,
    # exactly +0 on [-lambd, lambd] and at a NaN x whatever grad is (the scalar tail of a row
    # would pass grad at a NaN x)
    x = node.saved("x")
    lam = node.ctx.attrs["lambd"]
    return (g.masked_fill(~((x < -lam) | (x > lam)), 0.0),)


def hardshrink(input, lambd=0.5):
    """``x`` outside ``[-l, l]``, 0 inside (HardshrinkBackward0)."""
    _check_tensor(input, "hardshrink")
    _float_only(input, "hardshrink_cpu")
    lam = _in_dtype(lambd, input.dtype)

    with grad_mode.no_grad():
        out = _F.where((input >= -lam) & (input <= lam), 0.0, input)
    return record("HardshrinkBackward0", (input,), out._data, _shrink_backward,
                  save=(("x", input),), attrs={"lambd": lam})


def tanhshrink(input):
    """``input - input.tanh()`` (SubBackward0), PyTorch's Python definition."""
    return input - input.tanh()


def glu(input, dim=-1):
    """``a * sigmoid(b)`` for the two halves of ``dim`` (GluBackward0)."""
    _check_tensor(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = input._wrap_dim(dim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    _float_only(input, "glu_cpu")
    h = n // 2

    def build(t):
        return t.narrow(d, 0, h) * _F.sigmoid(t.narrow(d, h, h))

    return _named("GluBackward0", input, build)


def prelu(input, weight):
    """``x > 0 ? x : weight * x`` with one weight per channel (dim 1) or a single one
    (PreluKernelBackward0; the weight reshaped to broadcast first, ViewBackward0, as ATen)."""
    _check_tensor(input, "prelu")
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not "
                        f"{parser_type_name(weight)}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{D.scalar_name(input.dtype)} and {D.scalar_name(weight.dtype)}")
    nd, nw = input.dim(), weight.numel()
    if nw != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if nd > 1 else 1
        if channels != nw:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {nw} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    _float_only(input, "prelu_cpu")
    w = weight
    if nd != weight.dim():
        shape = [1] * nd
        if nd > 1:
            shape[1] = nw
        w = weight.reshape(shape)

    def build(x, w):
        return _F.where(x > 0, x, w * x)

    return record_composition("PreluKernelBackward0", (input, w), build)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):  # noqa: F811 - PyTorch's name, like threshold's arg
    return globals()["threshold"](input, threshold, value, inplace=True)
