"""``embedding`` (``max_norm`` renormalisation, ``padding_idx``, ``scale_grad_by_freq``)
and ``one_hot``."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...ops.composite import record
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from .. import _device
from ._common import _const, _creating_graph


def _embedding_backward(node, g):
    a = node.ctx.attrs
    idx, num, pad = a["indices"], a["num_weights"], a["padding_idx"]
    dim = g.shape[-1]
    flat = idx.reshape(-1)
    if a["scale_grad_by_freq"]:
        counts = np.bincount(flat, minlength=num)
        scale = (1.0 / np.maximum(counts[flat], 1)).astype(g._data.dtype)
    else:
        scale = None
    if not _creating_graph():
        g2 = g._data.reshape(-1, dim)
        if scale is not None:
            g2 = g2 * scale[:, None]
        out = np.zeros((num, dim), dtype=g._data.dtype)
        np.add.at(out, flat, g2)
        if pad >= 0:
            out[pad] = 0
        return (Tensor._make(out),)
    from ...ops.basic import zeros
    g2 = g.reshape(-1, dim)
    if scale is not None:
        g2 = g2 * _const(scale[:, None])
    out = zeros(num, dim, dtype=g.dtype).index_add(0, _const(flat), g2)
    if pad >= 0:
        keep = np.ones((num, 1), dtype=g._data.dtype)
        keep[pad] = 0
        out = out * _const(keep)
    return (out,)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by integer ``input`` (EmbeddingBackward0)."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding(): arguments 'input' and 'weight' must be Tensors")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    else:
        padding_idx = -1
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if _device.is_cuda(input, weight):
        return _device.embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq,
                                 norm_type)
    idx = input._data.astype(np.int64, copy=False)
    from ...ops.index_dim import empty_self_checks
    from ...ops.index_rules import check_range
    if not empty_self_checks(idx.reshape(-1), weight._data.shape, 0):  # index_select's rules
        check_range(idx, num, 0, "embedding")
    if max_norm is not None:
        _embedding_renorm_(weight, idx, max_norm, norm_type)
    data = weight._data[idx]
    return record("EmbeddingBackward0", (weight,), data, _embedding_backward,
                  attrs={"indices": idx, "num_weights": num, "padding_idx": padding_idx,
                         "scale_grad_by_freq": scale_grad_by_freq})


def _embedding_renorm_(weight, idx, max_norm, norm_type):
    rows = np.unique(idx.reshape(-1))
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if np.any(big):
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (w[rows[big]] * scale[:, None]).astype(w.dtype)
        weight._vc.value += 1




def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding with a trailing class dimension."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(tensor)}")
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if _device.is_cuda(tensor):
        return _device.one_hot(tensor, num_classes)
    a = tensor._data
    if a.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(np.zeros(a.shape + (int(num_classes),), dtype=np.int64))
    if a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(a.max()) + 1
    elif a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(a.shape + (int(num_classes),), dtype=np.int64)
    np.put_along_axis(out, a[..., None], 1, axis=-1)
    return Tensor._make(out)
