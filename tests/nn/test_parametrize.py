"""``nn.utils.parametrize`` and ``nn.utils.parametrizations`` against PyTorch: the injected
class and properties, state_dict keys and values, right_inverse on assignment, chaining,
caching, removal (leave_parametrized True/False), the error messages, and weight_norm /
spectral_norm / orthogonal values, gradients and seeded buffers; plus the ATen ops under them
(_weight_norm, norm_except_dim, geqrf, householder_product, matrix_exp)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import jitgrad as jg
from tests._parity import assert_grad_parity, raises_like, random_array

torch = pytest.importorskip("torch")

LIBS = (jg, torch)
TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-6, atol=1e-6)}


def _np(t):
    return t.detach().numpy()


def _close(a, b, dtype="float64"):
    """Relative tolerance, and an absolute one scaled by the largest expected magnitude (float32
    sums of products round at that scale, not at each element's)."""
    a = _np(a) if not isinstance(a, np.ndarray) else a
    b = _np(b) if not isinstance(b, np.ndarray) else b
    tol = TOL[dtype]
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol["rtol"], atol=tol["atol"] * scale)


def _symmetric(L):
    class Symmetric(L.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _scale(L, k=2.0):
    class Scale(L.nn.Module):
        def forward(self, X):
            return X * k

        def right_inverse(self, A):
            return A / k
    return Scale()


def _build(L, dtype="float64", seed=0):
    L.manual_seed(seed)
    return L.nn.Linear(4, 4).to(getattr(L, dtype))


def _run(L, m, dtype="float64", n_in=4):
    """Output of a forward and the gradients of every parameter."""
    x = L.tensor(np.linspace(-1, 1, 3 * n_in).reshape(3, n_in), dtype=getattr(L, dtype))
    y = m(x)
    (y * y).sum().backward()
    return y, {k: p.grad for k, p in m.named_parameters()}


# ----------------------------------------------------------------------------- parametrize

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_register_forward_grads_state_dict(dtype):
    res = []
    for L in LIBS:
        m = _build(L, dtype)
        P = L.nn.utils.parametrize
        assert P.register_parametrization(m, "weight", _symmetric(L)) is m
        P.register_parametrization(m, "weight", _scale(L))  # chained
        assert type(m).__name__ == "ParametrizedLinear"
        assert P.type_before_parametrizations(m) is L.nn.Linear and isinstance(m, L.nn.Linear)
        assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
        assert not P.is_parametrized(m, "bias")
        y, grads = _run(L, m, dtype)
        res.append((m.weight, y, grads, m.state_dict(), repr(m), type(m.weight.grad_fn).__name__,
                    [n for n, _ in m.named_parameters()]))
    (wj, yj, gj, sj, rj, fj, nj), (wt, yt, gt, st, rt, ft, nt) = res
    _close(wj, wt, dtype)
    _close(yj, yt, dtype)
    assert rj == rt and fj == ft and nj == nt
    assert list(sj) == list(st) == ["bias", "parametrizations.weight.original"]
    for k in gt:
        _close(gj[k], gt[k], dtype)
    for k in st:
        _close(sj[k], st[k], dtype)


def test_assignment_runs_right_inverse_and_keeps_the_parameter():
    out = []
    for L in LIBS:
        m = _build(L)
        L.nn.utils.parametrize.register_parametrization(m, "weight", _scale(L, 4.0))
        orig = m.parametrizations.weight.original
        v0 = orig._version
        m.weight = L.ones(4, 4, dtype=L.float64) * 8
        assert m.parametrizations.weight.original is orig and orig._version > v0
        out.append((_np(orig).copy(), _np(m.weight).copy()))
    _close(out[0][0], out[1][0])
    _close(out[0][1], out[1][1])


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    res = []
    for L in LIBS:
        m = _build(L)
        P = L.nn.utils.parametrize
        P.register_parametrization(m, "weight", _symmetric(L))
        P.register_parametrization(m, "bias", _scale(L, 3.0))
        orig = m.parametrizations.weight.original
        P.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert type(m).__name__ == "ParametrizedLinear" and P.is_parametrized(m)
        assert m.weight is orig and isinstance(m.weight, L.nn.Parameter)
        P.remove_parametrizations(m, "bias", leave_parametrized=leave)
        assert type(m) is L.nn.Linear and not hasattr(m, "parametrizations")
        res.append((m.state_dict(), list(m._parameters)))
    assert res[0][1] == res[1][1]
    for k in res[1][0]:
        _close(res[0][0][k], res[1][0][k])


def test_cached_computes_once():
    counts = []
    for L in LIBS:
        calls = []

        class Counting(L.nn.Module):
            def forward(self, X, calls=calls):
                calls.append(1)
                return X + 1
        m = _build(L)
        L.nn.utils.parametrize.register_parametrization(m, "weight", Counting())
        n0 = len(calls)
        with L.nn.utils.parametrize.cached():
            a = m.weight
            b = m.weight
            assert a is b
        m.weight  # noqa: B018 - outside: computed again
        counts.append(len(calls) - n0)
    assert counts[0] == counts[1] == 2


def test_errors():
    def missing(L):
        L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "nope", _scale(L))

    def not_parametrized(L):
        L.nn.utils.parametrize.remove_parametrizations(L.nn.Linear(2, 2), "weight")

    def shape_change(L):
        class Bad(L.nn.Module):
            def forward(self, X):
                return X[:1]
        L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "weight", Bad())

    def dtype_change_chained(L):
        class Bad(L.nn.Module):
            def forward(self, X):
                return X.double()
        m = L.nn.Linear(2, 2)
        L.nn.utils.parametrize.register_parametrization(m, "weight", _scale(L))
        L.nn.utils.parametrize.register_parametrization(m, "weight", Bad())

    def not_a_tensor(L):
        class Bad(L.nn.Module):
            def forward(self, X):
                return 3
        L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "weight", Bad())

    def no_right_inverse(L):
        class NoInv(L.nn.Module):
            def forward(self, X):
                return X
        m = L.nn.Linear(2, 2)
        L.nn.utils.parametrize.register_parametrization(m, "weight", NoInv())
        m.weight = L.ones(2, 2)

    def leave_sequence(L):
        m = L.nn.utils.parametrizations.weight_norm(L.nn.Linear(2, 2))
        L.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)

    def empty_list(L):
        L.nn.utils.parametrize.ParametrizationList([], L.ones(2))

    for fn in (missing, not_parametrized, shape_change, dtype_change_chained, not_a_tensor,
               no_right_inverse, leave_sequence, empty_list):
        raises_like(lambda T, f=fn: f(T))


