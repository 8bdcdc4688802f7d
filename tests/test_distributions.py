"""jitgrad.distributions against torch.distributions: seeded samples bit for bit, log_prob /
entropy / moments / cdf / KL values and their gradients (float64), shapes, expand, Independent,
argument and sample validation (type and full message), repr, and two small training steps
(REINFORCE with a Categorical policy, a VAE with Normal/Bernoulli and the analytic KL)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _parity import agree, check_observations, check_snippet, compare, raises_like, torch

import jitgrad

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is the reference")


def D(T):
    return T.distributions


@pytest.fixture(autouse=True)
def _validation_on_by_default():
    """Each test starts from PyTorch's default (validation on): ``torch.compile``, which an
    earlier test file calls, switches torch.distributions' validation off for the process."""
    saved = [lib.distributions.Distribution._validate_args for lib in (torch, jitgrad)]
    for lib in (torch, jitgrad):
        lib.distributions.Distribution.set_default_validate_args(True)
    yield
    for lib, value in zip((torch, jitgrad), saved):
        lib.distributions.Distribution.set_default_validate_args(value)


# ------------------------------------------------------------------ seeded samples, bit for bit

def _loc_scale(T, dt):
    loc = T.tensor([[0.5, -1.0, 2.0], [0.0, 3.0, -2.5]], dtype=dt)
    return loc, T.tensor([[1.0, 0.5, 2.0], [0.1, 1.5, 3.0]], dtype=dt)


SAMPLERS = {
    "normal.sample": lambda T, dt, s: D(T).Normal(*_loc_scale(T, dt)).sample(s),
    "normal.rsample": lambda T, dt, s: D(T).Normal(*_loc_scale(T, dt)).rsample(s),
    "normal.scalar": lambda T, dt, s: D(T).Normal(1.0, 2.0).rsample(s),
    "normal.0d": lambda T, dt, s: D(T).Normal(T.tensor(1.0, dtype=dt), 2.0).sample(s),
    "uniform": lambda T, dt, s: D(T).Uniform(T.tensor([0.0, -2.0], dtype=dt),
                                             T.tensor([1.0, 5.0], dtype=dt)).rsample(s),
    "exponential": lambda T, dt, s: D(T).Exponential(T.tensor([0.5, 2.0], dtype=dt)).rsample(s),
    "bernoulli.probs": lambda T, dt, s: D(T).Bernoulli(
        T.tensor([0.1, 0.5, 0.9], dtype=dt)).sample(s),
    "bernoulli.0d": lambda T, dt, s: D(T).Bernoulli(T.tensor(0.3, dtype=dt)).sample(s),
    "bernoulli.logits": lambda T, dt, s: D(T).Bernoulli(
        logits=T.tensor([[-2.0, 0.0], [1.0, 3.0]], dtype=dt)).sample(s),
    "categorical.probs1d": lambda T, dt, s: D(T).Categorical(
        T.tensor([0.2, 0.3, 0.5], dtype=dt)).sample(s),
    "categorical.logits2d": lambda T, dt, s: D(T).Categorical(
        logits=T.tensor([[0.0, 1.0, -1.0, 2.0], [3.0, 0.0, 0.0, 0.0]], dtype=dt)).sample(s),
    "onehot": lambda T, dt, s: D(T).OneHotCategorical(
        T.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], dtype=dt)).sample(s),
    "independent": lambda T, dt, s: D(T).Independent(
        D(T).Normal(*_loc_scale(T, dt)), 1).rsample(s),
    "expanded": lambda T, dt, s: D(T).Normal(T.tensor([0.0, 1.0], dtype=dt), 1.0).expand(
        (3, 2)).sample(s),
}


