# ruff: noqa: B023 - compare()/raises_like() call each lambda at once, inside the loop
"""tril/triu (and in place), tril_indices/triu_indices, diag, diag_embed, diagflat, meshgrid and
repeat_interleave against PyTorch: values, dtypes, node names, gradients (also float64 finite
differences to second order) and errors."""
import warnings

import numpy as np
import pytest
from _parity import compare, raises_like

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4))
X3 = RNG.standard_normal((2, 3, 5))


@pytest.mark.parametrize("k", [-5, -2, -1, 0, 1, 3, 10])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles(name, k):
    for a in (X, X3, np.zeros((0, 3)), np.zeros((2, 0, 4))):
        compare(lambda T, x: getattr(T, name)(x, k), [a], grad=True)
        compare(lambda T, x: getattr(x, name)(diagonal=k), [a], "float32", grad=True)
    compare(lambda T, x: getattr(T, name)(x, k), [RNG.integers(-5, 5, (4, 4))])
    compare(lambda T, x: getattr(T, name)(x, k), [RNG.integers(0, 2, (3, 4)).astype(bool)])
    compare(lambda T, x: getattr(x.clone(), name + "_")(k), [X3])
    compare(lambda T, x: getattr(x * 2, name + "_")(k), [X3], grad=True)


def test_triangle_out():
    for name in ("tril", "triu"):
        compare(lambda T, x: getattr(T, name)(x, 1, out=T.empty(3, 4, dtype=T.float64)), [X])
        compare(lambda T, x: getattr(T, name)(x, out=T.empty(0, dtype=T.float64)), [X])
        raises_like(lambda T, x: getattr(T, name)(x, out=T.empty(3, 4)), X)
        raises_like(lambda T, x: getattr(T, name)(x, out=T.empty(3, 4, dtype=T.int64)), X)


def test_triangle_errors_and_higher_order():
    raises_like(lambda T, x: T.tril(x), np.array(3.0))
    raises_like(lambda T, x: T.triu(x), np.array([1.0, 2.0]))
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda x: jitgrad.tril(x * x, -1), (t,))


@pytest.mark.parametrize("rc", [(3, 4), (4, 3), (0, 3), (3, 0), (1, 1), (5, 5)])
@pytest.mark.parametrize("offset", [-7, -1, 0, 2, 9])
def test_triangle_indices(rc, offset):
    for name in ("tril_indices", "triu_indices"):
        compare(lambda T: getattr(T, name)(*rc, offset), [])
        compare(lambda T: getattr(T, name)(*rc, offset, dtype=T.int32), [])


def test_triangle_indices_errors():
    raises_like(lambda T: T.tril_indices(-1, 3))
    raises_like(lambda T: T.triu_indices(3, -2))
    raises_like(lambda T: T.tril_indices(3, 3, dtype=T.float32))


@pytest.mark.parametrize("k", [-3, -1, 0, 2, 6])
def test_diag(k):
    compare(lambda T, x: T.diag(x, k), [X], grad=True)
    compare(lambda T, x: x.diag(k), [X[0]], grad=True)
    compare(lambda T, x: T.diag(x, k), [RNG.integers(-3, 3, 4)])
    compare(lambda T, x: T.diag(x, k), [np.zeros(0)], grad=True)
    compare(lambda T, x: T.diagflat(x, k), [X], grad=True)
    compare(lambda T, x: x.diagflat(k), [X[0, 0]], grad=True)


@pytest.mark.parametrize("args", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (0, 1, -1), (3, -1, 0)])
def test_diag_embed(args):
    compare(lambda T, x: T.diag_embed(x, *args), [X3[0]], grad=True)
    compare(lambda T, x: x.diag_embed(*args), [X3], "float32", grad=True)


