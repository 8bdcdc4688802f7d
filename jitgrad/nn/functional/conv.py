"""Convolutions: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``, PyTorch's signatures, checks
and error messages, one ``ConvolutionBackward0`` node each (inputs: input, weight, bias).

The numbers come from ``_conv_arrays`` (im2col + GEMM, see there). Its three maps (forward,
input gradient, weight gradient) are each the adjoint of the others, so every backward here is
written with the same three maps recorded as nodes of their own: a gradient computed with
``create_graph=True`` is again a convolution (PyTorch's ``ConvolutionBackwardBackward0``) and
differentiable to any order.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import ieee_quiet, record
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from . import _conv_arrays as A

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]

_SIG = ("(Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, "
        "tuple of ints padding = 0, tuple of ints dilation = 1, int groups = 1)")
_SIG_STR = ("(Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, "
            "str padding = \"valid\", tuple of ints dilation = 1, int groups = 1)")


# ----------------------------------------------------------------------------- argument parsing


def _bad_combination(fname, input, weight, kwargs):
    """PyTorch's argument-parser TypeError for conv{1,2,3}d (its two overloads)."""
    got = ", ".join([type(input).__name__, type(weight).__name__] +
                    [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                     "but expected one of:\n" + "".join(f" * {s}\n" for s in (_SIG, _SIG_STR)))


def _is_int(v) -> bool:
    return type(v) is int or isinstance(v, (numbers.Integral, np.integer)) and \
        not isinstance(v, (bool, np.bool_))  # (the ABC check costs ~1 us: ints skip it)


def _int_tuple(value, nd, what, fname, bad):
    """``value`` (an int or a sequence of ints) as ``nd`` ints, with PyTorch's errors."""
    if type(value) is tuple and len(value) == nd and all(type(v) is int for v in value):
        return value
    if _is_int(value):
        return (int(value),) * nd
    if isinstance(value, (tuple, list)) and all(_is_int(v) for v in value):
        vals = tuple(int(v) for v in value)
        if len(vals) == 1:
            return vals * nd
        if len(vals) != nd:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of {nd} "
                               f"values to match the convolution dimensions, but got "
                               f"{what}={list(vals)}")
        return vals
    raise bad()


def _check_tensors(fname, input, weight, bias):
    for name, pos, t in (("input", 1, input), ("weight", 2, weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{parser_type_name(t)}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{fname}(): argument 'bias' (position 3) must be Tensor, not "
                        f"{parser_type_name(bias)}")


def _batched(input, nd, fname):
    """``input`` with a batch dim (and whether one was added), or PyTorch's rank error."""
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fname}, "
                       f"but got input of size: {list(input.shape)}")


def _pad3(t, fill):
    return (fill,) * (3 - len(t)) + tuple(t)


def _fmt(sizes):
    return " x ".join(str(s) for s in sizes)


def _as_2d_view(sizes, fill):
    """PyTorch's backends see a 1-D convolution as a 2-D one with a unit height."""
    return (fill,) + tuple(sizes) if len(sizes) == 1 else tuple(sizes)


def _check_backend_dilation(input, weight, dilation, groups, transposed):
    """A zero dilation passes ``check_shape_forward``; PyTorch rejects it in the kernel it then
    picks, after the shape checks (a channel mismatch is reported first) and before the type
    checks, and not at all for an empty input (no kernel runs). The words are the kernel's:
    oneDNN's for a float32 convolution it takes (``ConvParams::use_mkldnn``), else the slow
    kernels' (transposed float32 ones that oneDNN would take fail there with oneDNN's own
    internal text; the slow kernel's is given instead)."""
    if all(d > 0 for d in dilation) or input.numel() == 0:
        return
    view = _as_2d_view(dilation, 1)
    if not transposed:
        xs, ks = _as_2d_view(input.shape[2:], 1), _as_2d_view(weight.shape[2:], 1)
        if input.dtype.name == "float32" and not input.is_cuda and (
                groups > 1 or (ks[-1] > 3 and ks[-2] > 3) or input.shape[0] > 1 or
                input.shape[0] * input.shape[1] * xs[0] * xs[1] > 20480):
            raise RuntimeError("non-positive dilation is not supported")
        raise RuntimeError(f"dilation should be greater than zero, but got {list(view)}")
    names = ("depth", "height", "width")[3 - len(view):]
    raise RuntimeError("dilation should be greater than zero, but got " + ", ".join(
        f"dilation_{n}: {d}" for n, d in zip(names, view)))


