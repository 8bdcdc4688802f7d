"""What AccumulateGrad does with a leaf's gradient: the engine's own arrays are adopted as
``.grad`` without a copy (PyTorch steals them); the user's gradient arguments, hook results and
views are copied; later gradients add in place (out of place with create_graph)."""
from __future__ import annotations

import threading

import numpy as np

from .._storage import spans_whole_buffer
from ..tensor import Tensor
from . import grad_mode
from .engine_hooks import _check_hook_result, _post_accumulate_hooks

# Storage of the gradients the *user* passed to backward()/grad(): every other gradient array in a
# pass is one the engine made, which a leaf may adopt as its .grad without copying; these must be
# copied if they reach a leaf unchanged (an identity path from the output to the leaf).
_user_storage = threading.local()


def _user_ids(grads):
    ids = set()
    for g in grads:
        d = g._data
        ids.add(id(d))
        base = getattr(d, "base", None)
        if base is not None:
            ids.add(id(base))
    return ids


def _is_users(data) -> bool:
    ids = getattr(_user_storage, "ids", None)
    if not ids:
        return False
    base = getattr(data, "base", None)
    return id(data) in ids or (base is not None and id(base) in ids)


def accumulate_into_leaf(variable, g) -> None:
    owned = not _is_users(g._data)  # the engine's own arrays may be adopted without a copy
    if variable._hooks:
        for h in list(variable._hooks):
            r = h(g)
            if r is not None:
                _check_hook_result(g, r, h)
                g, owned = r, False  # a hook may hand back a tensor the user keeps
    if variable._grad is None:
        if grad_mode.is_grad_enabled():
            # create_graph: PyTorch copies into a fresh tensor laid out like the leaf
            # (clone_obey_contract), recorded as CopyBackwards on the gradient's graph
            from ..ops.basic import empty_like
            variable._grad = empty_like(g).copy_(g) if g.requires_grad else g.clone()
        else:
            data = g._data
            if not owned or not spans_whole_buffer(data):
                # copy a user's tensor, and lay out views (a transposed weight gradient, a
                # slice of a shared buffer) as a compact array of the leaf's shape
                data = np.array(data, order="C", copy=True) if data.__class__ is np.ndarray \
                    else data.copy()
                variable._grad = Tensor._make(data, False)
            else:  # adopted (PyTorch steals it): it keeps its version
                variable._grad = grad = Tensor._make(data, False)
                grad._vc.value = g._vc.value
    elif grad_mode.is_grad_enabled():
        variable._grad = variable._grad + g
    else:
        from ..ops.copies import accumulate_
        accumulate_(variable._grad, g)
    post = variable.__dict__.get("_post_accumulate_grad_hooks")
    if post:
        _post_accumulate_hooks(variable, post)


def accumulate_undefined(variable) -> None:
    """AccumulateGrad reached with no gradient: hooks see None, .grad is left alone."""
    if variable._hooks:
        for h in list(variable._hooks):
            r = h(None)
            if r is not None:
                _check_hook_result(None, r, h)
    post = variable.__dict__.get("_post_accumulate_grad_hooks")
    if post:
        _post_accumulate_hooks(variable, post)
