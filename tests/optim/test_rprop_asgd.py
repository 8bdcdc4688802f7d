"""Rprop and ASGD against PyTorch: every parameter and state value after each step (param
groups, a grad-less parameter, state_dict round trips, a PyTorch state dict loaded), the state
layout, repr, tensor learning rates, the capturable formulas and the argument errors.

Rprop's update is sign arithmetic and products, so it agrees bit for bit. ASGD's
``add_(grad, alpha=-eta)`` is one fused multiply-add in PyTorch's AVX512 kernel, so its results
agree to an ulp or two (the 8-ulp bound the other single-tensor optimizers are held to)."""
import numpy as np
import pytest
from _optim_parity import P0, assert_same_trajectory, trajectory

import jitgrad as jt

torch = pytest.importorskip("torch")

ULPS = 8
CASES = [
    ("Rprop", dict(), 0),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True), 0),
    ("ASGD", dict(), ULPS),
    ("ASGD", dict(lr=0.1, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1, maximize=True), ULPS),
    ("ASGD", dict(lr=0.05, t0=0), ULPS),  # averaging from the first step: mu = 1 / step
]


def _ids(case):
    name, kw, _ = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw,ulps", CASES, ids=[_ids(c) for c in CASES])
def test_steps_match_torch(name, kw, ulps, dtype):
    want, topt = trajectory(torch, name, kw, dtype, steps=8, groups=True)
    got, jopt = trajectory(jt, name, kw, dtype, steps=8, groups=True)
    assert_same_trajectory(want, got, ulps)
    for p, q in zip(topt.state, jopt.state):
        assert list(jopt.state[q]) == list(topt.state[p])  # PyTorch's key order
        for k, v in topt.state[p].items():
            assert str(jopt.state[q][k].dtype) == str(v.dtype), k
            assert jopt.state[q][k].shape == tuple(v.shape), k


@pytest.mark.parametrize("name,kw,ulps", [CASES[1], CASES[3]], ids=["Rprop", "ASGD"])
def test_state_dict_round_trip_continues_like_torch(name, kw, ulps):
    want, topt = trajectory(torch, name, kw, steps=5, groups=True, reload_at=1)
    got, jopt = trajectory(jt, name, kw, steps=5, groups=True, reload_at=1)
    assert_same_trajectory(want, got, ulps)
    tsd, jsd = topt.state_dict(), jopt.state_dict()
    assert str(jsd["param_groups"]) == str(tsd["param_groups"])
    assert list(jsd["state"]) == list(tsd["state"])
    for i, ts in tsd["state"].items():
        for k, v in ts.items():
            assert str(jsd["state"][i][k].dtype) == str(v.dtype), k
            np.testing.assert_allclose(jsd["state"][i][k].numpy(), v.numpy(),
                                       rtol=ULPS * 2.3e-16, atol=1e-15)


def _to_jt(sd):
    """A PyTorch state dict with every tensor turned into a jitgrad tensor."""
    def conv(v):
        if isinstance(v, torch.Tensor):
            return jt.tensor(v.numpy(), dtype=getattr(jt, str(v.dtype).split(".")[1]))
        if isinstance(v, dict):
            return {k: conv(u) for k, u in v.items()}
        if isinstance(v, list):
            return [conv(u) for u in v]
        return v
    return conv(sd)


@pytest.mark.parametrize("name,kw,ulps", [CASES[1], CASES[3]], ids=["Rprop", "ASGD"])
def test_loads_a_pytorch_state_dict(name, kw, ulps):
    """Two steps in PyTorch, its state dict loaded into jitgrad: the next steps agree."""
    runs = []
    for lib in (torch, jt):
        ps = [lib.tensor(p, requires_grad=True) for p in P0[:2]]
        opt = getattr(lib.optim, name)(ps, **kw)
        runs.append((ps, opt))
    (tps, topt), (jps, jopt) = runs
    for g in (P0[:2], [P0[0] ** 2, -P0[1]]):
        for p, gi in zip(tps, g):
            p.grad = torch.tensor(gi)
        topt.step()
    for jp, tp in zip(jps, tps):
        jp.data = jt.tensor(tp.detach().numpy())
    jopt.load_state_dict(_to_jt(topt.state_dict()))
    for g in ([-P0[0], P0[1] * 3], [P0[0] * 0.5, P0[1] ** 2]):
        for lib, ps, opt in ((torch, tps, topt), (jt, jps, jopt)):
            for p, gi in zip(ps, g):
                p.grad = lib.tensor(gi)
            opt.step()
    for a, b in zip(tps, jps):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(),
                                   rtol=ulps * 2.3e-16, atol=1e-15)
    assert float(jopt.state[jps[0]]["step"]) == 4.0


