"""LKJCholesky and Wishart against PyTorch run here: seeded samples (LKJCholesky bit for bit;
Wishart's Bartlett factor goes through a matrix product, NumPy's here and ATen's there, so up
to the last ulps), the singular-sample redraw and its warning, log_prob / moments / entropy
with their gradients (float64), rsample gradients, expand and the validation errors."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import agree, check_snippet, compare, raises_like, torch

import jitgrad

# PyTorch's Wishart.rsample warns "Singular sample detected." for every draw (its check reads
# the support test the wrong way round); jitgrad's port does the same: checked where it matters
pytestmark = [pytest.mark.skipif(torch is None, reason="PyTorch is the reference"),
              pytest.mark.filterwarnings("ignore:Singular sample detected")]

TOL = dict(rtol=1e-10, atol=1e-12)


def D(T):
    return T.distributions


@pytest.fixture(autouse=True)
def _validation_on_by_default():
    saved = [lib.distributions.Distribution._validate_args for lib in (torch, jitgrad)]
    for lib in (torch, jitgrad):
        lib.distributions.Distribution.set_default_validate_args(True)
    yield
    for lib, value in zip((torch, jitgrad), saved):
        lib.distributions.Distribution.set_default_validate_args(value)


COV = [[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("dim,conc", [(2, 1.0), (3, [0.5, 2.0]), (5, [[1.5], [0.3]])])
def test_lkj_samples_are_pytorchs(dim, conc, dt):
    def run(T):
        d = D(T).LKJCholesky(dim, T.tensor(conc, dtype=getattr(T, dt)))
        T.manual_seed(4)
        return d.sample(), d.sample((2,)), T.rand(2, dtype=T.float64)
    if dt == "float64":
        agree(run)
    else:
        # the same draws; PyTorch's float32 sqrt (its vectorized CPU kernel here) is not
        # correctly rounded in about 1 of 5 elements, jitgrad's is: an ulp of sqrt(y), which
        # the diagonal's 1 - sum(w**2) amplifies by cancellation
        compare(run, [], rtol=2e-5, atol=0)


def test_lkj_log_prob_and_gradients():
    def run(T, c):
        d = D(T).LKJCholesky(4, c)
        T.manual_seed(0)
        return d.log_prob(d.sample((3,)))
    compare(run, [np.array([0.5, 1.0, 3.0])], grad=True, **TOL)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_samples(param, dt):
    def run(T):
        m = T.tensor(COV, dtype=getattr(T, dt))
        if param == "scale_tril":
            m = T.linalg.cholesky(m)
        d = D(T).Wishart(T.tensor([4.0, 6.5], dtype=m.dtype), **{param: m})
        T.manual_seed(8)
        return d.sample(), d.rsample((2,)), T.rand(2, dtype=T.float64)
    compare(run, [], rtol=1e-5 if dt == "float32" else 1e-12, atol=1e-6)


def test_wishart_singular_samples_are_redrawn_with_the_warning():
    # df in (ndim - 1, ndim): PyTorch warns at construction and redraws (its support check
    # flags samples, as written there); the redraws consume the generator as PyTorch's do
    check_snippet("""
