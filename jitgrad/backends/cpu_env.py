"""The scalar vocabulary bound for Numba on the CPU.

Generated kernel modules do ``from jitgrad.backends.cpu_env import *``: every scalar body of the
registry is compiled against exactly these names (``registry.SCALAR_VOCABULARY``).
Transcendentals come from ``jitgrad.math`` (vectorizable polynomial versions).
"""
# ruff: noqa: F401 - this module exists to export names
import math
import os

import numba
from numba import types
from numba.extending import overload

from .. import math as _jm
from ..ops import scalar_stubs as _stubs


@overload(_stubs.lit, inline="always")
def _lit(like, v):
    # A constant of ``like``'s type: keeps float32 math in float32 (a bare literal promotes it).
    if isinstance(like, types.Float):
        ty = like

        def impl(like, v):
            return ty(v)
        return impl
    if isinstance(like, types.Integer):
        ty = like

        def impl(like, v):
            return ty(v)
        return impl
    if isinstance(like, types.Boolean):
        def impl(like, v):
            return v
        return impl


lit = _stubs.lit


@numba.njit(inline="always")
def select(c, a, b):
    return a if c else b


@numba.njit(inline="always")
def isnan(a):
    return a != a


@numba.njit(inline="always")
def pow_(a, b):
    return a ** b


# Transcendentals: jitgrad.math's vectorizable float32/float64 versions (JITGRAD_LIBM=1 makes
# them call libm instead; that switch lives in jitgrad.math).
_ns = _jm.CPU_NAMESPACE
exp, expm1, log, log1p = _ns["exp"], _ns["expm1"], _ns["log"], _ns["log1p"]
sqrt, sin, cos, tan = _ns["sqrt"], _ns["sin"], _ns["cos"], _ns["tan"]
tanh, erf, sigmoid, softplus = _ns["tanh"], _ns["erf"], _ns["sigmoid"], _ns["softplus"]


def _fingerprint() -> str:
    """What the compiled kernels depend on besides their own source: this module, the math
    module's sources, the libm switch and Numba's version. Rendered into every generated kernel,
    so a change in any of them gives new cache keys (Numba's own cache cannot see changes in
    files a cached kernel calls into, numba issue 9483)."""
    import hashlib
    import pathlib
    h = hashlib.sha256(numba.__version__.encode())
    here = pathlib.Path(__file__).resolve()
    files = [here] + sorted((here.parent.parent / "math").glob("*.py"))
    for f in files:
        h.update(f.read_bytes())
    h.update(repr(sorted(_ns)).encode())
    h.update(os.environ.get("JITGRAD_LIBM", "").encode())
    return h.hexdigest()[:16]


FINGERPRINT = _fingerprint()

__all__ = ["math", "numba", "lit", "select", "isnan", "pow_", "exp", "expm1", "log",
           "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf", "sigmoid", "softplus"]