@pytest.mark.parametrize("shape", [(), (2, 3)], ids=["none", "2d"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeded_samples_are_pytorchs(name, dt, shape):
    def run(T):
        T.manual_seed(1234)
        first = SAMPLERS[name](T, getattr(T, dt), shape)
        # the stream after the draw is also PyTorch's (the same number of draws)
        return first, T.rand(3, dtype=T.float64)
    agree(run)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_laplace_draws_are_pytorchs(dt):
    """Laplace's uniform draws are PyTorch's; the sample ``loc - scale * sign(u) *
    log1p(-|u|)`` may differ in the last place, because jitgrad's log1p kernel is not
    PyTorch's vectorized (SLEEF) one."""
    def run(T):
        T.manual_seed(1234)
        x = D(T).Laplace(*_loc_scale(T, getattr(T, dt))).rsample((4,))
        return x, T.rand(3, dtype=T.float64)
    (xj, rj), (xt, rt) = run(jitgrad), run(torch)
    assert str(xj.dtype) == str(xt.dtype) and tuple(xj.shape) == tuple(xt.shape)
    np.testing.assert_array_max_ulp(xj.detach().numpy(), xt.numpy(), maxulp=4)
    assert rj.tolist() == rt.tolist()


def test_sample_n_is_deprecated_and_draws_like_sample():
    check_snippet("torch.manual_seed(0)\n"
                  "d = torch.distributions.Normal(torch.zeros(2), 1.0)\n"
                  "d.sample_n(3)",
                  lambda v, lib: (tuple(v.shape), v.numpy().tolist()))


def test_sample_carries_no_graph_and_rsample_does():
    def run(T):
        loc = T.tensor([0.0, 1.0], requires_grad=True)
        d = D(T).Normal(loc, 2.0)
        return [d.sample().requires_grad, d.rsample().requires_grad,
                D(T).Uniform(loc, 3.0).rsample((2,)).requires_grad,
                d.has_rsample, D(T).Categorical(T.ones(3)).has_rsample]
    agree(run)


# ------------------------------------------------------- values and gradients (float64)

LOC = np.array([[0.3, -1.2, 2.0], [0.0, 0.7, -0.4]])
SCALE = np.array([[1.0, 0.5, 2.0], [0.3, 1.5, 0.8]])
VALUE = np.array([[0.1, -1.0, 3.5], [0.2, 0.0, -1.0]])
PROBS = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
LOGITS = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.7]])
TOL = dict(rtol=1e-12, atol=1e-12)


def test_normal_values_and_gradients():
    compare(lambda T, loc, scale, v: (
        (d := D(T).Normal(loc, scale)).log_prob(v), d.entropy(), d.cdf(v), d.mean, d.stddev,
        d.variance, d.mode, d.icdf(T.sigmoid(v)), d.perplexity()),
        [LOC, SCALE, VALUE], grad=True, **TOL)


def test_laplace_and_exponential_values_and_gradients():
    compare(lambda T, loc, scale, v: (
        (d := D(T).Laplace(loc, scale)).log_prob(v), d.entropy(), d.cdf(v), d.variance,
        d.stddev, d.icdf(T.sigmoid(v))), [LOC, SCALE, VALUE], grad=True, **TOL)
    compare(lambda T, rate, v: (
        (d := D(T).Exponential(rate)).log_prob(v), d.entropy(), d.cdf(v), d.mean, d.variance,
        d.stddev, d.mode, d.icdf(T.sigmoid(v))), [SCALE, np.abs(VALUE)], grad=True, **TOL)


def test_uniform_values_and_gradients():
    # one value outside [low, high): log_prob -inf there, as PyTorch's log(0)
    compare(lambda T, low, high, v: (
        (d := D(T).Uniform(low, high, validate_args=False)).log_prob(v), d.entropy(),
        d.cdf(v), d.mean, d.stddev, d.variance, d.icdf(T.sigmoid(v))),
        [LOC, LOC + SCALE, np.clip(VALUE, LOC, LOC + SCALE - 1e-3) + [[0, 0, 0], [0, 0, 9]]],
        grad=True, **TOL)


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_categorical_values_and_gradients(param):
    arr = PROBS if param == "probs" else LOGITS
    compare(lambda T, p: (
        (d := D(T).Categorical(**{param: p})).log_prob(T.tensor([2, 0])),
        d.log_prob(T.tensor([[1], [2]])), d.entropy(), d.probs, d.logits, d.mode, d.mean,
        d.enumerate_support(), d.enumerate_support(expand=False)), [arr], grad=True, **TOL)


