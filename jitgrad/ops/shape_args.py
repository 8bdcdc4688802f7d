"""Argument rules shared by the shape ops (ops/shape_*.py): ints, dims and size lists checked
and wrapped as PyTorch does, with PyTorch's error types and words."""
from __future__ import annotations

import re

import numpy as np

from ..tensor import Tensor
from .parser_errors import (
    describe_arguments,
    input_type_error,
    invalid_combination,
    parser_type_name,
    raise_instead,
)


def _int(v, fn, what):
    """An int argument: PyTorch rejects floats and bools (TypeError); 0-d integer tensors and
    NumPy integers pass (``__index__``)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, Tensor) and v._data.dtype.kind in "iu" and v._data.ndim == 0:
        return int(v)
    raise TypeError(f"{fn}(): argument '{what}' must be int, not {parser_type_name(v)}")


def _wrap(dim, ndim, fn="dim"):
    if isinstance(dim, Tensor) and dim._data.dtype.kind in "iu" and dim._data.ndim == 0:
        dim = int(dim)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}(): argument 'dim' must be int, not {parser_type_name(dim)}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return int(dim) % max(ndim, 1)


def _wrap_nonscalar(dim, ndim, fn="dim", say_wrapped=False):
    """``_wrap`` for ops that need a real dimension (unbind, roll): a 0-d tensor has none."""
    d = _wrap(dim, ndim, fn)
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d if say_wrapped else dim} but tensor has no "
                         "dimensions")
    return d


def _dup_check(dims):
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)


_NOT_GIVEN = object()


def _int_list(args, fn, what, kw=_NOT_GIVEN, allow_empty=False):
    """A size/dims argument given as varargs ints, one tuple/list/Size, or keyword ``what``."""
    if kw is not _NOT_GIVEN:
        if args:
            raise TypeError(f"{fn}() got multiple values for argument '{what}'")
        args = (kw,)
    if not args and not allow_empty:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{what}"')
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    elif len(args) == 1 and isinstance(args[0], Tensor) and args[0]._data.ndim == 1:
        args = tuple(args[0].tolist())
    out = []
    for i, a in enumerate(args):
        try:
            out.append(_int(a, fn, what))
        except TypeError:
            raise TypeError(f"{fn}(): argument '{what}' must be tuple of ints, but found element "
                            f"of type {parser_type_name(a)} at pos {i}") from None
    return tuple(out)


def _is_int(v):
    """An int where PyTorch's parser takes one: int, NumPy integer, 0-d integer tensor (no bool)."""
    if isinstance(v, Tensor):
        return v._data.dtype.kind in "iu" and v._data.ndim == 0
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _view_mismatch(got, bad):
    """view()'s TypeError when neither of its overloads (dtype, size) takes the arguments."""
    why = ("      didn't match because some of the arguments have invalid types: "
           f"(!{bad}!)\n") if bad else ""
    return TypeError(f"view() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n * (torch.dtype dtype)\n{why} * (tuple of ints size)\n"
                     f"{why}")


def _size_list(args, fn, what, kw=_NOT_GIVEN):
    """``_int_list`` for a method whose one parameter is a size list (view/reshape/expand/
    permute): varargs ints or one sequence, with the TypeErrors of PyTorch's argument parser,
    worded by how the bad value came (method form: the list is argument 1)."""
    try:
        return _int_list(args, fn, what, kw)
    except TypeError:
        if kw is not _NOT_GIVEN and not args:
            raise _size_keyword_error(kw, fn, what) from None
        if kw is not _NOT_GIVEN or not args:
            raise
    raise _size_list_error(args, fn, what) from None


def _size_keyword_error(v, fn, what):
    """The TypeError for a bad size list given by keyword (``x.permute(dims=...)``)."""
    name = parser_type_name(v)
    if fn == "view":
        # the dtype overload has no such keyword; the size overload's type check fails
        bad = f"{name} of ({', '.join(parser_type_name(a) for a in v)})" \
            if isinstance(v, (tuple, list)) else name
        return TypeError(
            f"view() received an invalid combination of arguments - got ({what}={name}, ), but "
            f"expected one of:\n * (torch.dtype dtype)\n      didn't match because some of the "
            f"keywords were incorrect: {what}\n * (tuple of ints size)\n      didn't match "
            f"because some of the arguments have invalid types: (!{what}={bad}!, )\n")
    if isinstance(v, (tuple, list)):
        if v and not _is_int(v[0]):  # the parser's check looks at the first element
            return TypeError(f"{fn}(): argument '{what}' must be tuple of ints, not {name}")
        for i, a in enumerate(v):
            if not _is_int(a):
                return TypeError(f"{fn}(): argument '{what}' failed to unpack the object at pos "
                                 f"{i + 1} with error \"type must be tuple of ints,but got "
                                 f"{parser_type_name(a)}\"")
    return TypeError(f"{fn}(): argument '{what}' must be tuple of ints, not {name}")


