"""The gamma family against PyTorch: ``torch._standard_gamma`` / ``_sample_dirichlet`` seeded
draws bit for bit (float32/float64, alpha < 1, = 1, large, 0/NaN/inf, layouts, the generator
stream afterwards), ``_standard_gamma_grad`` / ``_dirichlet_grad`` bit for bit and against
SciPy's CDFs (float64 central differences), the ops' errors and nodes; Gamma, Chi2, Beta and
Dirichlet: samples, rsample gradients, log_prob / entropy / moments and their gradients, KL
pairs, expand, validation errors."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import agree, compare, raises_like, torch

import jitgrad

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is the reference")


def D(T):
    return T.distributions


@pytest.fixture(autouse=True)
def _validation_on_by_default():
    """PyTorch's default (validation on) for every test, as tests/test_distributions.py does:
    an earlier ``torch.compile`` switches it off for the process."""
    saved = [lib.distributions.Distribution._validate_args for lib in (torch, jitgrad)]
    for lib in (torch, jitgrad):
        lib.distributions.Distribution.set_default_validate_args(True)
    yield
    for lib, value in zip((torch, jitgrad), saved):
        lib.distributions.Distribution.set_default_validate_args(value)


def _stream(T):
    """What is drawn next: uniforms, and a serial normal (which reads the cached Box-Muller
    value the gamma sampler may have left)."""
    return T.rand(3, dtype=T.float64), T.randn(3, dtype=T.float64)


# ------------------------------------------------------------ _standard_gamma, bit for bit

ALPHAS = {
    "mixed": [0.5, 1.0, 3.0, 0.05, 2.5, 7.0],
    "below_one": [1e-3, 0.1, 0.5, 0.9, 0.999999],
    "one": [1.0] * 7,
    "large": [8.5, 30.0, 100.0, 1e4, 1e8],
    "specials": [0.0, float("nan"), float("inf"), -2.0, 1e-30],
}


@pytest.mark.parametrize("seed", [0, 2024])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ALPHAS))
def test_standard_gamma_draws_are_pytorchs(name, dt, seed):
    def run(T):
        T.manual_seed(seed)
        return T._standard_gamma(T.tensor(ALPHAS[name], dtype=getattr(T, dt))), _stream(T)
    agree(run)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_standard_gamma_many_draws_and_layouts(dt):
    alpha = np.linspace(0.02, 12.0, 240).reshape(12, 20)

    def run(T):
        a = T.tensor(alpha, dtype=getattr(T, dt))
        T.manual_seed(7)
        out = [T._standard_gamma(a), T._standard_gamma(a.t()),  # drawn in the output's order
               T._standard_gamma(a[:, :1].expand(12, 5)), T._standard_gamma(a[0, 0]),
               T._standard_gamma(T.ones(0, 3, dtype=a.dtype))]
        g = T.Generator().manual_seed(5)
        out.append(T._standard_gamma(a[:2], generator=g))
        return out, _stream(T)
    agree(run)


# ---------------------------------------------------------- _sample_dirichlet, bit for bit

@pytest.mark.parametrize("shape", [(3,), (4, 2), (2, 5), (3, 17), (2, 40), (1, 300), (2, 3, 4)])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_sample_dirichlet_draws_are_pytorchs(shape, dt):
    """Rows of 17, 40 and 300 follow ATen's vectorised cascade sum (the double sums differ in
    the last place otherwise)."""
    conc = np.random.default_rng(len(shape) * 100 + shape[-1]).uniform(0.05, 4.0, shape)

    def run(T):
        T.manual_seed(11)
        return T._sample_dirichlet(T.tensor(conc, dtype=getattr(T, dt))), _stream(T)
    agree(run)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_sample_dirichlet_tiny_concentrations_and_scalars(dt):
    """Gammas that underflow are clamped to DBL_MIN (equal shares); results are clamped into
    [tiny, nextafter(1, 0)] of the dtype; a 0-d alpha is its own row."""
    def run(T):
        T.manual_seed(3)
        t = getattr(T, dt)
        return (T._sample_dirichlet(T.tensor([1e-30, 1e-30, 1e-3], dtype=t)),
                T._sample_dirichlet(T.tensor([[1e-30, 1e-30], [1e-4, 50.0]], dtype=t)),
                T._sample_dirichlet(T.tensor(2.0, dtype=t)),
                T._sample_dirichlet(T.tensor([[0.01, 0.01, 0.01]], dtype=t).expand(4, 3)),
                _stream(T))
    agree(run)


# ------------------------------------------------------------- the gradient formulas

def _gamma_cases(dt):
    rng = np.random.default_rng(1)
    alpha = np.concatenate([rng.uniform(0.02, 30.0, 600), [0.5, 1.0, 8.5, 9.0, 100.0, 1e4]])
    x = np.concatenate([rng.uniform(1e-4, 40.0, 300), rng.gamma(alpha[300:])])
    x[-6:] = [0.3, 0.79, 8.4, 9.5, 100.0, 1e4]  # Taylor / saddle-point / near-mean branches
    return alpha.astype(dt), np.maximum(x, 1e-6).astype(dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_standard_gamma_grad_is_pytorchs(dt):
    alpha, x = _gamma_cases(dt)
    agree(lambda T: T._standard_gamma_grad(T.tensor(alpha), T.tensor(x)))


def test_standard_gamma_grad_against_scipy():
    """-(dF/dalpha) / pdf with SciPy's regularised incomplete gamma, alpha by central
    differences in float64: ATen's approximations are within 1e-4 relative."""
    sp = pytest.importorskip("scipy.special")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2)
    alpha = np.concatenate([rng.uniform(0.05, 30.0, 200), [0.5, 1.0, 9.0, 50.0]])
    x = stats.gamma.ppf(rng.uniform(0.02, 0.98, alpha.size), alpha)
    h = 1e-6
    ref = -(sp.gammainc(alpha + h, x) - sp.gammainc(alpha - h, x)) / (2 * h) \
        / stats.gamma.pdf(x, alpha)
    got = jitgrad._standard_gamma_grad(jitgrad.tensor(alpha), jitgrad.tensor(x)).numpy()
    np.testing.assert_allclose(got, ref, rtol=2e-4)


