"""PyTorch's Python argument parser (``torch/csrc/utils/python_arg_parser.cpp``) for the
``torch.special`` signatures: which positional/keyword forms bind, NumPy's keyword aliases
(``input`` also answers to ``x``/``a``/``x1``, ``other`` to ``x2``, ``dim`` to ``axis``,
``keepdim`` to ``keepdims``), and the TypeErrors with PyTorch's words (``special_erf() got an
unexpected keyword argument 'foo'``, ``missing 1 required positional arguments``, ``argument
'input' (position 1) must be Tensor, not int``, ``received an invalid combination of
arguments``). ``jitgrad.special`` parses with these before calling jitgrad's functions.

A signature is a string in native_functions.yaml's spelling, e.g.
``"Tensor input, float? eps=None, *, Tensor out=None"``.
"""
from __future__ import annotations

import ast

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["Signature", "parse"]

# python_arg_parser.cpp's numpy_compatibility_arg_names: other keyword names a parameter takes
_NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"),
                "other": ("x2",)}
_MISSING = object()


def _is_int(o):
    return isinstance(o, (int, np.integer)) and not isinstance(o, (bool, np.bool_))


def _is_number(o):
    return isinstance(o, (bool, int, float, complex, np.number, np.bool_))


_CHECKS = {
    "Tensor": lambda o: isinstance(o, Tensor),
    "Number": _is_number,
    "int": _is_int,
    "float": lambda o: isinstance(o, (int, float, np.integer, np.floating))
    and not isinstance(o, (bool, np.bool_)),
    "bool": lambda o: isinstance(o, (bool, np.bool_)),
    "tuple of ints": lambda o: _is_int(o) or (isinstance(o, (tuple, list))
                                              and all(_is_int(v) for v in o)),
    "torch.dtype": lambda o: isinstance(o, D.dtype),
}
# yaml type -> the name PyTorch's messages use
_TYPE_NAMES = {"Tensor": "Tensor", "Scalar": "Number", "int": "int", "float": "float",
               "bool": "bool", "int[1]": "tuple of ints", "ScalarType": "torch.dtype"}


class _Param:
    __slots__ = ("name", "type", "optional", "allow_none", "keyword_only", "default", "names")

    def __init__(self, text, keyword_only):
        decl, _, default = text.partition("=")
        ty, name = decl.split()
        self.allow_none = ty.endswith("?") or default == "None"
        self.type = _TYPE_NAMES[ty.rstrip("?")]
        self.name = name
        self.optional = bool(default)
        self.default = None if default in ("", "None") else ast.literal_eval(default)
        self.keyword_only = keyword_only
        self.names = (name, *_NUMPY_NAMES.get(name, ()))

    def __str__(self):
        if self.optional:
            return f"{self.type} {self.name} = {self.default}"
        return f"{self.type} {self.name}"


class Signature:
    """One overload: ``parse`` binds ``(args, kwargs)`` to a dict name -> value (defaults
    filled in), or raises PyTorch's TypeError (``raise_exception``) / returns None."""

    def __init__(self, name, text):
        self.name = name
        self.params = []
        kw = False
        for part in (p.strip() for p in text.split(",")):
            if part == "*":
                kw = True
                continue
            self.params.append(_Param(part, kw))
        self.max_pos = sum(1 for p in self.params if not p.keyword_only)
        self.min_args = sum(1 for p in self.params if not p.optional)

    def __str__(self):
        parts, star = [], False
        for p in self.params:
            if p.keyword_only and not star:
                parts.append("*")
                star = True
            parts.append(str(p))
        return "(" + ", ".join(parts) + ")"

    def _error(self, msg):
        return TypeError(f"{self.name}{msg}")

    def parse(self, args, kwargs, raise_exception):  # noqa: C901 - the C++ loop, in order
        n = len(args)
        if n > self.max_pos:
            if raise_exception:
                raise self._extra_args(n)
            return None
        out, remaining, pos = {}, len(kwargs), 0
        for i, p in enumerate(self.params):
            obj, is_kwd = _MISSING, False
            if pos < n:
                obj = args[pos]
            else:
                is_kwd = True
                for k in p.names:
                    if k in kwargs:
                        obj = kwargs[k]
                        break
            if (obj is _MISSING and p.optional) or (obj is None and p.allow_none):
                out[p.name] = p.default if obj is _MISSING else None
            elif obj is _MISSING:
                if raise_exception:
                    missing = [f'"{q.name}"' for q in self.params[i:] if not q.optional]
                    # sic: PyTorch's plural/singular are swapped
                    raise self._error(f"() missing {len(missing)} required positional argument"
                                      f"{'s' if len(missing) == 1 else ''}: "
                                      + ", ".join(missing))
                return None
            elif _CHECKS[p.type](obj):
                out[p.name] = obj
            elif raise_exception:
                where = "" if is_kwd else f" (position {pos + 1})"
                raise self._error(f"(): argument '{p.name}'{where} must be {p.type}, not "
                                  f"{parser_type_name(obj)}")
            else:
                return None
            if not is_kwd:
                pos += 1
            elif obj is not _MISSING:
                remaining -= 1
        if remaining > 0:
            if raise_exception:
                raise self._extra_kwargs(kwargs, n)
            return None
        return out

    def _extra_args(self, n):
        lo, hi = min(self.min_args, self.max_pos), self.max_pos
        if lo == hi:
            return self._error(f"() takes {hi} positional argument{'' if hi == 1 else 's'} but "
                               f"{n} {'was' if n == 1 else 'were'} given")
        return self._error(f"() takes from {lo} to {hi} positional arguments but {n} were given")

    def _extra_kwargs(self, kwargs, n):
        names = [p.name for p in self.params]  # the real names only, as find_param
        for k in kwargs:
            if k not in names:
                return self._error(f"() got an unexpected keyword argument '{k}'")
            if names.index(k) < n:
                return self._error(f"() got multiple values for argument '{k}'")
        return self._error("() invalid keyword arguments")


def parse(name, signatures, args, kwargs):
    """``(index of the overload that bound, its arguments by name)``; PyTorch's TypeError when
    none binds (one overload: that overload's own error)."""
    if len(signatures) == 1:
        return 0, signatures[0].parse(args, kwargs, True)
    for i, sig in enumerate(signatures):
        bound = sig.parse(args, kwargs, False)
        if bound is not None:
            return i, bound
    pos = ", ".join(parser_type_name(a) for a in args)
    # PyTorch lists the keywords last-first, and ends a keywords-only list with ", "
    kws = ", ".join(f"{k}={parser_type_name(v)}" for k, v in reversed(list(kwargs.items())))
    got = f"{pos}, {kws}" if pos and kws else (f"{kws}, " if kws else pos)
    lines = "".join(f" * {s}\n" for s in signatures)
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                    f"but expected one of:\n{lines}")
