"""The scalar vocabulary bound for Numba on the CPU.

Generated kernel modules do ``from jitgrad.backends.cpu_env import *``: every scalar body of the
registry is compiled against exactly these names (``registry.SCALAR_VOCABULARY``).
Transcendentals come from ``jitgrad.math`` (vectorizable polynomial versions).
"""
# ruff: noqa: F401 - this module exists to export names
import math
import os

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

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


def _rounding(name, npfn):
    """A rounding function that keeps float32/float64 (NumPy's ufunc, an LLVM intrinsic that
    vectorizes) and is the identity on integers and bools (``math.floor`` would return an int,
    ``np.floor`` a float64 for integer arguments)."""
    def stub(a):
        return npfn(a)
    stub.__name__ = stub.__qualname__ = name

    @overload(stub, inline="always")
    def _impl(a):
        if isinstance(a, types.Float):
            def impl(a):
                return npfn(a)
            return impl
        if isinstance(a, (types.Integer, types.Boolean)):
            def impl(a):
                return a
            return impl
    return stub


floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
rint = _rounding("rint", np.rint)  # round half to even (the default rounding mode)


def fmod(a, b):
    """C fmod: the remainder with the dividend's sign (Python fallback of the overload)."""
    return np.fmod(a, b)


@overload(fmod, inline="always")
def _fmod(a, b):
    if isinstance(a, types.Float) and isinstance(b, types.Float):
        def impl(a, b):
            return np.fmod(a, b)
        return impl
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        # not np.fmod: Numba computes it with an unsigned remainder (fmod(-5, 3) == 2).
        # C ``%`` from Python's ``%`` (sign of the divisor); a zero divisor gives 0 (NumPy
        # error model); the callers raise ZeroDivisionError before launching.
        def impl(a, b):
            r = a % b
            return r - b if (r != 0) & ((r < 0) != (a < 0)) else r
        return impl


# libm (float32 arguments call asinf ...): no vectorizable version in jitgrad.math
asin, acos, atan = math.asin, math.acos, math.atan
asinh, acosh, atanh, atan2, erfc = math.asinh, math.acosh, math.atanh, math.atan2, math.erfc


@numba.njit(inline="always")
def lshift(a, b):
    ok = (b >= 0) & (b < 64)
    # the count is clamped before shifting: an LLVM shift by >= 64 is poison
    return (numba.int64(a) << numba.int64(b if ok else 0)) if ok else numba.int64(0)


@numba.njit(inline="always")
def rshift(a, b):
    ok = (b >= 0) & (b < 64)
    return numba.int64(a) >> numba.int64(b if ok else 63)


@numba.njit(inline="always")
def gcd(a, b):
    """ATen's calc_gcd: Euclid's loop on the absolute values (a NaN, only in the float
    variants the registry-wide tests run, ends it)."""
    a = abs(a)
    b = abs(b)
    while (a != 0) & (a == a):
        c = a
        a = b % a
        b = c
    return b


nextafter = np.nextafter


@intrinsic
def _fma_float(typingctx, a, b, c):
    if isinstance(a, types.Float) and a == b and b == c:
        def codegen(context, builder, signature, args):
            return builder.fma(*args)  # llvm.fma: vectorizes, one rounding
        return a(a, b, c), codegen
    return None


def fma(a, b, c):
    """``a * b + c`` rounded once (floats of one type); plain on integers."""
    return a * b + c


@overload(fma, inline="always")
def _fma(a, b, c):
    if isinstance(a, types.Float) and a == b and b == c:
        def impl(a, b, c):
            return _fma_float(a, b, c)
        return impl

    def impl(a, b, c):
        return a * b + c
    return impl


# Transcendentals: jitgrad.math's vectorizable float32/float64 versions (JITGRAD_LIBM=1 makes
# them call libm instead; that switch lives in jitgrad.math).
_ns = _jm.CPU_NAMESPACE
exp, expm1, log, log1p = _ns["exp"], _ns["expm1"], _ns["log"], _ns["log1p"]
sqrt, sin, cos, tan = _ns["sqrt"], _ns["sin"], _ns["cos"], _ns["tan"]
tanh, erf, softplus = _ns["tanh"], _ns["erf"], _ns["softplus"]
# sigmoid: ATen's vector formula 1 / (SLEEF exp(-x) + 1), the bits torch.sigmoid gives (outside
# its scalar tails, docs/math.md "PyTorch's formulas"), not jitgrad.math's more accurate one
sigmoid = _ns["aten_sigmoid"]

# gamma/Bessel/normal-quantile functions with loops and branches: ATen's Math.h ported once in
# ops/special_scalar.py, bound here as njit functions over libm (backends/special_targets.py)
from .special_targets import cpu as _special_cpu  # noqa: E402 - needs the names above

_special = _special_cpu()
lgamma, digamma, polygamma, zeta = (_special[n] for n in ("lgamma", "digamma", "polygamma", "zeta"))
i0, i0e, i1, i1e, ndtri = (_special[n] for n in ("i0", "i0e", "i1", "i1e", "ndtri"))
erfcx, log_ndtr = _special["erfcx"], _special["log_ndtr"]
igamma, igammac = _special["igamma"], _special["igammac"]
# torch.special's Airy/Bessel functions and orthogonal polynomials (ops/special_bessel_scalar.py,
# ops/special_polynomial_scalar.py), one global each
from .special_targets import EXTRA_NAMES as _EXTRA  # noqa: E402

globals().update({name: _special[name] for name in _EXTRA})


def _fingerprint() -> str:
    """What the compiled kernels depend on besides their own source: this module, the math
    module's sources, the libm switch and Numba's version. Rendered into every generated kernel,
    so a change in any of them gives new cache keys (Numba's own cache cannot see changes in
    files a cached kernel calls into, numba issue 9483)."""
    import hashlib
    import pathlib
    h = hashlib.sha256(numba.__version__.encode())
    here = pathlib.Path(__file__).resolve()
    files = [here, here.parent / "special_targets.py",
             here.parent.parent / "ops" / "special_scalar.py",
             here.parent.parent / "ops" / "special_erfcx_table.py",
             here.parent.parent / "ops" / "special_igamma_scalar.py",
             here.parent.parent / "ops" / "special_igamma_table.py",
             here.parent.parent / "ops" / "special_bessel_scalar.py",
             here.parent.parent / "ops" / "special_polynomial_scalar.py"]
    files += sorted((here.parent.parent / "math").glob("*.py"))
    for f in files:
        h.update(f.read_bytes())
    h.update(repr(sorted(_ns)).encode())
    h.update(os.environ.get("JITGRAD_LIBM", "").encode())
    return h.hexdigest()[:16]


FINGERPRINT = _fingerprint()

__all__ = ["math", "numba", "lit", "select", "isnan", "pow_", "exp", "expm1", "log",
           "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf", "sigmoid", "softplus", "floor",
           "ceil", "trunc", "rint", "fmod", "asin", "acos", "atan", "asinh", "acosh", "atanh",
           "atan2", "erfc", "lshift", "rshift", "gcd", "nextafter", "fma",
           "lgamma", "digamma", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri",
           "erfcx", "log_ndtr", "igamma", "igammac", *_EXTRA]
