"""libm-backed versions (``JITGRAD_LIBM=1``): straightforward ``math.*`` calls.

Scalar libm calls: these loops do not vectorize.  Meant for debugging
(comparing against the polynomial versions), not for speed.
"""
import math

import numpy as np
from numba import njit

from ._config import JIT_OPTIONS


def _make(F, sfx):
    ZERO, ONE = F(0), F(1)

    @njit(**JIT_OPTIONS)
    def sigmoid(x):
        e = math.exp(-abs(x))
        return (ONE if x >= ZERO else e) / (ONE + e)

    @njit(**JIT_OPTIONS)
    def aten_sigmoid(x):
        return ONE / (ONE + math.exp(-x))

    @njit(**JIT_OPTIONS)
    def softplus(x):
        m = x if x > ZERO else ZERO
        return m + math.log1p(math.exp(-abs(x)))

    fns = {
        "exp": njit(**JIT_OPTIONS)(lambda x: math.exp(x)),
        "expm1": njit(**JIT_OPTIONS)(lambda x: math.expm1(x)),
        "log": njit(**JIT_OPTIONS)(lambda x: math.log(x)),
        "log1p": njit(**JIT_OPTIONS)(lambda x: math.log1p(x)),
        "tanh": njit(**JIT_OPTIONS)(lambda x: math.tanh(x)),
        "sin": njit(**JIT_OPTIONS)(lambda x: math.sin(x)),
        "cos": njit(**JIT_OPTIONS)(lambda x: math.cos(x)),
        "tan": njit(**JIT_OPTIONS)(lambda x: math.tan(x)),
        "erf": njit(**JIT_OPTIONS)(lambda x: math.erf(x)),
        "sqrt": njit(**JIT_OPTIONS)(lambda x: math.sqrt(x)),
        "sigmoid": sigmoid,
        "softplus": softplus,
        "aten_sigmoid": aten_sigmoid,
    }
    return {k + sfx: v for k, v in fns.items()}


globals().update(_make(np.float32, "32"))
globals().update(_make(np.float64, "64"))