def _size_list_error(args, fn, what):
    name = parser_type_name

    def unpack(i, v):
        return TypeError(f"{fn}(): argument '{what}' failed to unpack the object at pos {i + 1} "
                         f"with error \"type must be tuple of ints,but got {name(v)}\"")

    first = args[0]
    if len(args) > 1:
        if not _is_int(first):
            # the parser takes varargs ints only when the first one is an int
            if fn == "view":
                return _view_mismatch(", ".join(name(a) for a in args), None)
            return TypeError(f"{fn}() takes 1 positional argument but {len(args)} were given")
        seq = args
    elif isinstance(first, (tuple, list)):
        if first and not _is_int(first[0]):  # the parser's check looks at the first element
            if fn == "view":
                return _view_mismatch(name(first), f"{name(first)} of "
                                      f"({', '.join(name(a) for a in first)})")
            return TypeError(f"{fn}(): argument '{what}' (position 1) must be tuple of ints, but "
                             f"found element of type {name(first[0])} at pos 0")
        seq = first
    else:
        if fn == "view":
            return _view_mismatch(name(first), name(first))
        return TypeError(f"{fn}(): argument '{what}' (position 1) must be tuple of ints, not "
                         f"{name(first)}")
    for i, v in enumerate(seq):
        if not _is_int(v):
            return unpack(i, v)
    return TypeError(f"{fn}(): argument '{what}' must be tuple of ints")  # (not reached)


def _infer_shape(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                                   f"{_fmt(shape)}")
            known *= s
    if neg:
        if known == 0:
            if numel == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {_fmt(shape)} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous")
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        if numel % known:
            raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{_fmt(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def function_form(method, name, param):
    """``torch.<name>(input, <param>)`` of an op whose method also takes varargs (permute,
    reshape, tile, flip): PyTorch's function form takes exactly one sequence, so
    ``torch.permute(x, 1, 0)`` and ``torch.reshape(x, -1)`` are TypeErrors there even though
    ``x.permute(1, 0)`` and ``x.reshape(-1)`` are fine."""
    def fn(input, *args, **kwargs):
        try:  # (free until raised) a non-Tensor input is the parser's first TypeError
            if len(args) > 1:
                raise TypeError(f"{name}() takes 2 positional arguments but {len(args) + 1} "
                                "were given")
            if not args and param not in kwargs:
                raise TypeError(f'{name}() missing 1 required positional arguments: "{param}"')
            where = " (position 2)" if args else ""
            v = args[0] if args else kwargs.get(param, _NOT_GIVEN)
            if v is not _NOT_GIVEN:
                if not isinstance(v, (tuple, list)):
                    raise TypeError(f"{name}(): argument '{param}'{where} must be tuple of ints, "
                                    f"not {parser_type_name(v)}")
                for i, a in enumerate(v):
                    if not _is_int(a):
                        raise TypeError(f"{name}(): argument '{param}'{where} must be tuple of "
                                        f"ints, but found element of type {parser_type_name(a)} "
                                        f"at pos {i}")
            return method(input, *args, **kwargs)
        except Exception:
            raise_instead(input_type_error(name, (input,) + args, kwargs))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = method.__doc__
    return fn


_BAD_KEYWORD = re.compile(r"(?:unexpected keyword argument|multiple values for argument) '(\w+)'")


def parser_overloads(name, signatures, method=False):
    """``fn(input, ...)`` raising PyTorch's "invalid combination of arguments" when the call
    does not bind (an argument missing or one too many: ``torch.narrow(x, 0, 1)``,
    ``x.movedim(0)``), listing ``signatures`` (``"Tensor input, int dim, ..."``; the method
    form ``method=True`` leaves the tensor out, as PyTorch's parser does). Errors raised
    inside ``fn`` pass unchanged."""
    sigs = [sig.replace("Tensor input, ", "") if method else sig for sig in signatures]

    def wrap(fn):
        wanted = fn.__code__.co_argcount - (1 if method else 0)

        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                tb = e.__traceback__
                if not method and args and not isinstance(args[0], Tensor):
                    # a non-Tensor input fits no overload (the parser's listing, its lines)
                    raise invalid_combination(name, args, kwargs,
                                              [f"({sig})" for sig in sigs]) from None
                if not isinstance(e, TypeError) or tb is None or tb.tb_next is not None:
                    raise  # raised inside fn
                given = args[1:] if method else args
                bad = _BAD_KEYWORD.search(str(e))
                # a call with as many arguments as a signature's is told what did not fit
                why = "" if bad is None or len(given) + len(kwargs) != wanted else \
                    f"      didn't match because some of the keywords were incorrect: " \
                    f"{bad.group(1)}\n"
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"({describe_arguments(given, kwargs)}), but expected one of:\n"
                                + "".join(f" * ({sig})\n{why}" for sig in sigs)) from None
        call.__name__ = call.__qualname__ = name
        call.__doc__ = fn.__doc__
        return call
    return wrap