def test_categorical_zero_probability_entropy_is_finite():
    compare(lambda T, p: (D(T).Categorical(probs=p).entropy(),
                          D(T).Categorical(probs=p).log_prob(T.tensor([0, 1]))),
            [np.array([[0.0, 0.4, 0.6], [1.0, 0.0, 0.0]])], grad=True, **TOL)


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_bernoulli_values_and_gradients(param):
    arr = PROBS if param == "probs" else LOGITS
    compare(lambda T, p: (
        (d := D(T).Bernoulli(**{param: p})).log_prob(T.tensor([[1.0, 0.0, 1.0]]).double()),
        d.entropy(), d.mean, d.variance, d.probs, d.logits, d.enumerate_support()),
        [arr], grad=True, **TOL)


def test_bernoulli_mode_marks_one_half_nan():
    compare(lambda T, p: D(T).Bernoulli(p).mode, [np.array([0.2, 0.5, 0.7])], **TOL)


def test_onehot_values_and_gradients():
    compare(lambda T, p: (
        (d := D(T).OneHotCategorical(logits=p)).log_prob(T.eye(3).double()[[2, 0]]),
        d.entropy(), d.mean, d.variance, d.mode, d.enumerate_support()),
        [LOGITS], grad=True, **TOL)


def test_straight_through_passes_the_sample_gradient_to_probs():
    check_observations(lambda T, record: (
        T.manual_seed(3),
        p := T.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=T.float64, requires_grad=True),
        s := D(T).OneHotCategoricalStraightThrough(p).rsample((2,)),
        record("sample", s.detach()),
        (s * T.arange(3.0, dtype=T.float64)).sum().backward(),
        record("grad", p.grad)))


def test_independent_values_and_gradients():
    compare(lambda T, loc, scale, v: (
        (d := D(T).Independent(D(T).Normal(loc, scale), 1)).log_prob(v), d.entropy(), d.mean,
        d.variance, D(T).Independent(D(T).Normal(loc, scale), 2).log_prob(v)),
        [LOC, SCALE, VALUE], grad=True, **TOL)


KL_PAIRS = {
    "normal": lambda T, a, b, c, d: (D(T).Normal(a, b), D(T).Normal(c, d)),
    "laplace": lambda T, a, b, c, d: (D(T).Laplace(a, b), D(T).Laplace(c, d)),
    "exponential": lambda T, a, b, c, d: (D(T).Exponential(b), D(T).Exponential(d)),
    "uniform": lambda T, a, b, c, d: (D(T).Uniform(a, a + b), D(T).Uniform(c, c + d)),
    "bernoulli": lambda T, a, b, c, d: (D(T).Bernoulli(logits=a), D(T).Bernoulli(logits=c)),
    "categorical": lambda T, a, b, c, d: (D(T).Categorical(logits=a),
                                          D(T).Categorical(logits=c)),
    "onehot": lambda T, a, b, c, d: (D(T).OneHotCategorical(b), D(T).OneHotCategorical(d)),
    "independent": lambda T, a, b, c, d: (D(T).Independent(D(T).Normal(a, b), 1),
                                          D(T).Independent(D(T).Normal(c, d), 1)),
    "normal-laplace": lambda T, a, b, c, d: (D(T).Normal(a, b), D(T).Laplace(c, d)),
    "laplace-normal": lambda T, a, b, c, d: (D(T).Laplace(a, b), D(T).Normal(c, d)),
    "exponential-normal": lambda T, a, b, c, d: (D(T).Exponential(b), D(T).Normal(c, d)),
    "uniform-normal": lambda T, a, b, c, d: (D(T).Uniform(a, a + b), D(T).Normal(c, d)),
    "uniform-exponential": lambda T, a, b, c, d: (D(T).Uniform(b, b + 1), D(T).Exponential(d)),
    "normal-uniform (inf)": lambda T, a, b, c, d: (D(T).Normal(a, b), D(T).Uniform(c, c + d)),
}


