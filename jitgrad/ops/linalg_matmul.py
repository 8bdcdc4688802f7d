"""matmul and ``@`` (1-D, 2-D, batched with broadcasting): PyTorch's dispatch onto mm/mv/bmm/dot,
so the nodes, dtype checks and shape errors are the ones those give; chain_matmul and
linalg.multi_dot, left-to-right chains of mm."""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from .composite import record
from .linalg_args import _tensor_arg, _write_out
from .linalg_products import _mm_plain, _mT, bmm, dot, mm, mv


def _unsafe_view_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _unsafe_view(x, shape):
    """PyTorch's matmul folds batched products through _unsafe_view (UnsafeViewBackward0)."""
    shape = tuple(shape)
    return record("UnsafeViewBackward0", (x,), x._data.reshape(shape), _unsafe_view_backward,
                  attrs={"shape": tuple(x._data.shape)})


def _squeeze4_backward(node, g):
    return (g.reshape(node.ctx.attrs["shape"]),)


def _squeeze_inplace_like(x, dim):
    # matmul(1-D, 2-D) squeezes the temporary row in place in PyTorch: SqueezeBackward4
    shape = tuple(x._data.shape)
    return record("SqueezeBackward4", (x,), x._data.reshape(shape[:dim] + shape[dim + 1:]),
                  _squeeze4_backward, attrs={"shape": shape})


def _strides(t):
    s = getattr(t._data, "strides", None)
    return tuple(s) if s is not None else None


def _should_fold(t1, t2):
    """PyTorch's should_fold: fold the larger operand's batch into mm/mv rows."""
    larger = t1.ndim >= t2.ndim
    big, small = (t1, t2) if larger else (t2, t1)
    if not (big.ndim >= 3 and small.ndim <= 2):
        return False
    if small._requires_grad:
        return True
    if t1.ndim == 2:
        return False
    if big.numel() == 0:
        return True
    shape = tuple(big.shape)
    strides = _strides(big)
    if strides is None:
        return False
    if not larger:  # big is tensor2.mT
        shape = shape[:-2] + (shape[-1], shape[-2])
        strides = strides[:-2] + (strides[-1], strides[-2])
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 1))


def _broadcast_batch(a, b):
    """infer_size's error for the batch dims of matmul's operands."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def matmul(input, other, *, out=None):
    _tensor_arg("matmul", "input", 1, input)
    _tensor_arg("matmul", "other", 2, other)
    res = _matmul(input, other)
    return _write_out("matmul", res, out)


def _matmul(t1, t2):
    d1, d2 = t1._data.ndim, t2._data.ndim
    if d1 == 2 and d2 == 2:
        res = _mm_plain(t1, t2)
        return mm(t1, t2) if res is None else res
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return dot(t1, t2)
    if d1 == 2 and d2 == 1:
        return mv(t1, t2)
    if d1 == 1 and d2 == 2:
        return _squeeze_inplace_like(mm(t1.unsqueeze(0), t2), 0)
    if d1 == 2 and d2 == 2:
        return mm(t1, t2)
    if _should_fold(t1, t2):
        transpose = d2 > d1
        a = _mT(t2) if transpose else t1
        b = t2 if not transpose else (t1.t() if d1 == 2 else t1)
        out_shape = tuple(a.shape[:-1])
        rows = int(np.prod(out_shape))
        folded = a.reshape(rows, a.shape[-1])
        if b.ndim == 2:
            res = _unsafe_view(mm(folded, b), out_shape + (b.shape[1],))
            return _mT(res).contiguous() if transpose else res
        return _unsafe_view(mv(folded, b), out_shape)
    if d1 == 3 and d2 == 3 and t1.shape[0] != t2.shape[0]:
        # PyTorch folds a broadcast unit batch of an operand that requires grad (should_fold's
        # gradient argument): (1, n, m) @ (b, m, p) is (n, m) @ (b, m, p)
        if t1.shape[0] == 1 and t1._requires_grad:
            return _matmul(t1.squeeze(0), t2)
        if t2.shape[0] == 1 and t2._requires_grad:
            return _matmul(t1, t2.squeeze(0))
    n = t1.shape[-2] if d1 > 1 else 1
    m1 = t1.shape[-1]
    m2 = t2.shape[-2] if d2 > 1 else t2.shape[0]
    p = t2.shape[-1] if d2 > 1 else 1
    batch = _broadcast_batch(tuple(t1.shape[:-2]), tuple(t2.shape[:-2]))
    nb = int(np.prod(batch))
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    # matmul(1-D, N-D) and (N-D, 1-D): the vector is a row / column (unsqueeze, as PyTorch)
    a = t1.unsqueeze(0) if d1 == 1 else t1
    a = a.expand(batch + (n, m1)).reshape(nb, n, m1)
    if d2 == 1:
        b = t2.unsqueeze(-1).expand(batch + (m2, p)).reshape(nb, m2, p)
        return _unsafe_view(bmm(a, b).squeeze(-1), out_shape)
    b = t2.expand(batch + (m2, p)).reshape(nb, m2, p)
    return _unsafe_view(bmm(a, b), out_shape)


def __matmul__(self, other):
    """``a @ b``: Python's TypeError (NotImplemented) for a non-Tensor operand, as PyTorch."""
    if not isinstance(other, Tensor):
        return NotImplemented
    return _matmul(self, other)


def __rmatmul__(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return _matmul(other, self)


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        m = matrices[0]
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {m.ndim}D tensor")
        return _write_out("chain_matmul", m.clone(), out)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {m.ndim}D tensor")
    return _write_out("chain_matmul", multi_dot(list(matrices)), out)


def _chain_order(mats):
    """ATen's matrix_chain_order (the textbook dynamic programme): ``split[i][j]`` is the ``k``
    at which the cheapest product of ``mats[i..j]`` splits; ties keep the first ``k``."""
    n = len(mats)
    p = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain_product(mats):
    """multi_dot_impl's products: two matrices one mm; three by comparing the two orders'
    costs (``(a*c)*(b+d) > (b*d)*(a+c)`` multiplies the right pair first); more by the
    chain order. The order decides the roundings, so it is ATen's."""
    if len(mats) == 2:
        return mm(mats[0], mats[1])
    if len(mats) == 3:
        a, b = mats[0].shape[0], mats[1].shape[0]
        c, d = mats[2].shape
        if (a * c) * (b + d) > (b * d) * (a + c):
            return mm(mats[0], mm(mats[1], mats[2]))
        return mm(mm(mats[0], mats[1]), mats[2])
    split = _chain_order(mats)

    def product(i, j):
        if i == j:
            return mats[i]
        return mm(product(i, split[i][j]), product(split[i][j] + 1, j))
    return product(0, len(mats) - 1)


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: the first/last operand may be 1-D (a row / column vector); the
    products are taken in ATen's order (``_chain_product``), so the bits are PyTorch's."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype is not first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {first.dtype} and tensor {i} {t.dtype}")
    if last.dtype is not first.dtype:
        raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                           f"{first.dtype} and tensor {len(tensors) - 1} {last.dtype}")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(1) if last.ndim == 1 else last]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(mats[i].shape)} and "
                f"{list(mats[i + 1].shape)} cannot be multiplied")
    res = _chain_product(mats)
    shape = tuple(res.shape)
    if first.ndim == 1:
        shape = shape[1:]
    if last.ndim == 1:
        shape = shape[:-1]
    res = res.view(shape)  # PyTorch views the product to the result's shape (ViewBackward0)
    return _write_out("multi_dot", res, out)
