"""What AccumulateGrad does with a leaf's gradient: the engine's own arrays are adopted as
``.grad`` without a copy (PyTorch steals them); the user's gradient arguments, hook results and
views are copied; later gradients add in place (out of place with create_graph)."""
from __future__ import annotations

import sys
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


def _dense_strides(variable):
    """The leaf's element strides (as ``stride()`` reports them) when it is non-overlapping and
    dense, as ATen's ``is_non_overlapping_and_dense`` judges it (dims of size 1 aside; an empty
    tensor counts as dense), else None."""
    d = variable._data
    st = variable.stride()  # (host or CUDA storage: the same rule)
    if d.size == 0:
        return st
    expected = 1
    for s, n in sorted((s, n) for s, n in zip(st, d.shape) if n != 1):
        if s != expected:
            return None
        expected *= n
    return st


def _copy_version(variable) -> int:
    """The version of a gradient AccumulateGrad copied rather than stole: PyTorch's
    clone_obey_contract fills a fresh tensor laid out like a non-overlapping, dense leaf with
    ``copy_`` (one in-place write: version 1), and clones for any other leaf (version 0)."""
    return 1 if _dense_strides(variable) is not None else 0


def _obeys_layout_contract(g, variable) -> bool:
    """PyTorch's obeys_layout_contract: ``g`` has a dense leaf's strides (dims of size 1
    aside), or is contiguous for any other leaf: only such a gradient is stolen."""
    a, v = g._data, variable._data
    if a.__class__ is not v.__class__ or a.shape != v.shape:
        return False
    if v.size and a.flags.c_contiguous and v.flags.c_contiguous:  # the common case: no sort
        return True
    want = _dense_strides(variable)
    if want is None:
        return a.flags.c_contiguous
    isz = a.itemsize
    return all(n == 1 or sa == sb * isz for n, sa, sb in zip(a.shape, a.strides, want))


def _whole_allocation(a) -> bool:
    """``a`` is all of its memory (no array can see bytes outside it): a fresh C-contiguous
    array, or a permuted view of a fresh array of the same bytes (a transposed gradient); on
    CUDA a dense array over all of its buffer (channels-last too)."""
    if a.__class__ is not np.ndarray:
        return a.spans_buffer() and _dense_bytes(a)
    if spans_whole_buffer(a):
        return True
    base = a.base
    return (base.__class__ is np.ndarray and base.base is None and base.nbytes == a.nbytes
            and np.prod(a.shape) == base.size and _dense_bytes(a))


def _dense_bytes(a) -> bool:
    expected = a.itemsize
    for s, n in sorted((s, n) for s, n in zip(a.strides, a.shape) if n != 1):
        if s != expected:
            return False
        expected *= n
    return True


def _leaf_layout_copy(g, variable, fill=True):
    """A copy of ``g``'s array laid out as clone_obey_contract lays it: the leaf's strides when
    the leaf is non-overlapping and dense, else contiguous (``fill=False``: uninitialised)."""
    data = g._data
    st = _dense_strides(variable)
    if data.__class__ is not np.ndarray:  # CUDA: the strided copy kernel writes the layout
        return data.copy() if st is None or not data.size else data.copy_strided(st)
    if st is None or not data.size:
        return np.array(data, order="C", copy=True) if fill else \
            np.empty(data.shape, dtype=data.dtype)
    # allocate the dims in the leaf's stride order, then view them in the leaf's order
    order = sorted(range(data.ndim), key=lambda i: (st[i], data.shape[i]), reverse=True)
    buf = np.empty([data.shape[i] for i in order], dtype=data.dtype)
    out = buf.transpose(np.argsort(order))
    if out.strides != tuple(s * data.itemsize for s in st):  # (dims of size 1: the leaf's)
        from .._storage import as_strided
        out = as_strided(out, data.shape, st)
    if fill:
        np.copyto(out, data)
    return out


