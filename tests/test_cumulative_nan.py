# ruff: noqa: B023 - compare()/raises_like() call each lambda at once, inside the loop
"""cumprod, cummax/cummin, logcumsumexp, trapezoid/trapz/cumulative_trapezoid, nansum/nanmean
against PyTorch (values, dtypes, node names, gradients; zeros, ties, NaN, infinities, 0-d and
empty inputs, negative dims) and float64 finite differences to second order."""
import numpy as np
import pytest
from _parity import compare, raises_like

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 5))
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0, 0.5], [0.0, 0.0, 3.0, 1.0, 2.0],
                  [2.0, -1.0, 0.7, 0.0, 1.1]])
TIES = np.array([[1.0, 3.0, 3.0, 0.0, 3.0], [2.0, 2.0, 1.0, 2.0, 2.0],
                 [np.nan, 1.0, np.nan, 5.0, -np.inf]])
INTS = RNG.integers(-4, 5, (3, 5))


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cumprod(dim):
    for a in (X, ZEROS):
        compare(lambda T, x: T.cumprod(x, dim), [a], grad=True)
        compare(lambda T, x: x.cumprod(dim), [a], "float32", grad=True, rtol=1e-5)
    compare(lambda T, x: T.cumprod(x, dim), [INTS])
    compare(lambda T, x: T.cumprod(x, dim), [INTS], "int8")
    compare(lambda T, x: T.cumprod(x, dim, dtype=T.float32), [INTS])
    compare(lambda T, x: T.cumprod(x, dim), [INTS > 0])
    compare(lambda T, x: T.cumprod(x, dim), [np.zeros((0, 5))], grad=True)
    compare(lambda T, x: x.clone().cumprod_(dim), [X])