@pytest.mark.parametrize("name", ["Rprop", "ASGD"])
def test_defaults_param_groups_and_repr_match_torch(name):
    out = []
    for lib in (torch, jt):
        w = lib.ones(2, requires_grad=True)
        b = lib.ones(1, requires_grad=True)
        opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.5}])
        out.append((str(opt.defaults), [str({k: v for k, v in g.items() if k != "params"})
                                        for g in opt.param_groups], repr(opt)))
    assert out[1] == out[0]


@pytest.mark.parametrize("name", ["Rprop", "ASGD"])
def test_tensor_lr_matches_torch(name):
    """A 0-d float32 tensor lr: Rprop's initial step sizes, ASGD's eta schedule (tensor
    arithmetic on lr) as PyTorch computes them."""
    res = []
    for lib in (torch, jt):
        p = lib.tensor(P0[0], requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.01))
        for g in (P0[0] * 0.5, -P0[0], P0[0] ** 2):
            p.grad = lib.tensor(g)
            opt.step()
        res.append((p.detach().numpy(), {k: v.numpy() for k, v in opt.state[p].items()}))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=ULPS * 2.3e-16, atol=1e-16)
    for k, v in res[0][1].items():
        np.testing.assert_allclose(res[1][1][k], v, rtol=ULPS * 2.3e-16, atol=1e-16)


BAD = [("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 1.0))),
       ("Rprop", dict(etas=(0.0, 2.0))), ("ASGD", dict(lr=-0.1)),
       ("ASGD", dict(weight_decay=-1))]


@pytest.mark.parametrize("name,kw", BAD, ids=[n + str(k) for n, k in BAD])
def test_bad_arguments_raise_like_torch(name, kw):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            getattr(lib.optim, name)([lib.ones(2, requires_grad=True)], **kw)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(jt.optim, name)([jt.ones(2, requires_grad=True)], lr=jt.ones(2))


@pytest.mark.parametrize("name", ["Rprop", "ASGD"])
def test_capturable_on_cpu_parameters_raises_like_torch(name):
    errors = []
    for lib in (torch, jt):
        p = lib.ones(3, requires_grad=True)
        p.grad = lib.ones(3)
        opt = getattr(lib.optim, name)([p], capturable=True)
        with pytest.raises(AssertionError) as e:
            opt.step()
        errors.append(str(e.value))
        assert p.tolist() == [1.0, 1.0, 1.0]
    assert errors[1] == errors[0]


@pytest.mark.parametrize("name,kw", [("Rprop", dict(lr=0.1)),
                                     ("ASGD", dict(lr=0.1, t0=1, lambd=0.1))])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_capturable_formulas_match_torch(name, kw, dtype, monkeypatch):
    """The capturable branch (torch.where instead of masks; ASGD's eta and mu as tensor ops on
    the 0-d step) against PyTorch's, both run on the CPU by admitting "cpu" to each side's
    capturable devices (no CUDA build of PyTorch here to compare with)."""
    import importlib

    import jitgrad.optim._single_tensor as st
    mod = importlib.import_module(f"torch.optim.{name.lower()}")
    real = mod._get_capturable_supported_devices
    monkeypatch.setattr(mod, "_get_capturable_supported_devices", lambda *a: ["cpu"] + real(*a))
    monkeypatch.setattr(st, "CAPTURABLE_DEVICES", ["cpu"] + st.CAPTURABLE_DEVICES)
    kw = dict(kw, capturable=True)
    want, _ = trajectory(torch, name, kw, dtype)
    got, _ = trajectory(jt, name, kw, dtype)
    assert_same_trajectory(want, got, ULPS)


def test_differentiable_asgd_records_a_graph_like_torch():
    res = []
    for lib in (torch, jt):
        w0 = lib.tensor(P0[1], requires_grad=True)
        w = w0.clone()
        opt = lib.optim.ASGD([w], lr=0.1, t0=0, differentiable=True)
        for g in (np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.5])):
            w.grad = lib.tensor(g) * w.detach()
            opt.step()
        (w * w).sum().backward()
        res.append((w.detach().numpy(), w0.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=ULPS * 2.3e-16)
