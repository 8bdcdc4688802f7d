"""LBFGS against PyTorch on a least-squares problem and the Rosenbrock function, with the fixed
step and with ``line_search_fn="strong_wolfe"``: the point of every closure evaluation, the loss,
the evaluation and iteration counts, the state layout, a PyTorch state dict loaded, errors.

The closure computes the loss and gradient in NumPy from the parameters' values, so both
libraries see the same function: any difference comes from the optimizer. PyTorch's
``add_(alpha=)`` is a fused multiply-add on AVX512 and jitgrad's is not, so the iterates agree
to an ulp per step, not bit for bit; the ill-conditioned Rosenbrock valley amplifies such
differences over tens of iterations (float32 runs drift apart after a few), so the long runs are
float64 and the float32 ones short."""
import warnings

import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((6, 4))
B = RNG.standard_normal(6)
X0_LSQ = RNG.standard_normal(4)


def _lsq(x):
    a, b = A.astype(x.dtype), B.astype(x.dtype)
    r = a @ x - b
    return (r * r).sum(), 2 * a.T @ r


def _rosen(x):
    f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2),
                  200 * (x[1] - x[0] ** 2)], dtype=x.dtype)
    return f, g


def _logcosh(x):
    return np.log(np.cosh(x)).sum(), np.tanh(x)


# log-cosh is near-linear far out, so a long trial step brackets a minimum that the cubic
# places at the bracket's end: the zoom's insufficient-progress rule moves it inside
PROBLEMS = {"lsq": (_lsq, X0_LSQ), "rosen": (_rosen, np.array([-1.5, 2.0])),
            "logcosh": (_logcosh, np.array([3.0, -1.0, 2.0]))}


def _run(lib, problem, dtype="float64", steps=4, **kw):
    """Each closure evaluation's (loss, point), and the optimizer. The point is split over two
    parameters (the flat vector spans parameters)."""
    fn, x0 = PROBLEMS[problem]
    dt = getattr(lib, dtype)
    ps = [lib.tensor(x0[:1], dtype=dt, requires_grad=True),
          lib.tensor(x0[1:], dtype=dt, requires_grad=True)]
    opt = lib.optim.LBFGS(ps, **kw)
    log = []

    def closure():
        opt.zero_grad()
        x = np.concatenate([p.detach().numpy() for p in ps])
        f, g = fn(x)
        ps[0].grad, ps[1].grad = lib.tensor(g[:1]), lib.tensor(g[1:])
        log.append((float(f), x.copy()))
        return lib.tensor(f)

    losses = [float(opt.step(closure)) for _ in range(steps)]
    return log, losses, opt, ps


