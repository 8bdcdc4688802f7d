"""Optimizers on CUDA parameters: one numba.cuda kernel per parameter (optim/_cuda_kernels.py),
state on the device, no host transfers per step; results against the CPU kernels.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_optim.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(7)
SHAPES = ((5, 7), (13,))  # 35 and 13 elements: the simulator's 32-thread grid wraps
TOL = {np.float32: dict(rtol=2e-6, atol=1e-7), np.float64: dict(rtol=1e-13, atol=1e-15)}


def _data(dt):
    init = [RNG.standard_normal(s).astype(dt) for s in SHAPES]
    grads = [[RNG.standard_normal(s).astype(dt) for s in SHAPES] for _ in range(3)]
    grads[1][0][0, 0] = 0.0  # an exact zero gradient
    return init, grads


def _run(dev, make_opt, init, grads):
    params = [jg.nn.Parameter(jg.tensor(a, device=dev)) for a in init]
    opt = make_opt(params)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = jg.tensor(g, device=dev)
        opt.step()
    return params, opt


def _host(t):
    return t.detach().cpu().numpy()


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    dict(lr=0.05, momentum=0.5, maximize=True),
]
ADAM_CASES = [
    (jg.optim.Adam, dict(lr=0.01)),
    (jg.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (jg.optim.Adam, dict(lr=0.02, betas=(0.8, 0.99), maximize=True)),
    (jg.optim.AdamW, dict(lr=0.01)),
    (jg.optim.AdamW, dict(lr=0.01, weight_decay=0.3, amsgrad=True, maximize=True)),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda k: ",".join(k))
def test_sgd_matches_cpu(device, kw, dt):
    init, grads = _data(dt)
    pc, oc = _run("cpu", lambda ps: jg.optim.SGD(ps, **kw), init, grads)
    pd, od = _run("cuda", lambda ps: jg.optim.SGD(ps, **kw), init, grads)
    for a, b in zip(pc, pd):
        assert b.is_cuda
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])
        if kw.get("momentum"):
            buf = od.state[b]["momentum_buffer"]
            assert buf.is_cuda
            np.testing.assert_allclose(_host(buf), _host(oc.state[a]["momentum_buffer"]),
                                       **TOL[dt])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("cls,kw", ADAM_CASES,
                         ids=[f"{c.__name__}-{','.join(k)}" for c, k in ADAM_CASES])
def test_adam_matches_cpu(device, cls, kw, dt):
    init, grads = _data(dt)
    pc, oc = _run("cpu", lambda ps: cls(ps, **kw), init, grads)
    pd, od = _run("cuda", lambda ps: cls(ps, **kw), init, grads)
    keys = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if kw.get("amsgrad") else [])
    for a, b in zip(pc, pd):
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])
        sc, sd = oc.state[a], od.state[b]
        assert sd["step"].is_cpu and float(sd["step"]) == 3.0  # step count stays on the host
        for k in keys:
            assert sd[k].is_cuda and sd[k].dtype == b.dtype
            np.testing.assert_allclose(_host(sd[k]), _host(sc[k]), **TOL[dt])


def test_adam_formula_one_step(device):
    """First Adam step from the formula (bias-corrected m/sqrt(v) = sign(g)): p - lr*g/(|g|+eps')."""
    g = np.array([0.5, -2.0, 1e-3, 0.0], np.float64)
    p = jg.nn.Parameter(jg.zeros(4, dtype=jg.float64, device="cuda"))
    p.grad = jg.tensor(g, device="cuda")
    jg.optim.Adam([p], lr=0.1, eps=1e-8).step()
    m, v = 0.1 * g / 0.1, 0.001 * g * g / 0.001
    np.testing.assert_allclose(_host(p), -0.1 * m / (np.sqrt(v) + 1e-8), rtol=1e-12)


def test_step_makes_no_transfers_and_one_launch_per_parameter(device):
    init, grads = _data(np.float32)
    for make in (lambda ps: jg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                 lambda ps: jg.optim.AdamW(ps, lr=0.01, amsgrad=True)):
        params = [jg.nn.Parameter(jg.tensor(a, device="cuda")) for a in init]
        for p, g in zip(params, grads[0]):
            p.grad = jg.tensor(g, device="cuda")
        opt = make(params)
        opt.step()  # allocates the state (fills on the device)
        device.reset_stats()
        versions = [p._version for p in params]
        opt.step()
        s = device.stats.snapshot()
        assert s["h2d"] == 0 and s["d2h"] == 0, s
        assert s["launches"] == len(params) and s["allocs"] == 0, s
        assert [p._version for p in params] == [v + 1 for v in versions]


def test_zero_grad_on_device(device):
    p = jg.nn.Parameter(jg.ones(3, device="cuda"))
    p.grad = jg.full((3,), 2.0, device="cuda")
    opt = jg.optim.SGD([p], lr=0.1)
    device.reset_stats()
    opt.zero_grad(set_to_none=False)
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    assert p.grad.is_cuda and p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("make", [lambda ps: jg.optim.SGD(ps, lr=0.1),
                                  lambda ps: jg.optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: jg.optim.Adam(ps, lr=0.1, weight_decay=0.1)],
                         ids=["sgd", "sgd-momentum", "adam"])
def test_non_contiguous_parameter(device, make):
    """A transposed (strided) parameter is updated through a copy written back in place, and
    ends where the same values stored contiguously end (CPU and CUDA; the CPU path used to write
    a stale second copy of the parameter back over the update)."""
    base = RNG.standard_normal((4, 6)).astype(np.float32)
    g = RNG.standard_normal((6, 4)).astype(np.float32)
    out = []
    for dev in ("cpu", "cuda"):
        for strided in (True, False):
            t = jg.tensor(base, device=dev).t() if strided else \
                jg.tensor(np.ascontiguousarray(base.T), device=dev)
            p = jg.nn.Parameter(t)
            assert p.is_contiguous() != strided
            opt = make([p])
            for _ in range(2):
                p.grad = jg.tensor(g, device=dev)
                opt.step()
            out.append(_host(p))
    assert not np.array_equal(out[1], np.ascontiguousarray(base.T))  # it moved
    for o in out:
        np.testing.assert_allclose(o, out[1], rtol=2e-6, atol=1e-7)


def test_state_dict_roundtrip_and_cpu_checkpoint(device):
    """state_dict keeps device tensors (copied to the host only when the user does); loading
    a CPU state dict into a CUDA optimizer moves the state to the device; training continues
    exactly as the uninterrupted run."""
    init, grads = _data(np.float32)
    grads = grads + grads[:1]
    make = (lambda ps: jg.optim.AdamW(ps, lr=0.01, amsgrad=True))
    ref, _ = _run("cuda", make, init, grads)  # 4 steps straight

    params, opt = _run("cuda", make, init, grads[:2])
    device.reset_stats()
    sd = opt.state_dict()
    assert device.stats.d2h == 0 and sd["state"][0]["exp_avg"].is_cuda
    host_sd = {"param_groups": sd["param_groups"],
               "state": {k: {n: t.cpu() for n, t in v.items()} for k, v in sd["state"].items()}}
    saved = [_host(p) for p in params]

    params2 = [jg.nn.Parameter(jg.tensor(a, device="cuda")) for a in saved]
    opt2 = make(params2)
    opt2.load_state_dict(host_sd)
    st = opt2.state[params2[0]]
    assert st["exp_avg"].is_cuda and st["max_exp_avg_sq"].is_cuda and st["step"].is_cpu
    for step in grads[2:]:
        for p, g in zip(params2, step):
            p.grad = jg.tensor(g, device="cuda")
        opt2.step()
    for a, b in zip(ref, params2):
        np.testing.assert_allclose(_host(b), _host(a), rtol=1e-6, atol=1e-7)

    # and a CUDA state dict loads into a CPU optimizer
    params3 = [jg.nn.Parameter(jg.tensor(a)) for a in saved]
    opt3 = make(params3)
    opt3.load_state_dict(sd)
    assert opt3.state[params3[0]]["exp_avg"].is_cpu


def _adam_reference(init, grads, lr, betas, eps, wd, decoupled, amsgrad, maximize):
    """Adam/AdamW in float64 NumPy, PyTorch's formula (an independent reference)."""
    b1, b2 = betas
    out = []
    for k, p in enumerate(init):
        p = p.astype(np.float64)
        m = np.zeros_like(p)
        v = np.zeros_like(p)
        vmax = np.zeros_like(p)
        for t, step in enumerate(grads, 1):
            g = step[k].astype(np.float64) * (-1 if maximize else 1)
            if wd:
                if decoupled:
                    p = p * (1 - lr * wd)
                else:
                    g = g + wd * p
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - b2 ** t) + eps
            p = p - lr / (1 - b1 ** t) * m / denom
        out.append(p)
    return out


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("cls,kw", ADAM_CASES,
                         ids=[f"{c.__name__}-{','.join(k)}" for c, k in ADAM_CASES])
