# ruff: noqa: B023 - compare()/raises_like() call each lambda at once, inside the loop
"""bucketize / searchsorted / histc against PyTorch, and NumPy's ``axis=``/``keepdims=`` names
on every reduction (PyTorch's parser accepts them; giving both names is its TypeError)."""
import numpy as np
import pytest
from _parity import compare, raises_like

import jitgrad

pytest.importorskip("torch")  # the comparisons need PyTorch

RNG = np.random.default_rng(3)
B = np.array([-1.0, 0.0, 0.0, 1.5, 3.0])
V = np.array([[-2.0, -1.0, 0.0, 0.7], [1.5, 2.0, 3.0, 9.0], [np.nan, -np.inf, np.inf, 0.0]])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bucketize_searchsorted(right, dtype):
    compare(lambda T, v, b: T.bucketize(v, b, right=right), [V, B], dtype)
    compare(lambda T, v, b: T.bucketize(v, b, right=right, out_int32=True), [V, B], dtype)
    compare(lambda T, v, b: T.searchsorted(b, v, right=right), [V, B], dtype)
    compare(lambda T, v, b: T.searchsorted(b, v, side="right" if right else "left"), [V, B],
            dtype)
    compare(lambda T, v, b: T.searchsorted(b, v, out_int32=True, right=right), [V, B], dtype)
    rows = np.sort(RNG.standard_normal((3, 6)), axis=1)
    compare(lambda T, v, b: T.searchsorted(b, v, right=right), [V, rows], dtype)
    compare(lambda T, b: T.searchsorted(b, 0.0, right=right), [B], dtype)
    compare(lambda T, b: T.bucketize(1.5, b, right=right), [B], dtype)
    compare(lambda T, v, b: T.bucketize(v, b, right=right), [np.zeros((0, 2)), B], dtype)
    compare(lambda T, v, b: T.bucketize(v, b, right=right), [np.array(0.0), B], dtype)
    compare(lambda T, v, b: T.searchsorted(b, v, right=right), [V, np.zeros(0)], dtype)


def test_searchsorted_sorter_mixed_dtypes_and_errors():
    perm = RNG.permutation(len(B))
    unsorted = B[perm]
    sorter = np.argsort(unsorted, kind="stable")
    compare(lambda T, v, b, s: T.searchsorted(b, v, sorter=s), [V, unsorted, sorter])
    compare(lambda T, v, b: T.searchsorted(b, v), [RNG.integers(-3, 4, 7), B])
    compare(lambda T, v, b: T.bucketize(v, b), [V, np.array([-1, 0, 2])])
    raises_like(lambda T, v, b: T.searchsorted(b, v, side="left", right=True), V, B)
    raises_like(lambda T, v, b: T.searchsorted(b, v, side="mid"), V, B)
    raises_like(lambda T, v, b: T.searchsorted(b, v), V, np.ones((2, 3)))
    raises_like(lambda T, v, b: T.bucketize(v, b), V, np.ones((2, 2)))
    raises_like(lambda T, v, b: T.searchsorted(b, v), V, np.array(3.0))
    raises_like(lambda T, v, b: T.searchsorted(b, v, sorter=T.tensor([1, 0])), V, B)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc(dtype):
    x = RNG.standard_normal((4, 5)) * 3
    for bins, lo, hi in [(10, 0, 0), (7, -2, 2), (1, 0, 0), (4, -1.0, 1.0), (100, -5, 5)]:
        compare(lambda T, t: T.histc(t, bins, lo, hi), [x], dtype)
        compare(lambda T, t: t.histc(bins=bins, min=lo, max=hi), [x], dtype)
    edges = np.array([0.0, 1.0, 2.0, 3.0, 3.0, 2.5, -0.5, 3.5, np.nan])
    compare(lambda T, t: T.histc(t, 3, 0, 3), [edges], dtype)
    compare(lambda T, t: T.histc(t, 4), [np.array([1.0, 1.0])], dtype)
    compare(lambda T, t: T.histc(t, 2), [np.zeros(0)], dtype)
    compare(lambda T, t: T.histc(t, 3), [np.array(2.0)], dtype)
    r = jitgrad.histc(jitgrad.tensor(x, requires_grad=True), 5)
    assert r.grad_fn is None and not r.requires_grad


def test_histc_errors():
    raises_like(lambda T, t: T.histc(t), np.array([1, 2]))
    raises_like(lambda T, t: T.histc(t, 3, 3, 1), np.array([1.0, 2.0]))
    raises_like(lambda T, t: T.histc(t, 0), np.array([1.0, 2.0]))


# ----------------------------------------------------------------------------- axis= / keepdims=

X = RNG.standard_normal((3, 4))
ALIAS_CASES = [
    ("sum", {}), ("mean", {}), ("prod", {}), ("amax", {}), ("amin", {}), ("logsumexp", {}),
    ("nansum", {}), ("nanmean", {}), ("std", {}), ("var", {}), ("std_mean", {}),
    ("var_mean", {}), ("max", {}), ("min", {}), ("argmax", {}), ("argmin", {}),
    ("median", {}), ("nanmedian", {}), ("aminmax", {}), ("count_nonzero", {}), ("any", {}),
    ("all", {}), ("cumsum", {}), ("cumprod", {}), ("cummax", {}), ("cummin", {}),
    ("logcumsumexp", {}), ("sort", {}), ("argsort", {}), ("kthvalue", {"k": 2}),
]
NO_KEEPDIM = {"count_nonzero", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort",
              "argsort"}


@pytest.mark.parametrize("name,kw", ALIAS_CASES)
def test_axis_alias(name, kw):
    for axis in (0, -1):
        compare(lambda T, x: getattr(T, name)(x, axis=axis, **kw), [X])
        if name not in ("std_mean", "var_mean", "aminmax"):
            compare(lambda T, x: getattr(x, name)(axis=axis, **kw), [X])
        if name not in NO_KEEPDIM:
            compare(lambda T, x: getattr(T, name)(x, axis=axis, keepdims=True, **kw), [X])
    # TypeError; its words depend on PyTorch's overload count (one overload: "got an
    # unexpected keyword argument 'axis'", several: "received an invalid combination ...")
    raises_like(lambda T, x: getattr(T, name)(x, axis=1, dim=1, **kw), X,
                match_message=name in ("sum", "cumsum", "median", "kthvalue"))


def test_axis_alias_forms_and_errors():
    compare(lambda T, x: x.sum(axis=(0, 1)), [X], grad=True)
    compare(lambda T, x: x.mean(axis=(0, 1), keepdims=True), [X], grad=True)
    compare(lambda T, x: T.sum(x, axis=None), [X], grad=True)
    compare(lambda T, x: x.sum(axis=1, keepdim=True), [X], grad=True)
    compare(lambda T, x: T.max(x, axis=1, keepdims=True), [X], grad=True)
    raises_like(lambda T, x: x.sum(1, axis=1), X)
    raises_like(lambda T, x: x.sum(axis=1, keepdims=True, keepdim=True), X)
    raises_like(lambda T, x: T.norm(x, axis=1), X)  # a Python function in PyTorch: no alias
