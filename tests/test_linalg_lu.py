"""torch.linalg's LU family against PyTorch: lu_factor/lu_factor_ex, lu, lu_solve (left,
adjoint), torch.lu_unpack and the deprecated torch.lu / torch.lu_solve (+ Tensor methods).
Values, pivots (exactly), dtypes, grad_fn names, gradients, float64 central differences and
double backward (``assert_grad_parity``), info codes, errors and deprecation warnings."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = [pytest.mark.skipif(torch is None, reason="needs PyTorch"),
              pytest.mark.filterwarnings("ignore:torch.lu")]

_RNG = np.random.default_rng(23)


def rand(*shape, dt=np.float64):
    return _RNG.standard_normal(shape).astype(dt)


def _lu_part(i):
    return lambda T: lambda a: T.linalg.lu(a)[i]


GRAD_CASES = [
    ("lu_factor", lambda T: lambda a: T.linalg.lu_factor(a).LU, [(4, 4)]),
    ("lu_factor batched", lambda T: lambda a: T.linalg.lu_factor(a).LU, [(2, 3, 3)]),
    ("lu_factor wide", lambda T: lambda a: T.linalg.lu_factor(a).LU, [(3, 5)]),
    ("lu_factor tall", lambda T: lambda a: T.linalg.lu_factor(a).LU, [(2, 5, 3)]),
    ("lu_factor_ex", lambda T: lambda a: T.linalg.lu_factor_ex(a).LU, [(3, 3)]),
    ("lu L", _lu_part(1), [(4, 4)]),
    ("lu U", _lu_part(2), [(2, 3, 3)]),
    ("lu L wide", _lu_part(1), [(3, 5)]),
    ("lu U wide", _lu_part(2), [(3, 5)]),
    ("lu L tall", _lu_part(1), [(5, 3)]),
    ("lu U tall", _lu_part(2), [(2, 5, 3)]),
    ("lu L+U", lambda T: lambda a: (lambda r: r.L.sum(-1) + r.U.sum(-1))(T.linalg.lu(a)),
     [(4, 4)]),
    ("lu L+U wide", lambda T: lambda a: (lambda r: r.L.sum() + r.U.sum())(T.linalg.lu(a)),
     [(3, 5)]),
    ("lu L+U tall", lambda T: lambda a: (lambda r: r.L.sum() + r.U.sum())(T.linalg.lu(a)),
     [(5, 3)]),
    ("lu_unpack", lambda T: lambda a: T.lu_unpack(*T.linalg.lu_factor(a)).L, [(4, 4)]),
    ("lu_unpack U wide", lambda T: lambda a: T.lu_unpack(*T.linalg.lu_factor(a)).U, [(3, 5)]),
    ("lu_unpack L tall", lambda T: lambda a: T.lu_unpack(*T.linalg.lu_factor(a)).L, [(5, 3)]),
    ("lu_solve", lambda T: lambda a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b),
     [(3, 3), (3, 2)]),
    ("lu_solve batched broadcast",
     lambda T: lambda a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b), [(2, 3, 3), (4, 1, 3, 2)]),
    ("torch.lu", lambda T: lambda a: T.lu(a)[0], [(3, 3)]),
    ("Tensor.lu", lambda T: lambda a: a.lu(get_infos=True)[0], [(2, 3, 3)]),
    ("torch.lu_solve", lambda T: lambda a, b: T.lu_solve(b, *T.linalg.lu_factor(a)),
     [(3, 3), (3, 1)]),
    ("Tensor.lu_solve", lambda T: lambda a, b: b.lu_solve(*a.lu()), [(2, 3, 3), (2, 3, 2)]),
]
for _left in (True, False):
    for _adj in (True, False):
        GRAD_CASES.append((
            f"lu_solve left={_left} adjoint={_adj}",
            (lambda left, adj: lambda T: lambda a, b: T.linalg.lu_solve(
                *T.linalg.lu_factor(a), b, left=left, adjoint=adj))(_left, _adj),
            [(3, 3), (3, 2) if _left else (2, 3)]))


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_values_and_gradients(name, fn, shapes):
    assert_grad_parity(fn, *[rand(*s) for s in shapes])


def test_lu_solve_gradient_wrt_the_packed_factor():
    """The LU input of lu_solve (not A): linalg_lu_solve_LU's formula for each left/adjoint."""
    lu_ = torch.linalg.lu_factor(torch.tensor(rand(3, 3)))
    for left in (True, False):
        for adj in (True, False):
            b = rand(3, 2) if left else rand(2, 3)
            assert_grad_parity(
                lambda T, left=left, adj=adj: lambda LU, B: T.linalg.lu_solve(
                    LU, T.tensor(lu_.pivots.numpy()), B, left=left, adjoint=adj),
                lu_.LU.numpy(), b)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 1, 2), (0, 3, 3),
                                   (3, 0)])