def test_pickle_deepcopy_load_state_dict_and_functional_call():
    res = []
    for L in LIBS:
        m = _build(L)
        L.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric(L))
        with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
            pickle.dumps(m)
        c = copy.deepcopy(m)
        assert type(c) is type(m)
        assert c.parametrizations.weight.original is not m.parametrizations.weight.original
        with L.no_grad():
            c.parametrizations.weight.original.mul_(2)
        m.load_state_dict(c.state_dict())
        x = L.ones(1, 4, dtype=L.float64)
        new_orig = L.arange(16, dtype=L.float64).reshape(4, 4)
        fc = L.nn.utils.stateless._functional_call(
            m, {"parametrizations.weight.original": new_orig}, x)
        plain = L.nn.utils.stateless._functional_call(m, {"weight": new_orig}, x)
        res.append((m.weight, fc, plain, m(x)))
    for a, b in zip(*res):
        _close(a, b)


def test_buffer_parametrization_and_transfer():
    res = []
    for L in LIBS:
        m = L.nn.BatchNorm1d(3).double()
        P = L.nn.utils.parametrize
        P.register_parametrization(m, "running_var", _scale(L, 2.0))
        assert "parametrizations.running_var.original" in m.state_dict()
        assert "running_var.original" not in dict(m.named_parameters())
        m2 = L.nn.Linear(4, 4).double()
        src = _build(L)
        P.register_parametrization(src, "weight", _symmetric(L))
        P.transfer_parametrizations_and_params(src, m2)
        assert m2.parametrizations.weight.original is src.parametrizations.weight.original
        res.append((list(m.state_dict()), m.running_var, m2.weight))
    assert res[0][0] == res[1][0]
    _close(res[0][1], res[1][1])
    _close(res[0][2], res[1][2])


