"""PyTorch's argument-parser wording for the signature errors Python raises itself.

A call missing a required argument is a TypeError in both libraries, worded differently:
Python says ``cumsum() missing 1 required positional argument: 'dim'``, PyTorch's parser
``cumsum() missing 1 required positional arguments: "dim"`` (and ``transpose() missing 2
required positional argument: "dim0", "dim1"``). ``parser_errors`` rewords the
errors raised while binding the call (never those raised inside the op).

``parser_type_name`` names an argument's type as the parser's messages do ("must be Tensor,
not numpy.ndarray", "got (Tensor, float)"): every such message in jitgrad uses it.
``input_type_error`` is the parser's TypeError for a first argument that is not a Tensor (one
overload: "argument 'input' (position 1) must be Tensor"; several: the "invalid combination"
listing that ``invalid_combination`` writes, with the parser's "didn't match" lines);
``sequence_type_error`` the one for a tensor list holding something else. The ops raise them
from an ``except`` around their fast path (free until raised), so a correct call pays nothing."""
from __future__ import annotations

import functools
import re
import types

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python (or by type())

# jitgrad's Python classes standing for PyTorch's C types, named as PyTorch's tp_name
_TORCH_TYPES = {"dtype": "torch.dtype", "device": "torch.device", "Size": "torch.Size",
                "Generator": "torch._C.Generator", "finfo": "torch.finfo",
                "iinfo": "torch.iinfo"}


def parser_type_name(v) -> str:
    """``v``'s type as PyTorch's argument parser names it: "Tensor" for any tensor, PyTorch's
    own name for the types jitgrad defines in Python (``torch.dtype``), else CPython's
    ``tp_name``: a builtin or a class defined in Python by its bare name (``float``,
    ``MyClass``), a static extension type with its module (``numpy.ndarray``,
    ``numpy.float32``)."""
    from ..tensor import Tensor
    if isinstance(v, Tensor):
        return "Tensor"
    t = type(v)
    module = t.__module__
    if module.startswith("jitgrad") and t.__name__ in _TORCH_TYPES:
        return _TORCH_TYPES[t.__name__]
    if t.__flags__ & _HEAP_TYPE or module == "builtins":
        return t.__name__
    return f"{module}.{t.__name__}"


_MISSING = re.compile(r"^(\w+)\(\) missing (\d) required (?:positional|keyword-only) "
                      r"arguments?: (.*)$")


