"""The hooks a backward pass calls, and PyTorch's checks on what they return: tensor hooks
(pre-hooks of a node's outputs, a leaf's hooks), ``Node`` pre- and post-hooks, and the
post-accumulate-grad hooks (with their registration). A hook's result may be a tensor the user
keeps, so the engine passes on ``_owned_copy`` of it (leaves adopt the engine's arrays)."""
from __future__ import annotations

import numpy as np


def _owned_copy(t):
    from ..tensor import Tensor
    d = t._data
    return Tensor._make(np.array(d, copy=True) if d.__class__ is np.ndarray else d.copy())


def _hook_name(fn) -> str:
    return getattr(fn, "__name__", None) or repr(fn)


def _check_hook_result(value, result, fn):
    """PyTorch's check_single_result / check_variable_result for what a hook returned."""
    from ..tensor import Tensor
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if value is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    _check_same_meta(value, result, fn)


def _check_same_meta(value, result, fn):
    from .node import _tensor_type_name
    if value.dtype is not result.dtype:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was "
                           f"{_tensor_type_name(value)} got {_tensor_type_name(result)})")
    if value._data.__class__ is not result._data.__class__:
        was = "CUDA tensor got CPU tensor" if value.is_cuda else "CPU tensor got CUDA tensor"
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value ({was})")
    if value._data.shape != result._data.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value")


def _tensor_pre_hooks(node, buf, create_graph):
    """Tensor hooks registered on the outputs of ``node`` (``_pre_hooks[output_nr]``); an output
    that received no gradient is passed as None, as PyTorch does."""
    for nr, hooks in node._pre_hooks.items():
        if nr is None or not hooks:
            continue
        for h in list(hooks):
            g = buf.get(nr)
            r = h(g)
            if r is not None:
                _check_hook_result(g, r, h)
                # the user may keep what the hook returned: the engine only passes on arrays
                # it owns
                buf[nr] = r if create_graph else _owned_copy(r)


def _leaf_hooks(variable, buf, create_graph):
    for h in list(variable._hooks):
        g = buf.get(0)
        r = h(g)
        if r is not None:
            _check_hook_result(g, r, h)
            buf[0] = r if create_graph else _owned_copy(r)


def _check_tuple_result(prev, result, fn):
    from ..tensor import Tensor
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(prev):
        raise RuntimeError(f"hook '{_hook_name(fn)}' has returned an incorrect number of values "
                           f"(got {len(result)}, but expected {len(prev)})")
    for p, r in zip(prev, result):
        if isinstance(p, Tensor) and isinstance(r, Tensor):
            _check_same_meta(p, r, fn)


def _node_pre_hooks(node, grads_out):
    """``Node.register_prehook``: fn(grad_outputs) -> new grad_outputs or None."""
    grads = tuple(grads_out)
    for h in list(node._pre_hooks[None]):
        r = h(grads)
        if r is not None:
            _check_tuple_result(grads, r, h)
            grads = r
    return list(grads)


def _node_post_hooks(node, grads_in, grads_out):
    """``Node.register_hook``: fn(grad_inputs, grad_outputs) -> new grad_inputs or None."""
    gi, go = tuple(grads_in), tuple(grads_out)
    for h in list(node._hooks):
        r = h(gi, go)
        if r is not None:
            _check_tuple_result(gi, r, h)
            gi = r
    return list(gi)


def _post_accumulate_hooks(variable, hooks):
    for h in list(hooks.values()):
        r = h(variable)
        if r is not None:
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")


def register_post_accumulate_grad_hook(tensor, hook):
    """``Tensor.register_post_accumulate_grad_hook``: ``hook(tensor)`` runs after a backward
    accumulated into the leaf's ``.grad`` (not in ``autograd.grad``)."""
    from ..utils.hooks import RemovableHandle
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = tensor.__dict__.get("_post_accumulate_grad_hooks")
    if hooks is None:
        from collections import OrderedDict
        hooks = tensor.__dict__["_post_accumulate_grad_hooks"] = OrderedDict()
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle
