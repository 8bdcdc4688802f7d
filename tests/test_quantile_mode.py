# ruff: noqa: B023 - agree()/raises_like() call each lambda at once, inside the loop
"""quantile / nanquantile and mode against PyTorch: values bit for bit (float32/float64, every
interpolation, dims, keepdim, NaN rows, scalar and 1-D q), gradients, node names, out= and
errors."""
import warnings

import numpy as np
import pytest
from _parity import agree, raises_like

import jitgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

RNG = np.random.default_rng(11)
MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _data(shape, dt, nan):
    a = RNG.standard_normal(shape).astype(dt)
    if a.size > 3:
        a.flat[2] = a.flat[a.size - 1]  # a tie
    if nan and a.ndim:
        a.flat[1] = np.nan
    return a


def _run(lib, fn, a, q, dim, keepdim, mode):
    """Value, shape, dtype, node name and input gradient of ``sum(fn(x, q) * w)``."""
    x = lib.tensor(a, requires_grad=True)
    qq = lib.tensor(q) if isinstance(q, np.ndarray) else q
    y = getattr(lib, fn)(x, qq, dim=dim, keepdim=keepdim, interpolation=mode)
    w = np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(a.dtype)
    (y * lib.tensor(w)).sum().backward()
    return (y.detach().numpy(), tuple(y.shape), str(y.dtype).split(".")[-1],
            type(y.grad_fn).__name__, x.grad.numpy())


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (7,), (4, 5), (3, 4, 6)])
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile_values_grads_bitwise(dt, shape, fn):
    qs = [0.3, 0.0, 1.0, np.array(0.37, dt), np.array([0.1, 0.5, 0.99], dt)]
    nd = max(len(shape), 1)
    for nan in (False, True):
        a = _data(shape, dt, nan)
        for q in qs:
            for dim in [None, *range(-nd, nd)]:
                for keepdim in (False, True):
                    for mode in MODES:
                        want = _run(torch, fn, a, q, dim, keepdim, mode)
                        got = _run(jitgrad, fn, a, q, dim, keepdim, mode)
                        where = (fn, dt, shape, nan, q, dim, keepdim, mode)
                        assert got[1:4] == want[1:4], where
                        np.testing.assert_array_equal(got[0], want[0], err_msg=str(where))
                        # PyTorch's default sort is not stable on rows of more than 16
                        # elements, so which of two tied inputs gets the gradient differs there
                        if a.size <= 16 or dim is not None:
                            np.testing.assert_array_equal(got[4], want[4], err_msg=str(where))


def test_quantile_all_nan_rows_and_method():
    a = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 2.0]])
    for fn in ("quantile", "nanquantile"):
        agree(lambda T: getattr(T, fn)(T.tensor(a), 0.5, dim=1))
        agree(lambda T: getattr(T, fn)(T.tensor(a), T.tensor([0.0, 0.25, 1.0],
                                                             dtype=T.float64), dim=0))
        agree(lambda T: getattr(T.tensor(a), fn)(0.75, 1, True, interpolation="nearest"))
        agree(lambda T: getattr(T.tensor(a), fn)(q=0.5))
    agree(lambda T: T.quantile(T.tensor([1.0, 2.0, 3.0]), T.tensor([], dtype=T.float32)))
    agree(lambda T: T.quantile(T.tensor([[1.0, 2.0]]), T.tensor([]).float(), dim=0))
    agree(lambda T: T.quantile(T.tensor(3.0), 0.5, dim=-1, keepdim=True))
    agree(lambda T: T.quantile(T.tensor([1.0, 2.0, 4.0]), True))
    agree(lambda T: T.quantile(T.tensor([1.0, 2.0, 4.0]), 1))


def test_quantile_out():
    x = np.array([[0.5, -1.0, 2.0, 3.5], [1.0, 1.0, -2.0, 0.25]], np.float32)
    for shape in ((0,), (2,), (4,)):
        def run(T):
            o = T.empty(shape)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                r = T.quantile(T.tensor(x), 0.4, dim=1, out=o)
            return r is o, o, len(caught)
        agree(run)

    def run_grad(T):  # ATen's composite out= copies with autograd: CopyBackwards
        xr = T.tensor(x, requires_grad=True)
        o = T.empty(0)
        T.nanquantile(xr, 0.4, dim=0, out=o)
        o.sum().backward()
        return type(o.grad_fn).__name__, xr.grad
    agree(run_grad)
    agree(lambda T: T.quantile(T.tensor(x), 0.5, out=T.empty(0, dtype=T.float64)))


ERRORS = [
    lambda T, x: T.quantile(x, 1.5),
    lambda T, x: T.nanquantile(x, -0.1),
    lambda T, x: T.quantile(x, float("nan")),
    lambda T, x: T.quantile(x, T.tensor([0.1, 1.5]).double()),
    lambda T, x: T.quantile(x, T.tensor(float("nan")).double()),
    lambda T, x: T.quantile(x, T.tensor([[0.1]]).double()),
    lambda T, x: T.quantile(x, T.tensor([0.1])),
    lambda T, x: T.quantile(x.long(), 0.5),
    lambda T, x: T.quantile(x.float(), 0.5, dim=1, out=T.empty(0, dtype=T.float64)),
    lambda T, x: T.quantile(x.long(), T.tensor(1.5), interpolation="foo"),
    lambda T, x: T.quantile(x, 0.5, interpolation="foo"),
    lambda T, x: T.quantile(x, 0.5, dim=5, interpolation="foo"),
    lambda T, x: T.quantile(x, T.tensor(1.5).double(), dim=5),
    lambda T, x: T.quantile(x, 0.5, dim=2),
    lambda T, x: T.quantile(T.tensor(3.0), 0.5, dim=1),
    lambda T, x: T.quantile(T.empty(0), 0.5),
    lambda T, x: T.nanquantile(T.empty(3, 0), 0.5, dim=0),
    lambda T, x: T.quantile(x.half(), 0.5),
    lambda T, x: T.quantile(x, [0.5]),
    lambda T, x: T.quantile(x, 0.5, dim=1.0),
    lambda T, x: T.quantile(x, 0.5, interpolation=3),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_quantile_errors(i):
    raises_like(ERRORS[i], RNG.standard_normal((3, 4)))


def test_quantile_too_large():
    raises_like(lambda T, x: T.quantile(x, 0.5), np.zeros(2 ** 24 + 1, np.float32))


MODE_DTYPES = ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dt", MODE_DTYPES)
def test_mode_values_and_tie_indices(dt):
    """Rows long enough for std::sort's introsort (> 16) and short ones (insertion sort): the
    index PyTorch reports among equal values, NaN rows, signed zeros."""
    for n, k in ((5, 3), (16, 4), (17, 3), (40, 5), (150, 4), (600, 7)):
        a = RNG.integers(0, k, (4, n)).astype(dt)
        if dt in ("float32", "float64"):
            a = a.copy()
            a[0][RNG.random(n) < 0.3] = np.nan
            a[1] = a[1] * 0 * np.where(RNG.random(n) < 0.5, -1, 1)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                agree(lambda T: T.mode(T.tensor(a), dim, keepdim))
                agree(lambda T: T.tensor(a).mode(dim=dim, keepdim=keepdim))
    agree(lambda T: T.mode(T.tensor(np.array(2.5, dt))))
    agree(lambda T: T.mode(T.tensor(np.array(2.5, dt)), 0, True))


def test_mode_grad_out_errors():
    a = RNG.integers(0, 3, (3, 20)).astype(np.float64)

    def grad(T):
        x = T.tensor(a, requires_grad=True)
        v, i = T.mode(x, 1)
        (v * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
        return type(v.grad_fn).__name__, i.requires_grad, x.grad
    agree(grad)

    def grad0(T):
        x = T.tensor(1.5, requires_grad=True)
        v, _ = T.mode(x)
        v.backward()
        return type(v.grad_fn).__name__, x.grad
    agree(grad0)

    def out(T):
        v, i = T.empty(0, dtype=T.float64), T.empty(0, dtype=T.long)
        r = T.mode(T.tensor(a), 0, out=(v, i))
        return type(r).__name__, r.values is v, r.indices is i, v, i
    agree(out)
    agree(lambda T: T.mode(T.empty(2, 0), 0))
    for f in (lambda T: T.mode(T.empty(0)),
              lambda T: T.mode(T.empty(2, 0), 1),
              lambda T: T.mode(T.tensor(a), 2),
              lambda T: T.mode(T.tensor(a), 1.0),
              lambda T: T.mode(T.tensor(a), 0, out=(T.empty(0), T.empty(0, dtype=T.long))),
              lambda T: T.mode(T.tensor(a), 0, out=(T.empty(0).double(), T.empty(0).int())),
              lambda T: T.mode(T.tensor(a), 0, out=(T.empty(0), T.empty(0).int()))):
        agree(f)
