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


def _copy_version(variable) -> int:
    """The version of a gradient AccumulateGrad copied rather than stole: PyTorch's
    clone_obey_contract fills a fresh tensor laid out like a non-overlapping, dense leaf with
    ``copy_`` (one in-place write: version 1), and clones for any other leaf (version 0)."""
    d = variable._data
    if d.__class__ is not np.ndarray or d.size == 0:
        return 1
    dims = sorted((abs(st), n) for st, n in zip(d.strides, d.shape) if n != 1)
    expected = d.itemsize
    for st, n in dims:
        if st != expected:
            return 0
        expected *= n
    return 1


def _same_layout(a, b) -> bool:
    """Whether gradient array ``a`` has leaf array ``b``'s strides (dims of size 1 aside):
    PyTorch's obeys_layout_contract, for the leaves it applies to."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray or a.shape != b.shape:
        return False
    return all(n == 1 or sa * b.itemsize == sb * a.itemsize
               for n, sa, sb in zip(a.shape, a.strides, b.strides))


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
            if g.requires_grad:
                variable._grad = empty_like(g).copy_(g)
            else:
                variable._grad = c = g.clone()
                c._vc.value = _copy_version(variable)
        else:
            data = g._data
            if not owned or not spans_whole_buffer(data):
                # copy a user's tensor, and lay out views (a transposed weight gradient, a
                # slice of a shared buffer) as a compact array of the leaf's shape
                data = np.array(data, order="C", copy=True) if data.__class__ is np.ndarray \
                    else data.copy()
                variable._grad = c = Tensor._make(data, False)
                # PyTorch steals a gradient laid out like the leaf (a slice here: a copy only
                # because its buffer is shared) and copies a user's or a mis-laid-out one
                c._vc.value = _copy_version(variable) if not owned or not _same_layout(
                    g._data, variable._data) else g._vc.value
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