def _check_common(input, weight, bias, stride, padding, dilation, groups, transposed,
                  output_padding=None):
    """PyTorch's ``check_shape_forward`` (less what the caller checks), in its order."""
    nd = input.ndim - 2
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({D.c_name(input.dtype)}) and bias type "
                           f"({D.c_name(bias.dtype)}) should be the same")
    if weight.ndim != nd + 2 and weight.ndim > 2:  # PyTorch sizes its arguments by the weight
        raise RuntimeError(f"expected stride to be a single integer value or a list of "
                           f"{weight.ndim - 2} values to match the convolution dimensions, but "
                           f"got stride={list(stride)}")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional input for {nd + 2}-dimensional "
                           f"weight {list(weight.shape)}, but got {input.ndim}-dimensional input "
                           f"of size {list(input.shape)} instead")
    ws, xs = tuple(weight.shape), tuple(input.shape)
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(ws)} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(ws)}] instead")
    if not transposed:
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(ws)}, expected "
                               f"input{list(xs)} to have {ws[1] * groups} channels, but got "
                               f"{xs[1]} channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != ws[0]):
            raise RuntimeError(f"Given weight of size {list(ws)}, expected bias to be "
                               f"1-dimensional with {ws[0]} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
    else:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected "
                               f"input{list(xs)} to have {ws[0]} channels, but got {xs[1]} "
                               "channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected bias "
                               f"to be 1-dimensional with {ws[1] * groups} elements, but got "
                               f"bias of size {list(bias.shape)} instead")


def _check_types(input, weight, bias, slow_name):
    def legacy(t):  # PyTorch's Tensor.toString(): torch.FloatTensor, torch.cuda.FloatTensor
        return f"torch.{'cuda.' if t.is_cuda else ''}{D.scalar_name(t.dtype)}Tensor"

    if input.device != weight.device or input.dtype is not weight.dtype:
        tail = "" if input.is_cuda else (" or input should be a MKLDNN tensor and weight is a "
                                         "dense tensor")
        raise RuntimeError(f"Input type ({legacy(input)}) and weight type ({legacy(weight)}) "
                           f"should be the same{tail}")
    if bias is not None and bias.device != input.device:
        raise RuntimeError(f"Input type ({legacy(input)}) and bias type ({legacy(bias)}) should "
                           "be the same")
    if input.dtype.name == "bool" or (input.is_cuda and not input.is_floating_point()):
        raise NotImplementedError(f"\"{slow_name}\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")


# ----------------------------------------------------------------------------- recorded maps


def _compute(fn, *arrays):
    """Run an array map in the dtype PyTorch computes in: float16 in float32 (rounded once),
    integers exactly (NumPy's integer matmul)."""
    if arrays[0].dtype == np.float16:
        out = fn(*(a.astype(np.float32) if a is not None else None for a in arrays))
        return out.astype(np.float16)
    return fn(*arrays)


def _creating_graph() -> bool:
    return grad_mode.is_grad_enabled()


def _map(kind, a, b, geo, shape, name, anchor=None, value=None):
    """One of the three maps on Tensors, recorded (node ``name``) so it is differentiable:
    ``forward(z, w)``, ``input_grad(y, w)`` (``shape``: the z-side channel count) or
    ``weight_grad(z, y)`` (``shape``: the weight's shape).

    ``anchor``: a third input the value does not depend on. PyTorch's double-backward node takes
    (grad_output, input, weight) whatever it outputs, so a gradient computed with
    ``create_graph`` is recorded whenever any of the three requires grad (e.g. the input
    gradient of ``conv(x, w).sum()`` when only ``x`` does); its derivative along ``anchor`` is
    zero (no edge is followed). ``value``: the map's 5-D result when already computed."""
    nd = a.ndim - 2
    a5, b5 = _as5d(a._data), _as5d(b._data)
    if value is not None:
        out = value
    elif kind == "forward":
        out = _compute(lambda z, w: A.forward(z, w, geo), a5, b5)
    elif kind == "input_grad":
        out = _compute(lambda y, w: A.input_grad(y, w, geo, shape), a5, b5)
    else:
        w5 = tuple(shape[:2]) + (1,) * (3 - nd) + tuple(shape[2:])
        out = _compute(lambda z, y: A.weight_grad(z, y, geo, w5), a5, b5)
    return record(name, (a, b, anchor), _rank(out, nd), _map_backward,
                  save=(("a", a), ("b", b)), attrs={"kind": kind, "geo": geo, "shape": shape})