def parser_errors(fn):
    """``fn`` raising PyTorch's words for a missing argument."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            tb = e.__traceback__
            m = _MISSING.match(str(e)) if tb is not None and tb.tb_next is None else None
            if m is None:  # (raised inside fn, or not a missing argument)
                raise
            # Python lists 'a' and 'b' / 'a', 'b', and 'c'; the parser "a", "b", with its
            # plural the other way round ("1 ... arguments", "2 ... argument")
            names = re.findall(r"'(\w+)'", m.group(3))
            word = "arguments" if m.group(2) == "1" else "argument"
            raise TypeError(f"{m.group(1)}() missing {m.group(2)} required positional {word}: "
                            + ", ".join(f'"{n}"' for n in names)) from None
    return call


def raise_instead(error) -> None:
    """Called in an ``except`` block: raise ``error`` (the parser's TypeError for the arguments)
    in place of the exception being handled, or re-raise that one when ``error`` is None (the
    arguments were fine: the failure is the op's own)."""
    if error is None:
        raise  # the exception the caller is handling
    raise error from None


def with_keyword_defaults(fn, **defaults):
    """A copy of ``fn`` whose keyword-only defaults ``defaults`` replace its own: a method form
    whose messages differ from the function's (positions count from self) with no extra call
    layer."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), **defaults}
    copy.__qualname__, copy.__doc__, copy.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    return copy


def _arity(signature) -> tuple[int, int]:
    """``(min_args, max_args)`` of a signature as the parser prints it (``Tensor input, int dim,
    bool keepdim = False, *, Tensor out = None``): every parameter counts toward the maximum,
    those without a default toward the minimum."""
    params = [p for p in signature.strip(" *()\n").split(", ") if p and p != "*"]
    return sum(" = " not in p for p in params), len(params)


def input_type_error(name, args, kwargs, signatures=None, arg="input"):
    """PyTorch's TypeError for a call of ``name`` whose first argument (positional, or by
    keyword ``arg``) is not a Tensor; None when it is one. ``signatures``: the function's
    overloads as the parser lists them (``"(Tensor input, *, torch.dtype dtype = None)"``),
    None for one. As the parser: with several overloads, those the argument count fits
    decide: one fits -> its own error (the argument at fault, its position); else the
    "invalid combination" listing of them all."""
    from ..tensor import Tensor
    if args:
        value, where = args[0], " (position 1)"
    elif arg in kwargs:
        value, where = kwargs[arg], ""
    else:
        return None
    if isinstance(value, Tensor):
        return None
    if signatures is not None and len(signatures) > 1:
        n = len(args) + len(kwargs)
        fits = [s for s in signatures if _arity(s)[0] <= n <= _arity(s)[1]]
        if len(fits) != 1:
            return invalid_combination(name, args, kwargs, signatures)
    return TypeError(f"{name}(): argument '{arg}'{where} must be Tensor, not "
                     f"{parser_type_name(value)}")


def describe_arguments(args, kwargs) -> str:
    """The argument types as the parser lists them after "got": positional types, then the
    keywords as ``name=Type`` in reverse order of passing (the parser's dict walk), each followed
    by ", " when no positional argument came first (``(min=str, )``)."""
    words = [parser_type_name(a) for a in args]
    kws = [f"{k}={parser_type_name(v)}" for k, v in reversed(list(kwargs.items()))]
    if words or not kws:
        return ", ".join(words + kws)
    return "".join(k + ", " for k in kws)


def sequence_type_error(tensors, position=0):
    """PyTorch's TypeError for a tensor list argument (``cat``'s ``tensors``) holding something
    other than a Tensor, or None when every element is one."""
    from ..tensor import Tensor
    if not isinstance(tensors, (list, tuple)):
        return None
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            return TypeError(f"expected Tensor as element {i} in argument {position}, but got "
                             f"{parser_type_name(t)}")
    return None


def _fits(kind, v) -> bool:
    """Whether the parser's error listing counts ``v`` as matching a parameter type. Its check
    knows only a few plain types: "Number", "tuple of ints" and the like always count as a
    mismatch there (``(Tensor condition, Number self, ...)`` marks ``!float!``)."""
    from .. import _dtype as D
    from ..tensor import Tensor
    if kind == "Tensor":
        return isinstance(v, Tensor)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind in ("float", "bool", "str"):
        return type(v).__name__ == kind
    if kind == "torch.dtype":
        return isinstance(v, D.dtype)
    return False


def _shown(v) -> str:
    """An argument as a "didn't match" line shows it: a list or tuple with its elements' types
    (``list of [int, float]``, ``tuple of (int,)``)."""
    if isinstance(v, (list, tuple)):
        names = ", ".join(parser_type_name(e) for e in v)
        if isinstance(v, list):
            return f"list of [{names}]"
        return f"tuple of ({names}{',' if len(v) == 1 else ''})"
    return parser_type_name(v)


def _mismatch_line(signature, args, kwargs) -> str:
    """The parser's "didn't match" line under one listed overload. It adds one where the call
    gives as many arguments as the overload's text has comma-separated entries, counting its
    "*" and the empty entry of ``()`` as one each (so ``all(x, 0, True)`` gets one under
    ``(Tensor input, *, Tensor out = None)``, ``sum(x, 0)`` none): the arguments, mismatched ones
    between "!"s (a "*" or empty entry matches nothing), or the keywords the overload lacks."""
    params = signature.strip("()").split(", ")
    if len(args) + len(kwargs) != len(params):
        return ""
    kinds = {}
    for p in params:
        kind, _, param = p.split(" = ")[0].rpartition(" ")
        # measured: a parameter with a default matches nothing in this listing (x.sort(0, 1)
        # marks "(!int!, !int!)" under "(int dim = -1, bool descending = False)", x.std(0, True,
        # 1) "(!int!, !bool!, !int!)"; x.all(0, 1) "(int, !int!)" under "(int dim, ...)")
        kinds[param] = "" if " = " in p else kind
    unknown = [k for k in kwargs if k not in kinds]
    if unknown:
        return ("      didn't match because some of the keywords were incorrect: "
                + ", ".join(unknown) + "\n")
    words = [_shown(v) if _fits(kind, v) else f"!{_shown(v)}!"
             for kind, v in zip(kinds.values(), args)]
    kws = [f"{k}={_shown(v)}" if _fits(kinds[k], v) else f"!{k}={_shown(v)}!"
           for k, v in kwargs.items()]
    shown = ", ".join(words + kws) if words or not kws else "".join(k + ", " for k in kws)
    return ("      didn't match because some of the arguments have invalid types: ("
            + shown + ")\n")


def is_bool(v) -> bool:
    """Whether the parser takes ``v`` for a ``bool`` parameter: a Python bool (not 0/1, nor
    NumPy's bool: ``x.std(0, np.bool_(True))`` is a TypeError there)."""
    return v.__class__ is bool


def is_int(v) -> bool:
    """Whether the parser takes ``v`` for an ``int`` parameter (not a bool)."""
    import numpy as np
    return isinstance(v, (int, np.integer)) and not is_bool(v)


def is_int_list(v) -> bool:
    """Whether the parser takes ``v`` for ``tuple of ints`` (an int, or a tuple/list of them)."""
    return is_int(v) or (isinstance(v, (tuple, list)) and all(is_int(e) for e in v))


def argument_type_error(name, arg, position, expected, value) -> TypeError:
    """PyTorch's TypeError for one argument of the wrong type, as the function form words it
    (``topk(): argument 'largest' (position 4) must be bool, not int``); the method forms made
    by ``counted_from_self`` count the position from self's successor."""
    return TypeError(f"{name}(): argument '{arg}' (position {position}) must be {expected}, "
                     f"not {parser_type_name(value)}")


def invalid_combination(name, args, kwargs, signatures) -> TypeError:
    """PyTorch's TypeError when no overload of ``name`` takes the call's arguments, each
    overload listed as the parser prints it (``signatures``: ``"(Tensor input, Number other)"``)
    with its "didn't match" line where the parser adds one."""
    listed = "".join(f" * {s}\n{_mismatch_line(s, args, kwargs)}" for s in signatures)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({describe_arguments(args, kwargs)}), but expected one of:\n{listed}")


# "add(): argument 'other' (position 2) must be Tensor, not numpy.ndarray": the function form's
# error for one argument, and the start of the function form's "invalid combination" listing
_ONE_ARGUMENT = re.compile(r"^(\w+)\(\): argument '(\w+)' \(position (\d+)\)( must be .*)$",
                           re.S)
_COMBINATION = re.compile(r"^\w+\(\) received an invalid combination of arguments")


def method_form_error(name, error, args, kwargs, overloads=None):
    """The method ``name``'s TypeError (``x.add(a)``: PyTorch's parser sees the arguments after
    self, and names the method, ``x.atan2_`` as ``atan2_()``) for ``error``, the function
    form's (``add(x, a)``), or None when ``error`` is not the parser's. An argument's position
    counts from self's successor, none when it came by keyword; ``overloads`` are the method's
    own overloads as the parser lists them (``"(Tensor other)"``, ``"(Number other)"``) where
    PyTorch gives several: their "invalid combination" listing."""
    message = str(error)
    m = _ONE_ARGUMENT.match(message)
    if overloads is not None and (m is not None or _COMBINATION.match(message)):
        return invalid_combination(name, args, kwargs, overloads)
    if m is None or int(m.group(3)) < 2:
        return None
    where = "" if m.group(2) in kwargs else f" (position {int(m.group(3)) - 1})"
    return TypeError(f"{name}(): argument '{m.group(2)}'{where}{m.group(4)}")


def method_error(method, error, args, kwargs):
    """In the ``except`` of a function whose method form is its ``with_keyword_defaults`` copy
    with ``_method=(name, overloads)`` (no call layer on the hot ``x.add(y)``): the method's
    TypeError (``method_form_error``; ``args``/``kwargs`` those after self), or None for the
    function form (``method`` None) or an error not the parser's. (A keyword argument there is
    taken for a positional one: the copy cannot tell them apart.)"""
    if method is None:
        return None
    return method_form_error(method[0], error, args, kwargs, method[1])


def counted_from_self(fn, name, overloads=None):
    """``fn`` (a torch.* function taking the tensor first) as the Tensor method ``name``, its
    parser errors in the method's words (``method_form_error``). The rewording runs only on the
    error path; a correct call pays one call layer."""
    def method(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except TypeError as e:
            raise_instead(method_form_error(name, e, args, kwargs, overloads))
    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    method.__doc__, method.__wrapped__ = fn.__doc__, fn
    return method
