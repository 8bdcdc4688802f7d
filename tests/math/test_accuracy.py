"""Accuracy of jitgrad.math against high-precision references, measured in ulps.

float32 results are compared with NumPy/SciPy float64 functions evaluated on the
same (exactly converted) inputs; float64 results with long double (80-bit x87,
64-bit mantissa) NumPy functions, and with mpmath for erf.  The error of a
result y against the exact value r is |y - r| / ulp(r), where ulp(r) is the
spacing of the target format at r (subnormal spacing below the normal range).
The integer distance between y and the correctly rounded reference
(reinterpreting both as ordered integers) is checked as well.

Targets: <= 2 ulp for float32, <= 4 ulp for float64, for every function.
Run ``pytest tests/math/test_accuracy.py -s`` to see the measured maxima.
"""
import zlib

import numpy as np
import pytest
from numba import njit

import jitgrad.math as jm

LD = np.longdouble
MAX_ULP = {np.float32: 2.0, np.float64: 4.0}
HAVE_LD = np.finfo(LD).nmant >= 63          # x87 extended precision (not on all platforms)

# ---------------------------------------------------------------------------------------
# ulp measurement


def ulp_error(y, ref, dtype):
    """Fractional ulp error of y (dtype) against the high-precision reference ref."""
    info = np.finfo(dtype)
    p = info.nmant + 1
    emin = info.minexp
    ref = np.asarray(ref)
    _, e = np.frexp(ref)
    ulp = np.ldexp(ref.dtype.type(1), np.maximum(e - p, emin - p + 1).astype(np.int32))
    with np.errstate(invalid="ignore", over="ignore"):
        err = (np.abs(y.astype(ref.dtype) - ref) / ulp).astype(np.float64)
        rr = ref.astype(dtype)                     # correctly rounded reference
    special = ~np.isfinite(rr) | ~np.isfinite(y)
    same = (rr == y) | (np.isnan(rr) & np.isnan(y))
    err[special] = np.where(same[special], 0.0, np.inf)
    return err


def ordinal(v):
    """Map floats to integers that are consecutive for consecutive floats (+0 == -0)."""
    it = np.int32 if v.dtype == np.float32 else np.int64
    i = v.view(it).astype(np.int64)
    mag = i & np.int64(np.iinfo(it).max)
    return np.where(i < 0, -mag, mag)


def int_ulp_distance(y, ref, dtype):
    """Distance in representable numbers between y and the correctly rounded reference."""
    with np.errstate(over="ignore", invalid="ignore"):
        rr = ref.astype(dtype)
    ok = np.isfinite(rr) & np.isfinite(y)
    d = np.zeros(y.shape, dtype=np.int64)
    d[ok] = np.abs(ordinal(y[ok]) - ordinal(rr[ok]))
    return d


# ---------------------------------------------------------------------------------------
# evaluation through the public API inside an njit loop

_LOOPS = {}


def run(name, x):
    fn = jm.CPU_NAMESPACE[name]
    if name not in _LOOPS:
        @njit
        def loop(x, out):
            for i in range(x.size):
                out[i] = fn(x[i])
        _LOOPS[name] = loop
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


# ---------------------------------------------------------------------------------------
# references


def _expit(x):
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _erf64(x):
    from scipy.special import erf
    return erf(x)


def ref_f64(name):
    """Reference for float32 results: float64 NumPy/SciPy on float64 inputs."""
    from scipy import special
    return {
        "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
        "sigmoid": special.expit, "softplus": lambda x: np.logaddexp(0.0, x),
        "sin": np.sin, "cos": np.cos, "tan": np.tan, "erf": special.erf,
    }[name]


def _erf_mp(x):
    mp = pytest.importorskip("mpmath")
    mp.mp.prec = 90
    return np.array([LD(mp.nstr(mp.erf(mp.mpf(float(v))), 30)) for v in x], dtype=LD)


