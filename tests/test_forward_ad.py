"""``jitgrad.autograd.forward_ad`` against ``torch.autograd.forward_ad``: tangents of the same
functions (float64) under both libraries and against float64 central differences, PyTorch's
errors, the dual/primal/tangent semantics, and forward mode nested with reverse mode."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch as the reference")

_R = np.random.default_rng(2024)


def _a(*shape):
    return _R.standard_normal(shape)


# -- the functions (each fn(lib, *inputs) -> tensor or tuple of tensors) ------------------------

def _chain(lib, x, y):
    return (x.sin() * y.exp() + x ** 2 / (1 + y ** 2)).tanh() - lib.sigmoid(x * y).log()


def _broadcast(lib, x, y):
    return x.reshape(3, 1) * y.reshape(1, 4) + x.reshape(3, 1).cos()


def _matmul(lib, a, b):
    return a @ b, (a @ b).t() @ a


def _reductions(lib, x):
    return (x.sum(1), x.mean(), x.amax(dim=1), x.max(dim=0).values, x.norm(), x.prod(1),
            x.var(1), lib.logsumexp(x, 1), x.cumsum(0))


def _softmax(lib, x):
    F = lib.nn.functional
    return F.softmax(x, dim=-1), F.log_softmax(x, dim=0), F.softmax(x * 3, dim=1).sum(0)


def _indexing(lib, x):
    idx = lib.tensor([2, 0, 2])
    return (x[[0, 2], 1:], x[1], x[:, idx], x.gather(1, lib.tensor([[0, 1], [3, 3], [2, 0]])),
            x.index_select(0, idx), x[x.detach() > 0])


def _conv(lib, x, w, b):
    F = lib.nn.functional
    y = F.conv2d(x, w, b, padding=1)
    return y, F.max_pool2d(F.relu(y), 2), F.conv2d(x, w, stride=2)


def _piecewise(lib, x, y):
    return lib.where(x > 0, x * y, y.exp()), x.clamp(-0.5, 0.5) * y, lib.relu(x) + x.abs()


def _views_inplace(lib, x, y):
    z = x.clone()
    z[1:].mul_(y[1:])         # in-place on a view of a non-leaf
    v = z.t().reshape(-1)     # views of it
    w = lib.zeros(5, 3, dtype=lib.float64)
    w[1:4] = y                 # a plain tensor written through a view takes a tangent
    w.add_(1.5)
    return z, v, w, x.unsqueeze(0).expand(2, 3, 3).sum(0)


def _dual_inplace(lib, x, y):
    x = x * 1                 # not the dual itself: a result of it
    x.mul_(y).add_(y.exp())
    x.sin_()
    return x


CASES = {
    "chain": (_chain, [(3, 4), (3, 4)]),
    "broadcast": (_broadcast, [(3,), (4,)]),
    "matmul": (_matmul, [(3, 4), (4, 3)]),
    "reductions": (_reductions, [(3, 4)]),
    "softmax": (_softmax, [(3, 5)]),
    "indexing": (_indexing, [(3, 4)]),
    "conv2d": (_conv, [(2, 2, 5, 5), (3, 2, 3, 3), (3,)]),
    "piecewise": (_piecewise, [(7,), (7,)]),
    "views_inplace": (_views_inplace, [(3, 3), (3, 3)]),
    "dual_inplace": (_dual_inplace, [(2, 3), (2, 3)]),
}
_INPUTS = {name: ([_a(*s) for s in shapes], [_a(*s) for s in shapes])
           for name, (_, shapes) in CASES.items()}


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


def _forward_ad(lib, fn, primals, tangents, dual_mask=None):
    """Primal values and tangents (None where undefined) of ``fn`` at dual inputs."""
    fwAD = lib.autograd.forward_ad
    dual_mask = dual_mask or [True] * len(primals)
    with fwAD.dual_level():
        args = [fwAD.make_dual(lib.tensor(p), lib.tensor(t)) if m else lib.tensor(p)
                for p, t, m in zip(primals, tangents, dual_mask)]
        outs = _tuple(fn(lib, *args))
        res = []
        for o in outs:
            u = fwAD.unpack_dual(o)
            res.append((u.primal.detach().numpy().copy(),
                        None if u.tangent is None else u.tangent.detach().numpy().copy()))
    return res


def _central_difference(fn, primals, tangents, eps=1e-6):
    def at(s):
        args = [jitgrad.tensor(p + s * t) for p, t in zip(primals, tangents)]
        return [o.detach().numpy() for o in _tuple(fn(jitgrad, *args))]
    return [(a - b) / (2 * eps) for a, b in zip(at(eps), at(-eps))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangents_match_pytorch(name):
    fn, _ = CASES[name]
    primals, tangents = _INPUTS[name]
    mine = _forward_ad(jitgrad, fn, primals, tangents)
    ref = _forward_ad(torch, fn, primals, tangents)
    assert len(mine) == len(ref)
    for (pm, tm), (pr, tr) in zip(mine, ref):
        np.testing.assert_allclose(pm, pr, rtol=1e-12, atol=1e-12)
        assert (tm is None) == (tr is None)
        np.testing.assert_allclose(tm, tr, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"indexing"}))  # indexing: a value mask
def test_tangents_match_finite_differences(name):
    fn, _ = CASES[name]
    primals, tangents = _INPUTS[name]
    mine = _forward_ad(jitgrad, fn, primals, tangents)
    fd = _central_difference(fn, primals, tangents)
    for (_, tm), want in zip(mine, fd):
        np.testing.assert_allclose(tm, want, rtol=1e-5, atol=1e-6)


def test_only_some_inputs_dual():
    primals, tangents = _INPUTS["chain"]
    for mask in ([True, False], [False, True]):
        mine = _forward_ad(jitgrad, _chain, primals, tangents, mask)
        ref = _forward_ad(torch, _chain, primals, tangents, mask)
        np.testing.assert_allclose(mine[0][1], ref[0][1], rtol=1e-10, atol=1e-12)


# -- errors -------------------------------------------------------------------------------------

def _error(lib, fn):
    fwAD = lib.autograd.forward_ad
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    try:
        fn(lib, fwAD, x)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    finally:
        while fwAD._current_level >= 0:  # leave no level behind after a failed scenario
            fwAD.exit_dual_level()
    return None


def _in_level(body):
    def scenario(lib, fwAD, x):
        with fwAD.dual_level():
            body(lib, fwAD, x)
    return scenario


ERRORS = {
    "outside_level": lambda lib, fwAD, x: fwAD.make_dual(x, x),
    "size": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x, lib.ones(4, dtype=lib.float64))),
    "size_2d": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x, x.reshape(3, 1))),
    "int_primal": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x.int(), x)),
    "int_tangent": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x, x.long())),
    "bad_level": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x, x, level=5)),
    "negative_level": _in_level(lambda lib, fwAD, x: fwAD.make_dual(x, x, level=-3)),
    "nested": _in_level(lambda lib, fwAD, x: fwAD.enter_dual_level()),
    "unpack_other_level": _in_level(
        lambda lib, fwAD, x: fwAD.unpack_dual(fwAD.make_dual(x, x).exp(), level=5)),
    "exit_other": _in_level(lambda lib, fwAD, x: fwAD.exit_dual_level(level=3)),
    "exit_without_level": lambda lib, fwAD, x: fwAD.exit_dual_level(),
    "dual_of_dual": _in_level(lambda lib, fwAD, x: fwAD.make_dual(fwAD.make_dual(x, x), x)),
    "dual_of_result": _in_level(
        lambda lib, fwAD, x: fwAD.make_dual(fwAD.make_dual(x, x).exp() * 2, x)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    mine, ref = _error(jitgrad, ERRORS[name]), _error(torch, ERRORS[name])
    assert ref is not None
    assert mine == ref


def test_exit_twice_matches_pytorch():
    def scenario(lib, fwAD, x):
        fwAD.enter_dual_level()
        fwAD.exit_dual_level(level=0)
        fwAD.exit_dual_level()
    assert _error(jitgrad, scenario) == _error(torch, scenario)


# -- semantics ----------------------------------------------------------------------------------

def _semantics(lib, tracked=False):
    fwAD = lib.autograd.forward_ad
    x = lib.tensor(_INPUTS["chain"][0][0], dtype=lib.float64).requires_grad_(tracked)
    t = lib.tensor(_INPUTS["chain"][1][0], dtype=lib.float64)
    obs = {}
    obs["level"] = None
    with fwAD.dual_level() as level:
        obs["level"] = level
        d = fwAD.make_dual(x, t)
        if not tracked:  # see forward_ad's docstring: a tracked tensor's dual is a copy
            obs["aliases"] = d.data_ptr() == x.data_ptr()
        u = fwAD.unpack_dual(d)
        obs["namedtuple"] = (type(u).__name__, u._fields)
        obs["tangent_as_is"] = u.tangent is t
        obs["plain_tangent"] = fwAD.unpack_dual(x * 2).tangent
        obs["detached"] = fwAD.unpack_dual(d.detach()).tangent
        p = u.primal
        obs["primal_requires_grad"] = p.requires_grad
        obs["primal_no_tangent"] = fwAD.unpack_dual(p.exp()).tangent
        # the primal carries no tangent: only the d factor contributes
        obs["mixed"] = fwAD.unpack_dual(p * d).tangent.detach().numpy().tolist()
        obs["zero"] = np.abs(fwAD.unpack_dual(d * 0).tangent.detach().numpy()).tolist()
        obs["other_level"] = fwAD.unpack_dual(x.exp(), level=5).tangent
        y = d.exp()
    obs["after_exit"] = fwAD.unpack_dual(y).tangent
    with fwAD.dual_level():  # a new level knows nothing of the old duals
        obs["new_level"] = fwAD.unpack_dual(y * 2).tangent
    return obs


@pytest.mark.parametrize("tracked", [False, True])
def test_semantics_match_pytorch(tracked):
    mine, ref = _semantics(jitgrad, tracked), _semantics(torch, tracked)
    assert mine.keys() == ref.keys()
    for k in ref:
        if k == "mixed":
            np.testing.assert_allclose(mine[k], ref[k], rtol=1e-12)
        else:
            assert mine[k] == ref[k], k


def test_in_place_after_make_dual_and_tangent_updates():
    """A tangent tensor changed in place after make_dual is read as changed (as-is aliasing)."""
    def run(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64)
        t = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, t)
            t.mul_(2)
            return fwAD.unpack_dual(d.sin()).tangent.numpy()
    np.testing.assert_allclose(run(jitgrad), run(torch), rtol=1e-12)


# -- nested with reverse mode -------------------------------------------------------------------

def _reverse_over_forward(lib, fn, primals, tangents, weights, tangent_grad=False):
    fwAD = lib.autograd.forward_ad
    xs = [lib.tensor(p).requires_grad_() for p in primals]
    ts = [lib.tensor(t).requires_grad_(tangent_grad) for t in tangents]
    with fwAD.dual_level():
        outs = _tuple(fn(lib, *[fwAD.make_dual(x, t) for x, t in zip(xs, ts)]))
        unpacked = [fwAD.unpack_dual(o) for o in outs]
        # reverse mode through the tangent (a Hessian-vector product) and through the primal
        loss = sum((u.tangent * lib.tensor(w)).sum() for u, w in zip(unpacked, weights))
        loss = loss + sum((u.primal ** 2).sum() for u in unpacked)
        grads = lib.autograd.grad(loss, xs + (ts if tangent_grad else []))
    return [g.numpy() for g in grads]


@pytest.mark.parametrize("name", ["chain", "matmul", "indexing", "conv2d", "piecewise",
                                  "views_inplace"])  # softmax, logsumexp: PyTorch fails here
@pytest.mark.parametrize("tangent_grad", [False, True])
def test_reverse_over_forward(name, tangent_grad):
    fn, _ = CASES[name]
    primals, tangents = _INPUTS[name]
    outs = _tuple(fn(jitgrad, *[jitgrad.tensor(p) for p in primals]))
    weights = [_a(*o.shape) for o in outs]
    mine = _reverse_over_forward(jitgrad, fn, primals, tangents, weights, tangent_grad)
    ref = _reverse_over_forward(torch, fn, primals, tangents, weights, tangent_grad)
    for m, r in zip(mine, ref):
        np.testing.assert_allclose(m, r, rtol=1e-9, atol=1e-10)


def _backward_through_duals(lib):
    fwAD = lib.autograd.forward_ad
    x = lib.tensor(_INPUTS["chain"][0][0]).requires_grad_()
    y = lib.tensor(_INPUTS["chain"][0][1]).requires_grad_()
    with fwAD.dual_level():
        out = _chain(lib, fwAD.make_dual(x, lib.ones_like(x)), y)
        jvp = fwAD.unpack_dual(out).tangent.detach()
        out.sum().backward()
    return x.grad.numpy(), y.grad.numpy(), jvp.numpy(), fwAD.unpack_dual(out).tangent


def test_backward_through_dual_tensors():
    mine, ref = _backward_through_duals(jitgrad), _backward_through_duals(torch)
    for m, r in zip(mine[:3], ref[:3]):
        np.testing.assert_allclose(m, r, rtol=1e-10, atol=1e-12)
    assert mine[3] is None and ref[3] is None


# -- what is not supported raises ---------------------------------------------------------------

def test_saved_tensor_modified_in_place_raises_not_implemented():
    fwAD = jitgrad.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(jitgrad.tensor([1.0, 2.0]), jitgrad.tensor([1.0, 1.0]))
        y = d.exp()
        y.mul_(2)  # exp saved y: the recorded graph can no longer be differentiated
        with pytest.raises(NotImplementedError, match="double-vjp"):
            fwAD.unpack_dual(y)


def test_make_dual_without_grad_mode_raises_not_implemented():
    fwAD = jitgrad.autograd.forward_ad
    with fwAD.dual_level(), jitgrad.no_grad():
        with pytest.raises(NotImplementedError, match="grad mode is disabled"):
            fwAD.make_dual(jitgrad.tensor([1.0]), jitgrad.tensor([1.0]))


def test_once_differentiable_function_raises_not_implemented():
    class Square(jitgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @jitgrad.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    fwAD = jitgrad.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(jitgrad.tensor([1.0, 2.0]), jitgrad.tensor([1.0, 1.0]))
        with pytest.raises(NotImplementedError):
            fwAD.unpack_dual(Square.apply(d))


# -- torch.func / autograd.functional forward-mode transforms against PyTorch ------------------

def _F(lib):
    return lib.nn.functional


TRANSFORM_FUNCS = {
    "chain": (lambda lib, x: (x.sin() * x.exp() + x ** 2 / (1 + x ** 2)).tanh(), (3, 4)),
    "matmul": (lambda lib, x: x @ x.t() @ x, (3, 4)),
    "reductions": (lambda lib, x: lib.stack([x.sum(), x.mean(), x.norm(), x.prod(), x.var(),
                                             lib.logsumexp(x, (0, 1)), x.amax()]), (3, 4)),
    "reductions_dim": (lambda lib, x: x.sum(1) * x.max(dim=0).values[:3] + x.var(0)[:3],
                       (3, 4)),
    "softmax": (lambda lib, x: _F(lib).softmax(x, dim=-1) * _F(lib).log_softmax(x, 0), (3, 5)),
    "indexing": (lambda lib, x: x[[0, 2], 1:] * x[1, :3] + x[:, lib.tensor([2, 0, 2])].sum(),
                 (3, 4)),
    "conv2d": (lambda lib, x: _F(lib).conv2d(
        x, x[:, :1, :3, :3].reshape(2, 1, 3, 3).expand(2, 2, 3, 3).contiguous(),
        padding=1).tanh(), (2, 2, 4, 4)),
}
_TRANSFORM_INPUTS = {name: (_a(*shape), _a(*shape))
                     for name, (_, shape) in TRANSFORM_FUNCS.items()}


def _transform(lib, what, name):
    f, _ = TRANSFORM_FUNCS[name]
    xa, ta = _TRANSFORM_INPUTS[name]
    x, t = lib.tensor(xa), lib.tensor(ta)

    def g(a):
        return f(lib, a)

    def s(a):
        return f(lib, a).pow(2).sum()
    AF = lib.autograd.functional
    return {
        "func.jvp": lambda: lib.func.jvp(g, (x,), (t,)),
        "func.jacfwd": lambda: lib.func.jacfwd(g)(x),
        "func.hessian": lambda: lib.func.hessian(s)(x),
        "func.linearize": lambda: lib.func.linearize(g, x)[1](t),
        "functional.jvp": lambda: AF.jvp(g, x, t),
        "functional.jvp_create_graph": lambda: AF.jvp(g, x.requires_grad_(), t,
                                                      create_graph=True),
        "functional.hvp": lambda: AF.hvp(s, x, t),
        "functional.hvp_create_graph": lambda: AF.hvp(s, x.requires_grad_(), t,
                                                      create_graph=True),
        "functional.vhp": lambda: AF.vhp(s, x, t),
        "functional.hessian": lambda: AF.hessian(s, x),
        "functional.jacobian_forward_mode": lambda: AF.jacobian(
            g, x, vectorize=True, strategy="forward-mode"),
    }[what]()


def _flat_tensors(r):
    if isinstance(r, (tuple, list)):
        return [("seq", len(r))] + [y for v in r for y in _flat_tensors(v)]
    return [r]


@pytest.mark.parametrize("name", sorted(TRANSFORM_FUNCS))
@pytest.mark.parametrize("what", ["func.jvp", "func.jacfwd", "func.hessian", "func.linearize",
                                  "functional.jvp", "functional.jvp_create_graph",
                                  "functional.hvp", "functional.hvp_create_graph",
                                  "functional.vhp", "functional.hessian",
                                  "functional.jacobian_forward_mode"])
def test_forward_transforms_match_pytorch(what, name):
    mine = _flat_tensors(_transform(jitgrad, what, name))
    ref = _flat_tensors(_transform(torch, what, name))
    assert len(mine) == len(ref)
    for m, r in zip(mine, ref):
        if isinstance(r, tuple):
            assert m == r
            continue
        assert str(m.dtype) == str(r.dtype)
        assert tuple(m.shape) == tuple(r.shape)
        assert m.requires_grad == r.requires_grad
        np.testing.assert_allclose(m.detach().numpy(), r.detach().numpy(), rtol=1e-9,
                                   atol=1e-10)


def _transform_error(lib, what):
    x, xf = lib.tensor([1, 2, 3]), lib.tensor([1.0, 2.0, 3.0])
    F, AF = lib.func, lib.autograd.functional
    run = {
        "jvp_int_tangent": lambda: F.jvp(lambda a: a * 2, (xf,), (x,)),
        "jvp_int_primal_before_size": lambda: F.jvp(lambda a: a * 2, (x,), (lib.ones(4),)),
        "jvp_size_before_later_int": lambda: F.jvp(lambda a, b: a * b, (xf, x),
                                                   (lib.ones(4), x)),
        "jacfwd_int": lambda: F.jacfwd(lambda a: a * 2)(x),
        "hessian_int": lambda: F.hessian(lambda a: (a * 2).sum())(x),
        "linearize_int": lambda: F.linearize(lambda a: a * 2, x),
        "functional_jacobian_forward_int": lambda: AF.jacobian(
            lambda a: a * 2, x, vectorize=True, strategy="forward-mode"),
        "functional_jacobian_forward_strict": lambda: AF.jacobian(
            lambda a: a * 2, xf, strict=True, vectorize=True, strategy="forward-mode"),
        "functional_jacobian_forward_not_vectorized": lambda: AF.jacobian(
            lambda a: a * 2, xf, strategy="forward-mode"),
        "functional_jacobian_forward_bad_input": lambda: AF.jacobian(
            lambda a: a * 2, [xf], strategy="forward-mode"),
    }[what]
    with pytest.raises(Exception) as e:
        run()
    return type(e.value).__name__, str(e.value)


@pytest.mark.parametrize("what", [
    "jvp_int_tangent", "jvp_int_primal_before_size", "jvp_size_before_later_int", "jacfwd_int",
    "hessian_int", "linearize_int", "functional_jacobian_forward_int",
    "functional_jacobian_forward_strict", "functional_jacobian_forward_not_vectorized",
    "functional_jacobian_forward_bad_input"])
def test_forward_transform_errors_match_pytorch(what):
    assert _transform_error(jitgrad, what) == _transform_error(torch, what)


# -- modules and the decorator form -------------------------------------------------------------

def _module_tangent(lib, name):
    lib.manual_seed(0)
    nn = lib.nn
    model, shape = {
        "mlp": (lambda: nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8),
                                      nn.Linear(8, 3)), (4, 6)),
        "cnn": (lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3),
                                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                      nn.Linear(12, 2)), (2, 2, 4, 4)),
        "gru": (lambda: nn.GRU(3, 4), (5, 2, 3)),
        "attention": (lambda: nn.MultiheadAttention(4, 2, batch_first=True), (2, 3, 4)),
    }[name]
    model = model().double()
    if lib is jitgrad:  # PyTorch's initial weights
        ref = _module_weights[name]
        model.load_state_dict({k: jitgrad.tensor(v) for k, v in ref.items()})
    else:
        _module_weights[name] = {k: v.detach().numpy().copy()
                                 for k, v in model.state_dict().items()}
    rng = np.random.default_rng(5)
    x, t = lib.tensor(rng.standard_normal(shape)), lib.tensor(rng.standard_normal(shape))
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        out = model(d, d, d)[0] if name == "attention" else model(d)
        out = out[0] if isinstance(out, tuple) else out
        tangent = fwAD.unpack_dual(out).tangent
        return tangent.detach().numpy(), tangent.requires_grad


_module_weights = {}


@pytest.mark.parametrize("name", ["mlp", "cnn", "gru", "attention"])
def test_module_tangents_match_pytorch(name):
    ref = _module_tangent(torch, name)  # first: it fixes the weights
    mine = _module_tangent(jitgrad, name)
    np.testing.assert_allclose(mine[0], ref[0], rtol=1e-9, atol=1e-10)
    assert mine[1] == ref[1]  # the parameters require grad: so does the tangent


def test_dual_level_as_decorator():
    def run(lib):
        fwAD = lib.autograd.forward_ad

        @fwAD.dual_level()
        def f(x):
            y = fwAD.make_dual(x, lib.ones_like(x)).sin()
            return fwAD.unpack_dual(y).tangent, y
        tangent, y = f(lib.tensor([0.5, 1.5], dtype=lib.float64))
        return tangent.numpy().tolist(), fwAD.unpack_dual(y).tangent, fwAD._current_level
    mine, ref = run(jitgrad), run(torch)
    np.testing.assert_allclose(mine[0], ref[0], rtol=1e-12)
    assert mine[1:] == ref[1:]


def test_backward_outside_the_graph_raises_not_implemented():
    class Double(jitgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):  # through NumPy: no graph to differentiate a second time
            return jitgrad.tensor(g.detach().numpy() * 2)

    fwAD = jitgrad.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(jitgrad.tensor([1.0, 2.0]), jitgrad.tensor([1.0, 1.0]))
        with pytest.raises(NotImplementedError, match="not differentiable"):
            fwAD.unpack_dual(Double.apply(d).exp())


def _func_transforms_of_duals(lib):
    fwAD = lib.autograd.forward_ad
    x = lib.tensor([0.3, 1.2, -0.7], dtype=lib.float64)
    t = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    F = lib.func
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        results = [F.grad(lambda a: (a ** 3).sin().sum())(d),
                   F.vjp(lambda a: a.exp() * a, d)[1](lib.ones(3, dtype=lib.float64))[0],
                   F.jacrev(lambda a: a.exp() * a)(d),
                   F.vmap(lambda a: a.sin() * 2)(d)]
        return [fwAD.unpack_dual(r).tangent.detach().numpy() for r in results]


def test_func_transforms_of_dual_tensors_match_pytorch():
    for m, r in zip(_func_transforms_of_duals(jitgrad), _func_transforms_of_duals(torch)):
        np.testing.assert_allclose(m, r, rtol=1e-10, atol=1e-12)
