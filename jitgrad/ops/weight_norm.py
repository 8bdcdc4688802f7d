"""``torch._weight_norm``, ``torch._weight_norm_interface`` and ``torch.norm_except_dim``:
the ATen ops behind weight normalisation (``w = v * (g / ||v||)``, the norm taken over every
dim but ``dim``), as ATen's WeightNorm.cpp composes them.

``_weight_norm`` takes the fused ``_weight_norm_interface`` (one ``WeightNormInterfaceBackward0``
node over ``v`` and ``g``) when ``dim`` is the first or the last dim, as ATen does for CPU and
CUDA, and the double-differentiable composition ``v * (g / norm_except_dim(v, 2, dim))``
otherwise. The fused node's backward is ATen's differentiable weight-norm backward in
recorded ops, with the norms held constant as there, so first and second derivatives are
PyTorch's.
"""
from __future__ import annotations

from ..autograd import grad_mode
from .composite import record_composition

__all__ = ["_weight_norm", "_weight_norm_interface", "norm_except_dim"]


def _check_dim(dim, ndim):
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept with size 1); ``dim=-1``:
    the norm of all of ``v`` (a 0-d tensor)."""
    if dim == -1:
        return record_composition("NormBackward0", (v,), lambda x: x.norm(pow))
    nd = v.dim()
    if dim == 0 or dim == nd - 1:
        output_size = [1] * nd
        output_size[dim] = v.size(dim)
        rows = v.contiguous().view(v.size(0), -1) if dim == 0 else \
            v.contiguous().view(-1, v.size(nd - 1))
        axis = 1 if dim == 0 else 0
        norm = record_composition("NormBackward1", (rows,), lambda r: r.norm(pow, axis))
        return norm.view(output_size)
    _check_dim(dim, nd)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm_backward(node, grad_w):
    """ATen's _weight_norm_differentiable_backward: recorded ops over the saved norms, which
    are a constant (the norms output is not differentiable), so double backward is PyTorch's
    (it does not differentiate through the norms)."""
    v, g, norms = node.saved("v"), node.saved("g"), node.saved("norms")
    dim = node.ctx.attrs["dim"]
    grad_w = grad_w.contiguous()
    bcast_size = [1] * v.dim()
    if dim == 0:
        bcast_size[0] = v.size(0)
        per_dim_sums = (grad_w * v).view(v.size(0), -1).sum(1).view(bcast_size)
    else:
        last_size = v.size(v.dim() - 1)
        bcast_size[v.dim() - 1] = last_size
        per_dim_sums = (grad_w * v).view(-1, last_size).sum(0).view(bcast_size)
    grad_v = (g / norms) * (grad_w - v * (per_dim_sums / (norms * norms)))
    grad_g = per_dim_sums / norms
    return grad_v, grad_g


def _weight_norm_interface(v, g, dim=0):
    """``(v * (g / norms), norms)`` for ``dim`` the first or last dim; ``norms`` (the norms
    over the other dims) is not differentiable, as in ATen."""
    from ..tensor import Tensor
    from .composite import record
    v = v.contiguous()
    g = g.contiguous()
    if dim < 0:
        dim += v.dim()
    with grad_mode.no_grad():
        norms = norm_except_dim(v, 2, dim)
        w = v * (g / norms)
    saved_norms = Tensor._make(norms._data)
    w = record("WeightNormInterfaceBackward0", (v, g), w._data, _weight_norm_backward,
               save=(("v", v), ("g", g), ("norms", saved_norms)), attrs={"dim": dim})
    return w, norms


def _weight_norm(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))`` (fused when ``dim`` is the first or last)."""
    if v.device != g.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {v.device} and {g.device}!")
    v = v.contiguous()
    g = g.contiguous()
    has_half = "float16" in (str(v.dtype)[-7:], str(g.dtype)[-7:])
    if not has_half and (dim == 0 or dim == v.dim() - 1):
        return _weight_norm_interface(v, g, dim)[0]
    return v * (g / norm_except_dim(v, 2, dim))
