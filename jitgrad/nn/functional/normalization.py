"""Statistics-based normalizations: batch_norm, instance_norm, group_norm, rms_norm,
local_response_norm (the channel-wise dropouts are in ``channel_dropout``).

batch_norm and group_norm are one node each (NativeBatchNormBackward0 / NativeGroupNormBackward0,
PyTorch's CPU names). Each is written once as a composition of differentiable ops
(``_batch_norm_graph`` / ``_group_norm_graph``): that composition is the CUDA forward (shown as
the one node by ``record_composition``) and the backward when a graph of the gradient is asked
for (``create_graph=True``, so double backward works on both devices). On the CPU the forward and
the plain backward instead run the row kernels of ``_norm_kernels`` (two passes over the tensor
each way), which is what makes them as fast as ATen's.

instance_norm is PyTorch's own composition: batch_norm over the input viewed as
``(1, N*C, ...)`` with weights and running statistics repeated N times (ViewBackward0 over
NativeBatchNormBackward0), and rms_norm is ATen's composition (MulBackward0 / RsqrtBackward0).
"""
from __future__ import annotations

import numbers

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import as_one_node, record, record_composition
from ...tensor import Tensor
from .. import _device

__all__ = ["batch_norm", "instance_norm", "group_norm", "rms_norm", "local_response_norm"]


_norm_kernels = None


def _kernels():
    """``_norm_kernels`` (imports Numba: loaded on first use, then kept here, since an import
    statement on every call costs importlib's parent lookups)."""
    global _norm_kernels
    if _norm_kernels is None:
        from . import _norm_kernels as kernels
        _norm_kernels = kernels
    return _norm_kernels


def _creating_graph() -> bool:
    return grad_mode.is_grad_enabled()


def _check_tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _check_float(input, op):
    if not input.is_floating_point():
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _check_param_dtypes(input, *params):
    """ATen's CPU mixed-dtype check (parameters must share the input's dtype)."""
    for p in params:
        if p is not None and p.dtype != input.dtype:
            if input.dtype == D.float32:
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type "
                                   "of Float")
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _kernel_array(a):
    """Contiguous, in a dtype the row kernels take: float16 computes in float32 (as ATen's CPU
    kernels do) and is rounded back by the caller."""
    a = np.ascontiguousarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _channel_shape(input):
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _vjp_of_graph(build, node, g, backward_name=None):
    """The backward of a CPU node when the engine builds a graph: differentiate ``build`` (the
    node's composition) at the saved inputs, keeping the graph of the result (shown as the one
    node ``backward_name`` if given, as PyTorch's double-backward nodes)."""
    from ...autograd import engine
    names = ("x", "w", "b")
    saved = [node.saved(n) if n in node.ctx._saved else None for n in names]
    needs = node.ctx.needs_input_grad

    def vjp(g, *saved):
        out = build(*saved)
        wanted = [t for t, need in zip(saved, needs) if need and t is not None]
        grads = iter(engine.grad([out], wanted, [g], retain_graph=True, create_graph=True,
                                 allow_unused=True))
        return tuple(next(grads) if need and t is not None else None
                     for t, need in zip(saved, needs))

    if backward_name is None:
        return vjp(g, *saved)
    return as_one_node(backward_name, (g, *saved), vjp)


def _save_inputs(input, weight, bias):
    return tuple((n, t) for n, t in (("x", input), ("w", weight), ("b", bias)) if t is not None)


# ----------------------------------------------------------------------------- batch_norm


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


def _batch_norm_backward_aten(node, g, need_x, need_w, need_b):
    """The float32/float64 CPU backward in ATen's arithmetic (``_batch_norm_backward_aten``):
    PyTorch's bits for all three gradients."""
    from . import _batch_norm_backward_aten as BA
    a = node.ctx.attrs
    x = np.ascontiguousarray(node.saved_array("x"))
    dt = x.dtype
    has_w = "w" in node.ctx._saved
    w = node.saved_array("w") if has_w else None
    train = a["training"]  # eval: ATen transforms the running variance itself
    gx, gw, gb = BA.batch_norm_backward(x, g._data, a["mean64"].astype(dt),
                                        (a["invstd"] if train else a["var64"]).astype(dt),
                                        w, train, a["eps"], need_x)
    return (Tensor._make(gx) if need_x else None,
            Tensor._make(gw) if need_w and has_w else None,
            Tensor._make(gb) if need_b and a["has_bias"] else None)


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
                            momentum, eps):
    """The float32/float64 CPU forward in ATen's arithmetic (``_batch_norm_aten``): output,
    saved mean/invstd and running buffers bit for bit with PyTorch's."""
    from . import _batch_norm_aten as A
    c = x2.shape[0] // input.shape[0]
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
    y = A.affine(x2, alpha, beta).reshape(input._data.shape)
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
                        f"ints, not {type(normalized_shape).__name__}")
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
