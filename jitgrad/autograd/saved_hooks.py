"""Saved-tensor default hooks: ``torch.autograd.graph.saved_tensors_hooks`` and
``disable_saved_tensors_hooks``.

``stack`` holds the ``(pack_hook, unpack_hook)`` pairs pushed by the context managers; only the
innermost pair applies. ``autograd.node.SavedTensor`` reads this very list object: saving a tensor
with no hooks set costs one truth test of it. When a pair is set, ``pack_hook(tensor)`` runs (with
grad mode off, as in PyTorch) at save time and the saved tensor keeps only its result; each use of
the saved tensor (a backward, ``grad_fn._saved_self``) calls ``unpack_hook(packed)``, which must
return a Tensor. With hooks there is no version check (PyTorch cannot follow versions through the
hooks either).
"""
from __future__ import annotations

import contextlib

__all__ = ["saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu"]

stack: list = []  # [(pack_hook, unpack_hook)], innermost last; mutated in place only
_disabled_message = [None]  # the error message while disable_saved_tensors_hooks is active
used = [False]  # set once anything was packed (the fusion planner then skips packed nodes)


def push(pack_hook, unpack_hook) -> None:
    msg = _disabled_message[0]
    if msg is not None:
        raise RuntimeError(msg)
    stack.append((pack_hook, unpack_hook))


def pop() -> None:
    stack.pop()


def is_enabled() -> bool:
    return _disabled_message[0] is None


class saved_tensors_hooks:
    """Context manager setting a pair of pack / unpack hooks for saved tensors (PyTorch's
    ``torch.autograd.graph.saved_tensors_hooks``). Nested: only the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        push(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args) -> None:
        pop()


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """While active, setting saved-tensor hooks raises ``RuntimeError(error_message)`` (as does
    entering it while hooks are set)."""
    prev = _disabled_message[0]
    try:
        if stack:
            raise RuntimeError(error_message)
        _disabled_message[0] = error_message
        yield
    finally:
        _disabled_message[0] = prev


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device when unpacked."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


# ----------------------------------------------------------------------------- used by SavedTensor

_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook.")


class _Packed:
    """What a SavedTensor keeps under hooks: the pack hook's result, the unpack hook, and (for a
    saved input) the edge the original tensor fed, so the unpacked tensor has its graph."""

    __slots__ = ("packed", "unpack_hook", "edge")


def pack(tensor, is_output: bool, hooks) -> _Packed:
    from . import grad_mode
    pack_hook, unpack_hook = hooks
    used[0] = True
    h = _Packed()
    h.unpack_hook = unpack_hook
    # a saved input's graph: its grad_fn, or the leaf's AccumulateGrad (a create_graph use of the
    # unpacked tensor reaches the original leaf, as PyTorch's saved grad accumulator does)
    h.edge = None if is_output or not tensor._requires_grad else tensor._edge()
    version = tensor._vc.value
    with grad_mode.set_grad_enabled(False):
        h.packed = pack_hook(tensor)
    if tensor._vc.value != version:
        raise RuntimeError(_PACK_INPLACE)
    return h


def unpack(h: _Packed, node, saved):
    import weakref

    from ..tensor import Tensor
    from .node import AccumulateGrad
    u = h.unpack_hook(h.packed)
    if not isinstance(u, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(u).__name__}")
    rg = saved._requires_grad
    t = Tensor._make(u._data, requires_grad=rg)
    t._vc = u._vc
    edge = (node, saved._output_nr) if saved._is_output and rg else h.edge
    if edge is not None:
        fn, nr = edge
        if fn.__class__ is AccumulateGrad:
            t._grad_acc = weakref.ref(fn)
        elif fn is not None:
            t._grad_fn = fn
            t._output_nr = nr
    return t
