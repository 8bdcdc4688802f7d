"""``torch.finfo`` / ``torch.iinfo`` (the limits of a dtype) and the numeric constants
``torch.pi, e, inf, nan, newaxis``.

The limits are NumPy's (``np.finfo``/``np.iinfo`` of the dtype's storage type, which are IEEE's
and C's); what is PyTorch's is the object around them: read-only attributes, ``dtype`` as the
dtype's name (a str), the repr printed with ``%g``, equality by dtype, no hash, and the argument
parser's errors.
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D
from .ops.parser_errors import parser_type_name

__all__ = ["finfo", "iinfo", "pi", "e", "inf", "nan", "newaxis"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


def _check_type(name, args, kwargs, optional):
    """The dtype argument, positional or ``type=``, checked as PyTorch's parser does."""
    args = args + tuple(kwargs.values())
    if len(args) > 1 or (kwargs and set(kwargs) != {"type"}):
        got = ", ".join(parser_type_name(a)
                        for a in args)
        extra = " * ()\n" if optional else ""
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n * (torch.dtype type)\n{extra}")
    if not args:
        if optional:
            return D.get_default_dtype()
        raise TypeError(f'{name}() missing 1 required positional arguments: "type"')
    t = args[0]
    if not isinstance(t, D.dtype):
        raise TypeError(f"{name}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{parser_type_name(t)}")
    return t


class _Info:
    """Read-only attributes, equal by dtype, unhashable (as PyTorch's)."""
    __slots__ = ()
    _fields = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'torch.{type(self).__name__}' objects is "
                             "not writable")

    def __eq__(self, other):
        return type(other) is type(self) and other.dtype == self.dtype

    def __hash__(self):
        raise TypeError(f"unhashable type: 'torch.{type(self).__name__}'")

    def __repr__(self):
        def g(v):
            return v if isinstance(v, str) else f"{float(v):g}"
        body = ", ".join(f"{k}={g(getattr(self, k))}" for k in self._fields)
        return f"{type(self).__name__}({body})"


class finfo(_Info):  # noqa: N801 - torch.finfo
    """``torch.finfo(dtype=default dtype)``: a floating dtype's bits, eps, max, min, tiny
    (= smallest_normal) and resolution (10 ** -floor(-log10(eps)))."""
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    _fields = ("resolution", "min", "max", "eps", "smallest_normal", "tiny", "dtype")

    def __init__(self, *args, **kwargs):
        t = _check_type("finfo", args, kwargs, optional=True)
        if not t.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        f = np.finfo(t.np)
        put = object.__setattr__
        put(self, "bits", int(f.bits))
        put(self, "eps", float(f.eps))
        put(self, "max", float(f.max))
        put(self, "min", float(f.min))
        put(self, "tiny", float(f.smallest_normal))
        put(self, "smallest_normal", float(f.smallest_normal))
        put(self, "resolution", float(f"1e-{int(math.floor(-math.log10(f.eps)))}"))
        put(self, "dtype", t.name)


class iinfo(_Info):  # noqa: N801 - torch.iinfo
    """``torch.iinfo(dtype)``: an integer dtype's bits, max and min (Python ints)."""
    __slots__ = ("bits", "max", "min", "dtype")
    _fields = ("min", "max", "dtype")

    def __init__(self, *args, **kwargs):
        t = _check_type("iinfo", args, kwargs, optional=False)
        if t is D.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if t.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        i = np.iinfo(t.np)
        put = object.__setattr__
        put(self, "bits", int(i.bits))
        put(self, "max", int(i.max))
        put(self, "min", int(i.min))
        put(self, "dtype", t.name)


finfo.__module__ = iinfo.__module__ = "jitgrad"