_BACKWARD_NAME = "ConvolutionBackwardBackward0"


def _map_backward(node, g):
    """The adjoints: forward(z, w) -> (input_grad(g, w), weight_grad(z, g));
    input_grad(y, w) -> (forward(g, w), weight_grad(g, y));
    weight_grad(z, y) -> (input_grad(y, g), forward(z, g))."""
    at = node.ctx.attrs
    kind, geo = at["kind"], at["geo"]
    need_a, need_b = node.ctx.needs_input_grad[:2]
    a, b = node.saved("a"), node.saved("b")
    ga = gb = None
    if kind == "forward":
        if need_a:
            ga = _map("input_grad", g, b, geo, a.shape[1], _BACKWARD_NAME)
        if need_b:
            gb = _map("weight_grad", a, g, geo, tuple(b.shape), _BACKWARD_NAME)
    elif kind == "input_grad":
        if need_a:
            ga = _map("forward", g, b, geo, None, _BACKWARD_NAME)
        if need_b:
            gb = _map("weight_grad", g, a, geo, tuple(b.shape), _BACKWARD_NAME)
    else:
        if need_a:
            ga = _map("input_grad", b, g, geo, a.shape[1], _BACKWARD_NAME)
        if need_b:
            gb = _map("forward", a, g, geo, None, _BACKWARD_NAME)
    return ga, gb, None


def _bias_grad(g, x, w):
    """Sum of ``g`` (N, C, ...) over every dim but 1. With ``create_graph`` it is an output of
    PyTorch's ConvolutionBackwardBackward0 over (grad_output, input, weight), so it requires
    grad when any of them does (only ``g`` carries a derivative)."""
    gd = g._data
    if gd.__class__ is np.ndarray:
        acc = gd.dtype if gd.dtype != np.float16 else np.float32
        out = gd.reshape(gd.shape[0], gd.shape[1], int(np.prod(gd.shape[2:]))).sum(
            axis=(0, 2), dtype=acc).astype(gd.dtype)
    else:
        with grad_mode.no_grad():
            out = g.sum([d for d in range(g.ndim) if d != 1])._data
    if not _creating_graph():
        return Tensor._make(out)
    return record(_BACKWARD_NAME, (g, x, w), out, _bias_grad_backward,
                  attrs={"shape": tuple(g.shape)})


def _bias_grad_backward(node, u):
    """The sum's adjoint: ``u`` (C,) broadcast back over ``g``'s shape; nothing for x, w."""
    if not node.ctx.needs_input_grad[0]:
        return None, None, None
    shape = node.ctx.attrs["shape"]
    return u.reshape((1, -1) + (1,) * (len(shape) - 2)).expand(shape), None, None


def _convolution_backward(node, g):
    """ConvolutionBackward0: input, weight and bias gradients (a transposed convolution is the
    ``input_grad`` map, so the maps swap roles)."""
    at = node.ctx.attrs
    geo, transposed = at["geo"], at["transposed"]
    need_x, need_w, need_b = node.ctx.needs_input_grad
    x, w = node.saved("x"), node.saved("w")
    gx = gw = None
    if not transposed:
        vx = vw = None
        if need_w and _grads_apply(x):
            source, kept = at.get("kept", (None, None))
            vx, vw = A.grads(_as5d(x._data), _as5d(g._data), _as5d(w._data), geo, need_x,
                             True, kept if source is x._data else None)
        if need_x:
            gx = _map("input_grad", g, w, geo, x.shape[1], _BACKWARD_NAME, anchor=x, value=vx)
        if need_w:
            gw = _map("weight_grad", x, g, geo, tuple(w.shape), _BACKWARD_NAME, anchor=w,
                      value=vw)
    else:
        if need_x:
            gx = _map("forward", g, w, geo, None, _BACKWARD_NAME, anchor=x)
        if need_w:
            gw = _map("weight_grad", g, x, geo, tuple(w.shape), _BACKWARD_NAME, anchor=w)
    return gx, gw, (_bias_grad(g, x, w) if need_b else None)