def test_diag_errors_and_higher_order():
    raises_like(lambda T, x: T.diag(x), X3)
    raises_like(lambda T, x: T.diag(x), np.array(1.0))
    raises_like(lambda T, x: T.diag_embed(x, 0, 0, 0), X)
    raises_like(lambda T, x: T.diag_embed(x, 0, 0, 5), X, match_message=False)
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradcheck(lambda x: jitgrad.diag(x, 1), (t,))
    assert gradgradcheck(lambda x: jitgrad.diag_embed(x * x, 1, 0, 2), (t,))
    assert gradgradcheck(lambda x: jitgrad.diag(x * x, -1), (t,))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b, c = RNG.standard_normal(3), RNG.standard_normal(2), RNG.standard_normal(4)
    compare(lambda T, x, y, z: T.meshgrid(x, y, z, indexing=indexing), [a, b, c], grad=True)
    compare(lambda T, x, y: T.meshgrid([x, y], indexing=indexing), [a, b], grad=True)
    compare(lambda T, x: T.meshgrid(x, indexing=indexing), [a], grad=True)
    compare(lambda T, x, y: T.meshgrid(x, y, indexing=indexing), [np.array(2.0), b], grad=True)
    compare(lambda T, x, y: T.meshgrid(x, y, indexing=indexing), [np.zeros(0), b])
    compare(lambda T, x, y: T.meshgrid(x, y, indexing=indexing),
            [RNG.integers(0, 5, 3), RNG.integers(0, 5, 2)])
    g = jitgrad.meshgrid(jitgrad.ones(2), jitgrad.ones(3), indexing=indexing)
    assert all(t._base is not None for t in g)  # expanded views, as PyTorch's


def test_meshgrid_warning_and_errors(monkeypatch):
    from jitgrad.ops import grids
    monkeypatch.setattr(grids, "_warned", False)
    msgs = []
    for T in (torch, jitgrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            T.meshgrid(T.ones(2), T.ones(3))
        msgs.append([str(m.message) for m in w if m.category is UserWarning])
    assert len(msgs[1]) == 1 and msgs[0] and msgs[0][0].startswith(msgs[1][0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jitgrad.meshgrid(jitgrad.ones(2), indexing="ij")
    raises_like(lambda T, x: T.meshgrid(x, indexing="xx"), X[0])
    raises_like(lambda T: T.meshgrid(indexing="ij"))
    raises_like(lambda T, x: T.meshgrid(x, x.double().float().to(T.float32),
                                        indexing="ij"), X[0])
    raises_like(lambda T, x: T.meshgrid(x, indexing="ij"), X, match_message=False)


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_repeat_interleave(dim):
    for r in (0, 1, 3):
        compare(lambda T, x: T.repeat_interleave(x, r, dim), [X], grad=True)
        compare(lambda T, x: x.repeat_interleave(r, dim=dim), [RNG.integers(0, 9, (3, 4))])
    n = 12 if dim is None else X.shape[dim]
    reps = RNG.integers(0, 4, n)
    compare(lambda T, x, r: T.repeat_interleave(x, r, dim), [X, reps], grad=True)
    compare(lambda T, x, r: T.repeat_interleave(x, r, dim), [X, np.array([2])], grad=True)
    compare(lambda T, x, r: T.repeat_interleave(x, r, dim), [X, np.array(2)], grad=True)
    compare(lambda T, x, r: x.repeat_interleave(r, dim, output_size=int(reps.sum())),
            [X, reps], grad=True)


def test_repeat_interleave_forms_and_errors():
    compare(lambda T, r: T.repeat_interleave(r), [np.array([2, 0, 3])])
    compare(lambda T, r: T.repeat_interleave(r), [np.zeros(0, np.int64)])
    compare(lambda T, x: T.repeat_interleave(x, 3), [np.array(5.0)], grad=True)
    compare(lambda T, x: T.repeat_interleave(x, 2, 1), [np.zeros((2, 0))])
    t = jitgrad.tensor(X, requires_grad=True)
    assert gradgradcheck(lambda x: jitgrad.repeat_interleave(x * x, jitgrad.tensor([1, 0, 2]),
                                                             0), (t,))
    v = np.array([1, 2])
    raises_like(lambda T, x: T.repeat_interleave(x, T.tensor([1, -1])), v)
    raises_like(lambda T, x: T.repeat_interleave(x, T.tensor([1, 2, 3])), v)
    raises_like(lambda T, x: T.repeat_interleave(x, -1), v)
    raises_like(lambda T, x: T.repeat_interleave(x, T.tensor([[1, 2]])), v)
    raises_like(lambda T, x: T.repeat_interleave(x, T.tensor([1.0, 2.0])), v)
    raises_like(lambda T, x: T.repeat_interleave(x, T.tensor([1, 2]), output_size=4), v)
    raises_like(lambda T, x: T.repeat_interleave(x, 2, 3), v, match_message=False)
