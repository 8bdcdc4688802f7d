"""torch.linalg's solvers and compositions against PyTorch: inv/inv_ex, det, slogdet/logdet,
solve/solve_ex, cholesky/cholesky_ex (+ the deprecated torch.cholesky), solve_triangular,
matrix_power, cross, diagonal, vander. Values, dtypes, grad_fn names, gradients, float64
central differences and double backward (``assert_grad_parity``), the ``_ex`` info tensors,
the named tuples, and PyTorch's errors word for word."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

_RNG = np.random.default_rng(11)


def well(*shape, dt=np.float64):
    """Well-conditioned square matrices: random + n I (diagonally dominant enough)."""
    n = shape[-1]
    return (_RNG.standard_normal(shape) * 0.5 + n * np.eye(n)).astype(dt)


def rand(*shape, dt=np.float64):
    return _RNG.standard_normal(shape).astype(dt)


def _eye_spd(T, b):
    """b b^T + n I: symmetric positive-definite, a smooth function of all of b's entries."""
    return b @ b.mT + b.shape[-1] * T.eye(b.shape[-1], dtype=b.dtype)


# ------------------------------------------------------------ values, grad_fn, gradients

GRAD_CASES = [
    ("inv", lambda T: lambda a: T.linalg.inv(a), [(3, 3)]),
    ("inv batched", lambda T: lambda a: T.linalg.inv(a), [(2, 3, 3)]),
    ("inverse", lambda T: lambda a: T.inverse(a), [(4, 4)]),
    ("Tensor.inverse", lambda T: lambda a: a.inverse(), [(2, 2, 2)]),
    ("inv_ex", lambda T: lambda a: T.linalg.inv_ex(a).inverse, [(2, 3, 3)]),
    ("det", lambda T: lambda a: T.linalg.det(a), [(3, 3)]),
    ("det batched", lambda T: lambda a: T.linalg.det(a), [(2, 1, 3, 3)]),
    ("torch.det", lambda T: lambda a: T.det(a), [(1, 1)]),
    ("Tensor.det", lambda T: lambda a: a.det(), [(2, 4, 4)]),
    ("slogdet logabsdet", lambda T: lambda a: T.linalg.slogdet(-a).logabsdet, [(2, 3, 3)]),
    ("torch.slogdet", lambda T: lambda a: T.slogdet(a)[1], [(3, 3)]),
    ("Tensor.slogdet", lambda T: lambda a: a.slogdet().logabsdet, [(3, 3)]),
    ("logdet", lambda T: lambda a: T.logdet(a), [(2, 3, 3)]),
    ("Tensor.logdet", lambda T: lambda a: a.logdet(), [(3, 3)]),
    ("solve matrix", lambda T: lambda a, b: T.linalg.solve(a, b), [(3, 3), (3, 2)]),
    ("solve vector", lambda T: lambda a, b: T.linalg.solve(a, b), [(3, 3), (3,)]),
    ("solve batch of vectors", lambda T: lambda a, b: T.linalg.solve(a, b), [(2, 3, 3), (2, 3)]),
    ("solve broadcast", lambda T: lambda a, b: T.linalg.solve(a, b), [(2, 1, 3, 3), (4, 3, 2)]),
    ("solve vector broadcast", lambda T: lambda a, b: T.linalg.solve(a, b), [(2, 3, 3), (3,)]),
    ("solve left=False", lambda T: lambda a, b: T.linalg.solve(a, b, left=False),
     [(2, 3, 3), (2, 4, 3)]),
    ("solve_ex", lambda T: lambda a, b: T.linalg.solve_ex(a, b).result, [(3, 3), (3, 1)]),
    ("cholesky", lambda T: lambda b: T.linalg.cholesky(_eye_spd(T, b)), [(3, 3)]),
    ("cholesky batched upper", lambda T: lambda b: T.linalg.cholesky(_eye_spd(T, b), upper=True),
     [(2, 3, 3)]),
    ("cholesky_ex", lambda T: lambda b: T.linalg.cholesky_ex(_eye_spd(T, b)).L, [(2, 2, 2)]),
    ("torch.cholesky", lambda T: lambda b: T.cholesky(_eye_spd(T, b)), [(3, 3)]),
    ("torch.cholesky upper", lambda T: lambda b: T.cholesky(_eye_spd(T, b), True), [(3, 3)]),
    ("solve_triangular upper", lambda T: lambda a, b: T.linalg.solve_triangular(a, b, upper=True),
     [(3, 3), (3, 2)]),
    ("solve_triangular lower right",
     lambda T: lambda a, b: T.linalg.solve_triangular(a, b, upper=False, left=False),
     [(2, 3, 3), (2, 4, 3)]),
    ("solve_triangular unitriangular broadcast",
     lambda T: lambda a, b: T.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
     [(2, 1, 3, 3), (4, 3, 2)]),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_parity(name, fn, shapes, dt):
    arrays = [well(*s, dt=dt) if len(s) >= 2 and s[-1] == s[-2] and i == 0 else rand(*s, dt=dt)
              for i, s in enumerate(shapes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_grad_parity(fn, *arrays)


def test_slogdet_sign_has_no_gradient():
    """A real matrix's sign is piecewise constant: PyTorch's backward returns no gradient
    (autograd.grad calls the input unused)."""
    def grads(T, a):
        sign = T.linalg.slogdet(-a).sign
        none = T.autograd.grad(sign.sum(), a, allow_unused=True)[0]
        return [sign, none is None, T.autograd.grad(sign.sum(), a)]
    assert_parity(grads, well(2, 3, 3), grad=True)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 6, -1, -2, -3, -5])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 1, 2, 2)])