def _add_channel_bias(out, bd):
    if out.__class__ is np.ndarray:
        out += bd.reshape((1, -1) + (1,) * (out.ndim - 2))
        return out
    with grad_mode.no_grad():
        shape = (1, -1) + (1,) * (out.ndim - 2)
        return (Tensor._make(out) + Tensor._make(bd).reshape(shape))._data


@ieee_quiet
def _convolution(x, w, bias, geo, transposed):
    """The ConvolutionBackward0 node over ``x`` (batched), ``w`` and ``bias``."""
    x5, w5 = _as5d(x._data), _as5d(w._data)
    bd = None if bias is None else bias._data
    nd = x.ndim - 2
    attrs = {"geo": geo, "transposed": transposed}
    if not transposed and _keeps_work(x, w):
        out, kept = A.forward(x5, w5, geo, bd, keep=True)
        if kept is not None:  # valid while x holds this array (its version check does the rest)
            attrs["kept"] = (x._data, kept)
    elif not transposed:
        out = _compute(lambda z, ww, b: A.forward(z, ww, geo, b), x5, w5, bd)
    else:
        cz = w.shape[1] * geo.groups
        out = _compute(lambda y, ww: A.input_grad(y, ww, geo, cz), x5, w5)
        if bd is not None:
            out = _add_channel_bias(out, bd)
    return record("ConvolutionBackward0", (x, w, bias), _rank(out, nd), _convolution_backward,
                  save=(("x", x), ("w", w)), attrs=attrs)


def _keeps_work(x, w):
    """Whether the backward will compute a weight gradient with ``A.grads`` on the CPU, so the
    forward should keep what it can of its work on ``x`` (small im2col columns) for it."""
    return w.requires_grad and grad_mode.is_grad_enabled() and _grads_apply(x)


def _grads_apply(x):
    return x._data.__class__ is np.ndarray and x.dtype.name in ("float32", "float64")


def _as5d(a):
    """An (N, C, *spatial) array with unit spatial dims in front, to 3 spatial dims."""
    nd = a.ndim - 2
    return a if nd == 3 else a.reshape(tuple(a.shape[:2]) + (1,) * (3 - nd) + tuple(a.shape[2:]))


def _rank(a, nd):
    """A 5-D array back to ``nd`` spatial dims."""
    return a if nd == 3 else a.reshape(tuple(a.shape[:2]) + tuple(a.shape[5 - nd:]))


