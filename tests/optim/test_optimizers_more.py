"""RMSprop, Adagrad, Adamax, NAdam, RAdam and Adadelta against PyTorch: every parameter and state
value after each step (with param groups, a grad-less parameter, state_dict round trips), the
state and param-group layout, repr, tensor learning rates and the argument errors word for word.

jitgrad runs PyTorch's single-tensor update with the same ops in the same order, but PyTorch's CPU
kernels are not all correctly rounded (on AVX512, ``add(alpha=)`` is one fused multiply-add and
float32/float64 ``sqrt`` and ``addcdiv`` can differ from the IEEE result by an ulp), so results
agree to a few ulps rather than bit for bit: within 8 ulps of each tensor's scale after 5
steps (the worst case seen is 5, centered RMSprop in float32), in float64 and float32 alike.
Some configurations (Adamax without weight decay, the RAdam runs) come out identical."""
import numpy as np
import pytest
from _optim_parity import P0, assert_same_trajectory, trajectory

import jitgrad as jt

torch = pytest.importorskip("torch")

ULPS = 8

CASES = [
    ("RMSprop", dict()),
    ("RMSprop", dict(momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(centered=True, momentum=0.5, maximize=True, alpha=0.9)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5,
                     maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.1, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, momentum_decay=0.1)),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(betas=(0.9, 0.9))),  # rho_t > 5 from the third step: the rectified branch
    ("RAdam", dict(lr=0.1, weight_decay=0.1)),
    ("RAdam", dict(betas=(0.8, 0.9), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1, maximize=True)),
]
NAMES = ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"]


def _ids(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CASES, ids=[_ids(c) for c in CASES])
def test_steps_match_torch(name, kw, dtype):
    want, topt = trajectory(torch, name, kw, dtype, groups=True)
    got, jopt = trajectory(jt, name, kw, dtype, groups=True)
    assert_same_trajectory(want, got, ULPS)
    for p, q in zip(topt.state, jopt.state):  # state tensors keep the parameter's dtype
        for k, v in topt.state[p].items():
            assert str(jopt.state[q][k].dtype) == str(v.dtype), k
            assert jopt.state[q][k].shape == tuple(v.shape), k


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_continues_like_torch(name):
    kw = dict(CASES[[n for n, _ in CASES].index(name) + 1][1])  # each one's second case
    want, topt = trajectory(torch, name, kw, steps=5, groups=True, reload_at=1)
    got, jopt = trajectory(jt, name, kw, steps=5, groups=True, reload_at=1)
    assert_same_trajectory(want, got, ULPS)
    tsd, jsd = topt.state_dict(), jopt.state_dict()
    assert list(jsd) == ["state", "param_groups"]
    assert str(jsd["param_groups"]) == str(tsd["param_groups"])
    assert list(jsd["state"]) == list(tsd["state"])  # Adagrad: the grad-less one too
    for i, ts in tsd["state"].items():
        js = jsd["state"][i]
        assert list(js) == list(ts)
        for k, v in ts.items():
            assert js[k].dim() == v.dim() and str(js[k].dtype) == str(v.dtype), k
    assert str(jsd["state"][0]["step"].dtype) == "torch.float32"
    assert jsd["state"][0]["step"].item() == 5.0


@pytest.mark.parametrize("name", NAMES)
def test_defaults_param_groups_and_repr_match_torch(name):
    out = []
    for lib in (torch, jt):
        w = lib.ones(2, requires_grad=True)
        b = lib.ones(1, requires_grad=True)
        opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.5}])
        out.append((str(opt.defaults), [str({k: v for k, v in g.items() if k != "params"})
                                        for g in opt.param_groups], repr(opt)))
    assert out[1] == out[0]


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam"])
def test_tensor_lr_matches_torch(name):
    """A 0-d tensor lr (float32) enters the update as PyTorch's tensor arithmetic does."""
    res = []
    for lib in (torch, jt):
        p = lib.tensor(P0[0], requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.01), weight_decay=0.1)
        for g in (P0[0] * 0.5, -P0[0], P0[0] ** 2):
            p.grad = lib.tensor(g)
            opt.step()
        res.append(p.detach().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=ULPS * 2.3e-16, atol=1e-16)