# ----------------------------------------------------------------------------- weight_norm

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_parametrization(dtype, dim):
    res = []
    for L in LIBS:
        L.manual_seed(3)
        m = L.nn.Conv1d(3, 4, 2).to(getattr(L, dtype))
        m = L.nn.utils.parametrizations.weight_norm(m, dim=dim)
        x = L.tensor(np.linspace(-2, 2, 30).reshape(2, 3, 5), dtype=getattr(L, dtype))
        y = m(x)
        (y * y).sum().backward()
        res.append((y, m.state_dict(), {k: p.grad for k, p in m.named_parameters()},
                    type(m.weight.grad_fn).__name__))
    (yj, sj, gj, fj), (yt, st, gt, ft) = res
    assert fj == ft and list(sj) == list(st)
    _close(yj, yt, dtype)
    for k in st:
        _close(sj[k], st[k], dtype)
    for k in gt:
        _close(gj[k], gt[k], dtype)


# ----------------------------------------------------------------------------- spectral_norm

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["linear", "convT"])
def test_spectral_norm_seeded_power_iterations(dtype, kind):
    res = []
    for L in LIBS:
        L.manual_seed(7)
        if kind == "linear":
            m = L.nn.Linear(5, 4).to(getattr(L, dtype))
            x = L.tensor(np.linspace(-1, 1, 10).reshape(2, 5), dtype=getattr(L, dtype))
        else:
            m = L.nn.ConvTranspose2d(3, 2, 2).to(getattr(L, dtype))
            x = L.tensor(np.linspace(-1, 1, 27).reshape(1, 3, 3, 3), dtype=getattr(L, dtype))
        m = L.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)
        sn = m.parametrizations.weight[0]
        init = (sn._u.clone(), sn._v.clone(), sn.dim)
        for _ in range(3):
            y = m(x)
            (y * y).sum().backward()
        m.eval()
        y_eval = m(x)
        res.append((init, sn._u, sn._v, y, y_eval, m.state_dict(),
                    {k: p.grad for k, p in m.named_parameters()}))
    (ij, uj, vj, yj, ej, sj, gj), (it, ut, vt, yt, et, st, gt) = res
    _close(ij[0], it[0], dtype)
    _close(ij[1], it[1], dtype)
    assert ij[2] == it[2] == (0 if kind == "linear" else 1)
    for a, b in ((uj, ut), (vj, vt), (yj, yt), (ej, et)):
        _close(a, b, dtype)
    assert list(sj) == list(st)
    for k in st:
        _close(sj[k], st[k], dtype)
    for k in gt:
        _close(gj[k], gt[k], dtype)


def test_spectral_norm_vector_and_errors():
    res = []
    for L in LIBS:
        L.manual_seed(1)
        m = L.nn.utils.parametrizations.spectral_norm(L.nn.Linear(3, 2).double(), name="bias")
        res.append(m.bias)
    _close(*res)
    raises_like(lambda T: T.nn.utils.parametrizations.spectral_norm(T.nn.Linear(2, 2), dim=2))
    raises_like(lambda T: T.nn.utils.parametrizations.spectral_norm(
        T.nn.Linear(2, 2), n_power_iterations=0))
    raises_like(lambda T: T.nn.utils.parametrizations.spectral_norm(T.nn.ReLU()))


# ----------------------------------------------------------------------------- orthogonal

@pytest.mark.parametrize("shape,omap", [((4, 4), None), ((3, 5), None), ((5, 3), None),
                                        ((4, 4), "cayley"), ((5, 3), "cayley"),
                                        ((3, 5), "matrix_exp"), ((4, 4), "householder")])
def test_orthogonal(shape, omap):
    res = []
    for L in LIBS:
        L.manual_seed(2)
        m = L.nn.Linear(shape[1], shape[0]).double()
        m = L.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap)
        w = m.weight
        Q = w if shape[0] >= shape[1] else w.mT
        _close(Q.mT @ Q, L.eye(Q.shape[1], dtype=L.float64))
        y, grads = _run(L, m, n_in=shape[1])
        res.append((w, y, grads, m.state_dict(), type(w.grad_fn).__name__))
    (wj, yj, gj, sj, fj), (wt, yt, gt, st, ft) = res
    assert fj == ft and list(sj) == list(st)
    _close(wj, wt)
    _close(yj, yt)
    for k in gt:
        _close(gj[k], gt[k])
    for k in st:
        _close(sj[k], st[k])


