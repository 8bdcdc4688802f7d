"""Matrix products as one namespace: the names ``jitgrad/__init__`` and ``ops/methods`` bind.

The ops live by topic (import them from there inside the package): ``linalg_products``
(mm, bmm, mv, dot, vdot, and the product's data on the host or the device), ``linalg_matmul``
(matmul and ``@``: PyTorch's dispatch onto those; chain_matmul, multi_dot), ``linalg_contract``
(tensordot, inner, vecdot, trace, outer/ger, kron: compositions of other ops), ``linalg_addmm``
(addmm, baddbmm, addbmm, addmv, addr: ``beta * input + alpha * product``) and ``linalg_args``
(the argument rules and ``out=`` they share). Backward functions are written with registered
ops, so every product is differentiable to any order.
"""
from __future__ import annotations

from .linalg_addmm import addbmm, addmm, addmv, addr, baddbmm
from .linalg_contract import ger, inner, kron, outer, tensordot, trace, vecdot
from .linalg_matmul import (  # noqa: F401 - __matmul__/__rmatmul__: the @ ops/methods binds
    __matmul__,
    __rmatmul__,
    chain_matmul,
    matmul,
    multi_dot,
)
from .linalg_products import bmm, dot, mm, mv, vdot

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "baddbmm", "addbmm", "addmv", "addr", "tensordot", "trace", "kron", "chain_matmul",
           "multi_dot", "vecdot"]