def test_cumprod_gradients_with_zeros_to_second_order():
    for a in (X, ZEROS, np.array([0.0, 0.0, 1.0]), np.array([2.0, 0.0, 3.0, 0.0, 4.0])):
        t = jitgrad.tensor(a, requires_grad=True)
        assert gradcheck(lambda x: jitgrad.cumprod(x, -1), (t,))
        assert gradgradcheck(lambda x: jitgrad.cumprod(x, -1), (t,), atol=1e-4)
    compare(lambda T, x: T.cumprod(x, 0), [np.array(1.7)], grad=True)  # 0-d


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name, dim):
    for a in (X, TIES, ZEROS):
        compare(lambda T, x: getattr(T, name)(x, dim), [a], grad=True)
    compare(lambda T, x: getattr(x, name)(dim), [TIES], "float32", grad=True)
    compare(lambda T, x: getattr(T, name)(x, dim), [INTS])
    compare(lambda T, x: getattr(T, name)(x, dim), [INTS], "uint8")
    compare(lambda T, x: getattr(T, name)(x, dim), [INTS > 0])
    compare(lambda T, x: getattr(T, name)(x, dim), [np.zeros((0, 3))], grad=True)
    compare(lambda T, x: getattr(T, name)(x, 0), [np.array(2.5)], grad=True)
    r = getattr(jitgrad, name)(jitgrad.tensor(X), dim)
    assert type(r).__name__ == name and r.values is r[0] and r.indices is r[1]
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda x: getattr(jitgrad, name)(x * x, dim).values, (t,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp(dim):
    compare(lambda T, x: T.logcumsumexp(x, dim), [X], grad=True, rtol=1e-12, atol=1e-12)
    compare(lambda T, x: x.logcumsumexp(dim), [X * 30], "float32", grad=True, rtol=1e-5,
            atol=1e-5)
    big = np.array([[-1000.0, 0.0, 800.0, 1.0], [-np.inf, -np.inf, 2.0, np.inf],
                    [np.nan, 1.0, 2.0, 3.0]])
    compare(lambda T, x: T.logcumsumexp(x, -1), [big])
    compare(lambda T, x: T.logcumsumexp(x, 0), [np.array(-3.0)], grad=True)
    compare(lambda T, x: T.logcumsumexp(x, dim), [np.zeros((0, 3))], grad=True)
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradcheck(lambda x: jitgrad.logcumsumexp(x, dim), (t,))
    assert gradgradcheck(lambda x: jitgrad.logcumsumexp(x, dim), (t,), atol=1e-4)


def test_cumulative_errors():
    raises_like(lambda T, x: T.logcumsumexp(x, 0), INTS)
    raises_like(lambda T, x: T.cummax(x, 2), X)
    raises_like(lambda T, x: T.cumprod(x, -3), X)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_trapezoid_rules(dim):
    n = X.shape[dim]
    pts = np.cumsum(RNG.uniform(0.1, 1.0, n))
    for fn in ("trapezoid", "trapz", "cumulative_trapezoid"):
        compare(lambda T, y: getattr(T, fn)(y, dim=dim), [X], grad=True, rtol=1e-12)
        compare(lambda T, y: getattr(T, fn)(y, dx=0.3, dim=dim), [X], grad=True, rtol=1e-12)
        compare(lambda T, y, x: getattr(T, fn)(y, x, dim=dim), [X, pts], grad=True,
                rtol=1e-12)
        compare(lambda T, y: getattr(T, fn)(y, dim=dim), [INTS])
        compare(lambda T, y: getattr(T, fn)(y, dim=dim), [X], "float32", rtol=1e-5)
    xs = np.cumsum(RNG.uniform(0.1, 1.0, X.shape), axis=dim)
    compare(lambda T, y, x: T.trapezoid(y, x, dim=dim), [X, xs], grad=True, rtol=1e-12)
    compare(lambda T, y, x: T.cumulative_trapezoid(y, x, dim=dim), [X, xs], grad=True,
            rtol=1e-12)


def test_trapezoid_corner_cases_and_errors():
    compare(lambda T, y: T.trapezoid(y), [np.zeros(0)])
    compare(lambda T, y: T.trapezoid(y, dim=0), [np.zeros((0, 3))])
    compare(lambda T, y: T.cumulative_trapezoid(y), [np.array([2.0])], grad=True)
    compare(lambda T, y: T.trapezoid(y), [np.array([2.0])], grad=True)
    compare(lambda T, y: T.trapezoid(y, dx=T.tensor(2.0)), [X], grad=True)
    raises_like(lambda T, y: T.trapezoid(y), np.array(3.0))
    raises_like(lambda T, y: T.trapezoid(y, T.tensor([0.0, 1.0, 3.0])), X)
    raises_like(lambda T, y: T.trapezoid(y, 2), X, match_message=False)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_nansum_nanmean(dim, keepdim):
    nan = np.where(RNG.random(X.shape) < 0.3, np.nan, X)
    nan[0] = np.nan  # a row of NaN only: nanmean gives NaN there
    kw = {} if dim is None else {"dim": dim}
    for a in (X, nan):
        compare(lambda T, x: T.nansum(x, keepdim=keepdim, **kw), [a], grad=True)
        compare(lambda T, x: T.nanmean(x, keepdim=keepdim, **kw), [a], grad=True)
        compare(lambda T, x: x.nansum(keepdim=keepdim, **kw), [a], "float32", grad=True,
                rtol=1e-5)
        compare(lambda T, x: x.nanmean(keepdim=keepdim, **kw), [a], "float32", grad=True,
                rtol=1e-5)
    compare(lambda T, x: T.nansum(x, keepdim=keepdim, **kw), [INTS])
    compare(lambda T, x: T.nansum(x, keepdim=keepdim, **kw), [INTS > 0])
    compare(lambda T, x: T.nansum(x, keepdim=keepdim, dtype=T.float64, **kw), [nan],
            "float32", grad=True)
    compare(lambda T, x: T.nanmean(x, keepdim=keepdim, dtype=T.float64, **kw), [nan],
            "float32", grad=True)


def test_nan_reductions_corner_cases():
    compare(lambda T, x: T.nansum(x), [np.zeros(0)], grad=True)
    compare(lambda T, x: T.nanmean(x), [np.array([np.nan])], grad=True)
    compare(lambda T, x: T.nansum(x), [np.array(np.nan)], grad=True)
    raises_like(lambda T, x: T.nanmean(x), INTS)
    raises_like(lambda T, x: T.nanmean(x, dtype=T.int64), X)
    # second order against PyTorch (finite differences cannot step through NaN inputs)
    a = np.where(X > 1, np.nan, X)
    grads = []
    for T in (jitgrad, torch):
        x = T.tensor(a, requires_grad=True)
        w = T.tensor(np.linspace(-1, 1, 3))
        g, = T.autograd.grad((T.nanmean(x * x, 1) * w).sum(), x, create_graph=True)
        h, = T.autograd.grad((g * g).nansum(), x)
        grads.append((g.detach().numpy(), h.numpy()))
    for a_, b_ in zip(*grads):
        np.testing.assert_allclose(a_, b_, rtol=1e-12, equal_nan=True)
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda x: jitgrad.nansum(x * x, 1), (t,), atol=1e-4)
