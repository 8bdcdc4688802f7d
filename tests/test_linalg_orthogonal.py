"""torch.linalg.qr, eigh/eigvalsh, svd/svdvals, pinv, matrix_rank against PyTorch: values,
grad_fn names, gradients, float64 central differences and double backward
(``assert_grad_parity``), named tuples and errors.

Singular and eigen vectors are unique only up to each column's sign (LAPACK builds may pick
either), so those are compared through sign-invariant functions of them (squared entries,
reconstructions, projections); QR's factors are compared directly."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import assert_grad_parity, assert_parity, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

_RNG = np.random.default_rng(23)


def rand(*shape, dt=np.float64):
    return _RNG.standard_normal(shape).astype(dt)


def _sym(x):
    return x + x.mT


GRAD_CASES = [
    ("qr reduced tall", lambda T: lambda a: sum(T.linalg.qr(a)), (4, 3)),
    ("qr reduced Q", lambda T: lambda a: T.linalg.qr(a).Q, (2, 4, 3)),
    ("qr reduced R", lambda T: lambda a: T.linalg.qr(a).R, (3, 3)),
    ("qr reduced wide Q", lambda T: lambda a: T.linalg.qr(a)[0], (3, 5)),
    ("qr reduced wide R", lambda T: lambda a: T.linalg.qr(a)[1], (2, 3, 5)),
    ("qr complete wide", lambda T: lambda a: T.linalg.qr(a, mode="complete")[1], (3, 4)),
    ("eigvalsh", lambda T: lambda a: T.linalg.eigvalsh(_sym(a)), (2, 4, 4)),
    ("eigvalsh U", lambda T: lambda a: T.linalg.eigvalsh(_sym(a), UPLO="U"), (3, 3)),
    ("eigh values", lambda T: lambda a: T.linalg.eigh(_sym(a)).eigenvalues, (3, 3)),
    ("eigh vectors squared", lambda T: lambda a: T.linalg.eigh(_sym(a))[1] ** 2, (2, 3, 3)),
    ("eigh both", lambda T: lambda a: T.linalg.eigh(_sym(a))[1] ** 2
     * T.linalg.eigh(_sym(a))[0].unsqueeze(-2), (3, 3)),
    ("eigh function", lambda T: lambda a: (lambda w, v: (v * w.exp().unsqueeze(-2)) @ v.mT)(
        *T.linalg.eigh(_sym(a))), (3, 3)),
    ("svdvals", lambda T: lambda a: T.linalg.svdvals(a), (2, 4, 3)),
    ("svdvals wide", lambda T: lambda a: T.linalg.svdvals(a), (3, 5)),
    ("svd S", lambda T: lambda a: T.linalg.svd(a)[1], (3, 3)),
    ("svd U squared", lambda T: lambda a: T.linalg.svd(a, full_matrices=False).U ** 2, (4, 3)),
    ("svd Vh squared wide", lambda T: lambda a: T.linalg.svd(a, full_matrices=False).Vh ** 2,
     (3, 4)),
    ("svd projector", lambda T: lambda a: (lambda u, s, vh: (u * s.unsqueeze(-2).sqrt()) @ vh)(
        *T.linalg.svd(a, full_matrices=False)), (2, 4, 3)),
    ("svd full U columns", lambda T: lambda a: T.linalg.svd(a)[0][..., :3] ** 2, (4, 3)),
    ("svd full Vh rows wide", lambda T: lambda a: T.linalg.svd(a).Vh[..., :3, :] ** 2, (3, 5)),
    ("pinv square", lambda T: lambda a: T.linalg.pinv(a), (3, 3)),
    ("pinv tall", lambda T: lambda a: T.linalg.pinv(a), (2, 4, 3)),
    ("pinv wide", lambda T: lambda a: T.linalg.pinv(a), (3, 5)),
    ("pinv hermitian", lambda T: lambda a: T.linalg.pinv(_sym(a), hermitian=True), (3, 3)),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,fn,shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_parity(name, fn, shape, dt):
    assert_grad_parity(fn, rand(*shape, dt=dt))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values(shape, mode):
    assert_parity(lambda T, a: list(T.linalg.qr(a, mode=mode)), rand(*shape), atol=1e-12)


def test_named_tuples_and_sign_invariant_values():
    a = rand(2, 4, 3)
    s = a[..., :3, :] + np.swapaxes(a[..., :3, :], -1, -2)
    for call, arr, fields in ((lambda T, x: T.linalg.qr(x), a, ("Q", "R")),
                              (lambda T, x: T.linalg.eigh(x), s, ("eigenvalues", "eigenvectors")),
                              (lambda T, x: T.linalg.svd(x), a, ("U", "S", "Vh"))):
        rj, rt = call(jitgrad, jitgrad.tensor(arr)), call(torch, torch.tensor(arr))
        assert type(rj).__name__ == type(rt).__name__
        assert repr(rj).split("(")[0] == repr(rt).split("(")[0]
        for f in fields:
            x, y = getattr(rj, f).numpy(), getattr(rt, f).numpy()
            assert x.shape == y.shape
            np.testing.assert_allclose(np.abs(x), np.abs(y), atol=1e-10)
    u, sv, vh = jitgrad.linalg.svd(jitgrad.tensor(a))
    np.testing.assert_allclose((u[..., :3] * sv.unsqueeze(-2) @ vh).numpy(), a, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"atol": 0.5}, {"rtol": 0.3}, {"atol": 0.1, "rtol": 0.5},
                                {"hermitian": True}])
def test_matrix_rank_and_pinv_tolerances(kw):
    low = rand(2, 4, 2) @ rand(2, 2, 4) + np.diag([0, 0, 0, 1e-3])  # rank 3, a small direction
    low = low + np.swapaxes(low, -1, -2)
    assert_parity(lambda T, x: T.linalg.matrix_rank(x, **kw), low)
    assert_parity(lambda T, x: T.linalg.pinv(x, **kw), low, atol=1e-9)


ERROR_CASES = [
    ("qr mode", lambda T, a: T.linalg.qr(a, mode="x"), [rand(3, 3)]),
    ("qr 1-D", lambda T, a: T.linalg.qr(a), [rand(3)]),
    ("qr int", lambda T, a: T.linalg.qr(a), [np.arange(9).reshape(3, 3)]),
    ("qr half", lambda T, a: T.linalg.qr(a), [rand(3, 3, dt=np.float16)]),
    ("qr r backward", lambda T, a: T.autograd.grad(T.linalg.qr(a, mode="r")[1].sum(), a),
     [rand(4, 3)]),
    ("qr complete tall backward",
     lambda T, a: T.autograd.grad(T.linalg.qr(a, mode="complete")[0].sum(), a), [rand(4, 3)]),
    ("eigh non-square", lambda T, a: T.linalg.eigh(a), [rand(2, 3)]),
    ("eigh int", lambda T, a: T.linalg.eigh(a), [np.arange(9).reshape(3, 3)]),
    ("eigh UPLO", lambda T, a: T.linalg.eigh(a, UPLO="X"), [rand(3, 3)]),
    ("eigvalsh 1-D", lambda T, a: T.linalg.eigvalsh(a), [rand(3)]),
    ("eigh half", lambda T, a: T.linalg.eigh(a), [rand(3, 3, dt=np.float16)]),
    ("svd 1-D", lambda T, a: T.linalg.svd(a), [rand(3)]),
    ("svd int", lambda T, a: T.linalg.svd(a), [np.arange(9).reshape(3, 3)]),
    ("svd half", lambda T, a: T.linalg.svd(a), [rand(3, 3, dt=np.float16)]),
    ("svd nan", lambda T, a: T.linalg.svd(a), [np.full((3, 3), np.nan)]),
    ("svdvals int", lambda T, a: T.linalg.svdvals(a), [np.arange(9).reshape(3, 3)]),
    ("pinv int", lambda T, a: T.linalg.pinv(a), [np.arange(9).reshape(3, 3)]),
    ("pinv 1-D", lambda T, a: T.linalg.pinv(a), [rand(3)]),
    ("pinv hermitian non-square", lambda T, a: T.linalg.pinv(a, hermitian=True), [rand(4, 3)]),
    ("matrix_rank int", lambda T, a: T.linalg.matrix_rank(a), [np.arange(9).reshape(3, 3)]),
    ("matrix_rank 1-D", lambda T, a: T.linalg.matrix_rank(a), [rand(3)]),
]


@pytest.mark.parametrize("label,call,arrays", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(label, call, arrays):
    got = assert_parity(call, *arrays, grad="backward" in label, where=label)
    assert got.error is not None, label


# ----------------------------------------------------------------------------------- lstsq

LSTSQ_CASES = [
    ("tall", (5, 3), (5, 2), {}),
    ("tall gelsd", (2, 5, 3), (2, 5, 2), {"driver": "gelsd"}),
    ("tall gelss vector", (5, 3), (5,), {"driver": "gelss"}),
    ("tall gels", (5, 3), (5, 2), {"driver": "gels"}),
    ("square batch of vectors", (2, 3, 3), (2, 3), {}),
    ("wide gelsd", (3, 5), (3, 2), {"driver": "gelsd"}),
    ("broadcast", (2, 1, 4, 3), (1, 3, 4, 2), {"driver": "gelsd"}),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name,sa,sb,kw", LSTSQ_CASES, ids=[c[0] for c in LSTSQ_CASES])
def test_lstsq(name, sa, sb, kw, dt):
    a, b = rand(*sa, dt=dt), rand(*sb, dt=dt)
    assert_grad_parity(lambda T: lambda x, y: T.linalg.lstsq(x, y, **kw).solution, a, b)
    if kw.get("driver") in ("gelsd", "gelss", "gels") and sa[-2] > sa[-1]:
        assert_grad_parity(lambda T: lambda x, y: T.linalg.lstsq(x, y, **kw).residuals, a, b)
    tol = 1e-4 if dt == np.float32 else 1e-9
    assert_parity(lambda T, x, y: list(T.linalg.lstsq(x, y, **kw))[1:], a, b, rtol=tol,
                  atol=tol)


def test_lstsq_rank_deficient():
    a, b = np.ones((4, 2)), rand(4, 1)
    # gels is left out: MKL's QR (PyTorch's) finds an exactly zero pivot here and fails;
    # OpenBLAS's leaves a rounding-sized one and solves
    for driver in ("gelsy", "gelsd", "gelss"):
        assert_parity(lambda T, x, y, d=driver: list(T.linalg.lstsq(x, y, driver=d)), a, b,
                      atol=1e-9)
    rj, rt = jitgrad.linalg.lstsq(jitgrad.tensor(a), jitgrad.tensor(b)), \
        torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
    assert type(rj).__name__ == type(rt).__name__ == "linalg_lstsq"
    assert rj._fields == ("solution", "residuals", "rank", "singular_values")


LSTSQ_ERRORS = [
    ("1-D input", [rand(3), rand(3)], {}),
    ("0-D other", [rand(3, 3), np.array(1.0)], {}),
    ("dtypes", [rand(3, 3), rand(3, dt=np.float32)], {}),
    ("ints", [np.ones((3, 3), np.int64), np.ones((3, 3), np.int64)], {}),
    ("rows", [rand(3, 3), rand(4, 2)], {}),
    ("rows vector", [rand(2, 3, 3), rand(2, 4)], {}),
    ("dims", [rand(2, 5, 3), rand(5)], {}),
    ("batch", [rand(2, 3, 3), rand(5, 3, 2)], {}),
    ("driver", [rand(3, 3), rand(3, 2)], {"driver": "xx"}),
]


@pytest.mark.parametrize("label,arrays,kw", LSTSQ_ERRORS, ids=[c[0] for c in LSTSQ_ERRORS])
def test_lstsq_errors(label, arrays, kw):
    got = assert_parity(lambda T, a, b: T.linalg.lstsq(a, b, **kw), *arrays, where=label)
    assert got.error is not None
