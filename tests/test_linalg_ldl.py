"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve against PyTorch: the compact factor, the
pivots exactly (1x1 and 2x2 blocks, the blocked sytrf above 64 rows), info codes, solutions,
broadcasting, the NotImplemented node and its backward error, argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from tests._parity import assert_parity, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

_RNG = np.random.default_rng(53)


def sym(*shape, dt=np.float64):
    a = _RNG.standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    a[..., 0, 0] = 0.01  # a small first pivot beside a large entry: a 2x2 block
    if shape[-1] > 1:
        a[..., 1, 0] = a[..., 0, 1] = 5.0
    return a.astype(dt)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (1, 1), (0, 3, 3), (3, 0, 0), (70, 70),
                                   (130, 130)])
@pytest.mark.parametrize("hermitian", [False, True])
def test_factor_values_and_exact_pivots(shape, hermitian):
    a = sym(*shape) if shape[-1] else np.zeros(shape)
    res = assert_parity(lambda T, x: T.linalg.ldl_factor_ex(x, hermitian=hermitian), a,
                        atol=1e-8)
    want = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian).pivots.numpy()
    assert res.values[1].dtype == np.int32 and np.array_equal(res.values[1], want)
    if shape == (4, 4):
        assert (want < 0).any()  # the 2x2 block case is covered


def test_float32_and_named_tuples():
    a = sym(3, 6, 6, dt=np.float32)
    assert_parity(lambda T, x: T.linalg.ldl_factor(x), a, rtol=1e-4, atol=1e-5)
    assert_parity(lambda T, x: [type(T.linalg.ldl_factor(x)).__name__,
                                type(T.linalg.ldl_factor_ex(x)).__name__], a)


@pytest.mark.parametrize("bshape", [(5, 2), (2, 5, 1), (5, 5)])
def test_solve(bshape):
    a, b = sym(2, 5, 5), _RNG.standard_normal(bshape)
    assert_parity(lambda T, x, y: T.linalg.ldl_solve(*T.linalg.ldl_factor(x), y), a, b,
                  rtol=1e-8, atol=1e-10)
    assert_parity(lambda T, x, y: T.linalg.ldl_solve(*T.linalg.ldl_factor(x), y,
                                                     hermitian=True), a, b, rtol=1e-8,
                  atol=1e-10)


def test_solve_broadcasts_the_factor():
    """PyTorch 2.13 crashes when LD's batch broadcasts: checked against its linalg.solve."""
    import jitgrad
    a, b = sym(2, 5, 5), _RNG.standard_normal((3, 2, 5, 1))
    x = jitgrad.linalg.ldl_solve(*jitgrad.linalg.ldl_factor(jitgrad.tensor(a)),
                                 jitgrad.tensor(b))
    want = torch.linalg.solve(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-8, atol=1e-10)


def test_no_derivative():
    """A NotImplemented node; backward raises PyTorch's error."""
    a, b = sym(4, 4), _RNG.standard_normal((4, 2))
    assert_parity(lambda T, x: T.linalg.ldl_factor(x).LD, a, grad=True)
    assert_parity(lambda T, x, y: T.linalg.ldl_solve(*T.linalg.ldl_factor(x.detach()), y),
                  a, b, grad=True)


def test_singular_info_and_errors():
    z = np.zeros((2, 3, 3))
    assert_parity(lambda T, x: T.linalg.ldl_factor_ex(x), z)
    assert_parity(lambda T, x: T.linalg.ldl_factor_ex(x, check_errors=True), z)
    assert_parity(lambda T, x: T.linalg.ldl_factor(x), z[0])


ERRORS = [
    lambda T, a, LD, p: T.linalg.ldl_factor(a[0]),
    lambda T, a, LD, p: T.linalg.ldl_factor(a[:2]),
    lambda T, a, LD, p: T.linalg.ldl_factor(a.long()),
    lambda T, a, LD, p: T.linalg.ldl_factor(a.half()),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p, a.new_ones(3, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p, a.new_ones(4, 2).float()),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p.long(), a.new_ones(4, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p.float(), a.new_ones(4, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p[:3], a.new_ones(4, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD, p, a.new_ones(4)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD[:3], p, a.new_ones(4, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD.expand(2, 4, 4), p, a.new_ones(4, 2)),
    lambda T, a, LD, p: T.linalg.ldl_solve(LD.long(), p, a.new_ones(4, 2).long()),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors(fn):
    a = sym(4, 4)
    assert_parity(lambda T, x: fn(T, x, *T.linalg.ldl_factor(x)), a)
