"""Vectorizable float32/float64 transcendental functions for Numba kernels.

Numba ships without SVML, so ``math.exp``/``math.tanh`` in an ``njit`` loop are
scalar libm calls that LLVM cannot vectorize.  The functions here are written
in plain branch-free arithmetic (range reduction + minimax polynomials, selects
instead of branches), so a loop calling them vectorizes::

    from numba import njit
    from jitgrad.math import exp, tanh

    @njit
    def kernel(x, out):
        for i in range(x.size):
            out[i] = tanh(x[i]) * exp(x[i])

Each name is a plain Python function (called from Python it evaluates with
NumPy/SciPy and returns a NumPy scalar) with a ``numba.extending.overload``
that picks the float32 or float64 implementation by the argument's Numba type
(integers are converted to float64, like NumPy).  The float32 versions do all
their arithmetic in float32.

Public API: ``exp, expm1, log, log1p, tanh, sigmoid, softplus, sin, cos, tan,
erf, sqrt``, PyTorch's own formulas ``sleef_exp``, ``sleef_expm1`` and ``aten_sigmoid``
(bit-identical to ATen's SLEEF vector lanes, ``_sleef.py``) and ``CPU_NAMESPACE`` (name ->
function, for generated kernel source).  ``JITGRAD_LIBM=1`` in the environment at import
time makes every function call libm (``math.*``) instead, for debugging.  See docs/math.md for
accuracy and speed figures.
"""
import math as _math

import numpy as _np
from numba import types as _types
from numba.extending import overload as _overload

from . import _f32, _f64, _libm, _sleef
from ._config import FASTMATH, JIT_OPTIONS, USE_LIBM

__all__ = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos", "tan",
           "erf", "sqrt", "sleef_exp", "sleef_expm1", "sleef_log1p", "sleef_tanh", "aten_sigmoid",
           "CPU_NAMESPACE",
           "FASTMATH", "USE_LIBM", "FUNCTIONS"]

#: Names of the vectorized functions (``sqrt`` is LLVM's own, already vectorizable).
FUNCTIONS = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos", "tan",
             "erf")


def _as_np(x):
    """NumPy float scalar/array for a Python-side call (float64 unless already floating)."""
    if isinstance(x, (_np.floating, _np.ndarray)) and _np.asarray(x).dtype.kind == "f":
        return x
    return _np.float64(x) if _np.ndim(x) == 0 else _np.asarray(x, dtype=_np.float64)


def _scalar(r):
    return r[()] if isinstance(r, _np.ndarray) and r.ndim == 0 else r


# ---- Python-level stubs (what Numba overloads) ----------------------------------------

def exp(x):
    """e**x."""
    return _np.exp(_as_np(x))


def expm1(x):
    """e**x - 1, accurate near 0."""
    return _np.expm1(_as_np(x))


def log(x):
    """Natural logarithm (log(0) = -inf, log(x<0) = nan)."""
    return _np.log(_as_np(x))


def log1p(x):
    """log(1 + x), accurate near 0."""
    return _np.log1p(_as_np(x))


def tanh(x):
    """Hyperbolic tangent."""
    return _np.tanh(_as_np(x))


def sigmoid(x):
    """Logistic function 1 / (1 + exp(-x)) (scipy.special.expit)."""
    x = _as_np(x)
    one = _np.asarray(x).dtype.type(1)
    with _np.errstate(over="ignore"):
        e = _np.exp(-_np.abs(x))
    return _scalar(_np.where(x >= 0, one, e) / (one + e))


def softplus(x):
    """log(1 + exp(x)) (= numpy.logaddexp(0, x))."""
    x = _as_np(x)
    return _np.logaddexp(_np.asarray(x).dtype.type(0), x)


def sin(x):
    """Sine (arguments of any magnitude are reduced exactly)."""
    return _np.sin(_as_np(x))


def cos(x):
    """Cosine."""
    return _np.cos(_as_np(x))


def tan(x):
    """Tangent."""
    return _np.tan(_as_np(x))


def erf(x):
    """Error function (for the exact GELU)."""
    x = _as_np(x)
    try:
        from scipy.special import erf as _erf
    except ImportError:                                        # pragma: no cover
        _erf = _np.vectorize(_math.erf, otypes=[_np.float64])
    return _scalar(_np.asarray(_erf(x)).astype(_np.asarray(x).dtype))


