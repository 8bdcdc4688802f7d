"""torch.igamma / igammac, torch.special.gammainc / gammaincc and the Tensor methods against
PyTorch (CPU), SciPy and float64 finite differences.

Values: jitgrad's kernels are ports of ATen's calc_igamma / calc_igammac. PyTorch's CPU build
compiles that code twice: its strided (non-contiguous) loop and its contiguous loop contract
``a * b + c`` into fma in different places, and where ``a log x - x - lgamma a`` cancels
(``igamma``, float32, a far above x) the two differ from each other by up to ~500 ulps
(3e-5 relative). jitgrad reproduces the strided loop bit for bit (``test_bits_*``: 0 ulps over
a grid of edge values and all the algorithm's regimes, both dtypes); the contiguous loop, built
per CPU capability, is matched within the exponent's conditioning (its rounding differs by
machine).
SciPy's gammainc (the same Cephes algorithm in double) agrees to 1e-13 relative (times the
exponent's size for tiny results) except in the uniform asymptotic regime (20 < a, x near a),
where ATen's series uses float's pi: 5e-9 there.
"""
import math

import numpy as np
import pytest

import jitgrad as jg
from tests._parity import assert_parity, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

NAN, INF = float("nan"), float("inf")
EDGES = [0.0, -0.0, -1.0, -1e-30, INF, -INF, NAN, 1e-45, 1e-38, 1e-30, 1e-10, 1e-5, 0.1, 0.5,
         0.9, 1.0, 1.1, 1.5, 2.0, 5.0, 10.0, 19.9, 20.0, 20.1, 50.0, 100.0, 124.0, 199.0, 200.0,
         201.0, 500.0, 1e3, 1e4, 1e6, 1e10, 1e30, 3e38]
FUNCS = {"igamma": "gammainc", "igammac": "gammaincc"}


def _grid(dt):
    """Edge values crossed with themselves, then random points in each regime of the
    algorithm: the asymptotic series (a in (20, 200) or above, x near a), the continued
    fraction and both series on a log scale."""
    e = np.array(EDGES, dtype=dt)
    a, x = (v.ravel() for v in np.meshgrid(e, e, indexing="ij"))
    rng = np.random.default_rng(0)
    a2 = rng.uniform(15, 400, 3000)
    x2 = a2 * (1 + rng.uniform(-0.35, 0.35, 3000))
    a3 = np.exp(rng.uniform(-10, 10, 6000))
    x3 = np.exp(rng.uniform(-10, 10, 6000))
    a4 = rng.uniform(0.01, 4, 3000)  # x in (0.5, 1.1], the small-x branches of igammac
    x4 = rng.uniform(0.3, 1.3, 3000)
    return (np.concatenate([a, a2.astype(dt), a3.astype(dt), a4.astype(dt)]),
            np.concatenate([x, x2.astype(dt), x3.astype(dt), x4.astype(dt)]))


def _ulps(got, want):
    """Distance in units in the last place (NaN == NaN; a NaN against a number is huge)."""
    assert got.dtype == want.dtype
    ib = np.int64 if want.dtype == np.float64 else np.int32
    g = got.view(ib).astype(np.int64)
    w = want.view(ib).astype(np.int64)
    lo = np.iinfo(ib).min
    g = np.where(g < 0, lo - g, g)
    w = np.where(w < 0, lo - w, w)
    d = np.abs(g - w)
    d[(got == want) | (np.isnan(got) & np.isnan(want))] = 0
    d[np.isnan(got) != np.isnan(want)] = 1 << 40
    return d


def _strided(arr):
    # a stride-2 view: PyTorch's basic (scalar) loop
    return torch.from_numpy(np.stack([arr, arr], 1))[:, 0]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUNCS))
def test_bits_against_strided_loop(name, dt):
    a, x = _grid(dt)
    got = getattr(jg, name)(jg.tensor(a), jg.tensor(x)).numpy()
    want = getattr(torch, name)(_strided(a), _strided(x)).numpy()
    d = _ulps(got, want)
    assert d.max() == 0, [(a[i], x[i], got[i], want[i]) for i in np.argsort(-d)[:5]]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUNCS))
