"""torch.linalg.cond (every ``p``), tensorinv and tensorsolve against PyTorch: values, grad_fn
names, gradients (float64 central differences and double backward where PyTorch has them;
for the inverse-based orders PyTorch's own in-place error on backward), errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

_RNG = np.random.default_rng(41)


def rand(*shape):
    return _RNG.standard_normal(shape)


ORDS = [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc", 1.0, 2.0, -2.0]


@pytest.mark.parametrize("p", ORDS, ids=[repr(p) for p in ORDS])
def test_cond_values_nodes_and_gradients(p):
    a = rand(2, 3, 3)
    # values, nodes, and the backward (an error for the inverse-based orders, as PyTorch's)
    assert_parity(lambda T, x: T.linalg.cond(x, p), a, grad=True)
    if p is None or p == "nuc" or (not isinstance(p, str) and abs(p) == 2):
        assert_grad_parity(lambda T: lambda x: T.linalg.cond(x, p), a)


@pytest.mark.parametrize("p", [None, 2, -2, 1, math.inf, "fro", "nuc"])
def test_cond_singular_and_rectangular(p):
    assert_parity(lambda T, x: T.linalg.cond(x, p), np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert_parity(lambda T, x: T.linalg.cond(x, p), np.zeros((2, 2, 2)))
    assert_parity(lambda T, x: T.linalg.cond(x, p), rand(2, 3))
    assert_parity(lambda T, x: T.linalg.cond(x, p), np.zeros((2, 0, 0)))
    assert_parity(lambda T, x: T.linalg.cond(x.float(), p), rand(3, 3))


@pytest.mark.parametrize("fn", [
    lambda T, x: T.linalg.cond(x[0]), lambda T, x: T.linalg.cond(x, 3),
    lambda T, x: T.linalg.cond(x, 1.5), lambda T, x: T.linalg.cond(x, "abc"),
    lambda T, x: T.linalg.cond(x[:2], "abc"), lambda T, x: T.linalg.cond(x.long()),
    lambda T, x: T.linalg.cond(x.long(), 1), lambda T, x: T.linalg.cond(x[:2], -1),
    lambda T, x: T.linalg.cond(x[:2], 1.0), lambda T, x: T.linalg.cond(x[:2], -math.inf),
    lambda T, x: T.linalg.cond(x[:2], "nuc")])
def test_cond_errors(fn):
    assert_parity(fn, rand(3, 3))


TENSOR_CASES = [
    ("tensorinv", lambda T: lambda a: T.linalg.tensorinv(a), [(4, 6, 8, 3)]),
    ("tensorinv ind=1", lambda T: lambda a: T.linalg.tensorinv(a, ind=1), [(6, 2, 3)]),
    ("tensorinv ind=3", lambda T: lambda a: T.linalg.tensorinv(a, 3), [(2, 2, 2, 8)]),
    ("tensorsolve", lambda T: lambda a, b: T.linalg.tensorsolve(a, b), [(2, 3, 6), (2, 3)]),
    ("tensorsolve dims", lambda T: lambda a, b: T.linalg.tensorsolve(a, b, dims=(0,)),
     [(3, 2, 3, 2), (2, 3)]),
    ("tensorsolve dims 2", lambda T: lambda a, b: T.linalg.tensorsolve(a, b, dims=(0, 2)),
     [(2, 4, 3, 6), (4, 6)]),
]


@pytest.mark.parametrize("name,fn,shapes", TENSOR_CASES, ids=[c[0] for c in TENSOR_CASES])
def test_tensorinv_tensorsolve(name, fn, shapes):
    arrays = [rand(*s) for s in shapes]
    # diagonally dominant when read as a matrix: well-conditioned
    n = int(np.sqrt(arrays[0].size))
    arrays[0] = arrays[0] + (n * np.eye(n)).reshape(arrays[0].shape) if name == "tensorinv" \
        else arrays[0]
    assert_grad_parity(fn, *arrays)


@pytest.mark.parametrize("fn", [
    lambda T, x: T.linalg.tensorinv(x, 0), lambda T, x: T.linalg.tensorinv(x, -1),
    lambda T, x: T.linalg.tensorinv(x, 1), lambda T, x: T.linalg.tensorinv(x, 5),
    lambda T, x: T.linalg.tensorinv(x.reshape(2, 2, 2, 2, 3, 3) * 0, 4),
    lambda T, x: T.linalg.tensorinv(x.reshape(6, 6)[:2, :2].long(), 1),
    lambda T, x: T.linalg.tensorinv(x.reshape(6, 6) * 0, 1),
    lambda T, x: T.linalg.tensorsolve(x, x[0]),
    lambda T, x: T.linalg.tensorsolve(x.reshape(6, 6), x.reshape(36)[:5]),
    lambda T, x: T.linalg.tensorsolve(x.reshape(6, 6) * 0, x.reshape(36)[:6]),
    lambda T, x: T.linalg.tensorsolve(x.reshape(6, 6).float(), x.reshape(36)[:6]),
    lambda T, x: T.linalg.tensorsolve(x.reshape(6, 6), x.reshape(36)[:6], dims=(5,))])
def test_tensor_errors(fn):
    assert_parity(fn, rand(2, 3, 2, 3))
