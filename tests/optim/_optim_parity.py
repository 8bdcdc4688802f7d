"""Run an optimizer in PyTorch and in jitgrad on the same parameters and gradients and record
every parameter and state value after each step (shared by the optim parity tests)."""
import numpy as np

RNG = np.random.default_rng(23)
# weight, bias, and a third parameter that never gets a gradient (skipped by every step)
P0 = [RNG.standard_normal((4, 3)), RNG.standard_normal(3), RNG.standard_normal(2)]
GRADS = [[RNG.standard_normal((4, 3)), RNG.standard_normal(3)] for _ in range(8)]


def _value(v):
    if hasattr(v, "detach"):
        return v.detach().numpy().copy()
    return v


def trajectory(lib, name, kw, dtype="float64", steps=5, groups=False, reload_at=None):
    """Params and per-parameter state (NumPy) after each of ``steps`` steps, and the final
    optimizer. ``groups``: the weight in its own group with lr 0.05 (the others take ``kw``'s).
    ``reload_at``: after that step, a fresh optimizer loads the old one's state_dict."""
    dt = getattr(lib, dtype)
    ps = [lib.tensor(p, dtype=dt, requires_grad=True) for p in P0]

    def make():
        spec = [{"params": [ps[0]], "lr": 0.05}, {"params": ps[1:]}] if groups else ps
        return getattr(lib.optim, name)(spec, **kw)

    opt = make()
    out = []
    for i in range(steps):
        opt.zero_grad()
        for p, g in zip(ps, GRADS[i]):
            p.grad = lib.tensor(g, dtype=dt)
        opt.step()
        if reload_at == i:
            sd = opt.state_dict()
            opt = make()
            opt.load_state_dict(sd)
        out.append(([_value(p) for p in ps],
                    [{k: _value(v) for k, v in opt.state[p].items()} for p in ps]))
    return out, opt


def assert_close(got, want, ulps, err_msg=""):
    """``got`` within ``ulps`` units in the last place of ``want``, measured against
    max(|want|, a tenth of ``want``'s largest magnitude): an element that an update has driven
    near zero keeps the absolute accuracy of its tensor."""
    want, got = np.asarray(want), np.asarray(got)
    eps = float(np.finfo(want.dtype).eps) if want.dtype.kind == "f" else 0.0
    atol = ulps * eps * 0.1 * (float(np.abs(want).max()) if want.size else 0.0)
    np.testing.assert_allclose(got, want, rtol=ulps * eps, atol=atol, err_msg=err_msg)


def assert_same_trajectory(want, got, ulps):
    """Same state keys at every step; every parameter and state value within ``ulps``."""
    for step, ((wp, ws), (gp, gs)) in enumerate(zip(want, got)):
        for i, (a, b) in enumerate(zip(wp, gp)):
            assert_close(b, a, ulps, f"step {step} param {i}")
        for i, (a, b) in enumerate(zip(ws, gs)):
            assert sorted(b) == sorted(a), (step, i)
            for k in a:
                assert_close(b[k], a[k], ulps, f"step {step} param {i} {k}")