def _beta_cases(dt):
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.uniform(0.05, 20.0, 400), [7.0, 30.0, 0.5]])
    b = np.concatenate([rng.uniform(0.05, 20.0, 400), [9.0, 40.0, 0.5]])
    x = rng.uniform(1e-4, 1 - 1e-4, a.size)
    x[-3:] = [7.0 / 16.0, 0.4, 0.999]  # the mid branch's near-mean case, both tails
    return x.astype(dt), a.astype(dt), (a + b).astype(dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_dirichlet_grad_is_pytorchs(dt):
    x, a, total = _beta_cases(dt)
    agree(lambda T: T._dirichlet_grad(T.tensor(x), T.tensor(a), T.tensor(total)))
    # broadcast arguments
    agree(lambda T: T._dirichlet_grad(T.tensor(x[:6]).reshape(2, 3), T.tensor(a[:3]),
                                      T.tensor(total[:1])))


def test_dirichlet_grad_against_scipy():
    """``_dirichlet_grad * (1 - x)`` is Beta(alpha, total - alpha)'s reparameterisation
    gradient -(dI_x/dalpha) / pdf (SciPy's betainc, central differences): within 1e-3."""
    sp = pytest.importorskip("scipy.special")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.1, 15.0, 200), rng.uniform(0.1, 15.0, 200)
    x = stats.beta.ppf(rng.uniform(0.02, 0.98, a.size), a, b)
    h = 1e-6
    ref = -(sp.betainc(a + h, b, x) - sp.betainc(a - h, b, x)) / (2 * h) \
        / stats.beta.pdf(x, a, b)
    got = jitgrad._dirichlet_grad(jitgrad.tensor(x), jitgrad.tensor(a),
                                  jitgrad.tensor(a + b)).numpy()
    np.testing.assert_allclose(got * (1 - x), ref, rtol=1.5e-3)


# ---------------------------------------------------------------- nodes and errors

