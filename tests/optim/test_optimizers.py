"""Optimizers against their update formulas (NumPy, float64) over several steps, against
PyTorch when installed, and their state/param-group/scheduler behaviour."""
import math
import warnings

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn as nn
from jitgrad.optim import SGD, Adam, AdamW
from jitgrad.optim.lr_scheduler import CosineAnnealingLR, StepLR

RNG = np.random.default_rng(11)
P0 = RNG.standard_normal((6, 5))
GRADS = [RNG.standard_normal((6, 5)) for _ in range(5)]


def run_jitgrad(cls, kwargs, dtype=np.float64, steps=5):
    p = nn.Parameter(jt.tensor(P0.astype(dtype)))
    opt = cls([p], **kwargs)
    versions = []
    for s in range(steps):
        p.grad = jt.tensor(GRADS[s].astype(dtype))
        v = p._version
        opt.step()
        versions.append(p._version - v)
    assert versions == [1] * steps  # each update is an in-place write
    return p.detach().numpy().copy(), opt


def ref_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False, steps=5):
    p = P0.copy()
    buf = None
    for s in range(steps):
        g = -GRADS[s] if maximize else GRADS[s].copy()
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def ref_adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False, steps=5):
    b1, b2 = betas
    p = P0.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    for t in range(1, steps + 1):
        g = -GRADS[t - 1] if maximize else GRADS[t - 1].copy()
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            vv = vmax
        else:
            vv = v
        p = p - lr * mhat / (np.sqrt(vv) / math.sqrt(1 - b2 ** t) + eps)
    return p


SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9),
             dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
             dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1),
             dict(lr=0.1, maximize=True, momentum=0.5)]
ADAM_CASES = [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.02, amsgrad=True, betas=(0.8, 0.99)), dict(lr=0.01, maximize=True)]


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_matches_formula(kw):
    got, _ = run_jitgrad(SGD, kw)
    np.testing.assert_allclose(got, ref_sgd(**kw), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("kw", ADAM_CASES)
def test_adam_matches_formula(kw):
    got, opt = run_jitgrad(Adam, kw)
    np.testing.assert_allclose(got, ref_adam(**kw), rtol=1e-12, atol=1e-14)
    assert opt.state_dict()["state"][0]["step"].item() == 5.0


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.3, amsgrad=True)])
def test_adamw_matches_formula(kw):
    got, _ = run_jitgrad(AdamW, kw)
    ref = ref_adam(decoupled=True, **{"weight_decay": 1e-2, **kw})
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_float32_updates_stay_float32_and_close_to_formula():
    got, opt = run_jitgrad(Adam, dict(lr=0.01), dtype=np.float32)
    assert got.dtype == np.float32
    assert opt.state[opt.param_groups[0]["params"][0]]["exp_avg"].dtype is jt.float32
    np.testing.assert_allclose(got, ref_adam(lr=0.01), rtol=1e-5, atol=1e-6)
    got, _ = run_jitgrad(SGD, dict(lr=0.1, momentum=0.9), dtype=np.float32)
    np.testing.assert_allclose(got, ref_sgd(lr=0.1, momentum=0.9), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kw", [("SGD", c) for c in SGD_CASES] +
                         [("Adam", c) for c in ADAM_CASES] +
                         [("AdamW", dict(lr=0.01, amsgrad=True))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(name, kw, dtype):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, jt):
        p = lib.nn.Parameter(lib.tensor(P0.astype(dtype)))
        opt = getattr(lib.optim, name)([p], **kw)
        for s in range(5):
            p.grad = lib.tensor(GRADS[s].astype(dtype))
            opt.step()
        results.append(p.detach().numpy().copy())
    # SGD is bit-identical; Adam within an ulp or two (PyTorch's float32 sqrt uses MKL VML)
    tol = 0 if name == "SGD" else (4e-7 if dtype == np.float32 else 1e-15)
    np.testing.assert_allclose(results[1], results[0], rtol=tol, atol=tol)


def test_nan_gradient_reaches_parameter():
    p = nn.Parameter(jt.tensor([1.0, 2.0]))
    opt = SGD([p], lr=0.1)
    p.grad = jt.tensor([float("nan"), 1.0])
    opt.step()
    assert math.isnan(p.detach().numpy()[0])


def test_params_without_grad_are_skipped_and_zero_grad():
    a = nn.Parameter(jt.ones(2))
    b = nn.Parameter(jt.ones(2))
    opt = Adam([a, b], lr=0.1)
    a.grad = jt.ones(2)
    opt.step()
    assert len(opt.state) == 1 and b not in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), [1, 1])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0])
    opt.zero_grad()
    assert a.grad is None