BAD = [("RMSprop", dict(lr=-1)), ("RMSprop", dict(eps=-1)), ("RMSprop", dict(momentum=-1)),
       ("RMSprop", dict(weight_decay=-1)), ("RMSprop", dict(alpha=-0.5)),
       ("Adagrad", dict(lr_decay=-1)), ("Adagrad", dict(initial_accumulator_value=-1)),
       ("Adagrad", dict(eps=-1)), ("Adagrad", dict(fused=True, differentiable=True)),
       ("Adagrad", dict(fused=True, foreach=True)),
       ("Adamax", dict(betas=(1.0, 0.9))), ("Adamax", dict(betas=(0.9, -0.1))),
       ("NAdam", dict(momentum_decay=-1)), ("NAdam", dict(weight_decay=-0.5)),
       ("RAdam", dict(eps=-1e-8)), ("RAdam", dict(betas=(0.9, 1.0))),
       ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(lr=-0.1))]


@pytest.mark.parametrize("name,kw", BAD, ids=[_ids(c) for c in BAD])
def test_bad_arguments_raise_like_torch(name, kw):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            getattr(lib.optim, name)([lib.ones(2, requires_grad=True)], **kw)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(jt.optim, name)([jt.ones(2, requires_grad=True)], lr=jt.ones(2))


@pytest.mark.parametrize("name", ["RMSprop", "Adamax", "NAdam", "RAdam", "Adadelta"])
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


def test_adagrad_state_exists_from_construction():
    out = []
    for lib in (torch, jt):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.Adagrad([p], initial_accumulator_value=0.25)
        sd = opt.state_dict()["state"][0]
        out.append((sorted(sd), float(sd["step"]), sd["sum"].tolist(), str(sd["step"].dtype)))
    assert out[1] == out[0]


def test_differentiable_update_records_a_graph_like_torch():
    """differentiable=True runs the update with grad mode on: the new parameter is a function
    of the one it started from (PyTorch's hyper-gradient use)."""
    res = []
    for lib in (torch, jt):
        w0 = lib.tensor(P0[1], requires_grad=True)
        w = w0.clone()  # a non-leaf parameter, as PyTorch's differentiable tests use
        opt = lib.optim.RMSprop([w], lr=0.1, momentum=0.9, differentiable=True)
        for g in GRAD_SEQ:
            w.grad = lib.tensor(g) * w.detach()
            opt.step()
        (w * w).sum().backward()
        res.append((w.detach().numpy(), w0.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=ULPS * 2.3e-16)


GRAD_SEQ = [np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -0.5])]


def test_foreach_and_grad_less_parameters():
    """foreach=True is accepted and runs the same single-tensor update (no foreach kernels)."""
    a = jt.tensor([1.0, 2.0], requires_grad=True)
    b = jt.tensor([3.0], requires_grad=True)
    opt = jt.optim.NAdam([a, b], foreach=True)
    a.grad = jt.tensor([0.5, 0.5])
    opt.step()
    assert b not in opt.state and b.tolist() == [3.0]
    assert a._version > 0


@pytest.mark.parametrize("name,kw", [("Adamax", dict(lr=0.1, weight_decay=0.1)),
                                     ("NAdam", dict(lr=0.1, weight_decay=0.1)),
                                     ("RAdam", dict(lr=0.1, betas=(0.9, 0.9))),
                                     ("RMSprop", dict(momentum=0.9))])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_capturable_formulas_match_torch(name, kw, dtype, monkeypatch):
    """The capturable branch (bias corrections as tensor ops on the 0-d step) against
    PyTorch's, both run on the CPU by admitting "cpu" to each side's capturable devices (no
    CUDA build of PyTorch here to compare with)."""
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