def test_capturable_adam_keeps_its_step_on_the_device(device, cls, kw, dt):
    """capturable=True (PyTorch's flag for CUDA graphs): the step count is a device tensor and
    the bias corrections are computed from it on the device; the parameters agree with a
    float64 reference and with the host-step path to float rounding."""
    init, grads = _data(dt)
    pd, od = _run("cuda", lambda ps: cls(ps, capturable=True, **kw), init, grads)
    ph, _ = _run("cuda", lambda ps: cls(ps, **kw), init, grads)
    wd = kw.get("weight_decay", 1e-2 if cls is jg.optim.AdamW else 0)
    ref = _adam_reference(init, grads, kw["lr"], kw.get("betas", (0.9, 0.999)), 1e-8, wd,
                          cls is jg.optim.AdamW, kw.get("amsgrad", False),
                          kw.get("maximize", False))
    tol = dict(rtol=1e-5, atol=1e-6) if dt == np.float32 else dict(rtol=1e-11, atol=1e-13)
    for b, h, r in zip(pd, ph, ref):
        step = od.state[b]["step"]
        assert step.is_cuda and step.dtype == jg.float32 and float(step) == 3.0
        np.testing.assert_allclose(_host(b), r, **tol)
        np.testing.assert_allclose(_host(b), _host(h), **tol)


def test_capturable_state_moves_between_host_and_device(device):
    init, grads = _data(np.float32)
    params = [jg.nn.Parameter(jg.tensor(a, device="cuda")) for a in init]
    opt = jg.optim.Adam(params, lr=0.01)
    for step in grads[:2]:
        for p, g in zip(params, step):
            p.grad = jg.tensor(g, device="cuda")
        opt.step()
    assert opt.state[params[0]]["step"].is_cpu
    opt.param_groups[0]["capturable"] = True
    opt.step()
    assert opt.state[params[0]]["step"].is_cuda and float(opt.state[params[0]]["step"]) == 3.0
    opt.param_groups[0]["capturable"] = False
    opt.step()
    assert opt.state[params[0]]["step"].is_cpu and float(opt.state[params[0]]["step"]) == 4.0
