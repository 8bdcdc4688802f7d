"""The scalar vocabulary bound for numba.cuda device code (see ``registry.SCALAR_VOCABULARY``).

Generated CUDA kernel modules do ``from jitgrad.backends.cuda_env import *``: every scalar body of
the registry is compiled against exactly these names, as ``cpu_env`` does for the CPU.

* On a real target (a GPU, or no GPU but compiling to PTX) the helpers are
  ``cuda.jit(device=True, forceinline=True)`` device functions, ``lit`` is an overload registered
  with numba-cuda's own extension API (``numba.cuda.extending.overload``: numba-cuda keeps its
  own typing registry, so ``numba.extending.overload`` on the CPU stub does not reach it), and
  the transcendentals are ``math.*``, which numba-cuda lowers to libdevice (``__nv_expf`` for
  float32, ``__nv_exp`` for float64). Float32 code therefore stays float32 (no ``.f64``).
* Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) every thread runs in Python: the helpers
  are plain Python functions on NumPy scalars that keep the operand's dtype (``np.exp`` on a
  float32 scalar stays float32, ``lit`` returns ``type(like)(v)``), so the simulator computes in
  the same precision as the device would.
* Rounding (``floor``/``ceil``/``trunc``/``rint``) is libdevice's on floats and the identity on
  integers; ``fmod`` is libdevice's on floats and C ``%`` on integers (0 for a zero divisor: a
  kernel cannot raise, so integer division by zero is not detected on the device).

Importing this module imports ``numba.cuda``: only ``jitgrad.backends.cuda`` and generated CUDA
modules do, never ``import jitgrad``.
"""
# ruff: noqa: F401 - this module exists to export names
from __future__ import annotations

import math

import numpy as np

from .numba_cuda_compat import import_numba_cuda

cuda = import_numba_cuda()  # numba.cuda, working on NumPy >= 2.5 too (see that module)


def _simulator_active() -> bool:
    try:
        from numba.cuda.core import config
    except ImportError:  # older numba-cuda
        from numba.core import config
    return bool(config.ENABLE_CUDASIM)


SIMULATOR = _simulator_active()

