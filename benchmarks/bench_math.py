"""asv benchmarks for jitgrad.math: the vectorized functions inside an njit loop, against
NumPy's (or SciPy's) ufunc and, when importable, torch -- all single-threaded, writing into
a preallocated output.

    asv run --bench bench_math
    asv run --bench "bench_math.JitgradMath.time_func"      # one suite

``JitgradLibm`` is the same njit loop calling ``math.*`` (libm): what a kernel gets
without jitgrad.math (scalar calls, no vectorization).
"""
import math

import numpy as np

from ._common import torch_or_skip

FUNCS = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos", "tan", "erf"]
DTYPES = ["float32", "float64"]
SIZES = [100_000, 16_000_000]


def _input(name, dtype, n):
    rng = np.random.default_rng(0)
    if name in ("log", "log1p"):
        x = rng.uniform(0.01, 10.0, n)
    elif name in ("sin", "cos", "tan"):
        x = rng.uniform(-10.0, 10.0, n)
    else:
        x = rng.uniform(-5.0, 5.0, n)
    return x.astype(dtype)


def _numpy_func(name):
    import scipy.special as sp
    return {
        "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
        "sin": np.sin, "cos": np.cos, "tan": np.tan, "erf": sp.erf, "sigmoid": sp.expit,
        "softplus": lambda x, out: np.logaddexp(x.dtype.type(0), x, out=out),
    }[name]


_LOOPS = {}


def _jit_loop(fn):
    from numba import njit
    if fn not in _LOOPS:
        @njit
        def loop(x, out):
            for i in range(x.size):
                out[i] = fn(x[i])
        _LOOPS[fn] = loop
    return _LOOPS[fn]


class _Base:
    params = (FUNCS, DTYPES, SIZES)
    param_names = ["function", "dtype", "n"]
    timeout = 300

    def setup(self, name, dtype, n):
        self.x = _input(name, dtype, n)
        self.out = np.empty_like(self.x)


class JitgradMath(_Base):
    """jitgrad.math.<name> in an njit loop."""

    def setup(self, name, dtype, n):
        super().setup(name, dtype, n)
        import jitgrad.math as jm
        self.loop = _jit_loop(jm.CPU_NAMESPACE[name])
        self.loop(self.x, self.out)                         # compile

    def time_func(self, name, dtype, n):
        self.loop(self.x, self.out)


class JitgradLibm(_Base):
    """The same loop calling math.* (libm): the situation jitgrad.math exists to fix."""

    def setup(self, name, dtype, n):
        if n > 1_000_000:
            raise NotImplementedError("scalar libm loop: small size only")
        super().setup(name, dtype, n)
        if name in ("sigmoid", "softplus"):
            raise NotImplementedError("no libm function")
        self.loop = _jit_loop(getattr(math, name))
        self.loop(self.x, self.out)

    def time_func(self, name, dtype, n):
        self.loop(self.x, self.out)


class NumpyUfunc(_Base):
    """NumPy ufunc (SciPy for sigmoid = expit and erf; logaddexp(0, x) for softplus)."""

    def setup(self, name, dtype, n):
        super().setup(name, dtype, n)
        self.f = _numpy_func(name)

    def time_func(self, name, dtype, n):
        self.f(self.x, out=self.out)


class Torch(_Base):
    """torch.<name>(x, out=...) with one thread; skipped when torch is not installed."""

    def setup(self, name, dtype, n):
        torch = torch_or_skip()
        super().setup(name, dtype, n)
        torch.set_num_threads(1)
        self.tx = torch.from_numpy(self.x)
        self.tout = torch.from_numpy(self.out)
        if name == "softplus":
            f = torch.nn.functional.softplus
            self.call = lambda: self.tout.copy_(f(self.tx))
        else:
            f = getattr(torch, name)
            self.call = lambda: f(self.tx, out=self.tout)

    def time_func(self, name, dtype, n):
        self.call()


class GeluExact:
    """A fused kernel: exact GELU 0.5*x*(1 + erf(x/sqrt(2))) in one njit loop vs NumPy/SciPy."""
    params = (DTYPES,)
    param_names = ["dtype"]

    def setup(self, dtype):
        from numba import njit
        from scipy.special import erf as sp_erf

        import jitgrad.math as jm
        erf = jm.erf
        t = np.dtype(dtype).type
        half, one, rsqrt2 = t(0.5), t(1.0), t(1 / math.sqrt(2))

        @njit
        def gelu(x, out):
            for i in range(x.size):
                v = x[i]
                out[i] = half * v * (one + erf(v * rsqrt2))

        self.x = _input("erf", dtype, 4_000_000)
        self.out = np.empty_like(self.x)
        self.tmp = np.empty_like(self.x)
        self.gelu = gelu
        self.sp_erf = sp_erf
        self.half, self.rsqrt2 = half, rsqrt2
        gelu(self.x, self.out)

    def time_jitgrad(self, dtype):
        self.gelu(self.x, self.out)

    def time_numpy_scipy(self, dtype):
        np.multiply(self.x, self.rsqrt2, out=self.tmp)
        self.sp_erf(self.tmp, out=self.tmp)
        self.tmp += 1
        np.multiply(self.tmp, self.x, out=self.out)
        self.out *= self.half
