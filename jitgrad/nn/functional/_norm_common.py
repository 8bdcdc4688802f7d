"""Helpers shared by the statistics normalizations (``batchnorm``, ``normalization``): argument
checks in ATen's wording, the row-kernel module loaded on first use, and the backward of a CPU
node through its composition when a graph of the gradient is asked for."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import as_one_node
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor

_norm_kernels = None


def _kernels():
    """``_norm_kernels`` (imports Numba: loaded on first use, then kept here, since an import
    statement on every call costs importlib's parent lookups)."""
    global _norm_kernels
    if _norm_kernels is None:
        from . import _norm_kernels as kernels
        _norm_kernels = kernels
    return _norm_kernels


def _creating_graph() -> bool:
    return grad_mode.is_grad_enabled()


def _check_tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _check_float(input, op):
    if not input.is_floating_point():
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _check_param_dtypes(input, *params):
    """ATen's CPU mixed-dtype check (parameters must share the input's dtype)."""
    for p in params:
        if p is not None and p.dtype != input.dtype:
            if input.dtype == D.float32:
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type "
                                   "of Float")
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _kernel_array(a):
    """Contiguous, in a dtype the row kernels take: float16 computes in float32 (as ATen's CPU
    kernels do) and is rounded back by the caller."""
    a = np.ascontiguousarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _channel_shape(input):
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _vjp_of_graph(build, node, g, backward_name=None):
    """The backward of a CPU node when the engine builds a graph: differentiate ``build`` (the
    node's composition) at the saved inputs, keeping the graph of the result (shown as the one
    node ``backward_name`` if given, as PyTorch's double-backward nodes)."""
    from ...autograd import engine
    names = ("x", "w", "b")
    saved = [node.saved(n) if n in node.ctx._saved else None for n in names]
    needs = node.ctx.needs_input_grad

    def vjp(g, *saved):
        out = build(*saved)
        wanted = [t for t, need in zip(saved, needs) if need and t is not None]
        grads = iter(engine.grad([out], wanted, [g], retain_graph=True, create_graph=True,
                                 allow_unused=True))
        return tuple(next(grads) if need and t is not None else None
                     for t, need in zip(saved, needs))

    if backward_name is None:
        return vjp(g, *saved)
    return as_one_node(backward_name, (g, *saved), vjp)


def _save_inputs(input, weight, bias):
    return tuple((n, t) for n, t in (("x", input), ("w", weight), ("b", bias)) if t is not None)