def _record_empty_layout(grad, variable):
    if not grad._data.size and grad._data.__class__ is np.ndarray:
        st = _dense_strides(variable)
        if st is not None:
            from .._layout import record_layout
            record_layout(grad, st, 0)


# the reference count read below is CPython 3.11's (tests/test_grad_version_parity.py checks it
# against PyTorch); 3.14 borrows references on the stack, so a count could read low: copy there
_COUNTS_KNOWN = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


def _held_elsewhere(g) -> bool:
    """Whether something besides the engine's pass holds ``g`` (PyTorch's ``use_count() > 1``
    and storage count): another edge's buffer (an operand gradient AddBackward0 handed to both
    slots) or a hook that kept it. The references of a gradient nothing else holds: the
    engine's buffer dict and input list, accumulate_into_leaf's parameter, this parameter and
    getrefcount's argument (fewer when called directly). Its array's count is not read: the
    CPU pool keeps references to the arrays it hands out. Without known counts: held."""
    return not _COUNTS_KNOWN or sys.getrefcount(g) > 5


def accumulate_into_leaf(variable, g) -> None:
    # the engine's own arrays may be adopted without a copy, if nothing else holds them
    owned = not _is_users(g._data) and not _held_elsewhere(g)
    if variable._hooks:
        for h in list(variable._hooks):
            refs = sys.getrefcount(g)
            r = h(g)
            if r is not None:
                _check_hook_result(g, r, h)
                # PyTorch steals a hook's result that nothing else holds (its use_count): a
                # temporary the hook made, or the engine's gradient handed back untouched; one
                # the hook or the user keeps is copied. References to a new ``r``: this local
                # and getrefcount's argument; to ``g`` handed back: what it had, plus ``r``
                if r is g:
                    owned = owned and _COUNTS_KNOWN and sys.getrefcount(g) == refs + 1
                else:
                    owned = _COUNTS_KNOWN and sys.getrefcount(r) == 2
                g = r
    if not variable._requires_grad:
        pass  # (requires_grad_(False) since the graph was made: PyTorch accumulates nothing)
    elif variable._grad is None:
        if grad_mode.is_grad_enabled():
            # create_graph: PyTorch copies into a fresh tensor laid out like the leaf
            # (clone_obey_contract), recorded as CopyBackwards on the gradient's graph
            if g.requires_grad:
                if g._data.__class__ is not np.ndarray:
                    from ..ops.basic import empty_like
                    variable._grad = empty_like(g).copy_(g)
                elif _dense_strides(variable) is not None:  # empty_strided(leaf).copy_(g)
                    fresh = Tensor._make(_leaf_layout_copy(g, variable, fill=False), False)
                    _record_empty_layout(fresh, variable)
                    variable._grad = fresh.copy_(g)
                else:
                    from ..ops.copies import clone
                    variable._grad = clone(g, memory_format="contiguous_format")
            else:
                variable._grad = c = Tensor._make(_leaf_layout_copy(g, variable), False)
                c._vc.value = _copy_version(variable)
                _record_empty_layout(c, variable)
        else:
            data = g._data
            obeys = _obeys_layout_contract(g, variable)
            steal = owned and obeys and _whole_allocation(data)
            if not steal:
                # copy a user's tensor or one laid out unlike the leaf (PyTorch's
                # clone_obey_contract), and a slice of a shared buffer: its own memory
                variable._grad = c = Tensor._make(_leaf_layout_copy(g, variable), False)
                # PyTorch steals a gradient laid out like the leaf (a slice here: a copy only
                # because its buffer is shared) and copies a user's or a mis-laid-out one
                c._vc.value = _copy_version(variable) if not owned or not obeys \
                    else g._vc.value
                _record_empty_layout(c, variable)
            else:  # adopted: PyTorch stores ``new_grad.detach()``, which shares its version
                variable._grad = grad = Tensor._make(data, False)
                grad._vc = g._vc
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
