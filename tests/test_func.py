"""``jitgrad.func`` against ``torch.func``: values, shapes, dtypes, requires_grad of the results
(functorch's level semantics) and the errors, on MLP-style functions, pytrees, has_aux, nesting,
per-sample gradients over an ``nn.Module`` with ``functional_call``."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch as the reference")

_R = np.random.default_rng(11)
A = _R.standard_normal((4, 3))
B = _R.standard_normal((3,))
W1 = _R.standard_normal((5, 3))
W2 = _R.standard_normal((2, 5))
X = _R.standard_normal((6, 3))
Y = _R.standard_normal((6, 2))


def _leaves(r):
    if isinstance(r, dict):
        return [("key", k) for k in r] + [x for v in r.values() for x in _leaves(v)]
    if isinstance(r, (tuple, list)):
        return [("type", type(r).__name__, len(r))] + [x for v in r for x in _leaves(v)]
    return [r]


def _describe(lib, fn):
    try:
        r = fn(lib, lib.func)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("raises", type(e).__name__, str(e))
    out = []
    for x in _leaves(r):
        if isinstance(x, lib.Tensor):
            out.append(("T", str(x.dtype).replace("jitgrad", "torch"), tuple(x.shape),
                        x.detach().numpy().astype(np.float64), x.requires_grad))
        else:
            out.append(x)
    return out


def both(fn, rtol=1e-6, atol=1e-8):
    """``fn(lib, lib.func)`` under jitgrad and PyTorch: the same error (type and message) or the
    same results (structure, dtypes, shapes, values, requires_grad)."""
    mine, ref = _describe(jitgrad, fn), _describe(torch, fn)
    if ref and ref[0] == "raises" or mine and mine[0] == "raises":
        assert mine == ref
        return
    assert len(mine) == len(ref), (mine, ref)
    for a, b in zip(mine, ref):
        if isinstance(b, tuple) and b and b[0] == "T":
            assert a[:3] == b[:3] and a[4] == b[4], (a, b)
            np.testing.assert_allclose(a[3], b[3], rtol=rtol, atol=atol)
        else:
            assert a == b


def t(lib, a, grad=False, dtype=None):
    x = lib.tensor(a, dtype=dtype or lib.float64)
    return x.requires_grad_() if grad else x


def mlp(lib, params, x):
    h = lib.tanh(x @ params["w1"].T)
    return h @ params["w2"].T


def loss(lib, params, x, y):
    return ((mlp(lib, params, x) - y) ** 2).mean()


def _params(lib, grad=False):
    return {"w1": t(lib, W1, grad), "w2": t(lib, W2, grad)}


# -- grad / grad_and_value ----------------------------------------------------------------------

@pytest.mark.parametrize("grad_in", [False, True])
def test_grad_values_and_requires_grad(grad_in):
    both(lambda lib, F: F.grad(lambda x: (x.sin() ** 2).sum())(t(lib, B, grad_in)))
    both(lambda lib, F: F.grad_and_value(lambda x: (x.exp() * x).sum())(t(lib, B, grad_in)))


def test_grad_float32():
    both(lambda lib, F: F.grad_and_value(lambda x: (x.tanh() * x).sum())(
        t(lib, A, dtype=lib.float32)), rtol=1e-5)


def test_grad_closure_over_tracked_tensor_stays_connected():
    def fn(lib, F):
        w = t(lib, B, True)
        return (F.grad(lambda x: (x * w).sum())(t(lib, B)),
                F.grad(lambda x: (x * x * w).sum())(t(lib, B)))
    both(fn)


def test_grad_under_no_grad_is_untracked():
    def fn(lib, F):
        with lib.no_grad():
            return F.grad(lambda x: (x ** 3).sum())(t(lib, B, True))
    both(fn)


def test_grad_pytrees_and_argnums():
    both(lambda lib, F: F.grad(loss, argnums=1)(lib, _params(lib), t(lib, X), t(lib, Y)))
    both(lambda lib, F: F.grad(loss, argnums=(1, 2))(lib, _params(lib), t(lib, X), t(lib, Y)))
    both(lambda lib, F: F.grad(loss, argnums=-1)(lib, _params(lib), t(lib, X), t(lib, Y)))
    both(lambda lib, F: F.grad(lambda p: (p[0] * p[1][0]).sum() + p[1][1].sum())(
        (t(lib, B), [t(lib, B), t(lib, A)])))


def test_grad_has_aux():
    both(lambda lib, F: F.grad(lambda x: ((x ** 2).sum(), {"y": x * 2, "z": (x.cos(),)}),
                               has_aux=True)(t(lib, B)))
    both(lambda lib, F: F.grad_and_value(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(
        t(lib, B, True)))


@pytest.mark.parametrize("case", [
    lambda lib, F, x: F.grad(lambda x: x * 2)(x),
    lambda lib, F, x: F.grad(lambda x: (x * 2).sum().item())(x),
    lambda lib, F, x: F.grad(lambda x: (x.sum(),))(x),
    lambda lib, F, x: F.grad(lambda x: x.sum(), argnums=1)(x),
    lambda lib, F, x: F.grad(lambda x: x.sum(), argnums=-2)(x),
    lambda lib, F, x: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x),
    lambda lib, F, x: F.grad(lambda x: x.sum(), argnums=())(x),
    lambda lib, F, x: F.grad(lambda x: x.sum(), argnums=1.0)(x),
    lambda lib, F, x: F.grad(lambda x: x.sum(), has_aux=True)(x),
    lambda lib, F, x: F.grad(lambda x: (x.sum(), 1.0), has_aux=True)(x),
    lambda lib, F, x: F.grad(lambda x: x.sum())(3.0),
    lambda lib, F, x: F.grad(lambda x: x[0].sum())([x, 3]),
    lambda lib, F, x: F.grad(lambda x: (x * 2).sum())(lib.arange(3)),
])
def test_grad_errors(case):
    both(lambda lib, F: case(lib, F, t(lib, B)))


def test_nested_grad_and_hessian():
    f = lambda x: (x.sin() * x ** 2).sum()  # noqa: E731
    both(lambda lib, F: F.grad(lambda x: F.grad(f)(x).sum())(t(lib, B)))
    both(lambda lib, F: F.grad(F.grad(lambda x: x ** 3 * x.sin()))(t(lib, 0.7)))
    both(lambda lib, F: F.grad(F.grad(F.grad(lambda x: x ** 3 * x.sin())))(t(lib, 0.7, True)))
    both(lambda lib, F: F.hessian(f)(t(lib, B)))
    both(lambda lib, F: F.hessian(lambda x, y: (x * y.exp()).sum() * x.sum(), argnums=(0, 1))(
        t(lib, B), t(lib, B[::-1].copy())))
    # the inner gradient depends on the outer input through a closure
    both(lambda lib, F: F.grad(lambda y: F.grad(lambda x: (x * y).sin().sum())(t(lib, B)).sum())(
        t(lib, B)))


# -- vjp / jacrev / jacfwd / jvp / linearize ----------------------------------------------------

def test_vjp_called_twice_and_pytrees():
    def fn(lib, F):
        out, vjp_fn = F.vjp(lambda x, y: (x * y, {"s": (x ** 2).sum()}), t(lib, B), t(lib, B))
        c = (t(lib, B[::-1].copy()), {"s": t(lib, 2.0)})
        return out, vjp_fn(c), vjp_fn(c)
    both(fn)
    both(lambda lib, F: F.vjp(lambda x: (x.exp(), x.sum()), t(lib, B), has_aux=True)[2])


@pytest.mark.parametrize("case", [
    lambda lib, F, x: F.vjp(lambda x: (x ** 2).sum(), x)[1](x),
    lambda lib, F, x: F.vjp(lambda x: (x * 2, x), x)[1]((x,)),
    lambda lib, F, x: F.vjp(lambda x: 3.0, x),
    lambda lib, F, x: F.vjp(lambda x: [], x),
    lambda lib, F, x: F.vjp(lambda x: x.long(), x),
    lambda lib, F, x: F.vjp(lambda x: x, x, has_aux=True),
    lambda lib, F, x: F.jacrev(lambda x: x, chunk_size=0)(x),
    lambda lib, F, x: F.jacrev(lambda x: 3.0)(x),
])
def test_vjp_jacrev_errors(case):
    both(lambda lib, F: case(lib, F, t(lib, B)))


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobians(jac):
    both(lambda lib, F: getattr(F, jac)(lambda x: lib.tanh(t(lib, A) @ x))(t(lib, B)))
    both(lambda lib, F: getattr(F, jac)(mlp, argnums=1)(lib, _params(lib), t(lib, X[:2])))
    both(lambda lib, F: getattr(F, jac)(lambda x, y: {"a": x * y, "b": (x @ y).exp()},
                                        argnums=(0, 1))(t(lib, B), t(lib, B[::-1].copy())))
    both(lambda lib, F: getattr(F, jac)(lambda x: (x.sum() ** 2, x * 3), has_aux=True)(
        t(lib, A)))
    both(lambda lib, F: getattr(F, jac)(lambda x: x.sin())(t(lib, 0.5)))


def test_jacrev_chunk_size_and_grad_connection():
    both(lambda lib, F: F.jacrev(lambda x: x.exp() * x.sum(), chunk_size=2)(t(lib, B, True)))
    both(lambda lib, F: F.jacrev(lambda x: x.exp() * x.sum())(t(lib, B)))


def test_jvp_and_linearize():
    f = lambda x, y: (lib_tanh(x) * y, (x * y).sum())  # noqa: E731

    def lib_tanh(x):
        return x.tanh()
    both(lambda lib, F: F.jvp(f, (t(lib, B), t(lib, B * 2)), (t(lib, B[::-1].copy()), t(lib, B))))
    both(lambda lib, F: F.jvp(lambda x: (x.exp().sum(), x.long()), (t(lib, B),), (t(lib, B),)))
    both(lambda lib, F: F.jvp(lambda x: ((x ** 2).sum(), x), (t(lib, B),), (t(lib, B),),
                              has_aux=True))
    both(lambda lib, F: F.jvp(lambda x: lib.ones(2, dtype=lib.float64), (t(lib, B),),
                              (t(lib, B),)))

    def lin(lib, F):
        out, jvp_fn = F.linearize(lambda x: (x.sin() * x).cumsum(0), t(lib, B))
        return out, jvp_fn(t(lib, B[::-1].copy())), jvp_fn(t(lib, B))
    both(lin)


@pytest.mark.parametrize("case", [
    lambda lib, F, x: F.jvp(lambda x: x, (x,), (x[:2],)),
    lambda lib, F, x: F.jvp(lambda x: x, x, (x,)),
    lambda lib, F, x: F.jvp(lambda x: x, (x,), (x, x)),
    lambda lib, F, x: F.jvp(lambda x: lib.ones(2), (x,), (x,), strict=True),
    lambda lib, F, x: F.jvp(lambda x: 2.0, (x,), (x,)),
    lambda lib, F, x: F.jvp(lambda x: x, (x,), (x,), has_aux=True),
    lambda lib, F, x: F.jvp(lambda x: x, (), ()),
    lambda lib, F, x: F.jvp(lambda x: x, (x,), (2.0,)),
    lambda lib, F, x: F.linearize(lambda x: x * 2, x)[1](x[:2]),
    lambda lib, F, x: F.linearize(lambda x: x * 2, x)[1](x.float()),
])
def test_jvp_errors(case):
    both(lambda lib, F: case(lib, F, t(lib, B)))


# -- vmap ---------------------------------------------------------------------------------------

def test_vmap_in_out_dims_and_pytrees():
    both(lambda lib, F: F.vmap(lambda x, y: x * y + 1)(t(lib, A), t(lib, A.T.copy().T)))
    both(lambda lib, F: F.vmap(lambda x, y: x @ y, in_dims=(1, None))(t(lib, A), t(lib, B[:2]
                                                                                  .copy()
                                                                                  .repeat(2))))
    both(lambda lib, F: F.vmap(lambda x: (x.sum(), x * 2), out_dims=(0, 1))(t(lib, A)))
    both(lambda lib, F: F.vmap(lambda x: x.outer(x), out_dims=-1)(t(lib, A)))
    both(lambda lib, F: F.vmap(lambda d, s: {"p": d["a"] * s, "q": d["b"][0].sum()},
                               in_dims=({"a": 0, "b": (1,)}, None),
                               out_dims={"p": 1, "q": 0})(
        {"a": t(lib, A), "b": (t(lib, A.T.copy()),)}, t(lib, 2.0)))
    both(lambda lib, F: F.vmap(lambda x, k=3: x * k)(t(lib, B), k=t(lib, 2.0)))
    both(lambda lib, F: F.vmap(lambda x: (x, lib.ones(2)), out_dims=(0, None))(t(lib, A)))
    both(lambda lib, F: F.vmap(lambda x: x.sum(0), out_dims=-1)(lib.ones(0, 3, 2)))
    both(lambda lib, F: F.vmap(lambda x: x.sum())(lib.ones(0, 3)))


def test_vmap_nested():
    both(lambda lib, F: F.vmap(F.vmap(lambda a, b: a * b + a.exp(), in_dims=(0, None)),
                               in_dims=(None, 0))(t(lib, B), t(lib, A)))


@pytest.mark.parametrize("case", [
    lambda lib, F, x: F.vmap(lambda x: x)(x, x[:2]),
    lambda lib, F, x: F.vmap(lambda x, y: x + y)(x, x[:2]),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=1)(x),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=(0, 0))(x),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=1.0)(x),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=(1.0,))(x),
    lambda lib, F, x: F.vmap(lambda x, y: x, in_dims=(0, 0))(x, 2.0),
    lambda lib, F, x: F.vmap(lambda x: x)(),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=None)(x),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=(None,))(x),
    lambda lib, F, x: F.vmap(lambda x: 1.0)(x),
    lambda lib, F, x: F.vmap(lambda x: x, out_dims=None)(x),
    lambda lib, F, x: F.vmap(lambda x: x, out_dims=(0, 0))(x),
    lambda lib, F, x: F.vmap(lambda x: x, out_dims=1.5)(x),
    lambda lib, F, x: F.vmap(lambda x: x, randomness="foo")(x),
    lambda lib, F, x: F.vmap(lambda x: x, chunk_size=0)(x),
    lambda lib, F, x: F.vmap(lambda x: x, out_dims=2)(x),
    lambda lib, F, x: F.vmap(lambda x: x, in_dims=[0])(x),
    lambda lib, F, x: F.vmap(lambda x: (x, 3))(x),
    lambda lib, F, x: F.vmap(lambda x: x + lib.rand(()))(x),
    lambda lib, F, x: F.vmap(lambda x: lib.nn.functional.dropout(x.expand(2), 0.5))(x),
])
def test_vmap_errors(case):
    both(lambda lib, F: case(lib, F, t(lib, B)))


def test_vmap_randomness():
    def same(lib, F):
        lib.manual_seed(0)
        r = F.vmap(lambda x: x + lib.rand(2, dtype=lib.float64), randomness="same")(t(lib, A[:, :2]))
        return r, lib.rand(3)  # the generator advanced by one unbatched draw
    both(same)

    def different(lib, F):
        lib.manual_seed(0)
        r = F.vmap(lambda x: x * 0 + lib.rand(()), randomness="different")(t(lib, B))
        return r.unique().numel()
    both(different)


# -- per-sample gradients with functional_call over an nn.Module --------------------------------

def _model(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()
    # the same weights under both libraries
    with lib.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(t(lib, np.random.default_rng(i).standard_normal(tuple(p.shape))))
    return m


def test_per_sample_gradients():
    def fn(lib, F):
        model = _model(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def sample_loss(p, x, y):
            out = F.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.mse_loss(out, y.unsqueeze(0))
        return F.vmap(F.grad(sample_loss), in_dims=(None, 0, 0))(params, t(lib, X), t(lib, Y))
    both(fn)

    def tracked(lib, F):  # parameters that require grad: per-sample grads stay differentiable
        model = _model(lib)
        params = dict(model.named_parameters())

        def sample_loss(p, x, y):
            return ((F.functional_call(model, p, x) - y) ** 2).sum()
        g = F.vmap(F.grad(sample_loss), in_dims=(None, 0, 0))(params, t(lib, X), t(lib, Y))
        total = sum((v ** 2).sum() for v in g.values())
        return g, lib.autograd.grad(total, list(params.values()))
    both(tracked)


def test_functional_call_and_stack_module_state():
    def fn(lib, F):
        model = _model(lib)
        w = {"0.weight": t(lib, W1)}
        b = {"2.bias": t(lib, B[:2].copy())}
        return F.functional_call(model, (w, b), t(lib, X)), model(t(lib, X))
    both(fn)
    both(lambda lib, F: F.functional_call(_model(lib), ({"0.bias": t(lib, B)},
                                                        {"0.bias": t(lib, B)}), t(lib, X)))
    both(lambda lib, F: F.functional_call(_model(lib), [{}, 3], t(lib, X)))
    both(lambda lib, F: F.functional_call(_model(lib), 3, t(lib, X)))

    def ensemble(lib, F):
        models = [_model(lib) for _ in range(3)]
        with lib.no_grad():
            for k, m in enumerate(models):
                m[0].bias.add_(k)
        params, buffers = F.stack_module_state(models)
        out = F.vmap(lambda p, b, x: F.functional_call(models[0], (p, b), x),
                     in_dims=(0, 0, None))(params, buffers, t(lib, X))
        return out, sorted(params), [v.is_leaf for v in params.values()]
    both(ensemble)
    both(lambda lib, F: F.stack_module_state([]))


def test_compositions():
    f = lambda x: (x.sin() * x).cumsum(0)  # noqa: E731
    both(lambda lib, F: F.grad(lambda x: F.jvp(f, (x,), (t(lib, B),))[1].sum())(t(lib, A[0])))
    both(lambda lib, F: F.grad(lambda x: F.vmap(f)(x.expand(2, 3)).sum())(t(lib, A[0])))
    both(lambda lib, F: F.vmap(F.jacrev(f))(t(lib, A)), atol=1e-12)
    both(lambda lib, F: F.jacrev(F.vmap(f))(t(lib, A[:2])), atol=1e-12)
    both(lambda lib, F: F.hessian(lambda p: (p["a"] * p["b"].exp()).sum())(
        {"a": t(lib, B), "b": t(lib, A[0])}))
    both(lambda lib, F: F.grad(lambda x, s=1.0: (x * s).sum())(t(lib, B), s=3.0))
    both(lambda lib, F: F.grad(lambda x: lib.ones((), dtype=lib.float64))(t(lib, B)))
    both(lambda lib, F: F.grad(lambda x: x.mul_(2).sum())(t(lib, B)))

    def vjp_modes(lib, F):
        xr = t(lib, B, True)
        out, fn = F.vjp(f, xr)
        with lib.no_grad():
            untracked = fn(t(lib, A[0]))
        return out, fn(t(lib, A[0])), untracked, F.jvp(f, (xr,), (t(lib, A[1]),))
    both(vjp_modes)
