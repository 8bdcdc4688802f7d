"""PyTorch's argument-parser wording for the signature errors Python raises itself.

A call missing a required argument is a TypeError in both libraries, worded differently:
Python says ``cumsum() missing 1 required positional argument: 'dim'``, PyTorch's parser
``cumsum() missing 1 required positional arguments: "dim"`` (and ``transpose() missing 2
required positional argument: "dim0", "dim1"``). ``parser_errors`` rewords the
errors raised while binding the call (never those raised inside the op)."""
from __future__ import annotations

import functools
import re

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
