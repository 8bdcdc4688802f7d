"""The torch.* solvers and factorizations outside torch.linalg against PyTorch: cholesky_solve,
cholesky_inverse (``upper``), the deprecated triangular_solve, qr (``some``), svd (``some``,
``compute_uv``), pinverse (``rcond``) and their Tensor methods. Values, grad_fn names,
gradients, float64 central differences and double backward, errors and warnings."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = [pytest.mark.skipif(torch is None, reason="needs PyTorch"),
              pytest.mark.filterwarnings("ignore:torch.(triangular_solve|qr) is deprecated")]

_RNG = np.random.default_rng(31)


def rand(*shape):
    return _RNG.standard_normal(shape)


def chol_factor(T, a, upper=False):
    """A well-conditioned triangular factor built smoothly from ``a`` (positive diagonal)."""
    f = a.tril(-1) * 0.3 + (a.diagonal(0, -2, -1).abs() + 1.0).diag_embed()
    return f.mT if upper else f


def tri(T, a, upper=True):
    n = a.shape[-1]
    m = a + n * T.eye(n, dtype=a.dtype)
    return m.triu() if upper else m.tril()


GRAD_CASES = [
    ("cholesky_solve", lambda T: lambda b, a: T.cholesky_solve(b, chol_factor(T, a)),
     [(3, 2), (3, 3)]),
    ("cholesky_solve upper", lambda T: lambda b, a: T.cholesky_solve(
        b, chol_factor(T, a, True), upper=True), [(2, 3, 2), (2, 3, 3)]),
    ("cholesky_solve broadcast", lambda T: lambda b, a: T.cholesky_solve(b, chol_factor(T, a)),
     [(2, 3, 1), (3, 3)]),
    ("Tensor.cholesky_solve", lambda T: lambda b, a: b.cholesky_solve(chol_factor(T, a)),
     [(3, 4), (1, 3, 3)]),
    ("cholesky_inverse", lambda T: lambda a: T.cholesky_inverse(chol_factor(T, a)), [(3, 3)]),
    ("cholesky_inverse upper", lambda T: lambda a: T.cholesky_inverse(
        chol_factor(T, a, True), upper=True), [(2, 3, 3)]),
    ("Tensor.cholesky_inverse", lambda T: lambda a: chol_factor(T, a).cholesky_inverse(),
     [(4, 4)]),
    ("pinverse", lambda T: lambda a: T.pinverse(a), [(3, 4)]),
    ("Tensor.pinverse", lambda T: lambda a: a.pinverse(rcond=1e-3), [(2, 4, 3)]),
    ("qr R", lambda T: lambda a: T.qr(a)[1], [(4, 3)]),
    ("Tensor.qr Q", lambda T: lambda a: a.qr()[0] @ a.qr()[1], [(3, 3)]),
    ("qr some=False", lambda T: lambda a: T.qr(a, some=False).R, [(3, 4)]),
    ("svd S", lambda T: lambda a: T.svd(a).S, [(4, 3)]),
    ("svd USV", lambda T: lambda a: (lambda r: r.U @ r.S.diag_embed() @ r.V.mT)(T.svd(a)),
     [(3, 3)]),
    ("svd compute_uv=False", lambda T: lambda a: T.svd(a, compute_uv=False).S, [(2, 3, 4)]),
]
for _upper in (True, False):
    for _trans in (True, False):
        for _unit in (True, False):
            GRAD_CASES.append((
                f"triangular_solve upper={_upper} transpose={_trans} unit={_unit}",
                (lambda up, tr, un: lambda T: lambda b, a: T.triangular_solve(
                    b, tri(T, a, up), up, tr, un).solution)(_upper, _trans, _unit),
                [(3, 2), (3, 3)]))
GRAD_CASES += [
    ("triangular_solve coefficient", lambda T: lambda b, a: (lambda r: r[0].sum() + (
        r[1] * r[1]).sum())(T.triangular_solve(b, tri(T, a))), [(2, 3, 2), (3, 3)]),
    ("Tensor.triangular_solve", lambda T: lambda b, a: b.triangular_solve(
        tri(T, a, False), upper=False)[0], [(3, 1), (2, 3, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_values_and_gradients(name, fn, shapes):
    assert_grad_parity(fn, *[rand(*s) for s in shapes])


def test_outputs_and_nodes():
    a, b = rand(2, 3, 3), rand(2, 3, 2)

    def fn(T, b, a):
        f = a.tril() + 3 * T.eye(3, dtype=a.dtype)
        ts = T.triangular_solve(b, f, upper=False)
        sv = T.svd(a)
        sv0 = T.svd(a[0].detach(), some=False, compute_uv=False)
        return (*ts, type(ts).__name__, *sv, type(sv).__name__, *sv0, *T.qr(a),
                type(T.qr(a)).__name__, T.cholesky_solve(b, f), T.cholesky_inverse(f))
    assert_parity(fn, b, a, grad=False, check_warnings=False)


ERRORS = [
    ("cholesky_solve dtype", lambda T, a: T.cholesky_solve(a, a.float())),
    ("cholesky_solve 1-D b", lambda T, a: T.cholesky_solve(a[0], a)),
    ("cholesky_solve 1-D A", lambda T, a: T.cholesky_solve(a, a[0])),
    ("cholesky_solve sizes", lambda T, a: T.cholesky_solve(a.new_ones(4, 2), a)),
    ("cholesky_solve square", lambda T, a: T.cholesky_solve(a, a[:, :2])),
    ("cholesky_solve batch", lambda T, a: T.cholesky_solve(a.new_ones(2, 3, 2), a.expand(3, 3, 3))),
    ("cholesky_solve int", lambda T, a: T.cholesky_solve(a.long(), a.long())),
    ("cholesky_solve half", lambda T, a: T.cholesky_solve(a.half(), a.half())),
    ("cholesky_inverse 1-D", lambda T, a: T.cholesky_inverse(a[0])),
    ("cholesky_inverse square", lambda T, a: T.cholesky_inverse(a[:2])),
    ("cholesky_inverse int", lambda T, a: T.cholesky_inverse(a.long())),
    ("cholesky_inverse singular", lambda T, a: T.cholesky_inverse(a.triu(1))),
    ("cholesky_inverse singular batch", lambda T, a: T.cholesky_inverse(
        T.stack([a.tril() + 5, a.tril(-1)]))),
    ("triangular_solve 1-D b", lambda T, a: T.triangular_solve(a[0], a)),
    ("triangular_solve 1-D A", lambda T, a: T.triangular_solve(a, a[0])),
    ("triangular_solve sizes", lambda T, a: T.triangular_solve(a.new_ones(4, 1), a)),
    ("triangular_solve dtype", lambda T, a: T.triangular_solve(a.float(), a)),
    ("triangular_solve int", lambda T, a: T.triangular_solve(a.long(), a.long())),
    ("svd 1-D", lambda T, a: T.svd(a[0])),
    ("qr 1-D", lambda T, a: T.qr(a[0])),
    ("pinverse 1-D", lambda T, a: T.pinverse(a[0])),
    ("pinverse int", lambda T, a: T.pinverse(a.long())),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    assert_parity(fn, rand(3, 3), check_warnings=False)


def test_singular_factor_gives_nonfinite_values():
    assert_parity(lambda T, b, a: T.cholesky_solve(b, a), rand(3, 2), np.zeros((3, 3)))


_WARN_SCRIPT = """
import warnings, numpy as np
import {lib} as T
a, b = T.tensor(np.eye(3) + 1.0), T.tensor(np.ones((3, 2)))
seen = []
for call in (lambda: T.triangular_solve(b, a), lambda: b.triangular_solve(a),
             lambda: T.qr(a), lambda: a.qr(), lambda: T.svd(a), lambda: a.pinverse(),
             lambda: T.cholesky_solve(b, a), lambda: T.cholesky_inverse(a)):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    seen.append([(x.category.__name__, str(x.message)) for x in w])
print(repr(seen))
"""


def _warnings(lib):
    out = subprocess.run([sys.executable, "-c", _WARN_SCRIPT.format(lib=lib)],
                         capture_output=True, text=True, check=True).stdout
    return eval(out)  # noqa: S307 - our own script's repr of lists of strings


def test_deprecation_warnings():
    """PyTorch warns once per process (fresh processes here); jitgrad at every call."""
    want, got = _warnings("torch"), _warnings("jitgrad")

    def distinct(seen):
        return list(dict.fromkeys(w for ws in seen for w in ws))
    assert distinct(got) == distinct(want) and len(distinct(want)) == 2
    assert [bool(w) for w in got] == [True, True, True, True, False, False, False, False]
