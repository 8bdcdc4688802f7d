"""Adafactor against PyTorch: every parameter and state value after each step (a matrix with
factored second moments, a vector with a full one, a 3-d parameter factored over its last two
dimensions, param groups, a grad-less parameter, state_dict round trips, a PyTorch state dict
loaded), the state layout, repr, a tensor learning rate and the argument errors word for word.

PyTorch's ``add_(alpha=)`` is a fused multiply-add on AVX512 and its ``norm`` sums in its own
order, so the results agree to a few ulps (the 8-ulp bound of the other single-tensor
optimizers; 3 is the worst seen here)."""
import numpy as np
import pytest
from _optim_parity import P0, assert_close, assert_same_trajectory, trajectory

import jitgrad as jt

torch = pytest.importorskip("torch")

ULPS = 8
CASES = [dict(), dict(lr=0.1, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1,
                      maximize=True),
         dict(lr=0.5, eps=(1e-3, 1e-3))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", CASES, ids=["default", "all-options", "eps1"])
def test_steps_match_torch(kw, dtype):
    want, topt = trajectory(torch, "Adafactor", kw, dtype, groups=True)
    got, jopt = trajectory(jt, "Adafactor", kw, dtype, groups=True)
    assert_same_trajectory(want, got, ULPS)
    for p, q in zip(topt.state, jopt.state):
        assert list(jopt.state[q]) == list(topt.state[p])
        for k, v in topt.state[p].items():
            assert str(jopt.state[q][k].dtype) == str(v.dtype), k
            assert jopt.state[q][k].shape == tuple(v.shape), k


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_three_dim_parameter_factored_over_last_two_dims(dtype):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((2, 3, 4))
    grads = [rng.standard_normal((2, 3, 4)) for _ in range(5)]
    res = []
    for lib in (torch, jt):
        p = lib.tensor(p0, dtype=getattr(lib, dtype), requires_grad=True)
        opt = lib.optim.Adafactor([p], lr=0.05, weight_decay=0.01)
        for g in grads:
            p.grad = lib.tensor(g, dtype=getattr(lib, dtype))
            opt.step()
        res.append((p.detach().numpy(), {k: v.numpy() for k, v in opt.state[p].items()}))
    assert_close(res[1][0], res[0][0], ULPS)
    assert list(res[1][1]) == ["step", "row_var", "col_var"]
    assert res[1][1]["row_var"].shape == (2, 3, 1) and res[1][1]["col_var"].shape == (2, 1, 4)
    for k, v in res[0][1].items():
        assert_close(res[1][1][k], v, ULPS, k)


def test_state_dict_round_trip_continues_like_torch():
    kw = CASES[1]
    want, topt = trajectory(torch, "Adafactor", kw, steps=5, groups=True, reload_at=1)
    got, jopt = trajectory(jt, "Adafactor", kw, steps=5, groups=True, reload_at=1)
    assert_same_trajectory(want, got, ULPS)
    tsd, jsd = topt.state_dict(), jopt.state_dict()
    assert str(jsd["param_groups"]) == str(tsd["param_groups"])
    assert list(jsd["state"]) == list(tsd["state"])
    for i, ts in tsd["state"].items():
        assert list(jsd["state"][i]) == list(ts)  # the grad-less parameter: {} in both
        if ts:
            assert str(jsd["state"][i]["step"].dtype) == "torch.float32"


def test_loads_a_pytorch_state_dict():
    runs = []
    for lib in (torch, jt):
        ps = [lib.tensor(p, requires_grad=True) for p in P0[:2]]
        runs.append((ps, lib.optim.Adafactor(ps, lr=0.1)))
    (tps, topt), (jps, jopt) = runs
    for g in (P0[:2], [P0[0] ** 2, -P0[1]]):
        for p, gi in zip(tps, g):
            p.grad = torch.tensor(gi)
        topt.step()
    for jp, tp in zip(jps, tps):
        jp.data = jt.tensor(tp.detach().numpy())
    sd = topt.state_dict()
    jopt.load_state_dict({"param_groups": sd["param_groups"],
                          "state": {i: {k: jt.tensor(v.numpy()) for k, v in s.items()}
                                    for i, s in sd["state"].items()}})
    for g in ([-P0[0], P0[1] * 3], [P0[0] * 0.5, P0[1] ** 2]):
        for lib, ps, opt in ((torch, tps, topt), (jt, jps, jopt)):
            for p, gi in zip(ps, g):
                p.grad = lib.tensor(gi)
            opt.step()
    for a, b in zip(tps, jps):
        assert_close(b.detach().numpy(), a.detach().numpy(), ULPS)
    assert float(jopt.state[jps[0]]["step"]) == 4.0


def test_defaults_param_groups_and_repr_match_torch():
    out = []
    for lib in (torch, jt):
        w = lib.ones(2, requires_grad=True)
        b = lib.ones(1, requires_grad=True)
        opt = lib.optim.Adafactor([{"params": [w]}, {"params": [b], "lr": 0.5}])
        out.append((str(opt.defaults), [str({k: v for k, v in g.items() if k != "params"})
                                        for g in opt.param_groups], repr(opt)))
    assert out[1] == out[0]


def test_tensor_lr_matches_torch():
    res = []
    for lib in (torch, jt):
        p = lib.tensor(P0[0], requires_grad=True)
        opt = lib.optim.Adafactor([p], lr=lib.tensor(0.01), weight_decay=0.1)
        for g in (P0[0] * 0.5, -P0[0], P0[0] ** 2):
            p.grad = lib.tensor(g)
            opt.step()
        res.append(p.detach().numpy())
    assert_close(res[1], res[0], ULPS)


BAD = [dict(lr=-1), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1.0)),
       dict(d=0.5), dict(weight_decay=-0.1)]


@pytest.mark.parametrize("kw", BAD, ids=[str(k) for k in BAD])
def test_bad_arguments_raise_like_torch(kw):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            lib.optim.Adafactor([lib.ones(2, requires_grad=True)], **kw)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        jt.optim.Adafactor([jt.ones(2, requires_grad=True)], lr=jt.ones(2))


def test_grad_scale_inside_step_raises_like_torch():
    errs = []
    for lib in (torch, jt):
        p = lib.ones(2, requires_grad=True)
        p.grad = lib.ones(2)
        opt = lib.optim.Adafactor([p])
        opt.grad_scale = lib.tensor(2.0)
        with pytest.raises(AssertionError) as e:
            opt.step()
        errs.append(str(e.value))
    assert errs[1] == errs[0]


def test_step_records_no_graph():
    """Adafactor has no differentiable mode: the update runs under no_grad (else the in-place
    update of a leaf that requires grad would raise)."""
    w = jt.tensor(P0[0], requires_grad=True)
    opt = jt.optim.Adafactor([w], lr=0.1)
    w.grad = jt.tensor(P0[0])
    with jt.enable_grad():
        opt.step()
    assert w.grad_fn is None and w.is_leaf and opt.state[w]["step"].item() == 1.0
