"""``ops/special_scalar``'s gamma/Bessel/ndtri kernels and ``ops/special_igamma_scalar``'s
incomplete gamma bound for each target, plus ``lgamma``.

* ``cpu()``: ``numba.njit`` functions over libm (``math.exp`` of a float32 is ``expf``, as
  ATen's scalar code), ``wide`` = float64 (ATen's CPU accumulate type of float in ``zeta``, and
  digamma's ``pi / tan(pi r)``, which PyTorch computes in double for float too).
* ``cuda(env)``: device functions over libdevice (``math.*``), ``wide`` = the identity (float32
  stays float32 on the device: PyTorch's CUDA accumulate type of float is float).
* ``simulator(env)`` / ``python()``: plain Python on NumPy scalars that keep their dtype (the CUDA
  simulator; the Python-scalar fallbacks of ``ops/tensor_env``).
"""
from __future__ import annotations

import math

import numpy as np

from ..ops import (
    special_bessel_scalar,
    special_igamma_scalar,
    special_polynomial_scalar,
    special_scalar,
)
from ..ops.special_erfcx_table import ERFCX_Y100 as _ERFCX
from ..ops.special_erfcx_table import ERFCX_Y100_F32 as _ERFCX_F32
from ..ops.special_igamma_table import IGAM_D as _IGAM_D
from ..ops.special_igamma_table import IGAM_D_F32 as _IGAM_D_F32

__all__ = ["cpu", "cuda", "simulator", "python", "NAMES"]

NAMES = ("lgamma",) + special_scalar.NAMES + special_igamma_scalar.NAMES
#: torch.special's Airy/Bessel functions and orthogonal polynomials
EXTRA_NAMES = special_bessel_scalar.NAMES + special_polynomial_scalar.NAMES
NAMES += EXTRA_NAMES


def _bind(env, jit, igamma_jit=None):
    """``igamma_jit`` (default ``jit``) compiles the incomplete gamma, Bessel and polynomial
    ports."""
    out = special_scalar.bind(env, jit)
    strict = igamma_jit or jit
    out.update(special_igamma_scalar.bind(env, strict))
    # the K functions call modified_bessel_i0_forward, which is calc_i0 bit for bit
    out.update(special_bessel_scalar.bind(dict(env, i0=out["i0"]), strict))
    out.update(special_polynomial_scalar.bind(env, strict))
    return out


def _single_py(x):
    return isinstance(x, (np.float32, np.float16))


def _lgamma_py(x):
    """libm's lgamma on a NumPy scalar: +inf at the poles (Python's math.lgamma raises there)."""
    v = float(x)
    if v != v or v in (math.inf, -math.inf):
        r = abs(v)
    else:
        try:
            r = math.lgamma(v)
        except (ValueError, OverflowError):
            r = math.inf
    return type(x)(r) if isinstance(x, np.generic) else r


def _fma_py(a, b, c):
    """``a * b + c`` rounded once: exact through float64 for float32 (a product of two floats
    is exact there; the sum can round twice, off by an ulp in rare ties), plain in float64."""
    if isinstance(a, (np.float32, np.float16)):
        return type(a)(np.float64(a) * np.float64(b) + np.float64(c))
    return a * b + c


def cpu() -> dict:
    import numba
    from numba import types
    from numba.extending import intrinsic, overload

    from . import cpu_env as E

    def single(x):
        return _single_py(x)

    @overload(single, inline="always")
    def _single(x):
        value = isinstance(x, types.Float) and x.bitwidth <= 32
        return lambda x: value

    def wide(x):
        return np.float64(x)

    @intrinsic
    def _fma_float(typingctx, a, b, c):
        if isinstance(a, types.Float) and a == b and b == c:
            def codegen(context, builder, signature, args):
                return builder.fma(*args)  # llvm.fma: one rounding
            return a(a, b, c), codegen
        return None

    def fma(a, b, c):
        return _fma_py(a, b, c)

    @overload(fma, inline="always")
    def _fma(a, b, c):
        return lambda a, b, c: _fma_float(a, b, c)

    @overload(wide, inline="always")
    def _wide(x):
        return lambda x: numba.float64(x)

    @numba.njit(inline="always")
    def erfcx_coeff(like, k, j):
        return _ERFCX[k, j]  # float64: the CPU evaluates erfcx_y100 in double (wide)

    @numba.njit(inline="always")
    def igam_coeff(like, k, n):
        return _IGAM_D[k, n]  # rounded to the operand's type by the caller's lit

    env = {"erfcx_coeff": erfcx_coeff, "igam_coeff": igam_coeff, "expm1": math.expm1,
           "log1p": math.log1p, "erfc": math.erfc,
           "fma": fma, "lit": E.lit, "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
           "sin": math.sin, "tan": math.tan, "pow_": E.pow_, "lgamma": math.lgamma,
           "trunc": E.trunc, "floor": E.floor, "wide": wide, "single": single,
           "cos": math.cos, "acos": math.acos, "f64": wide}
    # fastmath=False, set explicitly for every port: a callee left unset inherits its first
    # caller's flags (Numba's inherit_if_not_set), so under a kernel's "contract" LLVM would fuse
    # products that PyTorch's build leaves rounded (log_ndtr's, calc_igamma's), with results
    # depending on which caller compiled a function first; the fmas GCC does form are written out
    strict = numba.njit(error_model="numpy", fastmath=False)
    out = _bind(env, strict, strict)
    # libm's lgamma / lgammaf; ATen's vectorized CPU lgamma is SLEEF's (within 1 ulp of
    # each other's exact value: the two differ by up to a few ulps)
    out["lgamma"] = math.lgamma
    return out