def test_matrix_power(n, shape):
    a = well(*shape) / shape[-1]
    assert_grad_parity(lambda T: lambda x: T.linalg.matrix_power(x, n), a)


def test_matrix_power_spellings_and_integers():
    a = well(3, 3)
    assert_grad_parity(lambda T: lambda x: T.matrix_power(x, 3), a)
    assert_grad_parity(lambda T: lambda x: x.matrix_power(2), a)
    ints = np.arange(9, dtype=np.int64).reshape(3, 3) % 4
    for n in (0, 1, 2, 5):
        assert_parity(lambda T, x, n=n: T.linalg.matrix_power(x, n), ints)


@pytest.mark.parametrize("shapes,dim", [
    (((3,), (3,)), -1), (((2, 3), (2, 3)), -1), (((4, 3), (1, 3)), 1),
    (((3, 2), (3, 2)), 0), (((2, 3, 4), (2, 3, 1)), -2)])
def test_cross(shapes, dim):
    arrays = [rand(*s) for s in shapes]
    assert_grad_parity(lambda T: lambda a, b: T.linalg.cross(a, b, dim=dim), *arrays)
    assert_grad_parity(lambda T: lambda a, b: T.cross(a, b, dim=dim), *arrays)
    assert_grad_parity(lambda T: lambda a, b: a.cross(b, dim), *arrays)


