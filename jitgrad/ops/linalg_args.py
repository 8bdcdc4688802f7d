"""The argument rules every matrix product shares: PyTorch's TypeError for a non-Tensor
argument, its refusal of bool, its dtype words, and ``out=`` (the result's exact dtype)."""
from __future__ import annotations

from .. import _dtype as D
from ..tensor import Tensor
from .out import write_out
from .parser_errors import parser_type_name

_ctype = D.c_name  # "float", "long int": the C++ names some of PyTorch's messages use
_legacy = D.scalar_name  # "Float", "Long"


def _tensor_arg(fname, argname, pos, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _no_bool(kernel, t):
    if t._data.dtype.kind == "b":  # (NumPy's kind: only bool is "b"; no dtype lookup per call)
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _same_dtype(a, b, what="mm"):
    # one NumPy dtype object is one jitgrad dtype: the lookup only when they differ
    if a._data.dtype is not b._data.dtype and a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_ctype(a.dtype)} != {_ctype(b.dtype)}")


def _write_out(fname, result, out):
    """``out=`` (``ops/out.py``): products need ``out`` of the result's exact dtype."""
    if out is None:
        return result
    _tensor_arg(fname, "out", 3, out)
    return write_out(fname, result, out, cast="exact")