def ref_ld(name):
    """Reference for float64 results: long double NumPy (mpmath for erf)."""
    return {
        "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
        "sigmoid": _expit, "softplus": lambda x: np.logaddexp(LD(0), x),
        "sin": np.sin, "cos": np.cos, "tan": np.tan, "erf": _erf_mp,
    }[name]


# ---------------------------------------------------------------------------------------
# input sets: dense sweep over the useful range + edge sets

RANGES = {  # useful range (float32, float64)
    "exp": ((-104.0, 89.0), (-746.0, 710.0)),
    "expm1": ((-20.0, 89.0), (-40.0, 710.0)),
    "log": ((0.0, 4.0), (0.0, 4.0)),
    "log1p": ((-1.0, 4.0), (-1.0, 4.0)),
    "tanh": ((-10.0, 10.0), (-20.0, 20.0)),
    "sigmoid": ((-105.0, 20.0), (-746.0, 40.0)),
    "softplus": ((-105.0, 100.0), (-746.0, 800.0)),
    "sin": ((-100.0, 100.0), (-100.0, 100.0)),
    "cos": ((-100.0, 100.0), (-100.0, 100.0)),
    "tan": ((-100.0, 100.0), (-100.0, 100.0)),
    "erf": ((-5.0, 5.0), (-7.0, 7.0)),
}

# points where an implementation switches method or the function changes regime
BREAKS = {
    "exp": [0.0, 88.72283, -87.33654, -103.97208, 709.782712893384, -708.3964185322641,
            -745.1332191019411, 0.34657359, -0.34657359],
    "expm1": [0.0, 0.34657359, -0.34657359, 1.0397, 16.6, 36.7, -17.3, -37.4, 88.72283,
              709.782712893384],
    "log": [1.0, 0.70710678, 1.41421356, 2.0, 0.5, 1.1754944e-38, 2.2250738585072014e-308],
    "log1p": [0.0, -0.29289322, 0.41421356, 1.0, -1.0, -0.5, 2.0],
    "tanh": [0.0, 0.625, 0.9, 9.0, 19.06],
    "sigmoid": [0.0, -87.33654, -103.27, -708.3964, -744.44, 16.6, 36.7],
    "softplus": [0.0, -87.33654, -103.27, -708.3964, -744.44, 16.6, 36.7],
    "sin": [0.7853981633974483, 1.5707963267948966, 3.141592653589793],
    "cos": [0.7853981633974483, 1.5707963267948966, 3.141592653589793],
    "tan": [0.7853981633974483, 1.5707963267948966, 3.141592653589793],
    "erf": [0.0, 1.0, 1.5, 2.25, 3.5, 3.92, 4.0, 5.93, 6.0],
}


def _around(dtype, points, k):
    """k consecutive representable numbers on each side of each point (and its negative)."""
    it = np.int32 if dtype == np.float32 else np.int64
    out = []
    for p in points:
        for s in (1, -1):
            c = np.array([s * p], dtype=dtype)
            if not np.isfinite(c[0]):
                continue
            base = c.view(it)[0]
            bits = (base + np.arange(-k, k + 1)).astype(it)
            v = bits.view(dtype)
            out.append(v[np.isfinite(v)])
    return np.concatenate(out)


def _random_bits(dtype, n, rng):
    it, ut = (np.int32, np.uint32) if dtype == np.float32 else (np.int64, np.uint64)
    b = rng.integers(0, np.iinfo(ut).max, size=n, dtype=ut, endpoint=True)
    v = b.view(dtype)
    return v[np.isfinite(v)]


