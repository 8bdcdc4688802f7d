"""Integer bitwise ops (``&``, ``|``, ``^``, ``~``) on the device.

The registry's elementwise ops are compiled for floating types too, where ``&`` has no
meaning, so integer bitwise ops are their own small kernels (bools go through the registry's
logical ops). Operands arrive as Views in the result dtype, broadcast to the output shape; a
Python int operand is passed as a scalar of that dtype.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import View, as_view, cuda, offset_of, pad

__all__ = ["bitwise"]

_cache: dict = {}


def _kernel(op: str):
    hit = _cache.get(op)
    if hit is not None:
        return hit
    if op == "invert":
        def k(x, xoff, xst, shape, n, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[i] = ~x[xoff + offset_of(i, shape, xst)]
    else:
        is_and, is_or = op == "and", op == "or"

        def k(a, aoff, ast, b, boff, bst, shape, n, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                x = a[aoff + offset_of(i, shape, ast)]
                y = b[boff + offset_of(i, shape, bst)]
                if is_and:
                    out[i] = x & y
                elif is_or:
                    out[i] = x | y
                else:
                    out[i] = x ^ y
    hit = _cache[op] = (k, kernel_jit(k))
    return hit


def bitwise(op: str, shape, dtype, *operands):
    """``op`` in and/or/xor/invert of ``operands`` (Views/device arrays already in ``dtype``, or
    Python/NumPy scalars: one fill launch each) broadcast to ``shape``: a fresh contiguous device
    array."""
    from .. import cuda as backend
    shape, dtype = tuple(shape), np.dtype(dtype)
    out = backend.empty(shape, dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if not n:
        return out
    args = []
    for a in operands:
        if not (isinstance(a, View) or hasattr(a, "copy_to_host")):
            a = View(backend.full((1,), a, dtype), (), ())
        v = as_view(a).expand(shape)
        pshape, st = pad(v.shape, v.strides)
        args += [v.base, np.int64(v.offset), st]
    _, kern = _kernel(op)
    backend.launch_flat(kern, n, (*args, pshape, np.int64(n), out.reshape(n)))
    return out
