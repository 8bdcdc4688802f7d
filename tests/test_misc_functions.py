"""torch.diff/cdist/pdist/cov/corrcoef, block_diag/cartesian_prod/combinations/rot90/
unravel_index/broadcast_shapes, bincount/isin/unique_consecutive against PyTorch: values,
dtypes, shapes, grad_fn names, gradients (float64 finite differences where differentiable),
warnings and errors word for word."""
import numpy as np
import pytest

from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((5, 3))
V = RNG.standard_normal(4)
Y_TIES = Y.copy()
Y_TIES[1] = X[2]          # a zero distance
Y_TIES[2, 0] = X[0, 0]    # a zero component


# ----------------------------------------------------------------------------- diff

@pytest.mark.parametrize("kw", [{}, {"n": 2, "dim": 0}, {"n": 0}, {"n": 7}, {"dim": -2}])
def test_diff(kw):
    assert_parity(lambda T, x: T.diff(x, **kw), X, grad=True)
    assert_parity(lambda T, x: x.diff(**kw), X, grad=True)


def test_diff_prepend_append_and_dtypes():
    assert_parity(lambda T, x, p, a: T.diff(x, dim=0, prepend=p, append=a), X, Y, X[:1],
                  grad=True)
    assert_parity(lambda T, x, p: T.diff(x, n=3, prepend=p), X, X[:, :2], grad=True)
    assert_parity(lambda T, x, p: T.diff(x, prepend=p), np.array([1, 4, 9]), np.array([0.5]))
    assert_parity(lambda T, x: T.diff(x), np.array([True, False, False, True]))
    assert_grad_parity(lambda T: lambda x, a: T.diff(x, n=2, dim=0, append=a), X, Y)


@pytest.mark.parametrize("fn", [
    lambda T, x: T.diff(T.tensor(1.0)),
    lambda T, x: T.diff(x, n=-1),
    lambda T, x: T.diff(x, prepend=x[0]),
    lambda T, x: T.diff(x, dim=0, prepend=x[:, :2]),
    lambda T, x: T.diff(x, prepend=1.0),
    lambda T, x: T.diff(x, dim=3),
])
def test_diff_errors(fn):
    assert_parity(fn, X)


# ----------------------------------------------------------------------------- cdist / pdist

@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, float("inf")])
@pytest.mark.parametrize("y", [Y, Y_TIES], ids=["plain", "ties"])
def test_cdist_p(p, y):
    assert_parity(lambda T, a, b: T.cdist(a, b, p=p), X, y, grad=True)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_modes_and_batches(mode):
    assert_parity(lambda T, a, b: T.cdist(a, b, compute_mode=mode), X, Y_TIES, grad=True,
                  atol=1e-7)
    a, b = RNG.standard_normal((2, 1, 4, 3)), RNG.standard_normal((3, 30, 3))
    assert_parity(lambda T, a, b: T.cdist(a, b, compute_mode=mode), a, b, grad=True)


def test_cdist_gradients_and_dtypes():
    assert_grad_parity(lambda T: lambda a, b: T.cdist(a, b, p=3), X, Y, double=False)
    assert_grad_parity(lambda T: lambda a, b: T.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
                       X, Y, double=False)
    assert_parity(lambda T, a, b: T.cdist(a.float(), b.float(), p=1), X, Y, rtol=1e-5)
    assert_parity(lambda T, a, b: T.cdist(a[:0], b), X, Y, grad=True)


@pytest.mark.parametrize("fn", [
    lambda T, a, b: T.cdist(a, b, compute_mode="x"),
    lambda T, a, b: T.cdist(a[0], b),
    lambda T, a, b: T.cdist(a, b[0]),
    lambda T, a, b: T.cdist(a, b, p=-1),
    lambda T, a, b: T.cdist(a, b[:, :2]),
    lambda T, a, b: T.cdist(a.long(), b.long()),
    lambda T, a, b: T.cdist(a, b.float()),
])
def test_cdist_errors(fn):
    assert_parity(fn, X, Y)


@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3, float("inf")])
def test_pdist(p):
    x = np.concatenate([X, X[:1]])  # a repeated row: zero distance
    assert_parity(lambda T, a: T.pdist(a, p=p), x, grad=True)


def test_pdist_edges_and_errors():
    assert_grad_parity(lambda T: lambda a: T.pdist(a, 1.5), X, double=False)
    assert_parity(lambda T, a: T.pdist(a[:1]), X, grad=True)
    for fn in (lambda T, a: T.pdist(a[0]), lambda T, a: T.pdist(a, p=-1),
               lambda T, a: T.pdist(a.long()), lambda T, a: T.pdist(a[None])):
        assert_parity(fn, X)


# ----------------------------------------------------------------------------- cov / corrcoef

@pytest.mark.parametrize("kw", [{}, {"correction": 0}, {"correction": 5}])
def test_cov(kw):
    assert_parity(lambda T, x: T.cov(x, **kw), X, grad=True)
    assert_parity(lambda T, x: x.cov(**kw), V, grad=True)


