"""``layer_norm``: the forward and a NativeLayerNormBackward0 node; float32/float64 with
same-dtype weight/bias run ATen's CPU kernels (_layer_norm_aten, _layer_norm_backward_aten)
for PyTorch's bits, other dtypes NumPy formulas."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..._settings import get_num_threads
from ...ops.composite import record
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from .. import _device
from ._common import _check_tensor, _creating_graph
from ._layer_norm_aten import layer_norm_forward
from ._layer_norm_backward_aten import layer_norm_backward

_ATEN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _layer_norm_backward(node, g):
    a = node.ctx.attrs
    axes = a["axes"]
    need_x, need_w, need_b = node.ctx.needs_input_grad
    has_w, has_b = a["has_weight"], a["has_bias"]
    lead = tuple(range(g.ndim - len(axes)))
    if not _creating_graph():
        gd = g._data
        mean, rstd = a["mean"], a["rstd"]
        x = node.saved_array("x")
        if a.get("aten") and isinstance(gd, np.ndarray) and gd.dtype == x.dtype:
            # ATen's backward kernel in its order of operations: PyTorch's bits
            n = math.prod(x.shape[x.ndim - len(axes):])
            w = node.saved_array("w") if has_w else None
            gx, gw, gb = layer_norm_backward(
                gd.reshape(-1, n), x.reshape(-1, n), mean, rstd, w, need_x, need_w and has_w,
                need_b and has_b, get_num_threads())
            return (None if gx is None else Tensor._make(gx.reshape(x.shape)),
                    None if gw is None else Tensor._make(gw.reshape(w.shape)),
                    None if gb is None else Tensor._make(gb.reshape(x.shape[x.ndim - len(axes):])))
        xhat = (x - mean) * rstd
        gx = gw = gb = None
        if need_x:
            gxh = gd * node.saved_array("w") if has_w else gd
            m1 = gxh.mean(axis=axes, keepdims=True)
            m2 = (gxh * xhat).mean(axis=axes, keepdims=True)
            gx = Tensor._make((rstd * (gxh - m1 - xhat * m2)).astype(gd.dtype, copy=False))
        if need_w and has_w:
            gw = Tensor._make((gd * xhat).sum(axis=lead).astype(gd.dtype, copy=False))
        if need_b and has_b:
            gb = Tensor._make(gd.sum(axis=lead).astype(gd.dtype, copy=False))
        return (gx, gw, gb)
    # differentiable path: rebuild the statistics from x with recorded ops
    x = node.saved("x")
    mean = x.mean(axes, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(axes, keepdim=True)
    rstd = (var + a["eps"]).rsqrt()
    xhat = xc * rstd
    gx = gw = gb = None
    if need_x:
        gxh = g * node.saved("w") if has_w else g
        m1 = gxh.mean(axes, keepdim=True)
        m2 = (gxh * xhat).mean(axes, keepdim=True)
        gx = rstd * (gxh - m1 - xhat * m2)
    if need_w and has_w:
        gw = (g * xhat).sum(lead) if lead else g * xhat
    if need_b and has_b:
        gb = g.sum(lead) if lead else g
    return (gx, gw, gb)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalizes over the trailing ``normalized_shape`` dims (NativeLayerNormBackward0)."""
    _check_tensor(input, "layer_norm")
    if isinstance(normalized_shape, numbers.Integral):  # nn.LayerNorm converts; F does not
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        f"of ints, not {parser_type_name(normalized_shape)}")
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    shape = tuple(input.shape)
    if k == 0 or shape[len(shape) - k:] != normalized_shape or len(shape) < k:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(normalized_shape)}")
    if _device.is_cuda(input):
        return _device.layer_norm(input, normalized_shape, weight, bias, eps)
    x = input._data
    axes = tuple(range(x.ndim - k, x.ndim))
    aten = bool(x.dtype in _ATEN_DTYPES and x.size
                and (weight is None or weight._data.dtype == x.dtype)
                and (bias is None or bias._data.dtype == x.dtype))
    if aten:
        # ATen's kernel in its order of operations: PyTorch's bits (_layer_norm_aten)
        n = math.prod(normalized_shape)
        y, mean, rstd = layer_norm_forward(
            np.ascontiguousarray(x).reshape(-1, n), None if weight is None else weight._data,
            None if bias is None else bias._data, eps, get_num_threads())
        stat_shape = x.shape[:x.ndim - k] + (1,) * k
        y, mean, rstd = y.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)
    else:
        acc = np.float64 if x.dtype in (np.float32, np.float16) else x.dtype
        xa = x.astype(acc, copy=False)
        mean = xa.mean(axis=axes, keepdims=True)
        xc = xa - mean
        var = (xc * xc).mean(axis=axes, keepdims=True)
        rstd = 1.0 / np.sqrt(var + eps)
        y = xc * rstd
        if weight is not None:
            y = y * weight._data
        if bias is not None:
            y = y + bias._data
        y = y.astype(x.dtype, copy=False)
    save = [("x", input)]
    if weight is not None:
        save.append(("w", weight))
    return record("NativeLayerNormBackward0", (input, weight, bias), y, _layer_norm_backward,
                  save=tuple(save),
                  attrs={"axes": axes, "eps": eps, "mean": mean.astype(x.dtype, copy=False),
                         "rstd": rstd.astype(x.dtype, copy=False), "has_weight": weight is not None,
                         "has_bias": bias is not None, "aten": aten})
