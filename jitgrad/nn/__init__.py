"""``jitgrad.nn``: modules, parameters, ``functional``, ``init`` and ``utils`` with PyTorch's
names."""
from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional",
           "init", "utils", *_modules_all]
