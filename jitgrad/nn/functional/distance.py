"""``cosine_similarity`` and ``pairwise_distance``."""
from __future__ import annotations

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import record_composition
from ._common import _check_tensor
from .loss_bce import _broadcast_shapes


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """ATen's: each input divided by its norm clamped to ``eps`` (the clamp outside the graph,
    CloneBackward0), then the product summed over ``dim`` (SumBackward1)."""
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    ct = D.result_type(x1, x2)
    if not ct.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{D.scalar_name(ct)}")
    if not x1.is_floating_point():
        x1 = x1.to(ct)
    if not x2.is_floating_point():
        x2 = x2.to(ct)
    s1, s2 = tuple(x1.shape), tuple(x2.shape)
    if s1 != s2:
        shape = _broadcast_shapes(s1, s2)
        x1 = x1 if s1 == shape else x1.expand(*shape)
        x2 = x2 if s2 == shape else x2.expand(*shape)
    from ...linalg import vector_norm
    n1 = vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    n2 = vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with grad_mode.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``norm(x1 - x2 + eps, p, last dim)`` (NormBackward1, as ATen's at::norm records)."""
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    dim = max(x1.dim(), x2.dim()) - 1
    # ATen adds the Scalar eps: AddBackward1
    diff = record_composition("AddBackward1", (x1 - x2,), lambda d: d + eps)
    return record_composition("NormBackward1", (diff,), lambda d: d.norm(p, dim, keepdim))
