"""dtype objects and PyTorch's type-promotion rules.

A ``dtype`` wraps a NumPy dtype and prints as PyTorch prints it (``torch.float32``), because user
code written for torch prints dtypes and compares them with ``==``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["dtype", "float32", "float64", "int64", "int32", "bool_", "result_type", "to_dtype"]


class dtype:
    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "if"
        self.itemsize = self.np.itemsize
        # 0 = bool, 1 = integer, 2 = floating: PyTorch promotes across categories
        self._category = category

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (to_dtype, (self.name,))


float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
float16 = dtype("float16", np.float16, 2)
int64 = dtype("int64", np.int64, 1)
int32 = dtype("int32", np.int32, 1)
int16 = dtype("int16", np.int16, 1)
int8 = dtype("int8", np.int8, 1)
uint8 = dtype("uint8", np.uint8, 1)
bool_ = dtype("bool", np.bool_, 0)

ALL = (float32, float64, float16, int64, int32, int16, int8, uint8, bool_)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
                 "short": int16})

_default_float = float32

# PyTorch's C++ scalar-type names, which its error messages use ("expected Long but got Float")
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                 "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}


# ... and the C++ type names some of its messages use ("expected dtype float, but got double")
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def scalar_name(d) -> str:
    """PyTorch's scalar-type name of a jitgrad dtype or NumPy dtype, for error messages."""
    name = d.name if isinstance(d, dtype) else np.dtype(d).name
    return _SCALAR_NAMES.get(name, name)


def c_name(d) -> str:
    """PyTorch's C++ type name of a jitgrad dtype or NumPy dtype, for error messages."""
    name = d.name if isinstance(d, dtype) else np.dtype(d).name
    return _C_NAMES.get(name, name)


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d) -> None:
    global _default_float
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def to_dtype(d) -> dtype:
    """Accept a jitgrad dtype, a NumPy dtype/type, a name, or Python's float/int/bool."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64  # np.dtype(float); torch.tensor(..., dtype=float) is float64 too
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str):
        name = d[6:] if d.startswith("torch.") else d
        if name in _BY_NAME:
            return _BY_NAME[name]
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {d!r}; jitgrad supports "
                        f"{', '.join(x.name for x in ALL)}") from None


def from_numpy_dtype(npd) -> dtype:
    try:
        return _BY_NP[np.dtype(npd)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(npd)}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.") from None


def promote_types(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._category != b._category:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        return hi
    return _BY_NP[np.promote_types(a.np, b.np)]


def _combine(higher, lower):
    # PyTorch's combine_categories (c10/core/ScalarType / TensorIterator result_type)
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def parser_scalar(v):
    """A Number argument as PyTorch's parser reads it: NumPy's bool is no Python bool, so it
    arrives as a double (``int32_tensor + np.bool_(True)`` is float32 2.0, as PyTorch's)."""
    return float(v) if v.__class__ is np.bool_ else v


def result_type(*operands) -> dtype:
    """PyTorch's result type: dimensioned tensors > zero-dim tensors > Python scalars, where a
    lower tier only raises the result's *category* (bool < int < float)."""
    from .tensor import Tensor

    dim = zero = wrapped = None
    for op in operands:
        if isinstance(op, Tensor):
            d = op.dtype
            if op.ndim > 0:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        elif op is None:
            continue
        else:
            if op.__class__ is np.bool_:
                d = _default_float  # the parser reads NumPy's bool as a double (parser_scalar)
            elif isinstance(op, bool):
                d = bool_
            elif isinstance(op, (int, np.integer)):
                d = int64
            elif isinstance(op, (float, np.floating)):
                d = _default_float
            else:
                raise TypeError(f"unsupported operand type {type(op).__name__}")
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))