def test_orthogonal_assignment_and_errors():
    res = []
    for L in LIBS:
        L.manual_seed(4)
        m = L.nn.utils.parametrizations.orthogonal(L.nn.Linear(4, 4).double())
        Q = L.linalg.qr(L.randn(4, 4, dtype=L.float64)).Q
        m.weight = Q  # orthogonal already: the base becomes Q itself
        res.append((m.weight, Q))
        m2 = L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 5).double(),
                                                    use_trivialization=False)
        res.append((m2.weight, m2.parametrizations.weight.original))
    _close(res[0][0], res[0][1])
    _close(res[0][0], res[2][0])
    _close(res[1][1], res[3][1])
    _close(res[1][0], res[3][0])
    raises_like(lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.Linear(2, 2), "bias"))
    raises_like(lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.Linear(2, 2),
                                                                 orthogonal_map="qr"))
    raises_like(lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.ReLU()))

    def assign_expm(T):
        m = T.nn.utils.parametrizations.orthogonal(T.nn.Linear(2, 2),
                                                   use_trivialization=False)
        m.weight = T.eye(2)
    raises_like(assign_expm)


# ----------------------------------------------------------------------------- the ATen ops

@pytest.mark.parametrize("dim,gshape", [(0, (3, 1, 1)), (2, (1, 1, 5)), (1, (1, 4, 1)),
                                        (-1, ()), (-2, (1, 4, 1))])
def test_weight_norm_ops(dim, gshape):
    rng = np.random.default_rng(0)
    v, g = rng.standard_normal((3, 4, 5)), rng.standard_normal(gshape)
    cot = np.cos(np.arange(60.0)).reshape(3, 4, 5)
    res = []
    for L in LIBS:
        vv, gg = L.tensor(v, requires_grad=True), L.tensor(g, requires_grad=True)
        w = L._weight_norm(vv, gg, dim)
        w.backward(L.tensor(cot))
        n = L.norm_except_dim(vv, 2, dim)
        res.append((w, vv.grad, gg.grad, n, type(w.grad_fn).__name__,
                    type(n.grad_fn).__name__))
    for a, b in zip(*res):
        if isinstance(b, str):
            assert a == b
        else:
            assert tuple(a.shape) == tuple(b.shape)
            _close(a, b)
    w, norms = jg._weight_norm_interface(jg.tensor(v), jg.tensor(rng.standard_normal((3, 1, 1))))
    assert tuple(norms.shape) == (3, 1, 1) and norms.grad_fn is None
    raises_like(lambda T, a: T.norm_except_dim(a, 2, 5), v)


def test_orthogonal_ops():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((2, 5, 3))
    S = rng.standard_normal((2, 3, 3))
    cot = np.sin(np.arange(30.0)).reshape(2, 5, 3)
    res = []
    for L in LIBS:
        a, tau = L.geqrf(L.tensor(A))
        a, tau = a.requires_grad_(True), tau.requires_grad_(True)
        Q = L.linalg.householder_product(a, tau)
        Q.backward(L.tensor(cot))
        s = L.tensor(S, requires_grad=True)
        E = L.matrix_exp(s)
        (E * E).sum().backward()
        res.append((a, tau, Q, a.grad, tau.grad, E, s.grad, type(Q.grad_fn).__name__,
                    type(E.grad_fn).__name__, type(L.geqrf(L.tensor(A))).__name__))
    for x, y in zip(*res):
        if isinstance(y, str):
            assert x == y
        else:
            np.testing.assert_allclose(_np(x), _np(y), rtol=1e-11, atol=1e-12)
    raises_like(lambda T, x: T.matrix_exp(x), rng.standard_normal((3, 4)))
    raises_like(lambda T, x: T.geqrf(x), rng.standard_normal(3))
    raises_like(lambda T, x, t: T.linalg.householder_product(x, t),
                rng.standard_normal((3, 4)), rng.standard_normal(3))
    raises_like(lambda T, x, t: T.linalg.householder_product(x, t),
                rng.standard_normal((4, 3)), rng.standard_normal(4))


@pytest.mark.parametrize("case", ["matrix_exp", "householder", "weight_norm0", "weight_norm1"])
def test_ops_gradcheck_and_double_backward(case):
    """Gradients of a random cotangent, float64 central differences and double backward."""
    if case == "matrix_exp":
        assert_grad_parity(lambda T: T.matrix_exp, random_array(2, 3, 3) * 0.5)
    elif case == "householder":
        A = random_array(4, 3)
        tau = 2.0 / (1.0 + (np.tril(A, -1) ** 2).sum(0))
        assert_grad_parity(lambda T: T.linalg.householder_product, A, tau)
    else:
        dim = int(case[-1])
        g = random_array(3, 1) if dim == 0 else random_array(1, 4)
        assert_grad_parity(lambda T: lambda v, g: T._weight_norm(v, g, dim), random_array(3, 4),
                           g)