def test_cross_default_dim_and_integers():
    a, b = rand(3, 3, 2), rand(3, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_grad_parity(lambda T: lambda x, y: T.cross(x, y), a, b)
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg"):
        jitgrad.cross(jitgrad.tensor(a), jitgrad.tensor(b))
    ints = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert_parity(lambda T, x, y: T.linalg.cross(x, y), ints, ints[::-1].copy())


@pytest.mark.parametrize("kw", [{}, {"offset": 1}, {"offset": -1, "dim1": 0, "dim2": 2}])
def test_linalg_diagonal(kw):
    assert_grad_parity(lambda T: lambda a: T.linalg.diagonal(a, **kw), rand(3, 4, 5))


@pytest.mark.parametrize("shape,N", [((4,), None), ((2, 3), None), ((3,), 2), ((3,), 5)])
def test_vander(shape, N):
    assert_grad_parity(lambda T: lambda x: T.linalg.vander(x, N=N), rand(*shape))
    assert_grad_parity(lambda T: lambda x: T.linalg.vander(x, N=N), rand(*shape, dt=np.float32))


def test_vander_integers():
    assert_parity(lambda T, x: T.linalg.vander(x), np.arange(4, dtype=np.int64))


# ------------------------------------------------------------- _ex info, named tuples, out=

def _singular():
    return np.array([[1., 2, 3], [2, 4, 6], [1, 1, 1]])


def _not_pd():
    return np.array([[1., 2, 0], [2, 1, 0], [0, 0, 1]])


def test_ex_info_tensors():
    stack = np.stack([np.eye(3), _singular(), np.zeros((3, 3))])
    spd = np.stack([np.eye(3), _not_pd(), -np.eye(3)])
    assert_parity(lambda T, a: T.linalg.inv_ex(a).info, stack)
    assert_parity(lambda T, a: T.linalg.inv_ex(a).inverse[0], stack)
    assert_parity(lambda T, a, b: T.linalg.solve_ex(a, b).info, stack, rand(3))
    assert_parity(lambda T, a, b: T.linalg.solve_ex(a, b).info, stack[:1], rand(4, 3, 1))
    assert_parity(lambda T, a: T.linalg.cholesky_ex(a).info, spd)
    assert_parity(lambda T, a: T.linalg.cholesky_ex(a, upper=True).info, spd)
    assert_parity(lambda T, a: T.linalg.cholesky_ex(a).L[0], spd)
    assert_parity(lambda T, a: T.linalg.cholesky_ex(a).info, np.full((2, 2), np.nan))
    assert_parity(lambda T, a: T.linalg.inv_ex(a).info, _singular())


@pytest.mark.parametrize("call,fields", [
    (lambda T, a: T.linalg.slogdet(a), ("sign", "logabsdet")),
    (lambda T, a: T.slogdet(a), ("sign", "logabsdet")),
    (lambda T, a: a.slogdet(), ("sign", "logabsdet")),
    (lambda T, a: T.linalg.inv_ex(a), ("inverse", "info")),
    (lambda T, a: T.linalg.solve_ex(a, a), ("result", "info")),
    (lambda T, a: T.linalg.cholesky_ex(a @ a.mT), ("L", "info")),
])
def test_named_tuples(call, fields):
    a = well(2, 3, 3)
    rj, rt = call(jitgrad, jitgrad.tensor(a)), call(torch, torch.tensor(a))
    assert type(rj).__name__ == type(rt).__name__
    assert repr(rj).split("(")[0] == repr(rt).split("(")[0]
    for f in fields:
        np.testing.assert_allclose(getattr(rj, f).numpy(), getattr(rt, f).numpy(), atol=1e-12)
        assert str(getattr(rj, f).dtype) == str(getattr(rt, f).dtype)


def test_singular_and_special_values():
    sing = _singular()
    assert_parity(lambda T, a: T.linalg.det(a), sing, atol=1e-12)
    assert_parity(lambda T, a: T.linalg.slogdet(a).logabsdet, sing)
    assert_parity(lambda T, a: T.logdet(a), sing)
    assert_parity(lambda T, a: T.logdet(a), -np.eye(3))
    for empty in (np.zeros((0, 0)), np.zeros((0, 2, 2)), np.zeros((2, 0, 0))):
        assert_parity(lambda T, a: T.linalg.inv(a), empty)
        assert_parity(lambda T, a: T.linalg.det(a), empty)
        assert_parity(lambda T, a: list(T.linalg.slogdet(a)), empty)
        assert_parity(lambda T, a: T.linalg.cholesky(a), empty)
    assert_parity(lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True),
                  np.zeros((2, 2)), np.ones((2, 1)))


def test_out():
    a = well(3, 3)
    assert_parity(lambda T, x: T.linalg.inv(x, out=T.empty(0, dtype=T.float64)), a)
    assert_parity(lambda T, x: T.linalg.det(x, out=T.empty(0, dtype=T.float64)), a)
    assert_parity(lambda T, x: T.linalg.inv(x, out=T.empty(0, dtype=T.float32)), a)
    assert_parity(lambda T, x: T.linalg.solve(x, x, out=T.empty(0, dtype=T.float64)), a)
    assert_parity(lambda T, x: list(T.linalg.inv_ex(
        x, out=(T.empty(0, dtype=T.float64), T.empty(0, dtype=T.int32)))), a)
    assert_parity(lambda T, x: T.linalg.inv(x, out=T.empty(0, dtype=T.float64)), a, grad=True)


def test_linalg_error_class():
    assert issubclass(jitgrad.linalg.LinAlgError, RuntimeError)
    with pytest.raises(jitgrad.linalg.LinAlgError):
        jitgrad.linalg.inv(jitgrad.zeros(2, 2))


# ------------------------------------------------------------------------------ errors

_I = np.arange(9, dtype=np.int64).reshape(3, 3)
_H = well(3, 3, dt=np.float16)