@pytest.mark.parametrize("weights", ["f", "a", "fa", "f0"])
def test_cov_weights(weights):
    f, aw = np.array([1, 2, 0]), np.array([0.5, 1.0, 2.0])

    def fn(T, x, f, aw):
        return T.cov(x, fweights=f if "f" in weights else None,
                     aweights=aw if "a" in weights else None,
                     correction=0 if "0" in weights else 1)
    assert_parity(fn, X, f, aw, grad=True)
    assert_grad_parity(lambda T: lambda x, a: T.cov(x, aweights=a), X, aw)


@pytest.mark.parametrize("fn", [
    lambda T, x: T.cov(x[None, None]),
    lambda T, x: T.cov(x > 0),
    lambda T, x: T.cov(x, fweights=T.tensor([1.0, 2.0, 3.0])),
    lambda T, x: T.cov(x, fweights=T.tensor([[1, 2, 3]])),
    lambda T, x: T.cov(x, fweights=T.tensor([1, 2])),
    lambda T, x: T.cov(x, fweights=T.tensor([1, -2, 3])),
    lambda T, x: T.cov(x, aweights=T.tensor([1, 2, 3])),
    lambda T, x: T.cov(x, aweights=T.tensor([1.0, -2.0, 3.0])),
    lambda T, x: T.cov(x, aweights=T.tensor([0.0, 0.0, 0.0])),
    lambda T, x: T.cov(x, 0),
    lambda T, x: T.corrcoef(x[None, None]),
])
def test_cov_errors(fn):
    assert_parity(fn, X)


def test_corrcoef():
    assert_parity(lambda T, x: T.corrcoef(x), X, grad=True)
    assert_parity(lambda T, x: x.corrcoef(), V, grad=True)
    assert_parity(lambda T, x: T.corrcoef(x), np.array([[1, 2, 4], [3, 1, 1]]))
    assert_grad_parity(lambda T: lambda x: T.corrcoef(x), X)


# ----------------------------------------------------------------------------- block_diag & co


def test_block_diag():
    assert_parity(lambda T, a, b, v, s: T.block_diag(a, b, v, s), X, Y[:2, :2], V,
                  np.array(2.0), grad=True)
    assert_parity(lambda T, a, b: T.block_diag(a, b), np.array([[1, 2]]), np.array([[True]]))
    assert_parity(lambda T, a, b: T.block_diag(a, b), X, np.array([[1, 2]]), grad=True)
    assert_parity(lambda T: T.block_diag())
    assert_grad_parity(lambda T: lambda a, b: T.block_diag(a, b), X, V)
    assert_parity(lambda T, a: T.block_diag(a[None]), X)
    assert_parity(lambda T, a: T.block_diag(a, [1]), X)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_cartesian_prod(n):
    arrays = [V, V[:2], V[1:]][:n]
    assert_parity(lambda T, *ts: T.cartesian_prod(*ts), *arrays, grad=True)
    assert_parity(lambda T, a, b: T.cartesian_prod(a, b), np.array([1, 2]), np.array([3]))
    assert_parity(lambda T, a: T.cartesian_prod(a), X)
    assert_parity(lambda T: T.cartesian_prod())


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(r, with_replacement):
    assert_parity(lambda T, a: T.combinations(a, r, with_replacement=with_replacement), V,
                  grad=True)
    assert_parity(lambda T, a: T.combinations(a, r, with_replacement), np.arange(4))


def test_combinations_errors():
    assert_parity(lambda T, a: T.combinations(a, -1), V)
    assert_parity(lambda T, a: T.combinations(a), X)


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0)])
def test_rot90(k, dims):
    assert_parity(lambda T, a: T.rot90(a, k, dims), X, grad=True)
    assert_parity(lambda T, a: a.rot90(k, dims), np.arange(6).reshape(2, 3))


def test_rot90_grad_and_errors():
    assert_grad_parity(lambda T: lambda a: T.rot90(a, 1, (0, 2)), RNG.standard_normal((2, 3, 4)))
    for fn in (lambda T, a: T.rot90(a, 1, (0,)), lambda T, a: T.rot90(a, 1, (0, 0)),
               lambda T, a: T.rot90(a, 1, (0, 5)), lambda T, a: T.rot90(a, 1, (0, -2)),
               lambda T, a: T.rot90(a, 1, (0, 2)), lambda T, a: T.rot90(a, 1, (0, 1, 1)),
               lambda T, a: T.rot90(a[0]), lambda T, a: T.rot90(a, 1.5)):
        assert_parity(fn, X)


@pytest.mark.parametrize("idx, shape", [
    (np.array([4, 1, 0]), (2, 3)), (np.array([[4, 1, 0]]), 7), (np.array(5), (2, 3)),
    (np.array([0]), ()), (np.array([-1, 7]), (2, 3)), (np.array([0]), (2, -3)),
    (np.array([0.0]), (2, 3)), (np.array([0]), (2.0, 3)), (np.array([0]), 2.0),
])
def test_unravel_index(idx, shape):
    assert_parity(lambda T, i: T.unravel_index(i, shape), idx)


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), (2, (1, 2)), ((2, 3), (4,)), ((2, -1),),
                                    ((2.0,),), ((),), (), ((1, 4), None, [3, 1])])