@pytest.mark.parametrize("pair", sorted(KL_PAIRS))
def test_kl_divergence_values_and_gradients(pair):
    def fn(T, a, b, c, d):
        p, q = KL_PAIRS[pair](T, a, b, c, d)
        return T.distributions.kl_divergence(p, q)
    compare(fn, [LOC, SCALE, VALUE, SCALE[::-1].copy()], grad=True, **TOL)


def test_kl_infinite_where_supports_do_not_nest():
    # Uniform q narrower than p, Bernoulli/Categorical with q's zero probabilities
    compare(lambda T, a, b: (
        D(T).kl_divergence(D(T).Uniform(a, a + 2), D(T).Uniform(b, b + 1)),
        D(T).kl_divergence(D(T).Bernoulli(T.tensor([0.0, 0.5, 1.0]).double()),
                           D(T).Bernoulli(T.tensor([0.5, 0.0, 1.0]).double())),
        D(T).kl_divergence(D(T).Categorical(T.tensor([0.5, 0.5, 0.0]).double()),
                           D(T).Categorical(T.tensor([0.0, 0.5, 0.5]).double()))),
        [np.array([0.0, 1.0]), np.array([0.5, 0.0])], **TOL)


def test_kl_unregistered_pairs_raise_pytorchs_errors():
    for make in (lambda T: D(T).kl_divergence(D(T).Normal(0.0, 1.0), D(T).Bernoulli(0.3)),
                 lambda T: D(T).kl_divergence(D(T).Categorical(T.ones(2)), D(T).Normal(0., 1.)),
                 lambda T: D(T).kl_divergence(D(T).Independent(D(T).Normal(T.zeros(2), 1.), 1),
                                              D(T).Independent(D(T).Normal(T.zeros(2, 2), 1.),
                                                               2))):
        raises_like(make)


def test_register_kl_dispatches_subclasses():
    def run(T):
        class MyNormal(T.distributions.Normal):
            pass

        @T.distributions.register_kl(MyNormal, T.distributions.Normal)
        def _kl(p, q):
            return T.zeros(p.batch_shape)
        return [T.distributions.kl_divergence(MyNormal(T.zeros(2), 1.0),
                                              T.distributions.Normal(1.0, 1.0)),
                T.distributions.kl_divergence(T.distributions.Normal(0.0, 1.0),
                                              MyNormal(T.ones(2), 2.0))]
    agree(run)


# --------------------------------------------------------------------- shapes, expand, repr

def _describe(d):
    return [d.batch_shape, d.event_shape, d._extended_shape((4,)), repr(d)]


SHAPED = {
    "normal": lambda T: D(T).Normal(T.zeros(2, 3), T.ones(3)),
    "normal.scalar": lambda T: D(T).Normal(0.5, 2),
    "normal.0d": lambda T: D(T).Normal(T.tensor(0.5), 2.0),
    "normal.numel1": lambda T: D(T).Normal(T.tensor([0.5]), 2.0),
    "categorical": lambda T: D(T).Categorical(logits=T.zeros(2, 5)),
    "categorical.1d": lambda T: D(T).Categorical(T.ones(4)),
    "bernoulli": lambda T: D(T).Bernoulli(logits=T.zeros(4)),
    "bernoulli.scalar": lambda T: D(T).Bernoulli(0.25),
    "uniform": lambda T: D(T).Uniform(T.zeros(3), 2.0),
    "exponential": lambda T: D(T).Exponential(T.ones(2, 1)),
    "laplace": lambda T: D(T).Laplace(0.0, T.ones(2)),
    "onehot": lambda T: D(T).OneHotCategorical(T.ones(3, 4)),
    "independent": lambda T: D(T).Independent(D(T).Normal(T.zeros(2, 3, 4), 1.0), 2),
    "mvn": lambda T: D(T).MultivariateNormal(T.zeros(2, 3), scale_tril=T.eye(3)),
    "mvn.cov": lambda T: D(T).MultivariateNormal(T.zeros(3), 2 * T.eye(3)),
    "independent.0": lambda T: D(T).Independent(D(T).Bernoulli(T.full((2,), 0.5)), 0),
}


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_shapes_expand_and_repr(name):
    def run(T):
        d = SHAPED[name](T)
        big = d.expand((5,) + tuple(d.batch_shape))
        return _describe(d) + _describe(big) + [big.mean.shape if name[:3] != "cat" else None]
    agree(run)