ERROR_CASES = [
    # (label, call, arrays)
    ("inv int", lambda T, a: T.linalg.inv(a), [_I]),
    ("inv half", lambda T, a: T.linalg.inv(a), [_H]),
    ("inv 1-D", lambda T, a: T.linalg.inv(a), [rand(3)]),
    ("inv non-square", lambda T, a: T.linalg.inv(a), [rand(2, 3)]),
    ("inv int non-square", lambda T, a: T.linalg.inv(a), [_I[:2]]),
    ("inv singular", lambda T, a: T.linalg.inv(a), [_singular()]),
    ("inv zeros", lambda T, a: T.linalg.inv(a), [np.zeros((3, 3))]),
    ("inv singular batch", lambda T, a: T.linalg.inv(a), [np.stack([np.eye(3), _singular()])]),
    ("inv batch of one", lambda T, a: T.linalg.inv(a), [np.zeros((1, 2, 2))]),
    ("inverse singular", lambda T, a: T.inverse(a), [_singular()]),
    ("inv_ex check_errors", lambda T, a: T.linalg.inv_ex(a, check_errors=True), [_singular()]),
    ("inv_ex 1-D", lambda T, a: T.linalg.inv_ex(a), [rand(3)]),
    ("det int", lambda T, a: T.linalg.det(a), [_I]),
    ("det half", lambda T, a: T.linalg.det(a), [_H]),
    ("det non-square", lambda T, a: T.det(a), [rand(2, 3)]),
    ("slogdet half", lambda T, a: T.linalg.slogdet(a), [_H]),
    ("slogdet 1-D", lambda T, a: T.linalg.slogdet(a), [rand(3)]),
    ("slogdet int", lambda T, a: T.slogdet(a), [_I]),
    ("logdet int", lambda T, a: T.logdet(a), [_I]),
    ("logdet non-square", lambda T, a: T.logdet(a), [rand(2, 3)]),
    ("logdet half", lambda T, a: T.logdet(a), [_H]),
    ("solve singular", lambda T, a, b: T.linalg.solve(a, b), [_singular(), rand(3)]),
    ("solve singular batch", lambda T, a, b: T.linalg.solve(a, b),
     [np.stack([np.eye(3), _singular()]), rand(3)]),
    ("solve singular, batched B", lambda T, a, b: T.linalg.solve(a, b),
     [_singular(), rand(2, 3, 1)]),
    ("solve_ex check_errors", lambda T, a, b: T.linalg.solve_ex(a, b, check_errors=True),
     [_singular(), rand(3)]),
    ("solve int", lambda T, a, b: T.linalg.solve(a, b), [_I, _I]),
    ("solve dtypes", lambda T, a, b: T.linalg.solve(a, b), [rand(3, 3), _I]),
    ("solve dtypes 2", lambda T, a, b: T.linalg.solve(a, b),
     [rand(2, 3), rand(2, 3, dt=np.float32)]),
    ("solve half", lambda T, a, b: T.linalg.solve(a, b), [_H, _H]),
    ("solve A 1-D", lambda T, a, b: T.linalg.solve(a, b), [rand(3), rand(3, 3)]),
    ("solve B 0-D", lambda T, a, b: T.linalg.solve(a, b), [rand(3, 3), np.array(1.0)]),
    ("solve non-square", lambda T, a, b: T.linalg.solve(a, b), [rand(2, 3), rand(2)]),
    ("solve mismatch", lambda T, a, b: T.linalg.solve(a, b), [rand(3, 3), rand(2)]),
    ("solve mismatch matrix", lambda T, a, b: T.linalg.solve(a, b), [rand(3, 3), rand(2, 2)]),
    ("solve batch mismatch", lambda T, a, b: T.linalg.solve(a, b), [rand(2, 3, 3), rand(4, 3, 1)]),
    ("solve left=False mismatch", lambda T, a, b: T.linalg.solve(a, b, left=False),
     [rand(3, 3), rand(3, 2)]),
    ("solve left=False vector", lambda T, a, b: T.linalg.solve(a, b, left=False),
     [rand(3, 3), rand(3)]),
    ("solve left=False 1x1 vector", lambda T, a, b: T.linalg.solve(a, b, left=False),
     [rand(2, 1, 1), rand(2, 1)]),
    ("cholesky not PD", lambda T, a: T.linalg.cholesky(a), [_not_pd()]),
    ("cholesky not PD batch", lambda T, a: T.linalg.cholesky(a),
     [np.stack([np.eye(3), _not_pd()])]),
    ("cholesky upper not PD", lambda T, a: T.linalg.cholesky(a, upper=True), [-np.eye(2)]),
    ("cholesky NaN", lambda T, a: T.linalg.cholesky(a), [np.full((2, 2), np.nan)]),
    ("cholesky_ex check_errors", lambda T, a: T.linalg.cholesky_ex(a, check_errors=True),
     [_not_pd()]),
    ("cholesky int", lambda T, a: T.linalg.cholesky(a), [_I]),
    ("cholesky half", lambda T, a: T.linalg.cholesky(a), [_H]),
    ("cholesky non-square", lambda T, a: T.linalg.cholesky(a), [rand(2, 3)]),
    ("torch.cholesky not PD", lambda T, a: T.cholesky(a), [_not_pd()]),
    ("torch.cholesky non-square", lambda T, a: T.cholesky(a), [rand(2, 3)]),
    ("solve_triangular 1-D B", lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True),
     [rand(3, 3), rand(3)]),
    ("solve_triangular non-square", lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True),
     [rand(2, 3), rand(2, 1)]),
    ("solve_triangular mismatch", lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True),
     [rand(3, 3), rand(2, 1)]),
    ("solve_triangular XA=B", lambda T, a, b: T.linalg.solve_triangular(a, b, upper=False,
                                                                          left=False),
     [rand(3, 3), rand(3, 2)]),
    ("solve_triangular int", lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True),
     [_I, _I]),
    ("solve_triangular no upper", lambda T, a, b: T.linalg.solve_triangular(a, b),
     [rand(3, 3), rand(3, 1)]),
    ("matrix_power float n", lambda T, a: T.linalg.matrix_power(a, 2.0), [rand(2, 2)]),
    ("matrix_power non-square", lambda T, a: T.linalg.matrix_power(a, 2), [rand(2, 3)]),
    ("matrix_power 1-D", lambda T, a: T.linalg.matrix_power(a, 2), [rand(3)]),
    ("matrix_power int inverse", lambda T, a: T.linalg.matrix_power(a, -1), [_I]),
    ("matrix_power singular", lambda T, a: T.linalg.matrix_power(a, -2), [_singular()]),
    ("cross ndim", lambda T, a, b: T.linalg.cross(a, b), [rand(2, 3), rand(3)]),
    ("cross length", lambda T, a, b: T.linalg.cross(a, b), [rand(3, 2), rand(3, 2)]),
    ("cross length dim", lambda T, a, b: T.linalg.cross(a, b, dim=1), [rand(3, 2), rand(3, 2)]),
    ("cross dim range", lambda T, a, b: T.linalg.cross(a, b, dim=2), [rand(3, 2), rand(3, 2)]),
    ("cross dtypes", lambda T, a, b: T.linalg.cross(a, b), [rand(3), rand(3, dt=np.float32)]),
    ("cross broadcast", lambda T, a, b: T.linalg.cross(a, b), [rand(2, 3), rand(4, 3)]),
    ("torch.cross no size 3", lambda T, a, b: T.cross(a, b), [rand(2, 2), rand(2, 2)]),
    ("linalg.diagonal 1-D", lambda T, a: T.linalg.diagonal(a), [rand(3)]),
    ("vander bool", lambda T, a: T.linalg.vander(a), [np.array([True, False])]),
    ("vander half", lambda T, a: T.linalg.vander(a), [rand(3, dt=np.float16)]),
    ("vander N=1", lambda T, a: T.linalg.vander(a, N=1), [rand(3)]),
    ("vander 0-D", lambda T, a: T.linalg.vander(a), [np.array(2.0)]),
    ("vander empty", lambda T, a: T.linalg.vander(a), [rand(2, 0)]),
]


@pytest.mark.parametrize("label,call,arrays", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(label, call, arrays):
    got = assert_parity(call, *arrays, where=label)
    assert got.error is not None, label


def test_det_gradient_of_singular_matrices():
    """det's gradient at an exactly singular matrix: 0 in a first-order pass (PyTorch's
    perturbed LU solve of a zero right-hand side), the cofactors (through the SVD) with
    create_graph, and the second derivative through them."""
    a = np.stack([_singular(), well(3, 3)])
    got = []
    for T in (jitgrad, torch):
        A = T.tensor(a, requires_grad=True)
        T.linalg.det(A).sum().backward()
        first = A.grad.numpy()
        g, = T.autograd.grad(T.linalg.det(A).sum(), A, create_graph=True)
        second, = T.autograd.grad((g * g).sum(), A)
        got.append((first, g.detach().numpy(), second.numpy()))
    for mine, ref in zip(*got):
        np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-9)
