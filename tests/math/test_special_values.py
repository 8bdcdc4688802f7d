"""Special values of jitgrad.math behave like NumPy/SciPy: nan, +-inf, signed zeros,
subnormals, overflow/underflow thresholds, out-of-domain arguments, huge trig arguments."""
import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

import jitgrad.math as jm

scipy_special = pytest.importorskip("scipy.special")

TOL = {np.float32: 2, np.float64: 4}


def _expit_ld(v):
    # scipy's float32/float64 expit flushes to 0 where the exact result is subnormal
    # (x < -88.7 / -709.8); we return the correctly rounded subnormal, so compare with that.
    v = v.astype(np.longdouble)
    e = np.exp(-np.abs(v))
    return np.where(v >= 0, 1 / (1 + e), e / (1 + e))


def numpy_ref(name, x):
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return _expit_ld(x).astype(x.dtype)
        return {
            "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
            "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
            "erf": scipy_special.erf,
            "softplus": lambda v: np.logaddexp(v.dtype.type(0), v),
        }[name](x)


_LOOPS = {}


def run(name, x):
    if name not in _LOOPS:
        fn = jm.CPU_NAMESPACE[name]

        @njit
        def loop(x, out):
            for i in range(x.size):
                out[i] = fn(x[i])
        _LOOPS[name] = loop
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


def specials(dtype):
    fi = np.finfo(dtype)
    base = [np.nan, np.inf, 0.0, fi.smallest_subnormal, 2 * fi.smallest_subnormal,
            fi.tiny / 3, fi.tiny, fi.eps, 1e-10, 1e-5, 0.5, 1.0, 2.0, np.pi / 4, np.pi / 2,
            np.pi, 10.0, 20.0, 50.0, 88.0, 88.72, 89.0, 100.0, 103.9, 104.0, 200.0,
            700.0, 709.78, 710.0, 745.0, 746.0, 1e4, 1e10, 1e20, 1e30, 3e38,
            float(fi.max), 1e300, 1e308]
    base = [v for v in base if v <= float(fi.max) or np.isinf(v) or np.isnan(v)]
    x = np.array(base + [-v for v in base], dtype=dtype)
    # the exact overflow / underflow thresholds of exp and their neighbours
    for v in ([88.72283, -87.33654, -103.97208, -103.27893] if dtype == np.float32 else
              [709.782712893384, -708.3964185322641, -745.1332191019411, -744.4400719213812]):
        c = np.array([v], dtype=dtype)
        x = np.concatenate([x, np.nextafter(c, -np.inf), c, np.nextafter(c, np.inf)])
    x = np.concatenate([x, np.array([-1.0, np.nextafter(-1.0, 0), np.nextafter(-1.0, -2)],
                                    dtype=dtype)])
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", jm.FUNCTIONS)
def test_matches_numpy_on_special_values(name, dtype):
    x = specials(dtype)
    y = run(name, x)
    r = numpy_ref(name, x).astype(dtype)
    assert y.dtype == dtype
    for xi, yi, ri in zip(x, y, r):
        where = f"{name}({xi!r}) = {yi!r}, NumPy gives {ri!r}"
        if np.isnan(ri):
            assert np.isnan(yi), where
        elif np.isinf(ri) or ri == 0:
            assert yi == ri and np.signbit(yi) == np.signbit(ri), where
        else:
            assert np.isfinite(yi), where
            with np.errstate(over="ignore"):
                ulp = float(np.spacing(abs(ri)))
            assert abs(float(yi) - float(ri)) <= (TOL[dtype] + 1) * ulp, where


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zero_and_subnormal_passthrough(dtype):
    """f(x) = x for tiny x where NumPy gives x: -0.0 and subnormals are preserved exactly."""
    tiny = np.array([0.0, -0.0, np.finfo(dtype).smallest_subnormal,
                     -np.finfo(dtype).smallest_subnormal, np.finfo(dtype).tiny / 8], dtype=dtype)
    for name in ("expm1", "log1p", "tanh", "sin", "tan"):
        y = run(name, tiny)
        np.testing.assert_array_equal(y, tiny, err_msg=name)
        assert (np.signbit(y) == np.signbit(tiny)).all(), name
    assert np.signbit(run("erf", tiny[:2])[1])
    assert run("cos", tiny).tolist() == [1.0] * 5
    assert run("exp", tiny).tolist() == [1.0] * 5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_domain_edges(dtype):
    v = np.array([0.0, -0.0, -1e-30, -np.inf, np.inf], dtype=dtype)
    assert run("log", v).tolist()[:2] == [-np.inf, -np.inf]
    assert np.isnan(run("log", v)[2:4]).all() and run("log", v)[4] == np.inf
    w = np.array([-1.0, -1.5, -np.inf, np.inf], dtype=dtype)
    r = run("log1p", w)
    assert r[0] == -np.inf and np.isnan(r[1]) and np.isnan(r[2]) and r[3] == np.inf
    big = np.array([1e30, -1e30, np.inf, -np.inf, np.nan], dtype=dtype)
    assert run("tanh", big).tolist()[:4] == [1.0, -1.0, 1.0, -1.0]
    assert run("sigmoid", big).tolist()[:4] == [1.0, 0.0, 1.0, 0.0]
    assert run("erf", big).tolist()[:4] == [1.0, -1.0, 1.0, -1.0]
    assert run("softplus", big).tolist()[:4] == [1e30 if dtype == np.float64 else
                                                 float(np.float32(1e30)), 0.0, np.inf, 0.0]
    for name in jm.FUNCTIONS:
        assert np.isnan(run(name, big)[4]), name
    for name in ("sin", "cos", "tan"):
        assert np.isnan(run(name, big[2:4])).all(), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_subnormal_results(dtype):
    """Results in the subnormal range are rounded once, not flushed."""
    x = np.linspace(-103.9, -87.4, 2001) if dtype == np.float32 else \
        np.linspace(-745.0, -708.5, 2001)
    x = x.astype(dtype)
    for name, ref in (("exp", np.exp), ("sigmoid", np.exp), ("softplus", np.exp)):
        y = run(name, x)
        r = ref(x.astype(np.longdouble)).astype(dtype)
        assert (y > 0).all(), name
        assert np.max(np.abs(y - r) / np.finfo(dtype).smallest_subnormal) <= 1, name