def inputs(name, dtype, n):
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dtype.__name__}".encode()))
    lo, hi = RANGES[name][0 if dtype == np.float32 else 1]
    tiny = np.finfo(dtype).smallest_subnormal
    big = np.finfo(dtype).max
    parts = [
        np.linspace(lo, hi, n),                                  # dense sweep
        rng.uniform(lo, hi, n),
        # every binade, both signs: subnormals ... near overflow
        np.sign(rng.standard_normal(n)) * np.exp(rng.uniform(np.log(float(tiny)),
                                                             np.log(float(big)), n)),
        _random_bits(dtype, n // 4, rng),                        # uniform over bit patterns
        np.geomspace(float(tiny), 1e-3, 2000), -np.geomspace(float(tiny), 1e-3, 2000),
    ]
    parts = [p.astype(dtype) for p in parts]
    parts.append(_around(dtype, BREAKS[name], 300))
    if name in ("sin", "cos", "tan"):
        # floats nearest to multiples of pi/2 (worst cancellation), and huge arguments
        k = np.unique(np.concatenate([np.arange(1, 3000), rng.integers(1, 10**6, 3000)]))
        parts.append((k * (np.pi / 2)).astype(dtype))
        parts.append(np.concatenate([np.ldexp(dtype(1.0) + rng.random(200).astype(dtype), e)
                                     for e in range(0, np.finfo(dtype).maxexp)]).astype(dtype))
    x = np.concatenate(parts).astype(dtype)
    return x[np.isfinite(x)]


# ---------------------------------------------------------------------------------------

RESULTS = {}


def _check(name, dtype, x, y, ref):
    err = ulp_error(y, ref, dtype)
    dist = int_ulp_distance(y, ref, dtype)
    i = int(np.argmax(err))
    RESULTS[(name, dtype.__name__)] = float(err[i])
    msg = (f"{name} {dtype.__name__}: max error {err[i]:.3f} ulp at x={x[i]!r} "
           f"(got {y[i]!r}, reference {ref[i]!r}); max integer distance {dist.max()}")
    print(msg)
    assert err[i] <= MAX_ULP[dtype], msg
    assert dist.max() <= MAX_ULP[dtype], msg


@pytest.mark.parametrize("name", jm.FUNCTIONS)
def test_float32(name):
    x = inputs(name, np.float32, 300_000)
    y = run(name, x)
    with np.errstate(all="ignore"):
        ref = ref_f64(name)(x.astype(np.float64))
    _check(name, np.float32, x, y, ref)


@pytest.mark.skipif(not HAVE_LD, reason="needs x87 long double for the float64 reference")
@pytest.mark.parametrize("name", jm.FUNCTIONS)
def test_float64(name):
    n = 6_000 if name == "erf" else 60_000
    x = inputs(name, np.float64, n)
    if name == "erf":                                            # mpmath is slow: thin it out
        x = np.concatenate([x[np.abs(x) < 7][::3], x[np.abs(x) >= 7][::50]])
    y = run(name, x)
    with np.errstate(all="ignore"):
        ref = ref_ld(name)(x.astype(LD))
    _check(name, np.float64, x, y, ref)


def test_float64_erf_against_scipy_wide():
    """A denser erf sweep for float64 than mpmath allows; scipy's erf is itself ~1 ulp."""
    x = np.linspace(-6.5, 6.5, 400_001)
    y = run("erf", x)
    from scipy.special import erf
    err = ulp_error(y, erf(x).astype(np.float64), np.float64)
    assert err.max() <= MAX_ULP[np.float64] + 1.0, err.max()


FLAGS = {"contract", "nsz", "arcp", "afn", "reassoc"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_caller_fastmath_does_not_change_results(dtype):
    """Our instructions keep their own fast-math flags when inlined into a caller with others."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-30, 30, 20000), rng.uniform(0, 5, 20000)]).astype(dtype)
    for name in jm.FUNCTIONS:
        fn = jm.CPU_NAMESPACE[name]

        @njit(fastmath=FLAGS)
        def loop(x, out, fn=fn):
            for i in range(x.size):
                out[i] = fn(x[i])
        out = np.empty_like(x)
        loop(x, out)
        np.testing.assert_array_equal(out, run(name, x), err_msg=name)