def _compare(problem, dtype, rtol, steps=4, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (tlog, tl, topt, tps), (jlog, jl, jopt, jps) = (_run(lib, problem, dtype, steps, **kw)
                                                        for lib in (torch, jt))
    assert len(jlog) == len(tlog)
    for i, ((tf, tx), (jf, jx)) in enumerate(zip(tlog, jlog)):
        np.testing.assert_allclose(jx, tx, rtol=rtol, atol=rtol * 1e-2, err_msg=f"eval {i}")
        np.testing.assert_allclose(jf, tf, rtol=rtol * 10, atol=rtol * 1e-2, err_msg=f"eval {i}")
    np.testing.assert_allclose(jl, tl, rtol=rtol * 10, atol=rtol * 1e-2)
    ts, js = topt.state[tps[0]], jopt.state[jps[0]]
    assert list(js) == list(ts) and jps[1] not in jopt.state
    assert (js["func_evals"], js["n_iter"]) == (ts["func_evals"], ts["n_iter"])
    for k in ("old_dirs", "old_stps", "ro", "al"):
        assert len(js[k]) == len(ts[k]), k
    for k in ("d", "prev_flat_grad", "H_diag"):
        assert str(js[k].dtype) == str(ts[k].dtype) and js[k].shape == tuple(ts[k].shape), k
    assert type(js["t"]) is type(ts["t"]) if not hasattr(ts["t"], "dtype") \
        else str(js["t"].dtype) == str(ts["t"].dtype)


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_least_squares_float64(ls):
    _compare("lsq", "float64", 1e-13, max_iter=5, history_size=3, line_search_fn=ls)


def test_rosenbrock_strong_wolfe_float64():
    _compare("rosen", "float64", 1e-7, history_size=5, line_search_fn="strong_wolfe")


@pytest.mark.parametrize("lr", [0.01, 10.0])
def test_line_search_extrapolates_and_zooms_like_torch(lr):
    """A tiny first step makes the search extrapolate (cubic steps bounded to [t + 0.01 dt,
    10 t]); a huge one makes it bracket and zoom (with the insufficient-progress rule)."""
    _compare("rosen", "float64", 1e-7, steps=2, lr=lr, max_iter=10, history_size=5,
             line_search_fn="strong_wolfe")
    _compare("lsq", "float64", 1e-12, steps=2, lr=lr, max_iter=4, line_search_fn="strong_wolfe")


def test_line_search_insufficient_progress_like_torch():
    _compare("logcosh", "float64", 1e-9, steps=3, lr=300.0, line_search_fn="strong_wolfe")


def test_rosenbrock_fixed_step_float64():
    """The fixed step zig-zags down the valley; one 20-iteration step, then a short second."""
    _compare("rosen", "float64", 1e-9, steps=2, lr=0.5, max_iter=15, history_size=5)


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_least_squares_float32(ls):
    _compare("lsq", "float32", 1e-5, steps=2, max_iter=4, line_search_fn=ls)


def test_rosenbrock_strong_wolfe_float32():
    _compare("rosen", "float32", 1e-4, steps=1, max_iter=5, line_search_fn="strong_wolfe")


def test_converges_to_the_least_squares_solution():
    _, _, _, ps = _run(jt, "lsq", steps=3, line_search_fn="strong_wolfe")
    x = np.concatenate([p.detach().numpy() for p in ps])
    np.testing.assert_allclose(x, np.linalg.lstsq(A, B, rcond=None)[0], rtol=1e-4)
    # (it stops on tolerance_change, the loss's change, before the point is exact)


def test_stationary_start_returns_without_an_update():
    for lib in (torch, jt):
        p = lib.tensor([1.0, 1.0], requires_grad=True)
        opt = lib.optim.LBFGS([p])

        def closure(p=p, opt=opt, lib=lib):
            opt.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss
        assert opt.step(closure).item() == 0.0
        assert p.tolist() == [1.0, 1.0]
        assert dict(opt.state[p]) == {"func_evals": 1, "n_iter": 0}


def _to_jt(v):
    if isinstance(v, torch.Tensor):
        return jt.tensor(v.numpy(), dtype=getattr(jt, str(v.dtype).split(".")[1]))
    if isinstance(v, dict):
        return {k: _to_jt(u) for k, u in v.items()}
    if isinstance(v, list):
        return [_to_jt(u) for u in v]
    return v


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_loads_a_pytorch_state_dict_and_continues(ls):
    """Two PyTorch steps; their state dict (lists of tensors, 0-d tensors, numbers) loaded
    into a jitgrad LBFGS at the same point; the next two steps agree."""
    kw = dict(max_iter=3, history_size=4, line_search_fn=ls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tlog, _, topt, tps = _run(torch, "lsq", steps=2, **kw)
        sd = topt.state_dict()
        assert list(sd["state"]) == [0]
        jlog, _, jopt, jps = _run(jt, "lsq", steps=0, **kw)
        for jp, tp in zip(jps, tps):
            jp.data = jt.tensor(tp.detach().numpy())
        jopt.load_state_dict(_to_jt(sd))
        assert list(jopt.state_dict()["state"][0]) == list(sd["state"][0])
        n = len(tlog)
        for opt, ps, lib in ((topt, tps, torch), (jopt, jps, jt)):
            for _ in range(2):
                opt.step(_closure_for(opt, ps, lib, tlog if lib is torch else jlog))
    assert len(jlog) == len(tlog) - n
    for (tf, tx), (jf, jx) in zip(tlog[n:], jlog):
        np.testing.assert_allclose(jx, tx, rtol=1e-13)
        np.testing.assert_allclose(jf, tf, rtol=1e-12)


def _closure_for(opt, ps, lib, log):
    def closure():
        opt.zero_grad()
        x = np.concatenate([p.detach().numpy() for p in ps])
        f, g = _lsq(x)
        ps[0].grad, ps[1].grad = lib.tensor(g[:1]), lib.tensor(g[1:])
        log.append((float(f), x.copy()))
        return lib.tensor(f)
    return closure


def test_defaults_and_repr_match_torch():
    out = []
    for lib in (torch, jt):
        opt = lib.optim.LBFGS([lib.ones(2, requires_grad=True)], lr=0.5, max_iter=8)
        out.append((str(opt.defaults), repr(opt), opt.state_dict()["param_groups"]))
    assert out[1][:2] == out[0][:2]
    assert str(out[1][2]) == str(out[0][2])


@pytest.mark.parametrize("make", [
    lambda lib: lib.optim.LBFGS([lib.ones(2, requires_grad=True)], lr=-1),
    lambda lib: lib.optim.LBFGS([{"params": [lib.ones(2, requires_grad=True)]},
                                 {"params": [lib.ones(1, requires_grad=True)]}]),
    lambda lib: lib.optim.LBFGS([lib.ones(2, requires_grad=True)], lr=lib.ones(2)),
], ids=["lr", "groups", "tensor-lr"])
def test_bad_arguments_raise_like_torch(make):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            make(lib)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])


def test_unknown_line_search_raises_like_torch():
    errs = []
    for lib in (torch, jt):
        p = lib.tensor([3.0, -1.0], requires_grad=True)
        opt = lib.optim.LBFGS([p], line_search_fn="armijo")

        def closure(p=p, opt=opt):
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError) as ei:
            opt.step(closure)
        errs.append(str(ei.value))
    assert errs[1] == errs[0]


def test_autograd_closure_on_a_model():
    """A closure with a real backward pass (a linear fit): jitgrad's LBFGS reaches PyTorch's
    point (the losses are computed by each library, so to a tolerance, not per ulp)."""
    X = RNG.standard_normal((20, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3
    res = []
    for lib in (torch, jt):
        lin = lib.nn.Linear(3, 1).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[0.1, 0.2, 0.3]], dtype=lib.float64))
            lin.bias.zero_()
        opt = lib.optim.LBFGS(lin.parameters(), line_search_fn="strong_wolfe")
        xt, yt = lib.tensor(X), lib.tensor(y[:, None])

        def closure(lin=lin, opt=opt, xt=xt, yt=yt, lib=lib):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(lin(xt), yt)
            loss.backward()
            return loss
        for _ in range(2):
            opt.step(closure)
        res.append(np.concatenate([lin.weight.detach().numpy().ravel(),
                                   lin.bias.detach().numpy()]))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res[1], [1.0, -2.0, 0.5, 0.3], rtol=1e-4)