def test_against_contiguous_loop(name, dt):
    """Within the exponent's conditioning: PyTorch's contiguous loop is compiled once per CPU
    capability (AVX2, AVX512, ...), each contracting ``a * b + c`` into fma in its own places,
    so how far it strays from the strided loop (which jitgrad matches bit for bit) depends on
    the machine: 2 ulps in float64 where it was first measured, 12,211 ulps (1.8e-12 relative,
    results near 1e-185) on an AVX2 EPYC. Both are rounding of ``a log x - x - lgamma(a)``,
    whose error grows with its terms' size: the bound is 4 eps times that sum, relative."""
    a, x = _grid(dt)
    got = getattr(jg, name)(jg.tensor(a), jg.tensor(x)).numpy()
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(x)).numpy()
    d = _ulps(got, want)
    finite = np.isfinite(want) & (want != 0)
    assert (d[~finite] == 0).all()  # NaN, inf and 0 exactly where PyTorch has them
    a64, x64 = a[finite].astype(np.float64), x[finite].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.abs(a64 * np.log(x64)) + x64 + np.abs(
            [math.lgamma(v) if 0 < v < INF else INF for v in a64])
    rel = np.abs(got[finite] - want[finite].astype(np.float64)) / np.abs(want[finite])
    plain = np.isfinite(terms)  # the rest (x == 0, a or x infinite) are the exact early returns
    assert (rel[~plain] == 0).all()
    rel, terms, a64, x64 = rel[plain], terms[plain], a64[plain], x64[plain]
    bound = 4 * np.finfo(dt).eps * np.maximum(terms, 1.0)
    worst = np.argsort(-(rel / bound))[:3]
    assert (rel <= bound).all(), [(a64[i], x64[i], rel[i], bound[i]) for i in worst]


@pytest.mark.parametrize("name", list(FUNCS))
def test_against_scipy(name):
    sp = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(1)
    a = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), 20000))
    x = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), 20000))
    got = getattr(jg, name)(jg.tensor(a), jg.tensor(x)).numpy()
    want = getattr(sp, FUNCS[name])(a, x)
    ok = want > 1e-280  # far below, both underflow differently
    asym = np.abs(x - a) / a < 0.3
    asym &= (a > 20) & ((a < 200) | (np.abs(x - a) / a < 4.5 / np.sqrt(a)))
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    # a tiny result is exp(t) with |t| up to ~700: its relative error scales with |t|
    bound = 1e-13 * (1 + np.abs(np.log(np.maximum(want, 1e-300))))
    assert (rel[ok & ~asym] < bound[ok & ~asym]).all()
    assert rel[ok & asym].max() < 5e-9


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_boundary_values(dt):
    a = np.array([0.0, 0.0, 0.0, 1.0, INF, INF, 2.0, -1.0, 1.0, NAN, 1.0, 3e38], dtype=dt)
    x = np.array([1.0, 0.0, -1.0, 0.0, 5.0, INF, INF, 1.0, -0.5, 1.0, NAN, 3e38], dtype=dt)
    p = jg.igamma(jg.tensor(a), jg.tensor(x)).numpy()
    q = jg.igammac(jg.tensor(a), jg.tensor(x)).numpy()
    # SciPy's conventions, which ATen follows: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0,
    # P(a, inf) = 1; NaN outside a, x >= 0 and for P(0, 0), P(inf, inf)
    np.testing.assert_array_equal(p, np.array([1, NAN, NAN, 0, 0, NAN, 1, NAN, NAN, NAN, NAN,
                                               p[-1]], dtype=dt))
    np.testing.assert_array_equal(q, np.array([0, NAN, NAN, 1, 1, NAN, 0, NAN, NAN, NAN, NAN,
                                               q[-1]], dtype=dt))
    assert abs(float(p[-1]) - 0.5) < 1e-3  # a == x huge: the asymptotic series' 1/2


# ---- dtypes, arguments, errors ---------------------------------------------------------------

A = np.array([0.5, 1.0, 3.0, 25.0])
X = np.array([0.3, 2.0, 1.05, 24.0])


@pytest.mark.parametrize("fn", [
    lambda T, a, x: T.igamma(a, x),
    lambda T, a, x: T.igammac(a, x),
    lambda T, a, x: T.special.gammainc(a, x),
    lambda T, a, x: T.special.gammaincc(a, x),
    lambda T, a, x: a.igamma(x),
    lambda T, a, x: a.igammac(x),
    # promotion: float32 with float64, integers with floats, a 0-d operand, float16, bool
    lambda T, a, x: T.igamma(a.float(), x),
    lambda T, a, x: T.igammac(a.long(), x.float()),
    lambda T, a, x: T.igamma(a.to(T.int32), x.to(T.float16)),
    lambda T, a, x: T.igamma(a.to(T.float16), x.to(T.float16)),
    lambda T, a, x: T.igamma(a.to(T.float16), x[0]),
    lambda T, a, x: T.igammac(a[1], x.float()),
    lambda T, a, x: T.igamma(a > 1, x),
    lambda T, a, x: T.igamma(a.reshape(4, 1), x),  # broadcast
])
def test_values_and_promotion(fn):
    assert_parity(fn, A, X, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [
    lambda T, a, x: T.igamma(a.long(), x.long()),
    lambda T, a, x: T.igammac(a > 1, x > 1),
    lambda T, a, x: T.igamma(a.to(T.int8), x.to(T.int8)),
    lambda T, a, x: T.igamma(a, 2.0),
    lambda T, a, x: T.igamma(2.0, x),
    lambda T, a, x: T.igammac(2, 3),
    lambda T, a, x: T.special.gammainc(a, 2.0),
    lambda T, a, x: T.special.gammaincc(2.0, x),
    lambda T, a, x: a.igamma(2.0),
    lambda T, a, x: a.igammac_(2),
    lambda T, a, x: T.igamma(a, x[:3]),
    lambda T, a, x: a.long().igamma_(x),  # the cast error comes first
    lambda T, a, x: a.long().igammac_(x.long()),
    lambda T, a, x: T.igamma(a, x, out=2),
    lambda T, a, x: T.igamma(a, x, out=T.empty(4, dtype=T.int64)),
    lambda T, a, x: T.special.gammaincc(a, x, out=T.empty(4, dtype=T.int64)),
    lambda T, a, x: T.igamma(a, x.requires_grad_(), out=T.empty(4)),
    lambda T, a, x: T.special.gammaincc(a, x.requires_grad_(), out=T.empty(4)),
])
def test_errors(fn):
    raises_like(fn, A, X)