def test_expanded_distribution_log_prob_and_samples():
    def run(T, logits):
        T.manual_seed(5)
        d = D(T).Categorical(logits=logits).expand((2, 2))
        x = d.sample((3,))
        return [x, d.log_prob(x), d.entropy(), d.probs.shape, d._validate_args]
    compare(run, [np.array([0.0, 1.0, 2.0])], grad=True, **TOL)


# ------------------------------------------------------------------------------- validation

@pytest.mark.parametrize("make", [
    lambda T, a: D(T).Normal(a, T.ones(3)),
    lambda T, a: D(T).Normal(T.zeros(3), a),
    lambda T, a: D(T).Normal(0.0, -1.0),
    lambda T, a: D(T).Normal(T.zeros(3), a.abs().requires_grad_()),
    lambda T, a: D(T).Uniform(a, a - 1),
    lambda T, a: D(T).Exponential(a),
    lambda T, a: D(T).Laplace(a, 0.0),
    lambda T, a: D(T).Bernoulli(a),
    lambda T, a: D(T).Bernoulli(logits=a),
    lambda T, a: D(T).Categorical(a),
    lambda T, a: D(T).Categorical(logits=a),
    lambda T, a: D(T).Categorical(T.tensor(0.5)),
    lambda T, a: D(T).Categorical(a, logits=a),
    lambda T, a: D(T).Bernoulli(),
    lambda T, a: D(T).OneHotCategorical(T.tensor([[0.5, -0.5]]), validate_args=True),
    lambda T, a: D(T).Independent(D(T).Normal(a, 1.0), 2),
    lambda T, a: D(T).Normal("0", 1.0),
], ids=lambda f: "")
def test_argument_validation_errors(make):
    raises_like(make, np.array([0.5, float("nan"), -1.0]))


@pytest.mark.parametrize("make,value", [
    (lambda T: D(T).Normal(T.zeros(3), 1.0), lambda T: T.zeros(4)),
    (lambda T: D(T).Normal(T.zeros(3), 1.0), lambda T: [0.0, 1.0, 2.0]),
    (lambda T: D(T).Exponential(T.ones(3)), lambda T: T.tensor([1.0, -1.0, 2.0])),
    (lambda T: D(T).Uniform(0.0, T.ones(3)), lambda T: T.tensor([0.5, 1.5, 0.0])),
    (lambda T: D(T).Bernoulli(T.full((3,), 0.5)), lambda T: T.tensor([0.0, 0.5, 1.0])),
    (lambda T: D(T).Categorical(T.ones(2, 3)), lambda T: T.tensor([0, 3])),
    (lambda T: D(T).Categorical(T.ones(2, 3)), lambda T: T.tensor([0.5, 1.0])),
    (lambda T: D(T).OneHotCategorical(T.ones(3)), lambda T: T.tensor([1.0, 1.0, 0.0])),
    (lambda T: D(T).OneHotCategorical(T.ones(3)), lambda T: T.tensor([1.0, 0.0])),
    (lambda T: D(T).Independent(D(T).Normal(T.zeros(2, 3), 1.0), 1),
     lambda T: T.tensor([[0.0, float("nan"), 1.0]])),
], ids=lambda f: "")
def test_sample_validation_errors(make, value):
    raises_like(lambda T: make(T).log_prob(value(T)))