def cuda(env: dict) -> dict:
    """``env``: cuda_env's globals on a real target (its ``lit``, ``pow_``, rounding, jit)."""
    from numba.cuda import types as _types
    from numba.cuda.extending import overload as _overload

    device_jit = env["device_jit"]
    cuda = env["cuda"]

    def single(x):
        return _single_py(x)

    @_overload(single, inline="always")
    def _single(x):
        value = isinstance(x, _types.Float) and x.bitwidth <= 32
        return lambda x: value

    @device_jit
    def wide(x):
        return x

    @device_jit
    def fma(a, b, c):
        return cuda.fma(a, b, c)

    @device_jit
    def f64(x):  # a C double on the device too (modified_bessel_k0's 0.5 * x)
        return _types.float64(x)

    def erfcx_coeff(like, k, j):
        return _ERFCX[k, j]

    @_overload(erfcx_coeff, inline="always")
    def _erfcx_coeff(like, k, j):
        table = _ERFCX_F32 if like.bitwidth <= 32 else _ERFCX  # a constant array per type
        return lambda like, k, j: table[k, j]

    def igam_coeff(like, k, n):
        return _IGAM_D[k, n]

    @_overload(igam_coeff, inline="always")
    def _igam_coeff(like, k, n):
        table = _IGAM_D_F32 if like.bitwidth <= 32 else _IGAM_D
        return lambda like, k, n: table[k, n]

    names = {"erfcx_coeff": erfcx_coeff, "igam_coeff": igam_coeff, "expm1": math.expm1,
             "log1p": math.log1p, "erfc": math.erfc,
             "fma": fma, "lit": env["lit"], "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
             "sin": math.sin, "tan": math.tan, "pow_": env["pow_"], "lgamma": math.lgamma,
             "trunc": env["trunc"], "floor": env["floor"], "wide": wide, "single": single,
             "cos": math.cos, "acos": math.acos, "f64": f64}
    out = _bind(names, device_jit)
    out["lgamma"] = math.lgamma  # libdevice lgammaf / lgamma
    return out


def _quiet(fn):
    def f(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    f.__name__ = f.__qualname__ = fn.__name__
    return f


def _numpy_env(lit, floor, trunc):
    q = _quiet
    def erfcx_coeff(like, k, j):
        return lit(like, _ERFCX[k, j])

    def erfc(a):  # NumPy has none: math.erfc in float64, in the operand's type
        return type(a)(math.erfc(a)) if isinstance(a, np.generic) else math.erfc(a)

    def igam_coeff(like, k, n):
        return lit(like, _IGAM_D[k, n])

    return {"erfcx_coeff": erfcx_coeff, "igam_coeff": igam_coeff, "expm1": q(np.expm1),
            "log1p": q(np.log1p), "erfc": erfc,
            "fma": q(_fma_py), "lit": lit, "exp": q(np.exp), "log": q(np.log),
            "sqrt": q(np.sqrt), "sin": q(np.sin), "tan": q(np.tan), "pow_": q(lambda a, b: a ** b),
            "lgamma": _lgamma_py, "trunc": trunc, "floor": floor, "wide": lambda x: x,
            "single": _single_py, "cos": q(np.cos), "acos": q(np.arccos), "f64": np.float64}


def simulator(env: dict) -> dict:
    """``env``: cuda_env's globals under the simulator (NumPy-scalar ``lit`` and rounding)."""
    out = _bind(_numpy_env(env["lit"], env["floor"], env["trunc"]), lambda f: f)
    out = {name: _quiet(fn) for name, fn in out.items()}
    out["lgamma"] = _lgamma_py
    return out


def _py_lit(like, v):
    return type(like)(v) if isinstance(like, np.generic) else v


def python() -> dict:
    """The same functions on Python/NumPy scalars (float64 for Python numbers)."""
    out = _bind(_numpy_env(_py_lit, _quiet(np.floor), _quiet(np.trunc)), lambda f: f)
    out["lgamma"] = _lgamma_py

    def scalar(fn):
        def g(*args):
            with np.errstate(all="ignore"):
                return float(fn(*(np.float64(a) for a in args)))
        g.__name__ = fn.__name__
        return g
    return {name: scalar(fn) for name, fn in out.items()}