def test_broadcast_shapes(shapes):
    assert_parity(lambda T: T.broadcast_shapes(*shapes))


# ----------------------------------------------------------------------------- bincount

@pytest.mark.parametrize("wdt", [None, "float32", "float64", "int64", "int8", "float16", "bool"])
def test_bincount_weights_dtypes(wdt):
    w = None if wdt is None else np.array([1, 0, 1, 1]).astype(wdt)
    if w is None:
        assert_parity(lambda T, i: T.bincount(i), np.array([1, 3, 3, 0]))
        assert_parity(lambda T, i: i.bincount(minlength=7), np.array([1, 3, 3, 0]))
    else:
        assert_parity(lambda T, i, w: T.bincount(i, w, minlength=2), np.array([1, 3, 3, 0]), w)


@pytest.mark.parametrize("fn", [
    lambda T: T.bincount(T.tensor([1, 3]), T.tensor([1.0, 2.0], dtype=T.float64,
                                                     requires_grad=True)),
    lambda T: T.bincount(T.tensor([1, 3]), T.tensor([1.0, 2.0], requires_grad=True)).sum()
    .backward(),
    lambda T: T.bincount(T.tensor([1.0, 3.0])),
    lambda T: T.bincount(T.tensor([True])),
    lambda T: T.bincount(T.tensor([-1, 3])),
    lambda T: T.bincount(T.tensor([[1, 3]])),
    lambda T: T.bincount(T.tensor([[1, 3]]), minlength=-1),
    lambda T: T.bincount(T.tensor([1, 3]), minlength=2.5),
    lambda T: T.bincount(T.tensor([1, 3]), T.tensor([1.0])),
    lambda T: T.bincount(T.tensor([], dtype=T.int64)),
    lambda T: T.bincount(T.tensor([], dtype=T.int64), T.tensor([]), minlength=2),
    lambda T: T.bincount(T.tensor([1, 2], dtype=T.uint8)),
])
def test_bincount_cases(fn):
    assert_parity(fn)


# ----------------------------------------------------------------------------- isin

@pytest.mark.parametrize("fn", [
    lambda T: T.isin(T.tensor([1, 2, 3]), T.tensor([2, 5])),
    lambda T: T.isin(T.tensor([[1, 2, 3]]), T.tensor([[2.0], [3.5]]), invert=True),
    lambda T: T.isin(T.tensor([1, 2, 3]), 2),
    lambda T: T.isin(2, T.tensor([1, 2, 3])),
    lambda T: T.isin(T.tensor([1, 2, 3], dtype=T.int8), T.tensor([257, 2])),
    lambda T: T.isin(T.tensor([float("nan"), 1.0]), T.tensor([float("nan"), 1.0])),
    lambda T: T.isin(T.tensor([1, 2, 3]), T.tensor([], dtype=T.int64)),
    lambda T: T.isin(T.tensor([1.0, 2.0]), T.tensor([2.0], requires_grad=True),
                     assume_unique=True),
    lambda T: T.isin(T.tensor([1, 2, 3]), T.tensor([True])),
    lambda T: T.isin(2, 3),
    lambda T: T.isin(T.tensor([1, 2]), T.tensor([2]), invert=1),
])
def test_isin(fn):
    assert_parity(fn)


# ----------------------------------------------------------------------------- unique_consecutive

@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
@pytest.mark.parametrize("data, dim", [
    ([1, 1, 2, 2, 3, 1], None), ([[1, 1], [1, 1], [2, 3]], 0), ([[1, 1], [1, 1], [2, 3]], 1),
    ([[3, 3], [2, 2]], None), (3, None), ([[1, 2]], -1), ([True, True, False], None),
])
def test_unique_consecutive(kw, data, dim):
    assert_parity(lambda T, x: T.unique_consecutive(x, dim=dim, **kw), np.array(data))
    assert_parity(lambda T, x: x.unique_consecutive(dim=dim, **kw), np.array(data))


@pytest.mark.parametrize("fn", [
    lambda T: T.unique_consecutive(T.tensor([[]]), True, True, dim=1),
    lambda T: T.unique_consecutive(T.tensor([]), True, True),
    lambda T: T.unique_consecutive(T.tensor([[]]), dim=0),
    lambda T: T.unique_consecutive(T.tensor(3.0), dim=0),
    lambda T: T.unique_consecutive(T.tensor([[1, 2]]), dim=3),
    lambda T: T.unique_consecutive(T.tensor([[1.0, 1.0, 2.0]], requires_grad=True), dim=1),
    lambda T: T.unique_consecutive(T.tensor([1.0, 1.0, 2.0], requires_grad=True)).sum()
    .backward(),
])
def test_unique_consecutive_edges(fn):
    assert_parity(fn)