if not SIMULATOR:
    from numba import int64 as _nb_int64
    from numba.cuda import types as _types
    from numba.cuda.extending import overload as _overload

    def device_jit(fn):
        """Decorator of generated scalar functions: an always-inlined device function."""
        return cuda.jit(device=True, forceinline=True)(fn)

    def kernel_jit(fn, cache=False):
        return cuda.jit(cache=cache)(fn)

    def lit(like, v):
        """The constant ``v`` in ``like``'s type (Python fallback; device code uses the
        overload below)."""
        return v

    @_overload(lit, inline="always")
    def _lit(like, v):
        if isinstance(like, (_types.Float, _types.Integer)):
            ty = like

            def impl(like, v):
                return ty(v)
            return impl
        if isinstance(like, _types.Boolean):
            def impl(like, v):
                return v
            return impl
        return None

    @device_jit
    def select(c, a, b):
        return a if c else b

    @device_jit
    def isnan(a):
        return a != a

    @device_jit
    def pow_(a, b):
        return a ** b

    exp = math.exp
    expm1 = math.expm1
    log = math.log
    log1p = math.log1p
    sqrt = math.sqrt
    sin = math.sin
    cos = math.cos
    tan = math.tan
    tanh = math.tanh
    erf = math.erf

    def _rounding(name, libfn32, libfn64):
        """float32 -> ``libfn32`` (libdevice ``floorf`` ...), float64 -> ``libfn64``; the
        identity on integers and bools (``math.floor`` of an int64 is a float64 here)."""
        def stub(a):
            return a
        stub.__name__ = stub.__qualname__ = name

        @_overload(stub, inline="always")
        def _impl(a):
            if isinstance(a, _types.Float):
                fn = libfn32 if a.bitwidth == 32 else libfn64

                def impl(a):
                    return fn(a)
                return impl
            if isinstance(a, (_types.Integer, _types.Boolean)):
                def impl(a):
                    return a
                return impl
            return None
        return stub

    from numba.cuda import libdevice as _ld

    floor = _rounding("floor", _ld.floorf, _ld.floor)
    ceil = _rounding("ceil", _ld.ceilf, _ld.ceil)
    trunc = _rounding("trunc", _ld.truncf, _ld.trunc)
    rint = _rounding("rint", _ld.rintf, _ld.rint)  # round half to even

    def fmod(a, b):
        """C fmod (Python fallback; device code uses the overload below)."""
        return math.fmod(a, b)

    @_overload(fmod, inline="always")
    def _fmod(a, b):
        if isinstance(a, _types.Float) and isinstance(b, _types.Float):
            def impl(a, b):
                return math.fmod(a, b)  # libdevice fmodf / fmod: exact
            return impl
        if isinstance(a, _types.Integer) and isinstance(b, _types.Integer):
            def impl(a, b):
                # C ``%`` (sign of the dividend) from Python's ``%`` (sign of the divisor);
                # a zero divisor gives 0 (numba's NumPy error model), as on the CPU
                r = a % b
                return r - b if (r != 0) & ((r < 0) != (a < 0)) else r
            return impl
        return None

    asin = math.asin
    acos = math.acos
    atan = math.atan
    asinh = math.asinh
    acosh = math.acosh
    atanh = math.atanh
    atan2 = math.atan2
    erfc = math.erfc

    def fma(a, b, c):
        """``a * b + c`` rounded once (Python fallback; device code uses the overload)."""
        return a * b + c

    @_overload(fma, inline="always")
    def _fma(a, b, c):
        if isinstance(a, _types.Float) and a == b and b == c:
            def impl(a, b, c):
                return cuda.fma(a, b, c)
            return impl

        def impl(a, b, c):
            return a * b + c
        return impl

    @device_jit
    def lshift(a, b):
        ok = (b >= 0) & (b < 64)
        # the count is clamped before shifting: a shift by >= 64 is undefined
        return (_nb_int64(a) << _nb_int64(b if ok else 0)) if ok else _nb_int64(0)

    @device_jit
    def rshift(a, b):
        ok = (b >= 0) & (b < 64)
        return _nb_int64(a) >> _nb_int64(b if ok else 63)

    @device_jit
    def gcd(a, b):
        # ATen's calc_gcd: Euclid's loop on the absolute values
        a = abs(a)
        b = abs(b)
        while (a != lit(a, 0)) & (a == a):  # a NaN (float variants only) ends it
            c = a
            a = b % a
            b = c
        return b

    def nextafter(a, b):
        """C's nextafter (Python fallback; device code uses the overload: libdevice)."""
        return np.nextafter(a, b)

    @_overload(nextafter, inline="always")
    def _nextafter(a, b):
        from numba.cuda import libdevice
        if a == _types.float32 and b == _types.float32:
            def impl(a, b):
                return libdevice.nextafterf(a, b)
            return impl

        def impl(a, b):
            return libdevice.nextafter(a, b)
        return impl

    @device_jit
    def sigmoid(a):
        return lit(a, 1.0) / (lit(a, 1.0) + math.exp(-a))

    # gamma/Bessel/ndtri (ops/special_scalar.py): device functions over libdevice
    from .special_targets import cuda as _special_targets
    _special = _special_targets(globals())

    @device_jit
    def softplus(a):
        return math.log1p(math.exp(a))