# ----------------------------------------------------------------------------- public functions


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):
    fname = f"conv{nd}d"
    _check_tensors(fname, input, weight, bias)
    kwargs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}

    def bad():
        given = {k: v for k, v in kwargs.items() if not (
            _is_int(v) or isinstance(v, (tuple, list)) and all(_is_int(e) for e in v) or
            k == "padding" and isinstance(v, str))}
        return _bad_combination(fname, input, weight, given or kwargs)

    if not _is_int(groups):
        raise bad()
    stride = _int_tuple(stride, nd, "stride", fname, bad)
    dilation = _int_tuple(dilation, nd, "dilation", fname, bad)
    groups = int(groups)
    x, squeezed = _batched(input, nd, fname)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        sym = (0,) * nd
    else:
        sym = _int_tuple(padding, nd, "padding", fname, bad)
    _check_common(x, weight, bias, stride, sym, dilation, groups, False)
    k = tuple(weight.shape[2:])
    z = tuple(x.shape[2:])
    if padding == "same":
        total = [d * (kk - 1) for d, kk in zip(dilation, k)]
        lo = tuple(t // 2 for t in total)
        hi = tuple(t - t // 2 for t in total)
        if any(a != b for a, b in zip(lo, hi)):
            warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                          "require a zero-padded copy of the input be created", stacklevel=3)
    else:
        lo = hi = sym
    padded = tuple(zz + a + b for zz, a, b in zip(z, lo, hi))
    reach = tuple(d * (kk - 1) + 1 for d, kk in zip(dilation, k))
    if any(r > p for r, p in zip(reach, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_fmt(padded)}). "
                           f"Kernel size: ({_fmt(reach)}). Kernel size can't be greater than "
                           "actual input size")
    _check_backend_dilation(x, weight, dilation, groups, False)
    _check_types(x, weight, bias, f"slow_conv{'3d' if nd == 3 else '2d'}_cpu"
                 if not x.is_cuda else "conv_depthwise2d")
    y = tuple((p - r) // s + 1 for p, r, s in zip(padded, reach, stride))
    geo = A.Geometry(_pad3(z, 1), _pad3(y, 1), _pad3(k, 1), _pad3(stride, 1),
                     _pad3(dilation, 1), _pad3(lo, 0), groups)
    out = _convolution(x, weight, bias, geo, False)
    return out.squeeze(0) if squeezed else out


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    fname = f"conv_transpose{nd}d"
    _check_tensors(fname, input, weight, bias)

    def bad_arg(name, v):
        return lambda: TypeError(f"{fname}(): argument '{name}' must be tuple of ints, not "
                                 f"{parser_type_name(v)}")

    if not _is_int(groups):
        raise TypeError(f"{fname}(): argument 'groups' must be int, not {parser_type_name(groups)}")
    stride = _int_tuple(stride, nd, "stride", fname, bad_arg("stride", stride))
    padding = _int_tuple(padding, nd, "padding", fname, bad_arg("padding", padding))
    output_padding = _int_tuple(output_padding, nd, "output_padding", fname,
                                bad_arg("output_padding", output_padding))
    dilation = _int_tuple(dilation, nd, "dilation", fname, bad_arg("dilation", dilation))
    groups = int(groups)
    x, squeezed = _batched(input, nd, fname)
    _check_common(x, weight, bias, stride, padding, dilation, groups, True, output_padding)
    _check_backend_dilation(x, weight, dilation, groups, True)
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")[3 - max(nd, 2):]
        ops, ss, ds = (_pad3(t, v)[3 - len(names):] for t, v in
                       ((output_padding, 0), (stride, 1), (dilation, 1)))
        parts = [f"output_padding_{n}: {v}" for n, v in zip(names, ops)] + \
            [f"stride_{n}: {v}" for n, v in zip(names, ss)] + \
            [f"dilation_{n}: {v}" for n, v in zip(names, ds)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(parts))
    kernel = "compute_columns3d" if nd == 3 else "slow_conv2d_cpu"
    _check_types(x, weight, bias, kernel)
    if not x.is_floating_point():
        raise NotImplementedError(f"\"slow_conv_transpose{'3d' if nd == 3 else '2d'}_out_cpu\" "
                                  f"not implemented for '{D.scalar_name(x.dtype)}'")
    k = tuple(weight.shape[2:])
    y = tuple(x.shape[2:])
    z = tuple((i - 1) * s - 2 * p + d * (kk - 1) + op + 1 for i, s, p, d, kk, op in
              zip(y, stride, padding, dilation, k, output_padding))
    if any(v <= 0 for v in z):
        # checked by the 2-D kernel, so a 1-D one reports a unit height too
        raise RuntimeError(f"Given input size per channel: ({_fmt(_as_2d_view(y, 1))}). "
                           f"Calculated output size per channel: ({_fmt(_as_2d_view(z, 1))}). "
                           "Output size is too small")
    geo = A.Geometry(_pad3(z, 1), _pad3(y, 1), _pad3(k, 1), _pad3(stride, 1),
                     _pad3(dilation, 1), _pad3(padding, 0), groups)
    out = _convolution(x, weight, bias, geo, True)
    return out.squeeze(0) if squeezed else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or (C, L) input: PyTorch's ``F.conv1d``."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) or (C, H, W) input: PyTorch's ``F.conv2d``."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) input: PyTorch's ``F.conv3d``."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv1d`` in its input ("deconvolution"); weight (Cin, Cout/groups, k)."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv2d`` in its input; weight (Cin, Cout/groups, kh, kw)."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv3d`` in its input; weight (Cin, Cout/groups, kd, kh, kw)."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