def test_op_nodes_and_backward():
    def run(T):
        a = T.tensor([0.5, 1.0, 3.0], dtype=T.float64, requires_grad=True)
        T.manual_seed(0)
        s = T._standard_gamma(a)
        (ga,) = T.autograd.grad((s * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum(), a)
        g = T._standard_gamma_grad(a, s.detach())
        d = T._sample_dirichlet(a)
        dg = T._dirichlet_grad(d.detach(), a, a.detach().sum().expand(3))
        names = [type(t.grad_fn).__name__ for t in (s, g, d, dg)]
        no_edge = T._standard_gamma_grad(a.detach(), s).requires_grad
        return s, ga, g, d, dg, names, no_edge
    agree(run)


@pytest.mark.parametrize("backward", [
    lambda T, a, s: T._sample_dirichlet(a).sum().backward(),
    lambda T, a, s: T._standard_gamma_grad(a, s.detach()).sum().backward(),
    lambda T, a, s: T._dirichlet_grad(s.detach(), a, a.detach()).sum().backward(),
    lambda T, a, s: T._dirichlet_grad(s.detach(), a.detach(), a).sum().backward(),
], ids=["sample_dirichlet", "standard_gamma_grad", "dirichlet_grad_alpha",
        "dirichlet_grad_total"])
def test_non_differentiable_ops_raise_pytorchs_error(backward):
    def make(T):
        a = T.tensor([0.5, 1.0, 3.0], requires_grad=True)
        T.manual_seed(0)
        backward(T, a, T._standard_gamma(a))
    raises_like(make)


@pytest.mark.parametrize("make", [
    lambda T: T._standard_gamma(T.tensor([1, 2])),
    lambda T: T._standard_gamma(T.tensor([1.0, 2.0], dtype=T.float16)),
    lambda T: T._sample_dirichlet(T.tensor([1, 2])),
    lambda T: T._sample_dirichlet(T.tensor([1.0, 2.0], dtype=T.float16)),
    lambda T: T._standard_gamma_grad(T.tensor([1, 2]), T.tensor([1, 2])),
    lambda T: T._standard_gamma_grad(T.tensor([1.0, 2.0]),
                                     T.tensor([1.0, 2.0], dtype=T.float64)),
    lambda T: T._standard_gamma_grad(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0, 3.0])),
    lambda T: T._dirichlet_grad(T.tensor([1, 2]), T.tensor([1, 2]), T.tensor([1, 2])),
    lambda T: T._dirichlet_grad(T.tensor([0.1, 0.2]), T.tensor([1.0, 2.0]),
                                T.tensor([3.0, 3.0], dtype=T.float64)),
    lambda T: T._standard_gamma([1.0, 2.0]),
], ids=["gamma_long", "gamma_half", "dirichlet_long", "dirichlet_half", "sgg_long",
        "sgg_dtype", "sgg_shape", "dg_long", "dg_dtype", "gamma_list"])
def test_op_errors(make):
    raises_like(make)


def test_grad_ops_resize_warning():
    def run(T):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = T._standard_gamma_grad(T.tensor([1.0]), T.tensor([1.0, 2.0]))
        # PyTorch appends where in ATen it warned
        return r, [str(x.message).split(" (Triggered internally")[0] for x in w]
    agree(run)


# -------------------------------------------------------------- distributions: samples

SAMPLERS = {
    "gamma.rsample": lambda T, dt, s: D(T).Gamma(T.tensor([0.5, 1.0, 4.0], dtype=dt),
                                                 T.tensor([2.0, 1.0, 0.5], dtype=dt)).rsample(s),
    "gamma.sample.scalar": lambda T, dt, s: D(T).Gamma(0.3, 2.0).sample(s),
    "chi2": lambda T, dt, s: D(T).Chi2(T.tensor([1.0, 3.0, 10.0], dtype=dt)).rsample(s),
    "beta": lambda T, dt, s: D(T).Beta(T.tensor([0.5, 2.0], dtype=dt),
                                       T.tensor([3.0, 0.7], dtype=dt)).rsample(s),
    "beta.scalar": lambda T, dt, s: D(T).Beta(2.0, 3.0).sample(s),
    "dirichlet": lambda T, dt, s: D(T).Dirichlet(
        T.tensor([[0.5, 1.0, 2.0], [5.0, 0.2, 1.0]], dtype=dt)).rsample(s),
    "gamma.expanded": lambda T, dt, s: D(T).Gamma(T.tensor([0.5, 3.0], dtype=dt), 1.0).expand(
        (3, 2)).sample(s),
    "dirichlet.expanded": lambda T, dt, s: D(T).Dirichlet(
        T.tensor([0.5, 1.0, 2.0], dtype=dt)).expand((2,)).sample(s),
}


