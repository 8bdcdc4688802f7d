"""jitgrad's CPU sigmoid gives torch.sigmoid's bits: ATen's vector formula over SLEEF's u10 exp
(jitgrad/math/_sleef.py), compared bit for bit with PyTorch run here; jitgrad.math.sleef_expm1
gives torch.expm1's bits (every element: ATen maps SLEEF over the whole run).

ATen computes the last ``n % (2 * lanes)`` elements of each contiguous parallel chunk with the
scalar lambda ``1 / (1 + std::exp(-x))`` (glibc); jitgrad computes every element with the vector
formula, so the bit-exact checks use lengths whose chunks are multiples of 32 and the tail test
checks both halves of that statement (torch's tail is the scalar formula; jitgrad is within 2
ulp of it)."""
import contextlib

import numpy as np
import pytest
from numba import njit

import jitgrad
import jitgrad.math as jm
from jitgrad.math import _libm

torch = pytest.importorskip("torch")

# Other capabilities (DEFAULT: no SLEEF vectors) compute sigmoid differently.
pytestmark = pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"),
    reason="ATen's SLEEF vector paths need an AVX2/AVX-512 build and CPU")

INT = {np.float32: np.int32, np.float64: np.int64}
# where the exp/sigmoid formulas switch: over/underflow of exp (float32, float64), the
# clamps of SLEEF's exp (-104/100, -1000/709.78), tiny, subnormal and huge arguments
EDGES = [0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5,
         16.6, -16.6, 17.0, -17.0, 36.7, -36.7, 87.33, -87.33, 88.72, -88.72, 88.73, -88.73,
         100.0, -100.0, 100.1, -100.1, 103.97, -103.97, 104.0, -104.0, 104.1, -104.1,
         708.4, -708.4, 709.78, -709.78, 709.79, -709.79, 745.2, -745.2, 1000.0, -1000.0,
         1001.0, -1001.0, 1e30, -1e30, 3e38, -3e38, np.inf, -np.inf, np.nan, -np.nan]


@contextlib.contextmanager
def torch_threads(n):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _inputs(dtype, n, seed):
    rng = np.random.default_rng(seed)
    k = n // 4
    parts = [rng.standard_normal(k) * 10, rng.standard_normal(k),
             rng.choice([-1, 1], k) * np.exp(rng.uniform(-110, 7, k)),        # log-uniform
             rng.uniform(-800, 800, n - 3 * k)]
    x = np.concatenate(parts).astype(dtype)
    x[:len(EDGES)] = np.array(EDGES).astype(dtype)
    x[len(EDGES):2 * len(EDGES)] = np.nextafter(np.array(EDGES).astype(dtype), dtype(np.inf))
    return x


