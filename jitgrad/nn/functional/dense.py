"""``linear`` and ``bilinear`` (``linear`` is ``addmm(bias, x, w.t())`` -> AddmmBackward0; a
fused NumPy/BLAS path when no graph is needed)."""
from __future__ import annotations

import numpy as np

from ..._settings import get_num_threads
from ...backends import blas, cpu
from ...ops.cascade_sum import cascade_sum
from ...ops.cascade_sum import supports as cascade_supports
from ...ops.composite import record, record_composition
from ...ops.linalg_addmm import addmm
from ...ops.linalg_matmul import matmul
from ...ops.linalg_products import _layout_attrs
from ...ops.parser_errors import parser_type_name, raise_instead
from ...tensor import Tensor
from .. import _device
from ._common import _check_tensor, _creating_graph


def _linear_backward(node, g):
    """AddmmBackward0 of ``addmm(bias, x, w.t())`` with ATen's mm_mat1/mm_mat2_backward calls
    (each picks its GEMM by the operand's layout, and the bits follow the call): the ``w.t()``
    slot's gradient is ``(g^T x)^T`` when ``w.t()`` is column-major (a contiguous weight), so
    that after TBackward0 the weight's gradient is a C-contiguous (out, in) array; the input's
    is ``(w^T g^T)^T`` when the input was column-major. The bias gradient is summed here."""
    need_b, need_x, need_wt = node.ctx.needs_input_grad
    x_cm = node.ctx.attrs["mat1_column_major"]
    wt_cm = node.ctx.attrs["mat2_column_major"]
    gb = gx = gwt = None
    if not _creating_graph():
        gd = g._data
        if need_b:
            gb = Tensor._make(_bias_grad(gd))
        if need_wt:
            x = node.saved_array("x")
            gwt = Tensor._make(blas.matmul(gd.T, x).T if wt_cm else blas.matmul(x.T, gd))
        if need_x:  # last, so it is still in cache when the activation's VJP reads it next
            w = node.saved_array("w")
            gx = Tensor._make(blas.matmul(w.T, gd.T).T if x_cm else blas.matmul(gd, w))
        return (gb, gx, gwt)
    if need_b:
        gb = g.sum(0)
    if need_x:
        w = node.saved("w")
        gx = (w.t() @ g.t()).t() if x_cm else g @ w
    if need_wt:
        x = node.saved("x")
        gwt = (g.t() @ x).t() if wt_cm else x.t() @ g
    return (gb, gx, gwt)


def _bias_grad(gd):
    """``gd.sum(axis=0)`` of a 2-D gradient as AddmmBackward0's ``sum_to`` computes it: float32
    and float64 in ATen's order of additions (``cascade_sum``: PyTorch's bits). A C-contiguous
    gradient takes ``column_sums_aten``, the same additions with the per-thread pieces run one
    after another (half the time of handing 256x512 to two threads, same bits)."""
    if cascade_supports(gd) and gd.ndim == 2:
        if gd.flags.c_contiguous:
            from ...ops._cascade_sum_kernels import column_sums_aten  # Numba: on first use
            out = np.empty(gd.shape[1], gd.dtype)
            column_sums_aten(gd, out, get_num_threads())
            return out
        return cascade_sum(gd, (0,), False)
    return gd.sum(axis=0)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _fast_linear(input, weight, bias):
    """2-D ``addmm(bias, input, weight.t())`` as one composite op (AddmmBackward0 with slots
    bias, input, weight.t()), or None when the operands need the general path (dtype
    mismatches, unusual shapes: the core op then raises PyTorch's errors)."""
    x, w, b = input._data, weight._data, bias._data
    if not (x.dtype == w.dtype == b.dtype) or x.dtype.kind != "f" or w.ndim != 2 or \
            b.shape != (w.shape[0],) or x.shape[1] != w.shape[1]:
        return None
    out = cpu.empty((x.shape[0], w.shape[0]), x.dtype)
    out[...] = b  # the bias as GEMM's C (beta = 1), as PyTorch's addmm does
    blas.matmul(x, w.T, out=out, accumulate=True)
    wt = weight.t()
    save = []
    if weight._requires_grad:
        save.append(("x", input))
    if input._requires_grad:
        save.append(("w", weight))
    return record("AddmmBackward0", (bias, input, wt), out, _linear_backward, save=tuple(save),
                  attrs=_layout_attrs(input, wt))


def linear(input, weight, bias=None):
    """``y = x W^T + b``. 2-D input with bias records AddmmBackward0 (like PyTorch)."""
    _check_tensor(input, "linear")
    try:  # (free until raised) a non-Tensor weight or bias: PyTorch's TypeError
        if _device.is_cuda(input):
            return _device.linear(input, weight, bias)
        nd = input.ndim
        if bias is None:
            return matmul(input, weight.t())
        if nd == 2:
            out = _fast_linear(input, weight, bias)
            return out if out is not None else addmm(bias, input, weight.t())
        if nd == 0:
            raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                               f"and {weight.ndim}D")
        lead = tuple(input.shape[:-1])
        x2 = input.unsqueeze(0) if nd == 1 else input.reshape(-1, input.shape[-1])
        out = _fast_linear(x2, weight, bias)
        if out is None:
            out = addmm(bias, x2, weight.t())
        return out.view(*lead, out.shape[-1])
    except (AttributeError, TypeError):
        raise_instead(_linear_argument_error(weight, bias))


def _linear_argument_error(weight, bias):
    """PyTorch's TypeError for a weight or bias that is not a Tensor (an ndarray: the parser
    refuses it), else None."""
    for value, arg, position in ((weight, "weight", 2), (bias, "bias", 3)):
        if value is not None and not isinstance(value, Tensor):
            return TypeError(f"linear(): argument '{arg}' (position {position}) must be Tensor, "
                             f"not {parser_type_name(value)}")
    return None


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k``: PyTorch's ``_trilinear`` over the flattened inputs
    (TrilinearBackward0), viewed back to the leading shape (ViewBackward0), plus the bias."""
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])

    def build(a, w, b):
        y = (a.unsqueeze(1).unsqueeze(1) @ w) @ b.unsqueeze(1).unsqueeze(-1)
        return y.squeeze(-1).squeeze(-1)

    y = record_composition("TrilinearBackward0", (x1, weight, x2), build)
    y = y.view(*lead, weight.shape[0])
    return y + bias if bias is not None else y