@pytest.mark.parametrize("shape", [(), (4,)], ids=["none", "4"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeded_samples_are_pytorchs(name, dt, shape):
    def run(T):
        T.manual_seed(99)
        return SAMPLERS[name](T, getattr(T, dt), shape), _stream(T)
    agree(run)


RSAMPLES = {
    "gamma": lambda T, c, r: D(T).Gamma(c, r).rsample((3,)),
    "chi2": lambda T, c, r: D(T).Chi2(c).rsample((3,)),
    "beta": lambda T, c, r: D(T).Beta(c, r).rsample((3,)),
    "dirichlet": lambda T, c, r: D(T).Dirichlet(T.stack([c, r, c * r], -1)).rsample((3,)),
}


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(RSAMPLES))
def test_rsample_gradients_are_pytorchs(name, dt):
    """Gradients reach concentration and rate through ATen's reparameterisation (one seed for
    both libraries, so the samples, and the gradients, are the same)."""
    def run(T):
        t = getattr(T, dt)
        c = T.tensor([0.3, 1.0, 2.5, 12.0], dtype=t, requires_grad=True)
        r = T.tensor([2.0, 0.7, 1.0, 9.0], dtype=t, requires_grad=True)
        T.manual_seed(5)
        x = RSAMPLES[name](T, c, r)
        w = T.arange(x.numel(), dtype=t).reshape(x.shape) / 7.0 + 0.5
        grads = T.autograd.grad((x * w).sum(), [c, r], allow_unused=True)
        return x, type(x.grad_fn).__name__, grads
    (xj, nj, gj), (xt, nt, gt) = run(jitgrad), run(torch)
    assert nj == nt and np.array_equal(xj.detach().numpy(), xt.detach().numpy())
    tol = 1e-12 if dt == "float64" else 1e-5
    for a, b in zip(gj, gt):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def test_dirichlet_rsample_node_is_the_function():
    def run(T):
        c = T.tensor([0.5, 1.5, 3.0], requires_grad=True)
        return type(D(T).Dirichlet(c).rsample().grad_fn).__name__
    agree(run)


# ------------------------------------------------------- values and gradients (float64)

CONC = np.array([[0.4, 1.0, 2.5], [7.0, 0.9, 3.0]])
RATE = np.array([[2.0, 1.0, 0.3], [1.5, 4.0, 0.8]])
POS = np.array([[0.1, 2.0, 3.5], [0.2, 1.0, 7.0]])
UNIT = np.array([[0.1, 0.5, 0.93], [0.25, 0.02, 0.6]])
TOL = dict(rtol=1e-12, atol=1e-12)


def test_gamma_values_and_gradients():
    compare(lambda T, c, r, v: (
        (d := D(T).Gamma(c, r)).log_prob(v), d.entropy(), d.mean, d.mode, d.variance,
        d.stddev), [CONC, RATE, POS], grad=True, **TOL)
    compare(lambda T, df, v: (
        (d := D(T).Chi2(df)).log_prob(v), d.entropy(), d.mean, d.mode, d.variance, d.df),
        [CONC * 2, POS], grad=True, **TOL)


def test_beta_values_and_gradients():
    compare(lambda T, a, b, v: (
        (d := D(T).Beta(a, b)).log_prob(v), d.entropy(), d.mean, d.mode, d.variance,
        d.concentration1, d.concentration0), [CONC, RATE, UNIT], grad=True, **TOL)


def test_dirichlet_values_and_gradients():
    simplex = POS / POS.sum(-1, keepdims=True)
    compare(lambda T, c, v: (
        (d := D(T).Dirichlet(c)).log_prob(v), d.entropy(), d.mean, d.variance),
        [CONC, simplex], grad=True, **TOL)
    compare(lambda T, c: D(T).Dirichlet(c).mode, [np.array([[1.4, 0.9, 2.5], [2.0, 3.0, 0.5]])],
            grad=True, **TOL)
    # a row with every concentration below 1: one-hot at the largest (values only: its 0/0
    # row sends NaN into ClampBackward1, which jitgrad passes on where PyTorch's where() gives 0)
    compare(lambda T, c: D(T).Dirichlet(c).mode,
            [np.array([[0.4, 0.9, 0.5], [2.0, 3.0, 0.5]])], **TOL)


def test_gamma_cdf():
    """``Gamma.cdf`` is ``special.gammainc(concentration, rate * value)``; igamma has no
    gradient for its first argument in PyTorch, so only the rate gets one."""
    compare(lambda T, c, r, v: D(T).Gamma(c.detach(), r).cdf(v), [CONC, RATE, POS],
            grad=True, rtol=1e-10, atol=1e-12)
    raises_like(lambda T: D(T).Gamma(T.ones(3), 1.0).cdf(T.tensor([1.0, -1.0, 2.0])))


# ------------------------------------------------------------------------------ KL pairs

def _pairs(T, c, r, u):
    g, g2 = D(T).Gamma(c, r), D(T).Gamma(r, c + 0.5)
    b, b2 = D(T).Beta(c, r), D(T).Beta(r + 0.3, c)
    d, d2 = D(T).Dirichlet(c), D(T).Dirichlet(r)
    e, n = D(T).Exponential(r), D(T).Normal(u, r)
    uni, uni_in = D(T).Uniform(u - 3.0, u + 2.0), D(T).Uniform(u * 0.1 + 0.2, u * 0.1 + 0.7)
    uni_pos = D(T).Uniform(r, r + c)
    lap = D(T).Laplace(u, r)
    chi = D(T).Chi2(c)
    kl = D(T).kl_divergence
    return (kl(g, g2), kl(b, b2), kl(d, d2), kl(chi, g2), kl(g, chi),
            kl(b, e), kl(b, g), kl(b, n), kl(b, uni), kl(b, uni_in),
            kl(e, b), kl(e, g), kl(g, b), kl(g, uni), kl(g, e), kl(g, n),
            kl(lap, b), kl(lap, g), kl(n, b), kl(n, g),
            kl(uni_in, b), kl(uni, b), kl(uni_pos, g), kl(uni, g))


def test_kl_pairs_values_and_gradients():
    u = np.array([[0.5, 1.0, 2.0], [3.0, 0.2, 4.0]])
    compare(_pairs, [CONC, RATE, u], grad=True, rtol=1e-11, atol=1e-11)


# ------------------------------------------------------------------- expand, validation

def test_expand_shapes_and_values():
    def run(T):
        g = D(T).Gamma(T.tensor([0.5, 2.0]), 1.5).expand((3, 2))
        c = D(T).Chi2(T.tensor([1.0, 4.0])).expand((2, 2))
        b = D(T).Beta(T.tensor([0.5, 2.0]), 3.0).expand((4, 2))
        d = D(T).Dirichlet(T.tensor([0.5, 2.0, 1.0])).expand((2,))
        T.manual_seed(1)
        return [(x.batch_shape, x.event_shape, x.mean, x.variance, type(x).__name__,
                 x.sample().shape, x._validate_args) for x in (g, c, b, d)] + [c.df]
    agree(run)


@pytest.mark.parametrize("make", [
    lambda T, bad: D(T).Gamma(T.tensor(bad), 1.0),
    lambda T, bad: D(T).Gamma(1.0, T.tensor(bad)),
    lambda T, bad: D(T).Chi2(T.tensor(bad)),
    lambda T, bad: D(T).Beta(T.tensor(bad), 1.0),
    lambda T, bad: D(T).Beta(1.0, T.tensor(bad)),
    lambda T, bad: D(T).Dirichlet(T.tensor(bad)),
    lambda T, bad: D(T).Dirichlet(T.tensor(2.0)),
], ids=["gamma_conc", "gamma_rate", "chi2", "beta_c1", "beta_c0", "dirichlet",
        "dirichlet_0d"])
def test_argument_validation_errors(make):
    raises_like(lambda T: make(T, [0.5, float("nan"), -1.0]))


@pytest.mark.parametrize("make,value", [
    (lambda T: D(T).Gamma(T.ones(3), 1.0), lambda T: T.tensor([1.0, -1.0, 2.0])),
    (lambda T: D(T).Chi2(T.ones(3)), lambda T: T.tensor([1.0, -1.0, 2.0])),
    (lambda T: D(T).Beta(T.ones(3), 2.0), lambda T: T.tensor([0.5, 1.5, 0.0])),
    (lambda T: D(T).Dirichlet(T.ones(2, 3)), lambda T: T.tensor([0.5, 0.5, 0.5])),
    (lambda T: D(T).Dirichlet(T.ones(2, 3)), lambda T: T.tensor([0.5, 0.5])),
], ids=["gamma", "chi2", "beta", "dirichlet_not_simplex", "dirichlet_shape"])
def test_sample_validation_errors(make, value):
    raises_like(lambda T: make(T).log_prob(value(T)))


def test_registered_names_and_constraints():
    def run(T):
        out = []
        for name in ("Gamma", "Chi2", "Beta", "Dirichlet"):
            cls = getattr(D(T), name)
            out.append((name, {k: str(v) for k, v in cls.arg_constraints.items()},
                        str(cls.support), cls.has_rsample, name in D(T).__all__))
        return out
    agree(run)
