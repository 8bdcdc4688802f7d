"""Vector norms: ``norm`` (torch.norm and the ``.norm`` method; ``linalg.vector_norm`` checks its
arguments and calls it). No NumPy aliases here: ``norm`` is a Python function in PyTorch,
outside its argument parser, so it refuses ``axis=``."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import ieee_quiet, record
from .parser_errors import parser_type_name
from .reduce_args import (
    _attrs,
    _cuda,
    _dims,
    _expand_back,
    _given_dims,
    _np_axes,
    _on_device,
    _type_word,
    _wrap,
)

__all__ = ["norm"]


def _norm_backward(node, g):
    """PyTorch's norm_backward, case by case (a zero norm gives a zero gradient, p = 0 none)."""
    from .functional import where
    a = node.ctx.attrs
    p = a["p"]
    x = node.saved("x")
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    ge = _expand_back(g, node)
    if p == 0:
        return (None,)  # PyTorch's: no gradient (x.grad stays None)
    if p == 1:
        return (ge * x.sign(),)
    if p == 2:
        return (ge * where(out == 0, 0.0, x / out),)
    if p in (float("inf"), -float("inf")):
        ax = x.abs()
        mask = ((ax == out) | ax.isnan()).to(ge.dtype)
        count = mask.sum(a["axes"] if x.ndim else None, keepdim=True)
        return (x.sign() * (ge / count * mask),)
    if p < 1:
        scaled = x.sign() * where(x == 0, 0.0, x.abs() ** (p - 1))
        return (scaled * ge * out ** (1 - p),)
    scale = where(out == 0, 0.0, ge / out ** (p - 1))
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return (scaled * scale,)


@ieee_quiet
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if isinstance(p, str) and p != "fro":
        # torch.norm's Python body: any other string is a matrix norm over ``dim`` (all dims
        # by default), which raises there for what matrix_norm refuses
        from ..linalg import matrix_norm
        return matrix_norm(input, p, list(range(input.ndim)) if dim is None else dim, keepdim,
                           dtype=dtype)
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, Tensor) and p._data.ndim == 0:  # a 0-d tensor is a Number
        p = p.item()
    if not isinstance(p, (int, float, np.integer, np.floating)):
        # torch.norm hands p on to linalg.vector_norm, whose parser refuses it so
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {parser_type_name(p)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_type_word(input.dtype)}")
    axes = _dims(dim, input._data.ndim)
    if (p < 0 or p == float("inf")) and input._data.size == 0:
        word = "inf" if p == float("inf") else "-inf" if p == -float("inf") else (
            f"{p:g}" if isinstance(p, float) else str(p))
        if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on an empty "
                               "tensor because the operation does not have an identity")
        for d in _given_dims(dim):
            if input._data.shape[_wrap(d, input.ndim)] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on the "
                                   f"dimension {d}because this dimension is empty and the "
                                   "operation does not have an identity")
    src = input._data
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if D.promote_types(input.dtype, dt) is not dt:
            words = {"float64": "Double", "float32": "Float", "float16": "Half"}
            raise RuntimeError(
                f"linalg.vector_norm: the dtype of the input ({words.get(input.dtype.name)}) "
                f"should be convertible without narrowing to the specified dtype "
                f"({words.get(dt.name, _type_word(dt))})")
        src = src.astype(dt.np)
    if _on_device(input):
        x = input if dtype is None else Tensor._make(src)
        return record("LinalgVectorNormBackward0", (input,),
                      _cuda().device_norm(x, p, axes, keepdim), _norm_backward,
                      save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, axes, keepdim, p=p))
    ax = _np_axes(input, axes)
    a = np.abs(src)
    if p == 2:
        data = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    elif p == 1:
        data = np.sum(a, axis=ax, keepdims=keepdim)
    elif p == float("inf"):
        data = np.max(a, axis=ax, keepdims=keepdim)
    elif p == -float("inf"):
        data = np.min(a, axis=ax, keepdims=keepdim)
    elif p == 0:
        data = np.sum(a != 0, axis=ax, keepdims=keepdim)
    else:
        data = np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)
    data = np.asarray(data, dtype=src.dtype)
    return record("LinalgVectorNormBackward0", (input,), data, _norm_backward,
                  save=(("x", input),), save_outputs=(("out", 0),),
                  attrs=_attrs(input, axes, keepdim, p=p))