def test_validate_args_switches():
    def run(T):
        Dist = T.distributions.Distribution
        out = [D(T).Normal(0.0, -1.0, validate_args=False).scale,
               D(T).Normal(0.0, 1.0, validate_args=False).log_prob(T.tensor([1.0, 2.0]))]
        Dist.set_default_validate_args(False)
        try:
            out.append(D(T).Normal(0.0, -1.0)._validate_args)
        finally:
            Dist.set_default_validate_args(True)
        out.append(D(T).Normal(0.0, 1.0)._validate_args)
        try:
            Dist.set_default_validate_args(2)
        except ValueError as e:
            out.append(("ValueError", str(e)))
        return out
    agree(run)


def test_constraints_check_and_repr():
    def run(T):
        c = T.distributions.constraints
        x = T.tensor([[-1.0, 0.0, 0.5], [1.0, 2.0, float("nan")]])
        cons = [c.real, c.positive, c.nonnegative, c.unit_interval, c.boolean,
                c.greater_than(0.5), c.greater_than_eq(0.5), c.less_than(1.0),
                c.interval(0.0, 1.0), c.half_open_interval(0.0, 1.0), c.integer_interval(0, 1),
                c.nonnegative_integer, c.positive_integer, c.real_vector, c.simplex,
                c.one_hot, c.independent(c.positive, 1), c.multinomial(3)]
        return [(repr(k), k.check(x), k.event_dim, k.is_discrete) for k in cons] + [
            c.is_dependent(c.dependent), c.is_dependent(c.real),
            c.lower_cholesky.check(T.tensor([[1.0, 0.0], [2.0, 3.0]])),
            c.square.check(T.zeros(2, 2, 3))]
    agree(run)


# ------------------------------------------------------------ small training steps, end to end

def test_reinforce_step():
    """A linear softmax policy: sample actions, a REINFORCE loss with an entropy bonus, one
    SGD step; the actions, loss, gradients and updated weights agree with PyTorch."""
    obs = np.random.default_rng(0).standard_normal((6, 4))
    w0 = np.random.default_rng(1).standard_normal((4, 3)) * 0.5

    def scenario(T, record):
        T.manual_seed(7)
        w = T.tensor(w0, requires_grad=True)
        opt = T.optim.SGD([w], lr=0.1)
        for _ in range(2):
            dist = D(T).Categorical(logits=T.tensor(obs) @ w)
            actions = dist.sample()
            returns = (actions == 1).double() - 0.5
            loss = -(dist.log_prob(actions) * returns).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            record("actions", actions)
            record("loss", loss.detach())
            record("grad", [w.grad])
        record("w", w.detach())
    check_observations(scenario)


def test_vae_step():
    """A linear Gaussian encoder and Bernoulli decoder: a reparameterized sample, the ELBO with
    the analytic KL against a standard normal, one Adam step."""
    rng = np.random.default_rng(2)
    x0 = (rng.random((5, 6)) > 0.5).astype(np.float64)
    we0, wd0 = rng.standard_normal((6, 4)) * 0.3, rng.standard_normal((2, 6)) * 0.3

    def scenario(T, record):
        T.manual_seed(11)
        x, we, wd = T.tensor(x0), T.tensor(we0, requires_grad=True), T.tensor(
            wd0, requires_grad=True)
        opt = T.optim.Adam([we, wd], lr=0.01)
        h = x @ we
        mu, logvar = h[:, :2], h[:, 2:]
        q = D(T).Independent(D(T).Normal(mu, (0.5 * logvar).exp()), 1)
        z = q.rsample()
        prior = D(T).Independent(D(T).Normal(T.zeros_like(mu), T.ones_like(mu)), 1)
        recon = D(T).Independent(D(T).Bernoulli(logits=z @ wd), 1).log_prob(x)
        loss = (D(T).kl_divergence(q, prior) - recon).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        record("z", z.detach())
        record("loss", loss.detach())
        record("grads", [we.grad, wd.grad])
        record("we", we.detach())
    check_observations(scenario)


def test_lazy_logits_keep_the_graph_under_no_grad():
    def run(T):
        p = T.tensor([0.2, 0.8], requires_grad=True)
        d = D(T).Bernoulli(p)
        with T.no_grad():
            logits = d.logits
        return [logits.requires_grad, "logits" in d.__dict__, "probs" in d.__dict__]
    agree(run)


