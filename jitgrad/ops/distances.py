"""diff, cdist, pdist, cov, corrcoef: ATen's compositions (Correlation.cpp, ReduceOps.cpp's diff)
written in jitgrad ops, so CUDA tensors and gradients follow; cdist/pdist are one node each
(CdistBackward0 / PdistBackward0, ATen's _cdist_backward/_pdist_backward subgradients: 0 where a
distance is 0), and cdist's matrix-product path for p=2 is EuclideanDistBackward0 under a view,
as PyTorch's."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .parser_errors import parser_type_name
from .reduce_args import _wrap

__all__ = ["diff", "cdist", "pdist", "cov", "corrcoef"]


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


# ----------------------------------------------------------------------------- diff


def _diff_compatible(input, other, dim):
    if other is None:
        return
    d = _wrap(dim, input.ndim)
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.ndim):
        if i != d and other.shape[i] != input.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = {input.shape[i]}, "
                f"but got tensor.size({i}) = {other.shape[i]}")


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``prepend``/``append`` concatenated first):
    narrow(1) - narrow(0) repeated (logical_xor for bool), as ATen."""
    from .basic import zeros_like
    from .functional import logical_xor
    from .shape_join import cat, narrow
    for name, v in (("prepend", prepend), ("append", append)):
        if v is not None and not isinstance(v, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {parser_type_name(v)}")
    if input.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _diff_compatible(input, prepend, dim)
    _diff_compatible(input, append, dim)
    if n == 0:
        return zeros_like(input).copy_(input)
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = cat(parts, dim)
    d = _wrap(dim, input.ndim)
    size = input.shape[d]
    out_len = size - 1
    result = input
    for _ in range(min(n, size)):
        hi, lo = narrow(result, d, 1, out_len), narrow(result, d, 0, out_len)
        result = logical_xor(hi, lo) if input.dtype is D.bool_ else hi - lo
        out_len -= 1
    return result


# ----------------------------------------------------------------------------- cdist / pdist


def _pnorm(diff, p):
    """The p-norm over the last dim of ``diff`` (ATen's dist kernels: 0 counts nonzeros)."""
    a = diff.abs()
    if p == 0:
        return (a != 0).to(diff.dtype).sum(-1)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return (a * a).sum(-1).sqrt()
    if math.isinf(p):
        return a.amax(-1)
    return a.pow(p).sum(-1).pow(1.0 / p)


def _zero(t):
    from .basic import zeros
    return zeros((), dtype=t.dtype, device=t.device)


def _dist_grad(diff, dist, g, p):
    """d(g * dist)/d diff with ATen's subgradients (0 at a zero distance; p < 1: 0 at a zero
    component); ``dist`` and ``g`` carry a trailing 1 dim."""
    from .functional import where
    zero = _zero(diff)
    if p == 0:
        return diff * 0
    if p == 1:
        return g * diff.sign()
    if math.isinf(p):
        return g * diff.sign() * (diff.abs() == dist).to(diff.dtype)
    if p == 2:
        res = g * diff / dist
    elif p < 2:
        res = diff.sign() * diff.abs().pow(p - 1) * g / dist.pow(p - 1)
        if p < 1:
            res = where(diff == 0, zero, res)
    else:
        res = diff * diff.abs().pow(p - 2) * g / dist.pow(p - 1)
    return where(dist == 0, zero, res)


def _cdist_backward(node, g):
    from ..autograd.engine import sum_to
    x1, x2 = node.saved("x1"), node.saved("x2")
    p = node.ctx.attrs["p"]
    out = node.saved("out")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    r = _dist_grad(diff, out.unsqueeze(-1), g.unsqueeze(-1), p)
    g1 = sum_to(r.sum(-2), x1.shape) if node.ctx.needs_input_grad[0] else None
    g2 = sum_to(-r.sum(-3), x2.shape) if node.ctx.needs_input_grad[1] else None
    return g1, g2


def _euclidean_backward(node, g):
    """ATen's _euclidean_dist_backward."""
    from .functional import where
    x1, x2, res = node.saved("x1"), node.saved("x2"), node.saved("out")
    ratio = where(res == 0, _zero(g), g / res)
    return (x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2),
            x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1))


def _euclidean_dist(x1, x2):
    """ATen's _euclidean_dist: one product of padded rows, clamped at 0, square-rooted."""
    from .basic import ones_like
    from .shape_join import cat
    with grad_mode.no_grad():
        n1 = x1.pow(2).sum(-1, keepdim=True)
        n2 = x2.pow(2).sum(-1, keepdim=True)
        a = cat([x1 * -2, n1, ones_like(n1)], -1)
        b = cat([x2, ones_like(n2), n2], -1)
        res = a.matmul(b.mT).clamp_min(0).sqrt()
    return record("EuclideanDistBackward0", (x1, x2), res._data, _euclidean_backward,
                  save=(("x1", x1), ("x2", x2)), save_outputs=(("out", 0),))