def test_factor_outputs_exact_pivots(shape):
    a = rand(*shape)

    def fn(T, x):
        r = T.linalg.lu_factor_ex(x)
        return (r.LU, r.pivots, r.info, type(r).__name__) + tuple(T.linalg.lu(x))
    res = assert_parity(fn, a, grad=True)
    want = torch.linalg.lu_factor(torch.tensor(a)).pivots.numpy()
    assert res.values[1].dtype == np.int32 and np.array_equal(res.values[1], want)


def test_pivots_and_values_float32():
    a = rand(3, 4, 4, dt=np.float32)
    j, t = jitgrad.linalg.lu_factor(jitgrad.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
    assert np.array_equal(j.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_allclose(j.LU.numpy(), t.LU.numpy(), rtol=1e-5, atol=1e-6)
    assert j.LU.dtype is jitgrad.float32


SINGULAR = [np.zeros((3, 3)), np.array([[1.0, 0.0], [0.0, 0.0]]),
            np.stack([np.eye(3), np.diag([1.0, 2.0, 0.0])])]


@pytest.mark.parametrize("a", SINGULAR, ids=["zeros", "second", "batch"])
def test_singular(a):
    assert_parity(lambda T, x: T.linalg.lu_factor_ex(x), a)
    assert_parity(lambda T, x: T.linalg.lu_factor(x), a)
    assert_parity(lambda T, x: T.linalg.lu_factor_ex(x, check_errors=True), a)
    assert_parity(lambda T, x: T.linalg.lu(x), a)
    assert_parity(lambda T, x: T.lu(x, get_infos=True), a, check_warnings=False)
    assert_parity(lambda T, x: T.lu(x), a, check_warnings=False)


ERRORS = [
    ("1-D lu_factor", lambda T, a: T.linalg.lu_factor(a[0]), (3, 3)),
    ("1-D lu", lambda T, a: T.linalg.lu(a[0]), (3, 3)),
    ("1-D torch.lu", lambda T, a: T.lu(a[0]), (3, 3)),
    ("pivot=False", lambda T, a: T.linalg.lu_factor(a, pivot=False), (3, 3)),
    ("lu pivot=False", lambda T, a: T.linalg.lu(a, pivot=False), (3, 3)),
    ("ex pivot=False", lambda T, a: T.linalg.lu_factor_ex(a, pivot=False), (2, 3, 3)),
    ("integer", lambda T, a: T.linalg.lu_factor(a.long()), (3, 3)),
    ("half", lambda T, a: T.linalg.lu_factor(a.half()), (3, 3)),
    ("lu integer", lambda T, a: T.linalg.lu(a.long()), (3, 3)),
    ("solve shapes", lambda T, a: T.linalg.lu_solve(*T.linalg.lu_factor(a), a.new_ones(4, 2)),
     (3, 3)),
    ("solve dtype", lambda T, a: T.linalg.lu_solve(*T.linalg.lu_factor(a), a.float()), (3, 3)),
    ("solve pivot dtype", lambda T, a: (lambda r: T.linalg.lu_solve(r[0], r[1].long(), a))(
        T.linalg.lu_factor(a)), (3, 3)),
    ("solve non-square", lambda T, a: (lambda r: T.linalg.lu_solve(r[0][:2], r[1], a))(
        T.linalg.lu_factor(a)), (3, 3)),
    ("solve pivot count", lambda T, a: (lambda r: T.linalg.lu_solve(r[0], r[1][:2], a))(
        T.linalg.lu_factor(a)), (3, 3)),
    ("solve pivot batch", lambda T, a: (lambda r: T.linalg.lu_solve(r[0], r[1][:1], a))(
        T.linalg.lu_factor(a)), (2, 3, 3)),
    ("solve 1-D B", lambda T, a: T.linalg.lu_solve(*T.linalg.lu_factor(a), a[0]), (3, 3)),
    ("solve left=False shapes", lambda T, a: T.linalg.lu_solve(
        *T.linalg.lu_factor(a), a.new_ones(3, 2), left=False), (3, 3)),
    ("unpack pivot dtype", lambda T, a: (lambda r: T.lu_unpack(r[0], r[1].long()))(
        T.linalg.lu_factor(a)), (3, 3)),
    ("unpack 1-D", lambda T, a: (lambda r: T.lu_unpack(r[0][0], r[1]))(
        T.linalg.lu_factor(a)), (3, 3)),
    ("legacy lu_solve shapes", lambda T, a: T.lu_solve(a.new_ones(4, 1), *T.linalg.lu_factor(a)),
     (3, 3)),
]


@pytest.mark.parametrize("name,fn,shape", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, shape):
    assert_parity(fn, rand(*shape), check_warnings=False)


@pytest.mark.parametrize("unpack_data,unpack_pivots", [(True, False), (False, True),
                                                       (False, False)])
def test_lu_unpack_flags(unpack_data, unpack_pivots):
    assert_parity(lambda T, a: T.lu_unpack(*T.linalg.lu_factor(a), unpack_data=unpack_data,
                                           unpack_pivots=unpack_pivots), rand(2, 4, 3), grad=True)


def test_named_tuples_and_out():
    a = rand(3, 3)
    assert_parity(lambda T, x: [type(T.linalg.lu_factor(x)).__name__,
                                type(T.linalg.lu(x)).__name__,
                                type(T.lu_unpack(*T.linalg.lu_factor(x))).__name__,
                                type(T.lu(x)).__name__], a, check_warnings=False)

    def with_out(T, x):
        LU, piv = T.empty(0, dtype=x.dtype), T.empty(0, dtype=T.int32)
        r = T.linalg.lu_factor(x, out=(LU, piv))
        return r.LU is LU, LU, piv
    assert_parity(with_out, a)


_WARN_SCRIPT = """
import warnings, sys, numpy as np
import {lib} as T
a, b = T.tensor(np.eye(3) + 1.0), T.tensor(np.ones((3, 2)))
seen = []
for call in (lambda: T.lu(a), lambda: a.lu(), lambda: T.lu_solve(b, *T.linalg.lu_factor(a)),
             lambda: b.lu_solve(*T.linalg.lu_factor(a)),
             lambda: T.linalg.lu_solve(*T.linalg.lu_factor(a), b), lambda: T.lu_unpack(*a.lu())):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    seen.append([(x.category.__name__, str(x.message)) for x in w])
print(repr(seen))
"""


def _warnings_in_fresh_process(lib):
    """PyTorch warns once per process (TORCH_WARN_ONCE): each library in its own process, so
    the first call's warning is seen."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WARN_SCRIPT.format(lib=lib)],
                         capture_output=True, text=True, check=True).stdout
    return eval(out)  # noqa: S307 - our own script's repr of lists of strings


def test_deprecation_warnings():
    want = _warnings_in_fresh_process("torch")
    got = _warnings_in_fresh_process("jitgrad")
    assert want[0] and want[2]  # torch.lu and torch.lu_solve do warn

    def distinct(seen):  # PyTorch's warnings are once per process; jitgrad's per call
        return list(dict.fromkeys(w for ws in seen for w in ws))
    assert distinct(got) == distinct(want)
    assert [bool(w) for w in got] == [True, True, True, True, False, True]