def test_trig_huge_arguments():
    """Arguments up to the largest float (beyond the Cody-Waite range libm takes over)."""
    for dtype in (np.float32, np.float64):
        e = np.arange(0, np.finfo(dtype).maxexp)
        x = np.ldexp(dtype(1.2345678), e).astype(dtype)
        x = x[np.isfinite(x)]
        ref = np.sin(x.astype(np.float64 if dtype == np.float32 else np.longdouble))
        y = run("sin", x)
        assert np.max(np.abs(y - ref)) < 4 * np.finfo(dtype).eps, dtype


def test_python_level_calls():
    assert isinstance(jm.exp(1.0), np.float64) and jm.exp(1.0) == np.exp(1.0)
    assert isinstance(jm.exp(np.float32(1)), np.float32)
    assert isinstance(jm.sigmoid(np.float32(-3)), np.float32)
    assert isinstance(jm.erf(np.float32(0.5)), np.float32)
    assert isinstance(jm.softplus(np.float32(2)), np.float32)
    with np.errstate(divide="ignore"):
        assert jm.log(0.0) == -np.inf and np.isnan(jm.sigmoid(np.nan))
    assert abs(jm.sigmoid(2.0) - 1 / (1 + np.exp(-2.0))) < 1e-16
    assert abs(jm.erf(0.5) - 0.5204998778130465) < 1e-16
    assert jm.sqrt(4) == 2.0
    np.testing.assert_allclose(jm.tanh(np.arange(3.0)), np.tanh(np.arange(3.0)))
    assert set(jm.CPU_NAMESPACE) == set(jm.FUNCTIONS) | {"sqrt", "sleef_exp", "aten_sigmoid"}


def test_jit_argument_types():
    @njit
    def f(x):
        return jm.exp(x), jm.sqrt(x), jm.erf(x)

    a, b, c = f(2)                                  # integers: float64, like NumPy
    assert a == pytest.approx(np.exp(2.0), rel=1e-15) and b == np.sqrt(2.0)
    a32 = f(np.float32(2))
    assert all(isinstance(v, float) for v in a32)
    assert f.nopython_signatures[1].return_type.dtype.name == "float32"


def test_libm_escape_hatch():
    code = (
        "import numpy as np, jitgrad.math as jm\n"
        "from numba import njit\n"
        "assert jm.USE_LIBM\n"
        "x = np.linspace(-3, 3, 1001)\n"
        "for dt in (np.float32, np.float64):\n"
        "    for name in jm.FUNCTIONS:\n"
        "        fn = jm.CPU_NAMESPACE[name]\n"
        "        @njit\n"
        "        def loop(x, out):\n"
        "            for i in range(x.size):\n"
        "                out[i] = fn(x[i])\n"
        "        v = x.astype(dt); out = np.empty_like(v); loop(v, out)\n"
        "        ir = loop.inspect_llvm(loop.signatures[0])\n"
        "        assert out.dtype == dt\n"
        "        np.testing.assert_allclose(out, jm.CPU_NAMESPACE[name](v), rtol=4e-6, atol=1e-30)\n"
        "print('ok')\n"
    )
    env = dict(os.environ, JITGRAD_LIBM="1")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr[-3000:]