def test_import_is_lazy_and_cheap():
    import subprocess
    import sys
    code = ("import sys, jitgrad; assert 'jitgrad.distributions' not in sys.modules; "
            "import jitgrad.distributions; "
            "assert 'numba.cuda' not in sys.modules and 'jitgrad.nn' not in sys.modules; "
            "print(jitgrad.distributions.Normal.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "jitgrad.distributions.normal", out.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jitgrad.distributions.Normal is jitgrad.distributions.normal.Normal


# ------------------------------------------------------------------------ MultivariateNormal

COV = np.array([[2.0, 0.3, -0.2], [0.3, 1.0, 0.4], [-0.2, 0.4, 1.5]])
TRIL = np.linalg.cholesky(COV)


@pytest.mark.parametrize("param", ["scale_tril", "covariance_matrix", "precision_matrix"])
def test_mvn_values_and_gradients(param):
    mat = {"scale_tril": TRIL, "covariance_matrix": COV,
           "precision_matrix": np.linalg.inv(COV)}[param]

    def fn(T, loc, m, v):
        d = D(T).MultivariateNormal(loc, **{param: m})
        return (d.log_prob(v), d.entropy(), d.mean, d.variance, d.scale_tril,
                d.covariance_matrix, d.precision_matrix, d.batch_shape, d.event_shape)
    # loc batched (2, 3) against one matrix; the value broadcast over a sample dim
    compare(fn, [LOC, mat, np.stack([VALUE, VALUE[::-1]])], grad=True, rtol=1e-10, atol=1e-10)


def test_mvn_batched_matrices_and_kl():
    tril2 = np.stack([TRIL, np.linalg.cholesky(COV + np.eye(3))])
    compare(lambda T, a, la, b, lb: (
        D(T).kl_divergence(D(T).MultivariateNormal(a, scale_tril=la),
                           D(T).MultivariateNormal(b, scale_tril=lb)),
        D(T).kl_divergence(D(T).MultivariateNormal(a[0], scale_tril=la[1]),
                           D(T).MultivariateNormal(b, scale_tril=lb[0])),
        D(T).MultivariateNormal(a, scale_tril=la).expand((4, 2)).log_prob(b)),
        [LOC, tril2, VALUE, tril2[::-1].copy()], grad=True, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_mvn_seeded_rsample(dt):
    """The normal draws are PyTorch's; ``loc + L @ eps`` goes through a Cholesky factor and a
    matrix product that round differently from PyTorch's, so the samples agree to a few ulps."""
    def run(T):
        T.manual_seed(9)
        d = D(T).MultivariateNormal(T.tensor(LOC, dtype=getattr(T, dt)),
                                    covariance_matrix=T.tensor(COV, dtype=getattr(T, dt)))
        return d.rsample((5,)), T.rand(3, dtype=T.float64)
    (xj, rj), (xt, rt) = run(jitgrad), run(torch)
    assert str(xj.dtype) == str(xt.dtype) and tuple(xj.shape) == tuple(xt.shape) == (5, 2, 3)
    np.testing.assert_allclose(xj.numpy(), xt.numpy(), rtol=1e-5 if dt == "float32" else 1e-13)
    assert rj.tolist() == rt.tolist()


@pytest.mark.parametrize("make", [
    lambda T, m: D(T).MultivariateNormal(T.zeros(3).double(), covariance_matrix=-m),
    lambda T, m: D(T).MultivariateNormal(T.zeros(3).double(), scale_tril=m),
    lambda T, m: D(T).MultivariateNormal(T.zeros(3).double()),
    lambda T, m: D(T).MultivariateNormal(T.tensor(0.0), m),
    lambda T, m: D(T).MultivariateNormal(T.zeros(2, 3).double(), m.expand(4, 3, 3)),
    lambda T, m: D(T).MultivariateNormal(T.zeros(3).double(), m).log_prob(T.zeros(2)),
], ids=lambda f: "")
def test_mvn_errors(make):
    raises_like(make, COV)