def test_out_and_inplace():
    def fn(T, a, x):
        o = T.empty(4)
        r = T.igamma(a.float(), x.float(), out=o)
        o2 = T.empty(4, dtype=T.float64)
        T.special.gammaincc(a.float(), x.float(), out=o2)  # a wider out is fine
        b = a.clone()
        b.igamma_(x)
        c = a.float().clone()
        c.igammac_(x)  # float64 result into float32
        return r, o, o2, b, c, r is o
    assert_parity(fn, A, X, rtol=1e-6, atol=1e-7)


# ---- autograd ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(FUNCS))
def test_backward_for_input_raises(name):
    # a and x both require grad: backward() needs input's derivative, which PyTorch lacks
    assert_parity(lambda T, a, x: getattr(T, name)(a, x), A, X, grad=True)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUNCS))
def test_grad_other(name, dt):
    def fn(T, a, x):
        a.requires_grad_()
        x.requires_grad_()
        y = getattr(T, name)(a, x)
        w = T.linspace(0.5, 1.5, 4, dtype=y.dtype)
        (g,) = T.autograd.grad((y * w).sum(), x, create_graph=True)  # input's edge not needed
        (gg,) = T.autograd.grad(g.sum(), x)
        return y, g, gg
    assert_parity(fn, A.astype(dt), X.astype(dt), rtol=8 * np.finfo(dt).eps, atol=1e-7)


def test_grad_nodes_and_inplace():
    def fn(T, a, x):
        x = x.requires_grad_()
        y = T.special.gammainc(a, x) + T.special.gammaincc(a.float(), x)
        b = a.clone()
        b.igamma_(x)
        c = a.clone()
        c.igammac_(x)
        z = (y + b * c).sum()
        z.backward(inputs=[x])
        return y, b, c, x.grad
    assert_parity(fn, A, X)


@pytest.mark.parametrize("name", list(FUNCS))
def test_gradcheck(name):
    a = jg.tensor([0.5, 1.0, 3.0, 25.0, 150.0, 2.5], dtype=jg.float64)
    x = jg.tensor([0.3, 2.0, 1.05, 24.0, 160.0, 0.7], dtype=jg.float64, requires_grad=True)
    f = getattr(jg, name)
    assert jg.autograd.gradcheck(lambda x: f(a, x), (x,))
    assert jg.autograd.gradgradcheck(lambda x: f(a, x), (x,))


# ---- torch.special.modified_bessel_i0 / spherical_bessel_j0 (compositions, no derivative) ----

BESSEL = np.concatenate([np.linspace(-60, 60, 4001), np.linspace(-0.6, 0.6, 2001),
                         [0.0, -0.0, INF, -INF, NAN, 1e-30, 1e-300, 1e30, 3e38, 700, 800]])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name,ulps", [("modified_bessel_i0", 0), ("spherical_bessel_j0", 2)])
def test_bessel_compositions(name, ulps, dt):
    # modified_bessel_i0's kernel gives i0's values bit for bit; spherical_bessel_j0 is ATen's
    # series below 0.5 and sin(x) / x above, sin being jitgrad.math's (an ulp from libm's)
    x = BESSEL.astype(dt)
    got = getattr(jg.special, name)(jg.tensor(x)).numpy()
    want = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    assert _ulps(got, want).max() <= ulps


@pytest.mark.parametrize("name", ["modified_bessel_i0", "spherical_bessel_j0"])
@pytest.mark.parametrize("fn", [
    lambda T, f, x: f(x.requires_grad_()),  # the result does not require grad
    lambda T, f, x: f(x.long()),
    lambda T, f, x: f(x > 0),
    lambda T, f, x: f(x.requires_grad_(), out=T.empty(4)),  # not refused: no derivative
    lambda T, f, x: f(x.float(), out=T.empty(4, dtype=T.float64)),
    lambda T, f, x: f(x, out=T.empty(4, dtype=T.int64)),
    lambda T, f, x: f(x.half()),
    lambda T, f, x: f(2.0),
    lambda T, f, x: f(x, x),
])
def test_bessel_compositions_arguments(name, fn):
    assert_parity(lambda T, x: fn(T, getattr(T.special, name), x), X)