def _bits_differ(a, b, dtype):
    return np.nonzero(a.view(INT[dtype]) != b.view(INT[dtype]))[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads,n", [(1, 32 * 700), (2, 65536)])
def test_sigmoid_bit_exact(dtype, threads, n):
    x = _inputs(dtype, n, seed=n + threads)
    with torch_threads(threads):     # 2 threads: two chunks of 32768, no scalar tail either
        ref = torch.sigmoid(torch.from_numpy(x)).numpy()
    out = jitgrad.sigmoid(jitgrad.tensor(x)).numpy()
    assert out.dtype == ref.dtype
    bad = _bits_differ(out, ref, dtype)
    assert bad.size == 0, (x[bad[:5]], out[bad[:5]], ref[bad[:5]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_python_level_and_nan_sign(dtype):
    # NaN keeps torch's bits too (ATen negates x first: the sign flips); the Python-level
    # function evaluates the same jitted formula
    x = np.resize(np.array([np.nan, -np.nan, 2.5, -90.0, 1e-40], dtype), 64)
    with torch_threads(1):
        ref = torch.sigmoid(torch.from_numpy(x)).numpy()
    assert _bits_differ(jitgrad.sigmoid(jitgrad.tensor(x)).numpy(), ref, dtype).size == 0
    assert _bits_differ(np.asarray(jm.aten_sigmoid(x)), ref, dtype).size == 0
    assert isinstance(jm.aten_sigmoid(dtype(2.5)), dtype)
    assert jm.aten_sigmoid(dtype(2.5)) == ref[2]


def test_sleef_exp_matches_sigmoid_lanes():
    # sleef_exp is what the lanes use: 1 / (sleef_exp(-x) + 1) reproduces torch.sigmoid
    x = _inputs(np.float32, 32 * 64, seed=3)
    with np.errstate(over="ignore"):
        mine = np.float32(1) / (jm.sleef_exp(-x) + np.float32(1))
    with torch_threads(1):
        ref = torch.sigmoid(torch.from_numpy(x)).numpy()
    ok = ~np.isnan(x)
    assert _bits_differ(mine[ok], ref[ok], np.float32).size == 0
    assert jm.sleef_exp(np.float32(-104.5)) == 0 and jm.sleef_exp(np.float32(100.5)) == np.inf


@njit
def _scalar_sigmoid(x, out):
    for i in range(x.size):
        out[i] = _libm.aten_sigmoid32(x[i])


# float32 elements per pair of ATen vectors: 2 x 16 lanes with AVX-512, 2 x 8 with AVX2
PAIR = 32 if torch.backends.cpu.get_cpu_capability() == "AVX512" else 16


def test_scalar_tail_is_the_libm_formula():
    """Finding behind the one known difference: torch's elements past the last full pair of
    vectors (``PAIR`` elements: the CPU capability's) come from the scalar lambda (glibc expf);
    jitgrad stays within 2 ulp there."""
    pool = _inputs(np.float32, 4000, seed=7)
    pool_scalar = np.empty_like(pool)
    _scalar_sigmoid(pool, pool_scalar)
    # tail values where the two formulas disagree, so the test tells which one torch used
    split = pool[_bits_differ(pool_scalar, jm.aten_sigmoid(pool), np.float32)]
    assert split.size >= PAIR - 1
    x = np.concatenate([pool[:PAIR * 80], split[:PAIR - 1]])
    with torch_threads(1):
        ref = torch.sigmoid(torch.from_numpy(x)).numpy()
    scalar = np.empty_like(x)
    _scalar_sigmoid(x, scalar)
    tail = slice(PAIR * 80, None)
    assert _bits_differ(ref[tail], scalar[tail], np.float32).size == 0
    out = jitgrad.sigmoid(jitgrad.tensor(x)).numpy()
    assert _bits_differ(out[:PAIR * 80], ref[:PAIR * 80], np.float32).size == 0
    ok = np.isfinite(ref[tail])
    ulps = np.abs(out[tail][ok].view(np.int32).astype(np.int64)
                  - ref[tail][ok].view(np.int32).astype(np.int64))
    assert ulps.max() <= 2          # SLEEF's exp is a 1-ulp function, glibc's ~0.5


@njit
def _sleef_expm1_loop(x, out):
    for i in range(x.size):
        out[i] = jm.sleef_expm1(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads,n", [(1, 20000), (1, 37), (2, 70001)])
def test_sleef_expm1_bit_exact(dtype, threads, n):
    rng = np.random.default_rng(n)
    lo = -105 if dtype == np.float32 else -745
    k3 = n - n // 2 - n // 4
    x = np.concatenate([rng.standard_normal(n // 2) * 4, rng.uniform(-1.2, 1.0, n // 4) * -lo,
                        rng.choice([-1, 1], k3) * np.exp(rng.uniform(lo, 4, k3))]).astype(dtype)
    edges = np.array(EDGES + [88.7228, 88.72284, -16.6355, -16.63554, 709.782712893384,
                              -36.7368, -36.74, 1.0, -1.0, 2e-7, 2e-17], dtype)
    k = min(n, edges.size)
    x[:k] = edges[:k]
    with torch_threads(threads):
        ref = torch.expm1(torch.from_numpy(x)).numpy()
    out = np.empty_like(x)
    _sleef_expm1_loop(x, out)
    bad = _bits_differ(out, ref, dtype)
    assert bad.size == 0, (x[bad[:5]], out[bad[:5]], ref[bad[:5]])
    assert _bits_differ(np.asarray(jm.sleef_expm1(x[:50])), ref[:50], dtype).size == 0