def test_param_groups_and_add_param_group():
    a = nn.Parameter(jt.ones(1))
    b = nn.Parameter(jt.ones(1))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1, momentum=0.0)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 1.0
    a.grad = jt.ones(1)
    b.grad = jt.ones(1)
    opt.step()
    np.testing.assert_allclose([a.item(), b.item()], [0.9, 0.0], rtol=1e-6)
    c = nn.Parameter(jt.ones(1))
    opt.add_param_group({"params": c, "lr": 0.5})
    assert opt.param_groups[2]["momentum"] == 0.0 and opt.param_groups[2]["params"] == [c]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got "
                                        "torch.FloatTensor"):
        SGD(jt.ones(2), lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        SGD([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.5"):
        Adam([a], betas=(0.9, 1.5))


def test_state_dict_round_trip_continues_identically():
    def make():
        jt.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        return model, Adam(model.parameters(), lr=0.05, amsgrad=True)

    x = jt.randn(8, 3)

    def train(model, opt, n):
        for _ in range(n):
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()

    m1, o1 = make()
    train(m1, o1, 3)
    sd_model, sd_opt = m1.state_dict(), o1.state_dict()
    assert sd_opt["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert set(sd_opt["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    m2, o2 = make()
    m2.load_state_dict(sd_model)
    o2.load_state_dict(sd_opt)
    train(m1, o1, 2)
    train(m2, o2, 2)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                                         "parameter groups"):
        o2.load_state_dict({"state": {}, "param_groups": []})


def test_sgd_momentum_state_dict():
    p = nn.Parameter(jt.ones(3))
    opt = SGD([p], lr=0.1, momentum=0.9)
    p.grad = jt.ones(3)
    opt.step()
    sd = opt.state_dict()
    np.testing.assert_array_equal(sd["state"][0]["momentum_buffer"].numpy(), [1, 1, 1])
    assert sd["param_groups"][0]["momentum"] == 0.9
    assert "SGD (\nParameter Group 0\n    dampening: 0\n" in repr(opt)


def test_step_with_closure():
    p = nn.Parameter(jt.tensor([2.0]))
    opt = SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 4.0
    assert p.item() == 1.0


# ----------------------------------------------------------------------------- schedulers


def test_step_lr():
    p = nn.Parameter(jt.ones(1))
    opt = SGD([p], lr=1.0)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(6):
        lrs.append(sched.get_last_lr()[0])
        p.grad = jt.zeros(1)
        opt.step()
        sched.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    assert opt.param_groups[0]["initial_lr"] == 1.0


def test_cosine_annealing_lr_matches_closed_form():
    p = nn.Parameter(jt.ones(1))
    opt = SGD([p], lr=0.1)
    T, eta_min = 10, 0.001
    sched = CosineAnnealingLR(opt, T_max=T, eta_min=eta_min)
    for epoch in range(1, 2 * T + 1):
        opt.step()
        sched.step()
        want = eta_min + (0.1 - eta_min) * (1 + math.cos(math.pi * epoch / T)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_schedulers_match_torch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (torch, jt):
        p = lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.SGD([p], lr=0.3)
        s1 = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7, eta_min=0.01)
        lrs = []
        for _ in range(20):
            opt.step()
            s1.step()
            lrs.append(s1.get_last_lr()[0])
        opt2 = lib.optim.SGD([p], lr=0.3)
        s2 = lib.optim.lr_scheduler.StepLR(opt2, 3, gamma=0.7)
        for _ in range(10):
            opt2.step()
            s2.step()
            lrs.append(s2.get_last_lr()[0])
        out.append(lrs)
    np.testing.assert_allclose(out[1], out[0], rtol=1e-15)


def test_scheduler_warns_when_stepped_before_optimizer():
    p = nn.Parameter(jt.ones(1))
    opt = SGD([p], lr=0.1)
    sched = StepLR(opt, 1)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before "
                                         "`optimizer.step\\(\\)`"):
        sched.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.state_dict()


def test_update_kernels_keep_float32_math_in_float32():
    """No float64 arithmetic or float->double conversions in the float32 kernels (a bare
    Python float literal in the kernel would promote the math)."""
    import re

    from numba import njit

    from jitgrad.optim import _kernels

    f32 = np.float32
    a = np.ones(8, dtype=f32)
    kernels = [(_kernels.sgd_step, (a, a.copy(), a.copy(), f32(-0.1), f32(0.1), f32(0.9),
                                    f32(1.0), True, True, False, True, True)),
               (_kernels.adam_step, (a, a.copy(), a.copy(), a.copy(), a.copy(), f32(1), f32(0.1),
                                     f32(0.1), f32(0.999), f32(0.001), f32(0.5), f32(1e-8),
                                     f32(-0.01), True, True, True, True))]
    for kernel, args in kernels:
        fresh = njit(error_model="numpy")(kernel.py_func)  # uncached: its IR can be inspected
        fresh(*args)
        ir = next(iter(fresh.inspect_llvm().values()))
        bad = [ln for ln in ir.splitlines()
               if re.search(r"\b(fadd|fsub|fmul|fdiv|fcmp)\b[^\n]*\bdouble\b|\bfpext\b", ln)]
        assert not bad, (kernel.__name__, bad[:3])


@pytest.mark.parametrize("make", [
    lambda ps: SGD(ps, lr=0.1),
    lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: Adam(ps, lr=0.01),
    lambda ps: AdamW(ps, lr=0.01, amsgrad=True),
], ids=["sgd", "sgd-nesterov", "adam", "adamw-amsgrad"])
def test_non_contiguous_parameter_updates_like_a_contiguous_one(make):
    """A transposed parameter is updated in place through a flat copy; an unused state slot once
    aliased the parameter's copy and wrote the stale values back over the update."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((4, 6)).astype(np.float32)
    g = rng.standard_normal((6, 4)).astype(np.float32)
    out = []
    for strided in (True, False):
        t = jt.tensor(base).t() if strided else jt.tensor(np.ascontiguousarray(base.T))
        p = nn.Parameter(t)
        assert p.is_contiguous() != strided
        opt = make([p])
        for _ in range(3):
            p.grad = jt.tensor(g)
            opt.step()
        out.append(p.detach().numpy().copy())
    assert not np.allclose(out[1], base.T)  # it moved
    np.testing.assert_array_equal(out[0], out[1])


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_capturable_on_cpu_parameters_raises_like_torch(cls):
    torch = pytest.importorskip("torch")
    errors = []
    for lib in (torch, jt):
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.ones(3)
        opt = getattr(lib.optim, cls)([p], capturable=True)
        with pytest.raises(AssertionError) as e:
            opt.step()
        errors.append(str(e.value))
        assert p.tolist() == [1.0, 1.0, 1.0]
    assert errors[0] == errors[1]
