"""User-facing bitwise_and/or/xor/not: bools through the logical registry ops, integers through
NumPy on the CPU and ``cuda_kernels.bitwise`` on the device."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .elementwise_call import call
from .functional_args import _check, _need_tensor, _not_implemented, _overload_error
from .functional_compare import logical_not
from .registry import OPS

_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or",
            "bitwise_xor": "logical_xor"}
_NP_BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
               "bitwise_xor": np.bitwise_xor}


def _bitwise(name):
    """``&``/``|``/``^``: bools through the logical registry ops (any device); integers through
    NumPy on the CPU (the registry's kernels are compiled for floating types too, where ``&`` has
    no meaning)."""
    def fn(input, other):
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                _overload_error(name, input, other)
            input, other = other, input  # & | ^ commute
        _check(other, name, 2)
        ct = D.result_type(input, other)
        if ct.is_floating_point:
            raise _not_implemented(f"{name}_cpu", ct)
        if ct is D.bool_:
            return call(OPS[_LOGICAL[name]], input, other)
        return _integer_numpy(_NP_BITWISE[name], ct, input, other)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _integer_numpy(ufunc, ct, *operands):
    """An integer op computed by NumPy on the CPU, in PyTorch's result dtype ``ct``."""
    from .elementwise_call import _scalar
    if any(isinstance(a, Tensor) and a._data.__class__ is not np.ndarray for a in operands):
        return _integer_cuda(ufunc, ct, operands)
    arrays = []
    for a in operands:
        if isinstance(a, Tensor):
            arrays.append(a._data.astype(ct.np, copy=False))
        else:
            arrays.append(_scalar(a, ct.np, False))
    return Tensor._make(np.asarray(ufunc(*arrays), dtype=ct.np))


def _integer_cuda(ufunc, ct, operands):
    """The same on CUDA tensors: ``cuda_kernels.bitwise`` (operands cast to ``ct`` on the
    device, broadcast through strides, Python ints passed as scalars)."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    from .elementwise_call import check_same_device
    check_same_device([a for a in operands if isinstance(a, Tensor)])
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in operands if isinstance(a, Tensor)))
    ops = [a._data.astype(ct.np, copy=False).kview() if isinstance(a, Tensor) else int(a)
           for a in operands]
    name = {np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor",
            np.invert: "invert"}[ufunc]
    return Tensor._make(CudaArray.wrap(B.kernels().bitwise.bitwise(name, shape, ct.np, *ops)))


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")


def bitwise_not(input):
    _need_tensor(input, "bitwise_not")
    if input.dtype.is_floating_point:
        raise _not_implemented("bitwise_not_cpu", input.dtype)
    if input.dtype is D.bool_:
        return logical_not(input)
    return _integer_numpy(np.invert, input.dtype, input)
