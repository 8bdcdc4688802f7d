"""A view's ``requires_grad`` follows its base's, live, as PyTorch's does
(``DifferentiableViewMeta::requires_grad``: its own flag, or a grad_fn, or ``base.requires_grad()``,
the base being the root the view shares storage with).

jitgrad's ops read ``_requires_grad`` straight from the slot (no property call per operand), so
the slot holds the effective flag and a base pushes its changes to its views: a view made
without a grad_fn (whose flag may later come from its base) is registered with the base, by weak
reference (``track``); when the base's own flag changes (``requires_grad_``, ``detach_``, an
in-place op recorded on it), ``follow_base`` updates them. ``_rg_inherited`` in a view's
``__dict__`` marks a flag that comes from the base alone (PyTorch's ``requires_grad_`` of the view
false): such a view has no accumulator (``Tensor._edge``), and a gradient reaching it is dropped,
as PyTorch's ``grad_accumulator`` is null there. A view whose storage was written since its
grad_fn was set gets its new grad_fn (AsStridedBackward0) when next read, as before
(``Tensor._refresh_view``).
"""
from __future__ import annotations

import weakref

__all__ = ["track", "follow_base", "set_view_requires_grad"]

_ref = weakref.ref
_FIRST_PRUNE = 64


class _Views:
    """A base's registered views: weak references, dead ones dropped whenever the list doubles
    (amortized O(1) per view, bounded by twice the live ones)."""

    __slots__ = ("refs", "limit")

    def __init__(self, view):
        self.refs = [_ref(view)]
        self.limit = _FIRST_PRUNE


def track(root, view) -> None:
    """Register ``view`` (a differentiable view made without a grad_fn) with ``root``."""
    d = root.__dict__
    reg = d.get("_views")
    if reg is None:
        d["_views"] = _Views(view)
        return
    refs = reg.refs
    refs.append(_ref(view))
    if len(refs) >= reg.limit:
        refs[:] = [r for r in refs if r() is not None]
        reg.limit = max(_FIRST_PRUNE, 2 * len(refs))


def follow_base(root) -> None:
    """``root``'s ``_requires_grad`` may have changed: its registered leaf views that do not
    require grad on their own take it (marked inherited), or lose an inherited one."""
    reg = root.__dict__.get("_views")
    if reg is None:
        return
    rg = root._requires_grad
    for r in reg.refs:
        t = r()
        if t is None or t._base is not root or t._grad_fn is not None:
            continue  # (gone, no longer its view, or requiring grad through its own grad_fn)
        d = t.__dict__
        if rg:
            if not t._requires_grad:
                t._requires_grad = True
                d["_rg_inherited"] = True
        elif d.pop("_rg_inherited", None):
            t._requires_grad = False


def set_view_requires_grad(view, requires_grad: bool) -> None:
    """``requires_grad_`` of a leaf view: its own flag. False leaves it requiring grad when its
    base does (inherited); True gives it its own accumulator."""
    d = view.__dict__
    if requires_grad:
        d.pop("_rg_inherited", None)
        view._requires_grad = True
    elif "_rg_inherited" not in d and view._requires_grad:
        base = view._base
        if base._requires_grad and "_nondiff_view" not in d:
            d["_rg_inherited"] = True
            reg = base.__dict__.get("_views")
            if reg is None or not any(r() is view for r in reg.refs):
                track(base, view)  # (made by a path that did not register it)
        else:
            view._requires_grad = False