_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of ``x1`` (..., R1, M) and ``x2`` (..., R2, M)."""
    from .basic import empty, zeros
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _MODES[compute_mode]
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    c1, c2 = x1.shape[-1], x2.shape[-1]
    if c1 != c2:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {c1} X2: {c2}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{D.scalar_name(t.dtype)}")
    p = float(p)
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.device != x2.device:
        raise RuntimeError(f"X1 and X2 must have the same device type. X1: {x1.device.type} "
                           f"X2: {x2.device.type}")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    nb = int(np.prod(batch, dtype=np.int64))
    out_shape = batch + (r1, r2)
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
    if use_mm and x1.numel() and x2.numel():
        if nb == 1:
            return _euclidean_dist(x1, x2).view(out_shape)
        a = x1.expand(batch + (r1, c1)).reshape((nb, r1, c1))
        b = x2.expand(batch + (r2, c2)).reshape((nb, r2, c2))
        return _euclidean_dist(a, b).view(out_shape)
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_name(x1.dtype)} but found "
                           f"{D.scalar_name(x2.dtype)}")
    with grad_mode.no_grad():
        if r1 == 0 or r2 == 0 or nb == 0:
            res = empty(out_shape, dtype=x1.dtype, device=x1.device)
        elif c1 == 0:
            res = zeros(out_shape, dtype=x1.dtype, device=x1.device)
        else:
            res = _pnorm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)
    return record("CdistBackward0", (x1, x2), res._data, _cdist_backward,
                  save=(("x1", x1), ("x2", x2)), save_outputs=(("out", 0),),
                  attrs={"p": p})


def _pair_index(n, device):
    from .basic import tensor
    i, j = np.triu_indices(n, 1)
    return tensor(i.astype(np.int64), device=device), tensor(j.astype(np.int64), device=device)


def _pdist_backward(node, g):
    from .basic import zeros_like
    x, out = node.saved("x"), node.saved("out")
    i, j = _pair_index(x.shape[0], x.device)
    diff = x.index_select(0, i) - x.index_select(0, j)
    r = _dist_grad(diff, out.unsqueeze(-1), g.unsqueeze(-1), node.ctx.attrs["p"])
    return (zeros_like(x).index_add(0, i, r).index_add(0, j, -r),)


def pdist(input, p=2):
    """The p-norm distances between every pair of rows i < j of a 2-D ``input`` (PdistBackward0)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    p = float(p)
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    with grad_mode.no_grad():
        i, j = _pair_index(n, input.device)
        if input.shape[1] == 0:
            from .basic import zeros
            res = zeros((n * (n - 1) // 2,), dtype=input.dtype, device=input.device)
        else:
            res = _pnorm(input.index_select(0, i) - input.index_select(0, j), p)
    return record("PdistBackward0", (input,), res._data, _pdist_backward,
                  save=(("x", input),), save_outputs=(("out", 0),), attrs={"p": p})


# ----------------------------------------------------------------------------- cov / corrcoef


def _is_true(t) -> bool:
    return bool(t.cpu().item())


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows of ``input`` (variables x observations), ATen's
    composition: weighted mean, centred product, divided by the normalization factor."""
    from .basic import scalar_tensor
    from .linalg import mm
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view((1, -1)) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
        if w.ndim > 1:
            raise RuntimeError("cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {w.ndim} dimensions")
        if w.dtype.is_floating_point or w.dtype is D.bool_:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               f"fweights with {D.scalar_name(w.dtype)} dtype")
        if w.numel() != n:
            raise RuntimeError("cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {w.numel()} != {n}")
        if n and not _is_true(w.min() >= 0):
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        aw = aweights
        if aw.ndim > 1:
            raise RuntimeError("cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {aw.ndim} dimensions")
        if not aw.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {D.scalar_name(aw.dtype)} dtype")
        if aw.numel() != n:
            raise RuntimeError("cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aw.numel()} != {n}")
        if n and not _is_true(aw.min() >= 0):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aw if w is None else w * aw
    w_sum = w.sum() if w is not None else scalar_tensor(n, dtype=D.int64, device=x.device)
    if w is not None and not _is_true(w_sum != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum \
            if aweights is not None else w_sum - correction
    else:
        norm_factor = w_sum - correction
    if _is_true(norm_factor <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations. (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/Correlation.cpp:129.)",
                      UserWarning, stacklevel=2)
        norm_factor = norm_factor.detach() * 0
    x = x - avg.unsqueeze(1)
    c = mm(x, (x * w if w is not None else x).t())
    return (c / norm_factor).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients: cov normalised by the standard deviations, clipped to
    [-1, 1]."""
    if input.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view((-1, 1))
    c = c / stddev.view((1, -1))
    return c.clip(-1, 1)
