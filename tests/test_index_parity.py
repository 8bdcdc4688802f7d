"""Every op that takes an index tensor, against PyTorch 2.13: values, dtypes, grad_fn names,
gradients, and each bad index (negative where refused, out of range, empty dims, float/int16
index dtypes) with PyTorch's error type and exact words. Plus the ops added with this check
(take, put, index_copy, index_fill, scatter_reduce, scatter(reduce=...)), float64 gradients by
finite differences, nonzero of a 0-d tensor, list/tuple keys, and the factories' size errors.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _parity import assert_parity, torch

import jitgrad

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

X = np.arange(6.0).reshape(2, 3)
X64 = np.random.default_rng(3).standard_normal((3, 4))


def L(v, dtype=np.int64):
    return np.array(v, dtype=dtype)


def F(name, *a, **k):
    """``lambda lib, *t: lib.<name>(*t, *a, **k)`` with the tensors first."""
    return lambda lib, *t: getattr(lib, name)(*t, *a, **k)


# (id, fn(lib, *tensors), args): each is run under both libraries and compared
CASES = [
    # gather: negatives and out of range raise RuntimeError
    ("gather", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 2], [1, 0]]))),
    ("gather_neg", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, -1], [1, 0]]))),
    ("gather_oob", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 3], [1, 0]]))),
    ("gather_int32", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 2]], np.int32))),
    ("gather_float", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 1]], np.float32))),
    ("gather_int16", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 1]], np.int16))),
    ("gather_bool", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[True]], np.bool_))),
    ("gather_size", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0], [1], [0]]))),
    ("gather_ndim", lambda lib, x, i: lib.gather(x, 1, i), (X, L([0, 1]))),
    ("gather_wide", lambda lib, x, i: lib.gather(x, 1, i), (X, L([[0, 1, 2, 0]]))),
    ("gather_empty_dim", lambda lib, x, i: lib.gather(x, 1, i), (np.zeros((2, 0)), L([[0]]))),
    ("gather_empty_index", lambda lib, x, i: lib.gather(x, 1, i), (X, np.zeros((2, 0),
                                                                               np.int64))),
    ("gather_0d", lambda lib, x, i: lib.gather(x, 0, i), (np.array(5.0), L(0))),
    ("gather_0d_neg", lambda lib, x, i: lib.gather(x, 0, i), (np.array(5.0), L(-1))),
    # scatter family
    ("scatter", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (X, L([[2, 0]]), X[:1, :2])),
    ("scatter_neg", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (X, L([[0, -1]]), X[:1])),
    ("scatter_oob", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (X, L([[0, 3]]), X[:1])),
    ("scatter_value_neg", lambda lib, x, i: lib.scatter(x, 1, i, 5.0), (X, L([[0, -1]]))),
    ("scatter_value", lambda lib, x, i: lib.scatter(x, 1, i, 5.0), (X, L([[0, 2]]))),
    ("scatter_float_index", lambda lib, x, i, s: lib.scatter(x, 1, i, s),
     (X, L([[0.0]], np.float32), X[:1])),
    ("scatter_int32", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (X, L([[1]], np.int32),
                                                                     X[:1])),
    ("scatter_empty_dim", lambda lib, x, i, s: lib.scatter(x, 1, i, s),
     (np.zeros((2, 0)), L([[0]]), np.ones((1, 1)))),
    ("scatter_src_small", lambda lib, x, i, s: lib.scatter(x, 1, i, s),
     (X, L([[0, 1]]), np.ones((1, 1)))),
    ("scatter_index_big", lambda lib, x, i, s: lib.scatter(x, 1, i, s),
     (X, L([[0, 1]] * 3), np.ones((3, 2)))),
    ("scatter_dtype", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (X, L([[0]]), L([[1]]))),
    ("scatter_add", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s),
     (X, L([[0, 0], [2, 1]]), X[:, :2] + 1)),
    ("scatter_add_neg", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s),
     (X, L([[0, -1]]), X[:1])),
    ("scatter_add_oob", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s),
     (X, L([[0, 3]]), X[:1])),
    ("scatter_add_empty_dim", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s),
     (np.zeros((2, 0)), L([[0]]), np.ones((1, 1)))),
    ("scatter_multiply", lambda lib, x, i, s: lib.scatter(x, 1, i, s, reduce="multiply"),
     (X, L([[0, 0], [1, 2]]), X[:, :2] + 2)),
    ("scatter_multiply_value", lambda lib, x, i: lib.scatter(x, 1, i, 3.0, reduce="multiply"),
     (X, L([[0, 0]]))),
    ("scatter_add_value", lambda lib, x, i: lib.scatter(x, 1, i, 3.0, reduce="add"),
     (X, L([[0, 0]]))),
    ("scatter_bad_reduce", lambda lib, x, i: lib.scatter(x, 1, i, 3.0, reduce="mean"),
     (X, L([[0, 0]]))),
    ("scatter_multiply_int", lambda lib, x, i: lib.scatter(x, 1, i, 2, reduce="multiply"),
     (L([[1, 2, 3]]), L([[0, 0]]))),
    # index_select
    ("index_select", lambda lib, x, i: lib.index_select(x, 1, i), (X, L([2, 0, 2]))),
    ("index_select_neg", lambda lib, x, i: lib.index_select(x, 0, i), (X, L([-1]))),
    ("index_select_oob", lambda lib, x, i: lib.index_select(x, 0, i), (X, L([2]))),
    ("index_select_float", lambda lib, x, i: lib.index_select(x, 0, i), (X, L([0.0]))),
    ("index_select_int32", lambda lib, x, i: lib.index_select(x, 0, i), (X, L([1], np.int32))),
    ("index_select_2d", lambda lib, x, i: lib.index_select(x, 0, i), (X, L([[1]]))),
    ("index_select_0d_index", lambda lib, x, i: lib.index_select(x, 0, i), (X, L(1))),
    ("index_select_empty_dim", lambda lib, x, i: lib.index_select(x, 0, i),
     (np.zeros((0, 3)), L([0]))),
    ("index_select_empty_both", lambda lib, x, i: lib.index_select(x, 0, i),
     (np.zeros((0, 3)), np.zeros(0, np.int64))),
    ("index_select_0d", lambda lib, x, i: lib.index_select(x, 0, i), (np.array(5.0), L([0]))),
    ("index_select_0d_neg", lambda lib, x, i: lib.index_select(x, 0, i),
     (np.array(5.0), L([-1]))),
    # index_add
    ("index_add", lambda lib, x, i, s: lib.index_add(x, 0, i, s, alpha=2),
     (X, L([1, 1, 0]), X64[:, :3])),
    ("index_add_neg", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (X, L([-1]), X[:1])),
    ("index_add_oob", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (X, L([2]), X[:1])),
    ("index_add_float", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (X, L([0.0]), X[:1])),
    ("index_add_int16", lambda lib, x, i, s: lib.index_add(x, 0, i, s),
     (X, L([0], np.int16), X[:1])),
    ("index_add_count", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (X, L([0]), X)),
    ("index_add_2d", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (X, L([[0]]), X[:1])),
    ("index_add_dtype", lambda lib, x, i, s: lib.index_add(x, 0, i, s),
     (X, L([0]), X[:1].astype(np.float32))),
    ("index_add_shape", lambda lib, x, i, s: lib.index_add(x, 0, i, s),
     (X, L([0]), np.ones((1, 4)))),
    ("index_add_empty_dim", lambda lib, x, i, s: lib.index_add(x, 0, i, s),
     (np.zeros((0, 3)), L([0]), np.ones((1, 3)))),
    # index_copy
    ("index_copy", lambda lib, x, i, s: lib.index_copy(x, 1, i, s),
     (X, L([2, 0]), X64[:2, :2])),
    ("index_copy_neg", lambda lib, x, i, s: lib.index_copy(x, 0, i, s), (X, L([-1]), X[:1])),
    ("index_copy_oob", lambda lib, x, i, s: lib.index_copy(x, 0, i, s), (X, L([2]), X[:1])),
    ("index_copy_float", lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
     (X, L([0.0]), X[:1])),
    ("index_copy_int32", lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
     (X, L([0], np.int32), X[:1])),
    ("index_copy_2d", lambda lib, x, i, s: lib.index_copy(x, 0, i, s), (X, L([[0]]), X[:1])),
    ("index_copy_count", lambda lib, x, i, s: lib.index_copy(x, 0, i, s), (X, L([0]), X)),
    ("index_copy_slice", lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
     (X, L([0]), np.ones((1, 4)))),
    ("index_copy_dtype", lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
     (X, L([0]), X[:1].astype(np.float32))),
    ("index_copy_0d_index", lambda lib, x, i, s: lib.index_copy(x, 0, i, s),
     (X, L(1), X[:1])),
    # index_fill: negatives wrap
    ("index_fill", lambda lib, x, i: lib.index_fill(x, 1, i, -2.5), (X, L([2, 0, 2]))),
    ("index_fill_neg", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([-1]))),
    ("index_fill_neg_oob", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([-3]))),
    ("index_fill_oob", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([2]))),
    ("index_fill_float", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([0.0]))),
    ("index_fill_int32", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([0], np.int32))),
    ("index_fill_2d", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L([[0]]))),
    ("index_fill_0d_index", lambda lib, x, i: lib.index_fill(x, 0, i, 7.0), (X, L(1))),
    ("index_fill_tensor", lambda lib, x, i, v: lib.index_fill(x, 1, i, v),
     (X, L([1, 1]), np.array(2.0))),
    ("index_fill_tensor_1d", lambda lib, x, i, v: lib.index_fill(x, 1, i, v),
     (X, L([1]), np.array([2.0]))),
    ("index_fill_0d", lambda lib, x, i: lib.index_fill(x, 0, i, 1.0), (np.array(5.0), L([-1]))),
    # take / put: negatives wrap, flat range
    ("take", lambda lib, x, i: lib.take(x, i), (X, L([[0, -1], [5, 2]]))),
    ("take_oob", lambda lib, x, i: lib.take(x, i), (X, L([6]))),
    ("take_oob_neg", lambda lib, x, i: lib.take(x, i), (X, L([-7]))),
    ("take_float", lambda lib, x, i: lib.take(x, i), (X, L([0.0]))),
    ("take_int32", lambda lib, x, i: lib.take(x, i), (X, L([0], np.int32))),
    ("take_empty", lambda lib, x, i: lib.take(x, i), (np.zeros(0), L([0]))),
    ("take_empty_index", lambda lib, x, i: lib.take(x, i), (np.zeros(0), np.zeros(0, np.int64))),
    ("take_0d", lambda lib, x, i: lib.take(x, i), (np.array(5.0), L(0))),
    ("put", lambda lib, x, i, s: lib.put(x, i, s), (X, L([1, -1]), np.array([9.0, 8.0]))),
    ("put_accumulate", lambda lib, x, i, s: lib.put(x, i, s, accumulate=True),
     (X, L([0, 0, -6]), np.array([9.0, 8.0, 1.5]))),
    ("put_oob", lambda lib, x, i, s: lib.put(x, i, s), (X, L([6]), np.array([9.0]))),
    ("put_float", lambda lib, x, i, s: lib.put(x, i, s), (X, L([0.0]), np.array([9.0]))),
    ("put_count", lambda lib, x, i, s: lib.put(x, i, s), (X, L([0]), np.array([9.0, 1.0]))),
    ("put_dtype", lambda lib, x, i, s: lib.put(x, i, s), (X, L([0]), L([9]))),
    ("put_empty", lambda lib, x, i, s: lib.put(x, i, s), (np.zeros(0), L([0]), np.ones(1))),
    ("put_method", lambda lib, x, i, s: x.clone().put_(i, s), (X, L([-1]), np.array([9.0]))),
    # take_along_dim: with dim PyTorch 2.13 wraps indices modulo the size
    ("take_along_dim", lambda lib, x, i: lib.take_along_dim(x, i, 1), (X, L([[2], [-1]]))),
    ("take_along_dim_wraps", lambda lib, x, i: lib.take_along_dim(x, i, 1), (X, L([[7, -5]]))),
    ("take_along_dim_flat_neg", lambda lib, x, i: lib.take_along_dim(x, i), (X, L([-1]))),
    ("take_along_dim_flat_oob", lambda lib, x, i: lib.take_along_dim(x, i), (X, L([6]))),
    ("take_along_dim_int32", lambda lib, x, i: lib.take_along_dim(x, i, 1),
     (X, L([[0]], np.int32))),
    # advanced indexing: negatives wrap
    ("getitem_neg", lambda lib, x, i: x[i], (X, L([-1]))),
    ("getitem_oob", lambda lib, x, i: x[i], (X, L([2]))),
    ("getitem_oob_neg", lambda lib, x, i: x[i], (X, L([-3]))),
    ("getitem_pair_oob", lambda lib, x, i, j: x[i, j], (X, L([0]), L([3]))),
    ("getitem_float", lambda lib, x, i: x[i], (X, L([0.0]))),
    ("getitem_int16", lambda lib, x, i: x[i], (X, L([0], np.int16))),
    ("setitem_oob", lambda lib, x, i: x.clone().__setitem__(i, 1.0), (X, L([2]))),
    ("setitem_neg", lambda lib, x, i: _set(x, i, 1.0), (X, L([-1]))),
    # index_put: advanced indexing's rules, accumulate sums repeated indices
    ("index_put", lambda lib, x, i, j, v: lib.index_put(x, (i, j), v),
     (X, L([0, 1]), L([-1, 0]), np.array([7.0, 8.0]))),
    ("index_put_accumulate", lambda lib, x, i, j, v: lib.index_put(x, (i, j), v, accumulate=True),
     (X, L([0, 0, 1]), L([1, 1, -1]), np.array([1.0, 2.0, 3.0]))),
    ("index_put_broadcast", lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True),
     (X, L([1, 1]), np.array(2.5))),
    ("index_put_oob", lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True),
     (X, L([2]), np.array(1.0))),
    ("index_put_neg_oob", lambda lib, x, i, v: lib.index_put(x, (i,), v), (X, L([-3]),
                                                                         np.array(1.0))),
    ("index_put_float", lambda lib, x, i, v: lib.index_put(x, (i,), v), (X, L([0.0]),
                                                                        np.array(1.0))),
    ("index_put_dtype", lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True),
     (X, L([0]), np.array(1.0, np.float32))),
    ("index_put_shape", lambda lib, x, i, v: lib.index_put(x, (i,), v, accumulate=True),
     (X, L([0, 1]), np.ones((3, 3)))),
    ("index_put_not_tuple", lambda lib, x, i, v: lib.index_put(x, i, v), (X, L([0]),
                                                                         np.array(1.0))),
    ("index_put_mask", lambda lib, x, m, v: lib.index_put(x, (m,), v, accumulate=True),
     (X, np.array([True, False]), np.array(1.0))),
    ("index_put_method", lambda lib, x, i, v: x.clone().index_put_((i,), v, accumulate=True),
     (X, L([-1, -1]), np.array([1.0, 2.0, 3.0]))),
    # loss targets and embedding ids refuse negatives
    ("embedding_neg", lambda lib, i, w: lib.nn.functional.embedding(i, w), (L([-1]), X)),
    ("embedding_oob", lambda lib, i, w: lib.nn.functional.embedding(i, w), (L([2]), X)),
    ("embedding_float", lambda lib, i, w: lib.nn.functional.embedding(i, w), (L([0.0]), X)),
    ("nll_neg", lambda lib, x, t: lib.nn.functional.nll_loss(x, t), (X, L([-1, 0]))),
    ("nll_oob", lambda lib, x, t: lib.nn.functional.nll_loss(x, t), (X, L([3, 0]))),
    ("nll_ignored_neg", lambda lib, x, t: lib.nn.functional.nll_loss(x, t, ignore_index=-1),
     (X, L([-1, 0]))),
    ("cross_entropy_neg", lambda lib, x, t: lib.nn.functional.cross_entropy(x, t),
     (X, L([-1, 0]))),
    # masks
    ("masked_fill_uint8", lambda lib, x, m: x.masked_fill(m, 1.0),
     (X, np.array([[1, 0, 1], [0, 0, 0]], np.uint8))),
    ("masked_fill_float", lambda lib, x, m: x.masked_fill(m, 1.0), (X, (X > 2) * 1.0)),
    ("masked_fill_int64", lambda lib, x, m: x.masked_fill(m, 1.0), (X, L([[1, 0, 1], [0, 0, 0]]))),
    ("masked_fill_broadcast", lambda lib, x, m: x.masked_fill(m, 1.0),
     (X, np.array([True, False, True]))),
    ("masked_fill_shape", lambda lib, x, m: x.masked_fill(m, 1.0), (X, np.array([True, False]))),
    # a Python value is converted with PyTorch's overflow check, even where no element is filled
    ("masked_fill_int_inf", lambda lib, x, m: x.masked_fill(m, float("-inf")),
     (L([1, 2, 3]), np.array([True, False, True]))),
    ("masked_fill_int_inf_unfilled", lambda lib, x, m: x.masked_fill(m, float("inf")),
     (L([1, 2, 3]), np.zeros(3, bool))),
    ("masked_fill_uint8_overflow", lambda lib, x, m: x.masked_fill(m, 300),
     (L([1, 2, 3], np.uint8), np.ones(3, bool))),
    ("masked_fill_uint8_wraps", lambda lib, x, m: x.masked_fill(m, -1),
     (L([1, 2, 3], np.uint8), np.ones(3, bool))),
    ("masked_fill_int8_nan", lambda lib, x, m: x.masked_fill_(m, float("nan")),
     (L([1, 2, 3], np.int8), np.ones(3, bool))),
    ("masked_fill_int_truncates", lambda lib, x, m: x.masked_fill(m, -2.7),
     (L([1, 2, 3]), np.ones(3, bool))),
    ("masked_fill_uint8_tensor_overflow", lambda lib, x, m, v: x.masked_fill(m, v),
     (L([1, 2, 3], np.uint8), np.ones(3, bool), np.array(300.0))),
    ("masked_select", lambda lib, x, m: x.masked_select(m), (X, X > 2)),
    ("masked_select_uint8", lambda lib, x, m: x.masked_select(m),
     (X, np.array([[1, 0, 1], [0, 0, 0]], np.uint8))),
    ("masked_select_shape", lambda lib, x, m: x.masked_select(m), (X, np.array([True, False]))),
    ("masked_select_broadcast", lambda lib, x, m: lib.masked_select(x, m),
     (X, np.array([True, False, True]))),
    ("getitem_mask_shape", lambda lib, x, m: x[m], (X, np.array([True, False, True]))),
    ("argwhere", lambda lib, x: lib.argwhere(x > 2), (X,)),
    # nonzero of a 0-d tensor reads it as a 1-element tensor
    ("nonzero_0d", lambda lib, x: lib.nonzero(x), (np.array(5.0),)),
    ("nonzero_0d_zero", lambda lib, x: lib.nonzero(x), (np.array(0.0),)),
    ("nonzero_0d_tuple", lambda lib, x: lib.nonzero(x, as_tuple=True), (np.array(5.0),)),
    ("nonzero_0d_tuple_zero", lambda lib, x: x.nonzero(as_tuple=True), (np.array(0.0),)),
]


def _set(x, i, v):
    y = x.clone()
    y[i] = v
    return y


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_index_op_matches_torch(name, fn, args):
    assert_parity(fn, *args, where=name, check_warnings=False)


GRAD_CASES = [c for c in CASES if c[0] in (
    "gather", "scatter", "scatter_value", "scatter_add", "index_select", "index_add",
    "index_copy", "index_fill", "index_fill_tensor", "take", "put", "put_accumulate",
    "take_along_dim", "take_along_dim_wraps", "getitem_neg", "setitem_neg", "embedding_neg",
    "index_select_0d", "gather_0d", "take_0d", "index_put", "index_put_accumulate",
    "index_put_broadcast")]


@pytest.mark.parametrize("name,fn,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_index_op_gradients_match_torch(name, fn, args):
    assert_parity(fn, *args, grad=True, where=name, check_warnings=False)


# ----------------------------------------------------------------------------- scatter_reduce

REDUCES = ("sum", "prod", "mean", "amax", "amin")
SR_X = np.array([[0.0, 1.0, 2.0, -1.5], [3.0, 4.0, 0.0, 2.0]])
SR_I = np.array([[0, 0, 3], [1, 1, 1]])
SR_S = np.array([[2.0, 2.0, 0.5], [0.0, -3.0, 4.0]])  # ties (2, 2) and a zero in src


@pytest.mark.parametrize("include_self", (True, False))
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_values_and_gradients(reduce, include_self):
    assert_parity(lambda lib, x, i, s: lib.scatter_reduce(x, 1, i, s, reduce,
                                                          include_self=include_self),
                  SR_X, SR_I, SR_S, grad=True, where=reduce)
    assert_parity(lambda lib, x, i, s: x.scatter_reduce(-1, i, s, reduce,
                                                        include_self=include_self),
                  SR_X.astype(np.int64), SR_I, SR_S.astype(np.int64), where="int " + reduce)


@pytest.mark.parametrize("reduce", ("sum", "mean", "amax", "amin", "prod"))
def test_scatter_reduce_gradcheck(reduce):
    rng = np.random.default_rng(5)
    x = jitgrad.tensor(rng.standard_normal((3, 4)) + 2, requires_grad=True)
    s = jitgrad.tensor(rng.standard_normal((3, 3)) + 2, requires_grad=True)
    i = jitgrad.tensor(rng.integers(0, 4, (3, 3)))
    for inc in (True, False):
        assert jitgrad.autograd.gradcheck(
            lambda a, b, inc=inc: jitgrad.scatter_reduce(a, 1, i, b, reduce, include_self=inc),
            (x, s))


def test_scatter_reduce_errors_and_inplace():
    assert_parity(lambda lib, x, i, s: lib.scatter_reduce(x, 1, i, s, "mul"),
                  SR_X, SR_I, SR_S)
    assert_parity(lambda lib, x, i, s: lib.scatter_reduce(x, 1, i, s, "sum"),
                  SR_X, SR_I - 2, SR_S)
    assert_parity(lambda lib, x, i, s: x.clone().scatter_reduce_(1, i, s, "amax",
                                                                 include_self=False),
                  SR_X, SR_I, SR_S)


# ----------------------------------------------------------------------------- new ops: gradcheck


def test_new_index_ops_gradcheck():
    rng = np.random.default_rng(7)
    x = jitgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    src = jitgrad.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    v = jitgrad.tensor(1.5, dtype=jitgrad.float64, requires_grad=True)
    i = jitgrad.tensor([3, -4 + 4])
    flat = jitgrad.tensor([[0, -1], [5, 0]])
    checks = [
        (lambda a: jitgrad.take(a, flat), (x,)),
        (lambda a, b: jitgrad.index_copy(a, 1, i, b), (x, src)),
        (lambda a, b: jitgrad.index_fill(a, 1, jitgrad.tensor([1, -1, 1]), b), (x, v)),
        (lambda a, b: jitgrad.put(a, jitgrad.tensor([0, 0, -1, 4, 5, 6]), b.reshape(-1),
                                  accumulate=True), (x, src)),
        (lambda a, b: jitgrad.put(a, jitgrad.tensor([1, 3, -1, 4, 5, 6]), b.reshape(-1)),
         (x, src)),
        (lambda a, b: jitgrad.index_put(a, (jitgrad.tensor([0, 0, 2]),), b[:, 0:1],
                                        accumulate=True), (x, src)),
        (lambda a, b: jitgrad.index_put(a, (jitgrad.tensor([0, 2]), jitgrad.tensor([1, -1])),
                                        b[0]), (x, src)),
    ]
    for fn, ins in checks:
        assert jitgrad.autograd.gradcheck(fn, ins)
        assert jitgrad.autograd.gradgradcheck(fn, ins)


def test_gather_backward_never_touches_wrapped_positions():
    """The issue's case: gather with -1 raised nothing and accumulated into column 2."""
    x = jitgrad.arange(6.0).reshape(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1"):
        jitgrad.gather(x, 1, jitgrad.tensor([[0, -1], [1, 0]]))
    assert x.grad is None


def test_inplace_variants_match_torch():
    for fn, args in [
        (lambda lib, x, i, s: x.clone().index_copy_(0, i, s), (X, L([1]), X64[:1, :3])),
        (lambda lib, x, i: x.clone().index_fill_(1, i, 3.0), (X, L([-1]))),
        (lambda lib, x, i, s: x.clone().index_add_(0, i, s, alpha=3), (X, L([1]), X[:1])),
        (lambda lib, x, i, s: x.clone().scatter_(1, i, s), (X, L([[2, 1]]), X[:1, :2])),
        (lambda lib, x, i, s: x.clone().scatter_add_(1, i, s), (X, L([[2, 2]]), X[:1, :2])),
        (lambda lib, x, i: x.clone().scatter_(1, i, 2.0, reduce="multiply"), (X, L([[2, 2]]))),
        (lambda lib, x, i, s: x.clone().index_add_(0, i, s), (X, L([-1]), X[:1])),
    ]:
        assert_parity(fn, *args, grad=False, check_warnings=False)


def test_scatter_reduce_argument_node_and_backward_error():
    """scatter(reduce=...) records PyTorch's NotImplemented node; its backward raises."""
    for src in (np.full((1, 2), 2.0), 2.0):
        def fn(lib, x, i, s=src):
            s = lib.tensor(s) if isinstance(s, np.ndarray) else s
            return lib.scatter(x, 1, i, s, reduce="multiply")
        assert_parity(fn, X, L([[0, 0]]), grad=True, check_warnings=False)


def test_scatter_reduce_argument_warns_once_like_torch():
    from jitgrad.ops import gather_scatter
    gather_scatter._reduce_warned = False
    x, i, s = jitgrad.zeros(2, 3), jitgrad.tensor([[0, 0]]), jitgrad.ones(1, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        jitgrad.scatter(x, 1, i, 2.0, reduce="multiply")  # a value: no warning
        jitgrad.scatter(x, 1, i, s, reduce="add")
        jitgrad.scatter(x, 1, i, s, reduce="multiply")
    msgs = [str(m.message) for m in w]
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("The reduce argument of torch.scatter with Tensor src is "
                              "deprecated and will be removed in a future PyTorch release. Use "
                              "torch.scatter_reduce instead for more reduction options.")


# ----------------------------------------------------------------------------- keys


KEYS = [
    ("tuple_of_lists", lambda lib, x: x[[0, 1], [1, 1]]),
    ("explicit_tuple", lambda lib, x: x[([0, 1], [2, 0])]),
    ("list_of_tensors", lambda lib, x: x[[lib.tensor([0, 1]), lib.tensor([1, 1])]]),
    ("list_of_lists", lambda lib, x: x[[[0, 1], [1, 1]]]),
    ("list_tensor_and_list", lambda lib, x: x[[lib.tensor([0, 1]), [1, -1]]]),
    ("list_tensor_and_int", lambda lib, x: x[[lib.tensor([0, 1]), 1]]),
    ("list_of_0d_tensors", lambda lib, x: x[[lib.tensor(0), lib.tensor(1)]]),
    ("list_one_tensor", lambda lib, x: x[[lib.tensor([0, 1])]]),
    ("list_bool_tensor", lambda lib, x: x[[lib.tensor([True, False])]]),
    ("list_float_tensor", lambda lib, x: x[[lib.tensor([0.0, 1.0])]]),
    ("tuple_of_lists_oob", lambda lib, x: x[[0, 1], [1, 3]]),
]


@pytest.mark.parametrize("name,fn", KEYS, ids=[k[0] for k in KEYS])
def test_sequence_keys_match_torch(name, fn):
    assert_parity(fn, X, grad=True, where=name)


def test_sequence_key_setitem_matches_torch():
    def fn(lib, x):
        y = x.clone()
        y[[0, 1], [2, 0]] = lib.tensor([7.0, 8.0], dtype=x.dtype)
        y[[lib.tensor([1]), lib.tensor([-1])]] = -1.0
        return y
    assert_parity(fn, X, grad=True, check_warnings=False)


# ----------------------------------------------------------------------------- factories


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(2 ** 62), lambda lib: lib.ones(2 ** 62),
    lambda lib: lib.empty(2 ** 62), lambda lib: lib.full((2 ** 62,), 1.0),
    lambda lib: lib.zeros(2 ** 31, 2 ** 31), lambda lib: lib.rand(2 ** 62),
    lambda lib: lib.randn(2 ** 62), lambda lib: lib.arange(2 ** 62),
    lambda lib: lib.eye(2 ** 31), lambda lib: lib.randint(0, 5, (2 ** 62,)),
    lambda lib: lib.zeros(2 ** 61, dtype=lib.float64),
    lambda lib: lib.zeros(2 ** 40),  # fits int64, too big to allocate: the allocator's error
], ids=["zeros", "ones", "empty", "full", "zeros2d", "rand", "randn", "arange", "eye",
        "randint", "zeros_f64", "zeros_4tib"])
def test_huge_factories_raise_torch_error(make):
    assert_parity(make)
