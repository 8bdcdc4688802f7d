"""The scalar vocabulary bound for Numba on the CPU.

Generated kernel modules do ``from jitgrad.backends.cpu_env import *``: every scalar body of the
registry is compiled against exactly these names. Transcendentals come from ``jitgrad.math``
(vectorizable polynomial versions) when it is present, else from libm through ``math``.
"""
# ruff: noqa: F401 - this module exists to export names
import math
import os

import numba
from numba import types
from numba.extending import overload

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


@numba.njit(inline="always")
def copysign(a, b):
    return math.copysign(a, b)


def _math_namespace():
    try:
        from .. import math as jm  # vectorizable float32/float64 implementations
        ns = dict(getattr(jm, "CPU_NAMESPACE", {}))
    except ImportError:
        ns = {}
    return ns


_ns = _math_namespace()
exp = _ns.get("exp", math.exp)
expm1 = _ns.get("expm1", math.expm1)
log = _ns.get("log", math.log)
log1p = _ns.get("log1p", math.log1p)
sqrt = _ns.get("sqrt", math.sqrt)
sin = _ns.get("sin", math.sin)
cos = _ns.get("cos", math.cos)
tan = _ns.get("tan", math.tan)
tanh = _ns.get("tanh", math.tanh)
erf = _ns.get("erf", math.erf)
floor = math.floor

if "sigmoid" in _ns:
    sigmoid = _ns["sigmoid"]
else:
    @numba.njit(inline="always")
    def sigmoid(a):
        return type(a)(1.0) / (type(a)(1.0) + math.exp(-a))

if "softplus" in _ns:
    softplus = _ns["softplus"]
else:
    @numba.njit(inline="always")
    def softplus(a):
        return math.log1p(math.exp(a))

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

__all__ = ["math", "numba", "lit", "select", "isnan", "pow_", "copysign", "exp", "expm1", "log",
           "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf", "floor", "sigmoid", "softplus"]
