"""NumPy's keyword names on reductions: ``axis=`` for ``dim=``, ``keepdims=`` for ``keepdim=``.

PyTorch's argument parser accepts these aliases on every function with a ``dim`` parameter
(``x.sum(axis=1)``, ``torch.max(x, axis=0, keepdims=True)``); giving both names, or ``axis=`` with
``dim`` passed by position, is its TypeError "sum() got an unexpected keyword argument 'axis'".
One decorator, applied where each family of reductions is defined (each ``reduce_*`` module,
``cumulative``, ``nan_reduce``, ``sort``) and once more on the ``sum`` method.
(``norm`` is a Python function in PyTorch, outside its parser: it refuses ``axis=``, and so does
jitgrad's.)
"""
from __future__ import annotations

import functools
import inspect

__all__ = ["accept_numpy_aliases", "alias_renamer"]

_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))
_ALIAS_NAMES = frozenset(a for a, _ in _ALIASES)


def alias_renamer(fn, name=None):
    """The renaming step of ``accept_numpy_aliases`` for ``fn``: ``rename(args, kwargs)`` gives
    the keywords with ``axis=``/``keepdims=`` renamed ``dim=``/``keepdim=`` (PyTorch's TypeError
    where an alias meets its real name), or None when ``fn`` has neither parameter. For entry
    points that check more of the call in the same layer (``reduce_args.reduction_entry``)."""
    params = list(inspect.signature(fn).parameters)
    name = name or fn.__name__
    pairs = tuple((alias, real, params.index(real) if real in params else None)
                  for alias, real in _ALIASES if real in params)
    if not pairs:
        return None

    def rename(args, kwargs):
        for alias, real, pos in pairs:
            if alias in kwargs and (real in kwargs or (pos is not None and len(args) > pos)):
                # PyTorch names the first alias given (in keyword order) as the culprit
                first = next(k for k in kwargs if k in _ALIAS_NAMES)
                raise TypeError(f"{name}() got an unexpected keyword argument '{first}'")
        for alias, real, _ in pairs:
            if alias in kwargs:
                kwargs[real] = kwargs.pop(alias)
        return kwargs
    return rename


def accept_numpy_aliases(fn, name=None):
    """``fn`` accepting ``axis=``/``keepdims=`` for its ``dim``/``keepdim`` parameters."""
    rename = alias_renamer(fn, name)
    if rename is None:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not kwargs:  # the common call: nothing to rename
            return fn(*args)
        if _ALIAS_NAMES.isdisjoint(kwargs):  # keywords, none of them an alias
            return fn(*args, **kwargs)
        return fn(*args, **rename(args, kwargs))
    return wrapper