def sqrt(x):
    """Square root (LLVM's sqrt instruction; vectorizes on its own)."""
    return _np.sqrt(_as_np(x))


def _elementwise_jit(x, impl32, impl64):
    """Evaluate a jitted implementation from Python (these have no NumPy equivalent)."""
    x = _as_np(x)
    dt = _np.asarray(x).dtype
    impl = impl32 if dt == _np.float32 else impl64
    out = _np.array([impl(v) for v in _np.ravel(x)], dtype=dt).reshape(_np.shape(x))
    return out if out.ndim else out[()]


def sleef_exp(x):
    """e**x as SLEEF's u10 ``expf``/``exp`` (FMA build): the bits of PyTorch's vector lanes."""
    return _elementwise_jit(x, _sleef.exp_u10_f32, _sleef.exp_u10_f64)


def sleef_expm1(x):
    """e**x - 1 as SLEEF's u10 ``expm1f``/``expm1``: torch.expm1's bits; ~3x the cost of
    ``expm1`` (double-float arithmetic), so the CPU kernels keep ``expm1``."""
    return _elementwise_jit(x, _sleef.expm1_u10_f32, _sleef.expm1_u10_f64)


def sleef_log1p(x):
    """log(1 + x) as SLEEF's u10 ``log1pf``/``log1p`` (AVX-512 build): ATen's
    ``Vectorized::log1p`` (softplus, log_sigmoid, mish)."""
    return _elementwise_jit(x, _sleef.log1p_u10_f32, _sleef.log1p_u10_f64)


def sleef_tanh(x):
    """tanh as SLEEF's u10 ``tanhf``/``tanh``: ATen's ``Vectorized::tanh`` (gelu's tanh
    approximation, mish); torch.tanh itself is not this one (MKL)."""
    return _elementwise_jit(x, _sleef.tanh_u10_f32, _sleef.tanh_u10_f64)


def aten_sigmoid(x):
    """ATen's vectorized sigmoid, ``1 / (sleef_exp(-x) + 1)`` (0 below ~-88.7 / -709.8)."""
    return _elementwise_jit(x, _sleef.sigmoid_aten_f32, _sleef.sigmoid_aten_f64)


# ---- Numba overloads --------------------------------------------------------------------

def _register(stub, impl32, impl64):
    # CPU only: on the GPU, math.* compiles to libdevice, which is already fast and accurate
    @_overload(stub, jit_options=JIT_OPTIONS, target="cpu")
    def _ov(x):
        if x == _types.float32:
            return lambda x: impl32(x)
        if x == _types.float64:
            return lambda x: impl64(x)
        if isinstance(x, (_types.Integer, _types.Boolean)):
            return lambda x: impl64(_np.float64(x))
        return None
    return _ov


for _name in FUNCTIONS:
    if USE_LIBM:
        _i32, _i64 = getattr(_libm, _name + "32"), getattr(_libm, _name + "64")
    else:
        _i32, _i64 = getattr(_f32, _name), getattr(_f64, _name)
    _register(globals()[_name], _i32, _i64)
_register(sqrt, _libm.sqrt32, _libm.sqrt64)
if USE_LIBM:    # libm mode: ATen's scalar formula 1 / (1 + exp(-x)) (its tail elements)
    _register(sleef_exp, _libm.exp32, _libm.exp64)
    _register(sleef_expm1, _libm.expm132, _libm.expm164)
    _register(aten_sigmoid, _libm.aten_sigmoid32, _libm.aten_sigmoid64)
else:
    _register(sleef_exp, _sleef.exp_u10_f32, _sleef.exp_u10_f64)
    _register(sleef_expm1, _sleef.expm1_u10_f32, _sleef.expm1_u10_f64)
    _register(aten_sigmoid, _sleef.sigmoid_aten_f32, _sleef.sigmoid_aten_f64)
_register(sleef_log1p, _sleef.log1p_u10_f32, _sleef.log1p_u10_f64)
_register(sleef_tanh, _sleef.tanh_u10_f32, _sleef.tanh_u10_f64)

#: name -> jit-callable function, for kernel source generated as
#: ``from jitgrad.math import exp, tanh``.
CPU_NAMESPACE = {name: globals()[name]
                 for name in FUNCTIONS + ("sqrt", "sleef_exp", "aten_sigmoid")}

del _name, _i32, _i64