torch.manual_seed(3)
d = torch.distributions.Wishart(torch.tensor([1.5, 1.2], dtype=torch.float64), scale_tril=torch.eye(2, dtype=torch.float64))
s = d.sample((3,))
(s.shape, torch.rand(2, dtype=torch.float64))""",
                  lambda v, lib: (tuple(v[0]), np.round(v[1].numpy(), 12).tolist()))


def test_wishart_values_and_gradients():
    L = np.linalg.cholesky(np.array(COV))
    x = np.array(COV) * 1.7 + np.eye(3) * 0.4

    def run(T, df, tril, x):
        d = D(T).Wishart(df, scale_tril=tril)
        return (d.log_prob(x), d.entropy(), d.mean, d.variance, d.mode, d.covariance_matrix,
                d.precision_matrix)
    compare(run, [np.array([4.0, 6.5]), L, x], grad=True, **TOL)
    compare(lambda T, c, x: D(T).Wishart(5.0, covariance_matrix=c).log_prob(x),
            [np.array(COV), x], grad=True, **TOL)
    compare(lambda T, p, x: D(T).Wishart(5.0, precision_matrix=p).log_prob(x),
            [np.array(COV), x], grad=True, **TOL)


def test_wishart_rsample_backward_fails_as_pytorchs():
    """PyTorch's rsample takes every sample that passes the support check for singular and
    redraws it, writing into the mask it indexed with: backward raises its version error."""
    def run(T):
        df = T.tensor([4.0, 6.5], dtype=T.float64, requires_grad=True)
        T.manual_seed(2)
        s = D(T).Wishart(df, covariance_matrix=T.tensor(COV, dtype=T.float64)).rsample((2,))
        try:
            s.sum().backward()
        except RuntimeError as e:
            return str(e)
        return df.grad
    agree(run)


def test_wishart_rsample_gradients_without_redraws():
    """Gradients through the Bartlett factor itself (PyTorch's _bartlett_sampling)."""
    def run(T, df, c):
        T.manual_seed(2)
        return D(T).Wishart(df, covariance_matrix=c)._bartlett_sampling((2,))
    compare(run, [np.array([4.0, 6.5]), np.array(COV)], grad=True, rtol=1e-9, atol=1e-10)


def test_expand():
    def run(T):
        lk = D(T).LKJCholesky(3, T.tensor([0.5, 2.0])).expand((4, 2))
        w = D(T).Wishart(T.tensor([4.0]), covariance_matrix=T.tensor(COV)).expand((2, 3))
        T.manual_seed(1)
        return [(x.batch_shape, x.event_shape, type(x).__name__, x.sample().shape,
                 x._validate_args) for x in (lk, w)] + [lk.concentration, w.df]
    agree(run)


@pytest.mark.parametrize("make", [
    lambda T: D(T).LKJCholesky(1),
    lambda T: D(T).LKJCholesky(3, T.tensor([1.0, -1.0])),
    lambda T: D(T).Wishart(2.0),
    lambda T: D(T).Wishart(2.0, covariance_matrix=T.eye(2), scale_tril=T.eye(2)),
    lambda T: D(T).Wishart(2.0, covariance_matrix=T.ones(2)),
    lambda T: D(T).Wishart(1.0, covariance_matrix=T.eye(3)),
    lambda T: D(T).Wishart(4.0, covariance_matrix=T.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda T: D(T).Wishart(4.0, scale_tril=T.tensor([[1.0, 1.0], [0.0, 1.0]])),
])
def test_argument_validation_errors(make):
    raises_like(make)


@pytest.mark.parametrize("make,value", [
    (lambda T: D(T).LKJCholesky(2), lambda T: T.tensor([[1.0, 0.0], [0.6, 0.6]])),
    (lambda T: D(T).Wishart(3.0, covariance_matrix=T.eye(2)),
     lambda T: T.tensor([[1.0, 2.0], [2.0, 1.0]])),
])
def test_sample_validation_errors(make, value):
    raises_like(lambda T: make(T).log_prob(value(T)))


def test_registered_names_and_constraints():
    def run(T):
        w = D(T).Wishart(3.0, covariance_matrix=T.eye(2))
        return [(name, str(getattr(D(T), name).support), getattr(D(T), name).has_rsample,
                 name in D(T).__all__) for name in ("LKJCholesky", "Wishart")] + [
            {k: str(v) for k, v in w.arg_constraints.items()},
            str(D(T).LKJCholesky.arg_constraints)]
    agree(run)


def test_index_mask_written_after_a_recorded_write_fails_backward():
    """What Wishart.rsample runs into: ``x[mask] = v`` keeps the mask as IndexPutBackward0
    saves its indices, so writing into the mask before backward raises PyTorch's version error
    (jitgrad used to read the rewritten mask: a wrong-shaped or silently wrong gradient)."""
    def run(T):
        x = T.zeros(3, 2, requires_grad=True)
        v = T.ones(2, 2, requires_grad=True)
        out = []
        for rewrite in (False, True):
            s = x * 1
            m = T.tensor([True, False, True])
            s[m] = v * 2
            if rewrite:
                m[m.clone()] = T.tensor([False, False])
            try:
                out.append(T.autograd.grad(s.sum(), (x, v)))
            except RuntimeError as e:
                out.append(str(e))
        return out
    agree(run)