else:
    def device_jit(fn):
        # Under the simulator a scalar function is called directly from the thread's Python
        # frame: wrapping it in a FakeCUDAKernel would only add per-call overhead.
        return fn

    def kernel_jit(fn, cache=False):
        return cuda.jit(fn)

    def lit(like, v):
        if isinstance(like, (np.bool_, bool)):
            return v
        if isinstance(like, np.integer) and isinstance(v, int):
            # an integer cast wraps on the device (uint8(-1) is 255); NumPy 2 refuses it
            return np.int64(v).astype(type(like))
        if isinstance(like, np.generic):
            return type(like)(v)
        return v

    def select(c, a, b):
        return a if c else b

    def isnan(a):
        return a != a

    def _quiet(npfn):
        def f(*args):
            with np.errstate(all="ignore"):
                return npfn(*args)
        f.__name__ = npfn.__name__
        return f

    def _pow(a, b):
        return a ** b

    pow_ = _quiet(_pow)
    exp = _quiet(np.exp)
    expm1 = _quiet(np.expm1)
    log = _quiet(np.log)
    log1p = _quiet(np.log1p)
    sqrt = _quiet(np.sqrt)
    sin = _quiet(np.sin)
    cos = _quiet(np.cos)
    tan = _quiet(np.tan)
    tanh = _quiet(np.tanh)

    def _erf_scalar(a):
        # NumPy has no erf; math.erf is correctly rounded in float64, then cast back
        return type(a)(math.erf(a)) if isinstance(a, np.generic) else math.erf(a)

    erf = _erf_scalar

    def _sim_rounding(npfn):
        def f(a):
            if isinstance(a, (np.floating, float)):
                return npfn(a)  # keeps float32
            return a  # identity on integers and bools
        f.__name__ = npfn.__name__
        return f

    floor = _sim_rounding(np.floor)
    ceil = _sim_rounding(np.ceil)
    trunc = _sim_rounding(np.trunc)
    rint = _sim_rounding(np.rint)
    fmod = _quiet(np.fmod)  # integers: C % and 0 for a zero divisor, as the device
    asin = _quiet(np.arcsin)
    acos = _quiet(np.arccos)
    atan = _quiet(np.arctan)
    asinh = _quiet(np.arcsinh)
    acosh = _quiet(np.arccosh)
    atanh = _quiet(np.arctanh)
    atan2 = _quiet(np.arctan2)

    def erfc(a):
        # NumPy has no erfc; math.erfc in float64, cast back to the operand's precision
        return type(a)(math.erfc(a)) if isinstance(a, np.generic) else math.erfc(a)

    def fma(a, b, c):
        # one rounding, as cuda.fma: exact in rationals, then rounded to the operand's type
        # (float32 through float64 first: a double rounding, off by an ulp in rare ties)
        if isinstance(a, (np.floating, float)) and np.isfinite(a * b + c):
            from fractions import Fraction
            exact = float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
            return type(a)(exact) if isinstance(a, np.generic) else exact
        with np.errstate(all="ignore"):
            return a * b + c

    # computed in int64, then narrowed to the operand's dtype as the device's store truncates
    # (the simulator's NumPy stores refuse an out-of-range value instead of wrapping it)
    def lshift(a, b):
        ok = (b >= 0) & (b < 64)
        r = np.int64(a) << np.int64(b if ok else 0) if ok else np.int64(0)
        return r.astype(a.dtype) if isinstance(a, np.integer) else r

    def rshift(a, b):
        ok = (b >= 0) & (b < 64)
        r = np.int64(a) >> np.int64(b if ok else 63)
        return r.astype(a.dtype) if isinstance(a, np.integer) else r

    def gcd(a, b):
        # ATen's calc_gcd on the operands' NumPy scalars (unsigned: abs is the identity)
        with np.errstate(all="ignore"):
            a = abs(a)
            b = abs(b)
            while (a != 0) & (a == a):  # a NaN (float variants only) ends it
                a, b = b % a, a
            return b

    nextafter = np.nextafter  # keeps a float32 scalar float32

    def sigmoid(a):
        return lit(a, 1.0) / (lit(a, 1.0) + exp(-a))

    def softplus(a):
        return log1p(exp(a))

    from .special_targets import simulator as _special_targets
    _special = _special_targets(globals())

# lgamma (libdevice / libm) and ops/special_scalar's functions, for this target
lgamma, digamma, polygamma, zeta = (_special[n] for n in ("lgamma", "digamma", "polygamma", "zeta"))
i0, i0e, i1, i1e, ndtri = (_special[n] for n in ("i0", "i0e", "i1", "i1e", "ndtri"))
erfcx, log_ndtr = _special["erfcx"], _special["log_ndtr"]
igamma, igammac = _special["igamma"], _special["igammac"]
# torch.special's Airy/Bessel functions and orthogonal polynomials, one global each
from .special_targets import EXTRA_NAMES as _EXTRA  # noqa: E402

globals().update({name: _special[name] for name in _EXTRA})

__all__ = ["math", "cuda", "lit", "select", "isnan", "pow_", "exp", "expm1", "log",
           "log1p", "sqrt", "sin", "cos", "tan", "tanh", "erf", "sigmoid", "softplus",
           "floor", "ceil", "trunc", "rint", "fmod", "asin", "acos", "atan",
           "asinh", "acosh", "atanh", "atan2", "erfc", "lshift", "rshift", "fma",
           "gcd", "nextafter",
           "lgamma", "digamma", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri",
           "erfcx", "log_ndtr", "igamma", "igammac", *_EXTRA,
           "device_jit", "kernel_jit", "SIMULATOR"]
