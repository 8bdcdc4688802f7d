"""Poisson, Binomial, Geometric, NegativeBinomial, Multinomial, MixtureSameFamily and
LowRankMultivariateNormal against PyTorch run here: seeded samples bit for bit, log_prob /
moments / entropy / enumerate_support with their gradients (float64, tight tolerances: lgamma
and friends may differ in the last ulp), the KL pairs of ``kl_discrete``, expand, and the
validation errors."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import agree, compare, raises_like, torch

import jitgrad

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is the reference")

TOL = dict(rtol=1e-11, atol=1e-12)


def D(T):
    return T.distributions


@pytest.fixture(autouse=True)
def _validation_on_by_default():
    """PyTorch's default (validation on) for every test: an earlier ``torch.compile`` may
    have switched it off for the process."""
    saved = [lib.distributions.Distribution._validate_args for lib in (torch, jitgrad)]
    for lib in (torch, jitgrad):
        lib.distributions.Distribution.set_default_validate_args(True)
    yield
    for lib, value in zip((torch, jitgrad), saved):
        lib.distributions.Distribution.set_default_validate_args(value)


def _make(T, name, dt="float64"):
    kind = getattr(T, dt)

    def t(x):
        return T.tensor(x, dtype=kind)
    if name == "Poisson":
        return D(T).Poisson(t([[1.5, 12.0, 0.3], [0.0, 40.0, 9.5]]))
    if name == "Binomial":
        return D(T).Binomial(t([5.0, 30.0, 7.0]), t([[0.3, 0.6, 0.9], [0.05, 1.0, 0.0]]))
    if name == "Binomial_logits":
        return D(T).Binomial(12, logits=t([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]]))
    if name == "Geometric":
        return D(T).Geometric(t([[0.3, 0.6, 0.05], [1.0, 0.9, 0.2]]))
    if name == "Geometric_logits":
        return D(T).Geometric(logits=t([-1.0, 0.5, 2.0]))
    if name == "NegativeBinomial":
        return D(T).NegativeBinomial(t([5.0, 3.0, 0.5]), t([[0.3, 0.6, 0.2], [0.0, 0.9, 0.5]]))
    if name == "Multinomial":
        return D(T).Multinomial(10, t([[0.2, 0.3, 0.5], [0.1, 0.0, 0.9]]))
    if name == "Mixture":
        return D(T).MixtureSameFamily(D(T).Categorical(t([[0.3, 0.7], [0.5, 0.5]])),
                                      D(T).Normal(t([[0.0, 2.0], [1.0, -1.0]]), t([1.0, 0.5])))
    if name == "MixtureMVN":
        comp = D(T).Independent(D(T).Normal(t([[0.0, 2.0], [1.0, -1.0], [3.0, 3.0]]),
                                            t([[1.0, 0.5], [2.0, 1.0], [0.3, 0.3]])), 1)
        return D(T).MixtureSameFamily(D(T).Categorical(logits=t([0.1, -0.4, 1.0])), comp)
    if name == "LowRankMVN":
        return D(T).LowRankMultivariateNormal(
            t([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]]), t([[1.0, 0.0], [0.5, 1.0], [0.2, 0.3]]),
            t([1.0, 2.0, 0.5]))
    raise KeyError(name)


NAMES = ["Poisson", "Binomial", "Binomial_logits", "Geometric", "Geometric_logits",
         "NegativeBinomial", "Multinomial", "Mixture", "MixtureMVN", "LowRankMVN"]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_seeded_samples_are_pytorchs(name, dt):
    def run(T):
        d = _make(T, name, dt)
        T.manual_seed(5)
        return d.sample(), d.sample((2, 3)), T.rand(2, dtype=T.float64)
    if name == "LowRankMVN":
        # the same normal draws; W @ eps is NumPy's product here and ATen's (its rounding, FMA
        # or not) there: equal up to the last ulp
        compare(run, [], rtol=1e-6 if dt == "float32" else 1e-14, atol=1e-7)
    else:
        agree(run)


def _stats(T, name):
    d = _make(T, name)
    out = []
    for attr in ("mean", "variance", "stddev", "mode"):
        try:
            out.append(getattr(d, attr))
        except NotImplementedError as e:
            out.append(str(e).replace("torch.", "").replace("jitgrad.", ""))
    try:
        out.append(d.entropy())
    except NotImplementedError as e:
        out.append(type(e).__name__)
    try:
        out.append(d.enumerate_support() if d.has_enumerate_support else None)
    except NotImplementedError as e:
        out.append(str(e))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_statistics(name):
    compare(lambda T: _stats(T, name), [], **TOL)


@pytest.mark.parametrize("name", NAMES)
def test_log_prob_of_own_samples(name):
    def run(T):
        d = _make(T, name)
        T.manual_seed(2)
        return d.log_prob(d.sample((4,)))
    compare(run, [], **TOL)


CNT = np.array([[4.0, 0.0, 7.0], [2.0, 11.0, 1.0]])
RATE = np.array([[1.5, 0.7, 6.0], [3.0, 12.5, 0.2]])
UNIT = np.array([[0.3, 0.45, 0.8], [0.05, 0.6, 0.25]])
REAL = np.array([[-1.0, 0.5, 2.0], [0.3, -2.5, 1.1]])


def test_poisson_log_prob_and_gradients():
    compare(lambda T, r, v: ((d := D(T).Poisson(r)).log_prob(v), d.mean, d.variance, d.mode),
            [RATE, CNT], grad=True, **TOL)


def test_binomial_log_prob_and_gradients():
    compare(lambda T, p, v: ((d := D(T).Binomial(11, p)).log_prob(v), d.mean, d.variance,
                             d.mode, d.logits, d.entropy()), [UNIT, CNT], grad=True, **TOL)
    compare(lambda T, lg, v: ((d := D(T).Binomial(T.full((3,), 11.0), logits=lg)).log_prob(v),
                              d.probs, d.entropy()), [REAL, CNT], grad=True, **TOL)


def test_geometric_log_prob_and_gradients():
    compare(lambda T, p, v: ((d := D(T).Geometric(p)).log_prob(v), d.mean, d.variance,
                             d.entropy(), d.logits), [UNIT, CNT], grad=True, **TOL)
    compare(lambda T, lg, v: ((d := D(T).Geometric(logits=lg)).log_prob(v), d.entropy()),
            [REAL, CNT], grad=True, **TOL)
    # probs == 1 with value 0: log_prob 0, not NaN
    compare(lambda T: D(T).Geometric(T.tensor([1.0, 0.5])).log_prob(T.tensor([0.0, 0.0])), [])


def test_negative_binomial_log_prob_and_gradients():
    compare(lambda T, n, p, v: ((d := D(T).NegativeBinomial(n, p)).log_prob(v), d.mean,
                                d.variance, d.mode), [RATE, UNIT, CNT], grad=True, **TOL)
    compare(lambda T, n, lg, v: D(T).NegativeBinomial(n, logits=lg).log_prob(v),
            [RATE, REAL, CNT], grad=True, **TOL)
    # total_count 0 and value 0 has probability 1
    compare(lambda T: D(T).NegativeBinomial(T.tensor([0.0, 2.0]), T.tensor([0.5, 0.5])).log_prob(
        T.tensor([0.0, 0.0])), [])


def test_multinomial_log_prob_and_gradients():
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    counts = np.array([[3.0, 0.0, 5.0], [1.0, 6.0, 1.0]])
    compare(lambda T, p, v: ((d := D(T).Multinomial(8, p)).log_prob(v), d.mean, d.variance,
                             d.entropy()), [probs, counts], grad=True, **TOL)
    compare(lambda T, lg, v: D(T).Multinomial(8, logits=lg).log_prob(v), [REAL, counts], grad=True,
            **TOL)
    # a -inf logit with a zero count contributes 0
    compare(lambda T: D(T).Multinomial(5, logits=T.tensor([0.0, -float("inf"), 1.0])).log_prob(
        T.tensor([2.0, 0.0, 3.0])), [])


def test_mixture_log_prob_cdf_and_gradients():
    w = np.array([[0.2, 0.8], [0.5, 0.5]])
    loc = np.array([[0.0, 2.0], [1.0, -1.0]])
    x = np.array([[0.3, -0.4], [1.5, 2.0], [0.0, 0.1]])
    compare(lambda T, w, m, x: (
        (d := D(T).MixtureSameFamily(D(T).Categorical(w), D(T).Normal(m, 1.5))).log_prob(x),
        d.cdf(x), d.mean, d.variance), [w, loc, x], grad=True, **TOL)


def test_lowrank_values_and_gradients():
    loc = np.array([0.0, 1.0, 2.0])
    W = np.array([[1.0, 0.0], [0.5, 1.0], [0.2, 0.3]])
    diag = np.array([1.0, 2.0, 0.5])
    x = np.array([[0.3, -0.4, 1.0], [1.5, 2.0, 2.2]])
    compare(lambda T, loc, W, diag, x: (
        (d := D(T).LowRankMultivariateNormal(loc, W, diag)).log_prob(x), d.entropy(),
        d.variance, d.scale_tril, d.covariance_matrix, d.precision_matrix),
        [loc, W, diag, x], grad=True, **TOL)


def test_lowrank_rsample_gradients():
    def run(T, loc, W, diag):
        T.manual_seed(3)
        return D(T).LowRankMultivariateNormal(loc, W, diag).rsample((4,))
    compare(run, [np.array([0.0, 1.0, 2.0]), np.array([[1.0, 0.0], [0.5, 1.0], [0.2, 0.3]]),
                  np.array([1.0, 2.0, 0.5])], grad=True, **TOL)


# ------------------------------------------------------------------------------ KL pairs

def _kl_pairs(T, r, p, lg):
    kl = D(T).kl_divergence
    loc = T.tensor([0.0, 1.0, 2.0], dtype=T.float64)
    W = T.tensor([[1.0, 0.0], [0.5, 1.0], [0.2, 0.3]], dtype=T.float64)
    lr1 = D(T).LowRankMultivariateNormal(loc * r[0, 0], W * p[0, 0], r[1])
    lr2 = D(T).LowRankMultivariateNormal(loc.flip(0), W.flip(0) + lg[0, 0], r[0] + 1)
    mvn = D(T).MultivariateNormal(loc - 1, scale_tril=T.eye(3, dtype=T.float64) * r[0]
                                  + T.tril(W @ W.T, -1))
    return (kl(D(T).Poisson(r), D(T).Poisson(r.flip(-1))),
            kl(D(T).Binomial(10, p), D(T).Binomial(10, logits=lg)),
            kl(D(T).Binomial(T.tensor([10.0, 12.0, 9.0], dtype=T.float64), p),
               D(T).Binomial(9, p.flip(0))),
            kl(D(T).Geometric(p), D(T).Geometric(logits=lg)),
            kl(D(T).Bernoulli(p), D(T).Poisson(r)),
            kl(D(T).Poisson(r), D(T).Bernoulli(p)), kl(D(T).Poisson(r), D(T).Binomial(5, p)),
            kl(lr1, lr2), kl(mvn, lr2), kl(lr1, mvn))


def test_kl_pairs_values_and_gradients():
    compare(_kl_pairs, [RATE, UNIT, REAL], grad=True, rtol=1e-10, atol=1e-11)


def test_kl_errors():
    raises_like(lambda T: D(T).kl_divergence(D(T).Binomial(5, T.tensor([0.5])),
                                             D(T).Binomial(6, T.tensor([0.5]))))
    raises_like(lambda T: D(T).kl_divergence(
        D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(2, 1), T.ones(2)),
        D(T).LowRankMultivariateNormal(T.zeros(3), T.ones(3, 1), T.ones(3))))
    raises_like(lambda T: D(T).kl_divergence(
        D(T).MultivariateNormal(T.zeros(2), T.eye(2)),
        D(T).LowRankMultivariateNormal(T.zeros(3), T.ones(3, 1), T.ones(3))))


# ------------------------------------------------------------------- expand, validation

def test_expand_shapes_and_values():
    def run(T):
        out = []
        for name, shape in (("Poisson", (4, 2, 3)), ("Binomial", (2, 2, 3)),
                            ("Geometric", (3, 2, 3)), ("NegativeBinomial", (2, 2, 3)),
                            ("Multinomial", (3, 2)), ("Mixture", (4, 2)),
                            ("LowRankMVN", (2, 2))):
            x = _make(T, name).expand(shape)
            T.manual_seed(1)
            out.append((x.batch_shape, x.event_shape, x.mean, type(x).__name__,
                        x.sample().shape, x._validate_args))
        return out
    agree(run)


@pytest.mark.parametrize("make", [
    lambda T: D(T).Poisson(T.tensor([1.0, -1.0])),
    lambda T: D(T).Binomial(T.tensor([1.5, 2.0]), T.tensor([0.5, 0.5])),
    lambda T: D(T).Binomial(3, T.tensor([0.5, 1.5])),
    lambda T: D(T).Binomial(3),
    lambda T: D(T).Geometric(T.tensor([0.0, 0.5])),
    lambda T: D(T).Geometric(T.tensor([1.5])),
    lambda T: D(T).NegativeBinomial(T.tensor([-1.0]), T.tensor([0.5])),
    lambda T: D(T).NegativeBinomial(2.0, T.tensor([1.0])),
    lambda T: D(T).Multinomial(2.5, T.tensor([0.5, 0.5])),
    lambda T: D(T).Multinomial(3, T.tensor([0.5, -0.6])),
    lambda T: D(T).MixtureSameFamily(D(T).Normal(0.0, 1.0), D(T).Normal(T.zeros(2), 1.0)),
    lambda T: D(T).MixtureSameFamily(D(T).Categorical(T.ones(3)), D(T).Normal(T.zeros(2), 1.0)),
    lambda T: D(T).MixtureSameFamily(D(T).Categorical(T.ones(4, 2)),
                                     D(T).Normal(T.zeros(3, 2), 1.0)),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(()), T.ones(2, 1), T.ones(2)),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(2), T.ones(2)),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(3, 1), T.ones(2)),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(2, 1), T.ones(3)),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(2, 1), T.tensor([1.0, -1.0])),
    lambda T: D(T).LowRankMultivariateNormal(T.zeros(3, 2), T.ones(4, 2, 1), T.ones(2)),
    lambda T: D(T).Binomial(T.tensor([3.0, 4.0]), T.tensor([0.5, 0.5])).entropy(),
])
def test_argument_validation_errors(make):
    raises_like(make)


@pytest.mark.parametrize("make,value", [
    (lambda T: D(T).Poisson(T.ones(3)), lambda T: T.tensor([1.0, -1.0, 2.0])),
    (lambda T: D(T).Poisson(T.ones(3)), lambda T: T.tensor([1.0, 0.5, 2.0])),
    (lambda T: D(T).Binomial(4, T.ones(3) / 2), lambda T: T.tensor([1.0, 5.0, 2.0])),
    (lambda T: D(T).Geometric(T.ones(3) / 2), lambda T: T.tensor([1.0, -2.0, 2.0])),
    (lambda T: D(T).NegativeBinomial(3.0, T.ones(3) / 2), lambda T: T.tensor([1.5, 0.0, 2.0])),
    (lambda T: D(T).Multinomial(3, T.ones(3) / 3), lambda T: T.tensor([1.0, 1.0, 2.0])),
    (lambda T: D(T).MixtureSameFamily(D(T).Categorical(T.ones(2)), D(T).Exponential(T.ones(2))),
     lambda T: T.tensor([1.0, -1.0])),
    (lambda T: D(T).LowRankMultivariateNormal(T.zeros(2), T.ones(2, 1), T.ones(2)),
     lambda T: T.tensor([1.0, 2.0, 3.0])),
])
def test_sample_validation_errors(make, value):
    raises_like(lambda T: make(T).log_prob(value(T)))


def test_registered_names_and_constraints():
    def run(T):
        out = []
        for name in ("Poisson", "Binomial", "Geometric", "NegativeBinomial", "Multinomial",
                     "MixtureSameFamily", "LowRankMultivariateNormal"):
            cls = getattr(D(T), name)
            out.append((name, {k: str(v) for k, v in cls.arg_constraints.items()},
                        cls.has_rsample, cls.has_enumerate_support, name in D(T).__all__))
        b = D(T).Binomial(T.tensor([3.0, 4.0]), T.tensor([0.5, 0.5]))
        m = D(T).MixtureSameFamily(D(T).Categorical(T.ones(2)), D(T).Normal(T.zeros(2), 1.0))
        out.append((str(b.support), b.support.upper_bound, str(m.support).replace("jitgrad", "torch"),
                    str(D(T).Multinomial(3, T.ones(2) / 2).support)))
        return out
    agree(run)
