"""PyTorch-parity sweep of optim: multi-step trajectories with identical init, param groups,
state_dict round trips, schedulers and argument errors, compared with PyTorch itself."""
import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
P0 = [RNG.standard_normal((4, 3)), RNG.standard_normal(3), RNG.standard_normal(2)]
GRADS = [[RNG.standard_normal((4, 3)), RNG.standard_normal(3)] for _ in range(6)]


def _trajectory(lib, cls, kw, groups, roundtrip, dtype):
    ps = [lib.tensor(p, dtype=getattr(lib, dtype), requires_grad=True) for p in P0]

    def make():
        spec = [{"params": [ps[0]], "lr": 0.05}, {"params": ps[1:]}] if groups else ps
        return getattr(lib.optim, cls)(spec, **kw)
    opt = make()
    out = []
    for i, (gw, gb) in enumerate(GRADS):
        opt.zero_grad()
        ps[0].grad = lib.tensor(gw, dtype=getattr(lib, dtype))
        ps[1].grad = lib.tensor(gb, dtype=getattr(lib, dtype))
        opt.step()  # ps[2] has grad None: skipped
        if roundtrip and i == 2:
            sd = opt.state_dict()
            opt = make()
            opt.load_state_dict(sd)
        out.append([p.detach().numpy().copy() for p in ps])
    return out, opt.state_dict()


CONFIGS = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
           ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
           ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
           ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)),
           ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
           ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
           ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True)),
           ("AdamW", dict(lr=0.01, weight_decay=0.1))]


@pytest.mark.parametrize("cls,kw", CONFIGS)
@pytest.mark.parametrize("groups,roundtrip", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trajectory_matches_torch(cls, kw, groups, roundtrip, dtype):
    (tt, tsd), (jj, jsd) = (_trajectory(lib, cls, kw, groups, roundtrip, dtype)
                            for lib in (torch, jt))
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-13, atol=1e-15)
    for a, b in zip(tt, jj):
        for x, y in zip(a, b):
            np.testing.assert_allclose(y, x, **tol)
    assert list(jsd) == list(tsd) == ["state", "param_groups"]
    assert list(jsd["state"]) == list(tsd["state"])  # the grad-less parameter has no state
    for k in tsd["state"]:
        assert sorted(jsd["state"][k]) == sorted(tsd["state"][k])
    assert str(jsd["param_groups"]) == str(tsd["param_groups"])


@pytest.mark.parametrize("cls,kw", [("SGD", dict(lr=-0.1)), ("SGD", dict(lr=0.1, momentum=-1)),
                                    ("SGD", dict(lr=0.1, nesterov=True)),
                                    ("SGD", dict(lr=0.1, weight_decay=-1)),
                                    ("Adam", dict(lr=-1)), ("Adam", dict(eps=-1)),
                                    ("Adam", dict(betas=(1.0, 0.9))),
                                    ("AdamW", dict(betas=(0.9, 1.5))),
                                    ("AdamW", dict(weight_decay=-1))])
def test_bad_arguments_raise_like_torch(cls, kw):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            getattr(lib.optim, cls)([lib.ones(2, requires_grad=True)], **kw)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])


@pytest.mark.parametrize("name,kw", [("StepLR", dict(step_size=3)),
                                     ("StepLR", dict(step_size=2, gamma=0.5)),
                                     ("CosineAnnealingLR", dict(T_max=5)),
                                     ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01))])
def test_schedulers_match_torch(name, kw):
    res = []
    for lib in (torch, jt):
        w = lib.ones(2, requires_grad=True)
        b = lib.ones(1, requires_grad=True)
        o = lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
        s = getattr(lib.optim.lr_scheduler, name)(o, **kw)
        r = [list(map(float, s.get_last_lr())), s.last_epoch]
        for _ in range(12):
            o.step()
            s.step()
            r.append([float(x) for x in s.get_last_lr()] + [g["lr"] for g in o.param_groups])
        r.append(str(s.state_dict()))
        res.append(r)
    assert res[1] == res[0]


def test_scheduler_resume_without_initial_lr_message():
    errs = []
    for lib in (torch, jt):
        o = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)
        with pytest.raises(KeyError) as ei:
            lib.optim.lr_scheduler.StepLR(o, 2, last_epoch=3)
        errs.append(str(ei.value))
    assert errs[1] == errs[0]
