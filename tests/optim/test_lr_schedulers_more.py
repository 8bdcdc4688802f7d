"""PyTorch parity of the schedulers beyond the basic five: each schedule runs side by side in
jitgrad and PyTorch and every learning rate (and cycled momentum/beta1) must be the same
Python float; state_dicts, save/load/continue, and the errors and warnings are compared with
PyTorch's own."""
import copy
import math
import warnings

import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")

P0 = [np.array([1.0, -2.0, 0.5]), np.array([0.3])]
METRICS = [1.0, 0.9, 0.95, 0.95, 0.97, 0.89, 0.9, 0.91, 0.92, 0.93, 0.7, 0.71, 0.72, 0.73,
           0.74, 0.75, 0.76, 0.77, 0.6, 0.61, 0.62, 0.63, 0.64, 0.65, 0.66, 0.67, 0.68, 0.69,
           0.695, 0.699]


def _params(lib):
    return [lib.tensor(p, dtype=lib.float64, requires_grad=True) for p in P0]


def _opt(lib, ps, kind="SGD", groups=2):
    spec = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5}] if groups == 2 else ps
    if kind == "SGD":
        return lib.optim.SGD(spec, lr=0.1, momentum=0.9)
    return getattr(lib.optim, kind)(spec, lr=0.01, betas=(0.9, 0.99))


def _sched(lib, opt, name, kw):
    s = lib.optim.lr_scheduler
    if name == "SequentialLR":
        return s.SequentialLR(opt, [s.LinearLR(opt, start_factor=0.2, total_iters=4),
                                    s.ExponentialLR(opt, 0.9),
                                    s.CosineAnnealingLR(opt, T_max=6, eta_min=0.01)],
                              milestones=kw["milestones"])
    if name == "ChainedScheduler":
        return s.ChainedScheduler([s.ConstantLR(opt, factor=0.5, total_iters=3),
                                   s.ExponentialLR(opt, 0.93),
                                   s.MultiplicativeLR(opt, lambda e: 0.99)], **kw)
    if name in ("MultiplicativeLR", "LambdaLR"):
        kw = dict(kw, lr_lambda=lambda e: 0.95 if name == "MultiplicativeLR" else 1 / (e + 1))
    return getattr(s, name)(opt, **kw)


def _norm(x):
    """A state_dict value in plain Python (a Counter is a dict, a tensor a float)."""
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_norm(v) for v in x)
    if isinstance(x, (jt.Tensor, torch.Tensor)):
        return x.item()
    return x


def _snap(opt, sched):
    return ([*sched.get_last_lr()],
            [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])


def _run(lib, name, kw, kind="SGD", steps=30, groups=2, resume_at=None):
    ps = _params(lib)
    opt = _opt(lib, ps, kind, groups)
    sched = _sched(lib, opt, name, kw)
    trace = [_snap(opt, sched)]
    for i in range(steps):
        opt.zero_grad()
        sum((p * p).sum() for p in ps).backward()
        opt.step()
        if name == "ReduceLROnPlateau":
            sched.step(METRICS[i])
        else:
            sched.step()
        trace.append(_snap(opt, sched))
        if i == resume_at:  # a checkpoint: fresh optimizer and scheduler, both states loaded
            osd, ssd = copy.deepcopy(opt.state_dict()), copy.deepcopy(sched.state_dict())
            opt = _opt(lib, ps, kind, groups)
            sched = _sched(lib, opt, name, kw)
            opt.load_state_dict(osd)
            sched.load_state_dict(ssd)
    return trace, _norm(sched.state_dict()), [p.detach().numpy().copy() for p in ps]


CASES = [
    ("OneCycleLR", dict(max_lr=1.0, total_steps=30), "SGD"),
    ("OneCycleLR", dict(max_lr=[0.3, 0.6], epochs=3, steps_per_epoch=10, pct_start=0.25,
                        anneal_strategy="linear"), "Adam"),
    ("OneCycleLR", dict(max_lr=0.05, total_steps=31, three_phase=True, div_factor=10.0,
                        final_div_factor=100.0, base_momentum=[0.8, 0.7],
                        max_momentum=0.9), "AdamW"),
    ("OneCycleLR", dict(max_lr=0.05, total_steps=30, cycle_momentum=False), "SGD"),
    ("LinearLR", dict(), "SGD"),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.7, total_iters=12), "Adam"),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.0, total_iters=7), "SGD"),
    ("ReduceLROnPlateau", dict(patience=2), "SGD"),
    ("ReduceLROnPlateau", dict(mode="max", factor=0.5, patience=1, threshold_mode="abs",
                               threshold=0.01, cooldown=2, min_lr=[0.02, 0.3]), "Adam"),
    ("ReduceLROnPlateau", dict(factor=0.3, patience=0, cooldown=1, min_lr=0.004,
                               eps=1e-3), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=5), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001), "Adam"),
    ("SequentialLR", dict(milestones=[4, 12]), "SGD"),
    ("SequentialLR", dict(milestones=[1, 3]), "Adam"),
    ("ConstantLR", dict(), "SGD"),
    ("ConstantLR", dict(factor=0.25, total_iters=9), "Adam"),
    ("MultiplicativeLR", dict(), "SGD"),
    ("PolynomialLR", dict(), "SGD"),
    ("PolynomialLR", dict(total_iters=20, power=2.5), "Adam"),
    ("ChainedScheduler", dict(), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4), "SGD"),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                      step_size_down=5, mode="triangular2", base_momentum=0.7), "Adam"),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=4, mode="exp_range",
                      gamma=0.97), "SGD"),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=5, cycle_momentum=False,
                      scale_fn=lambda x: 0.5 ** x, scale_mode="iterations"), "SGD"),
    ("LambdaLR", dict(), "SGD"),
]


@pytest.mark.parametrize("name,kw,kind", CASES)
def test_schedule_matches_torch(name, kw, kind):
    (tt, tsd, tp), (jj, jsd, jp) = (_run(lib, name, kw, kind) for lib in (torch, jt))
    for step, (t, j) in enumerate(zip(tt, jj, strict=True)):
        assert j == t, f"step {step}"
    assert list(jsd) == list(tsd)
    assert jsd == tsd
    # the cycled momentum/beta1 reaches the update: the parameters follow PyTorch's
    for a, b in zip(tp, jp):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,kw,kind", [CASES[0], CASES[2], CASES[5], CASES[8], CASES[11],
                                          CASES[12], CASES[19], CASES[21], CASES[23]])
def test_save_load_continue_matches_uninterrupted(name, kw, kind):
    full = _run(jt, name, kw, kind)
    resumed = _run(jt, name, kw, kind, resume_at=9)
    assert resumed[0] == full[0] and resumed[1] == full[1]
    np.testing.assert_array_equal(resumed[2][0], full[2][0])
    assert _run(torch, name, kw, kind, resume_at=9)[0] == resumed[0]


def _outcome(fn):
    """(exception type, message) or the list of (category, message) warned, for one lib."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            value = fn()
        except AssertionError:  # the test's own check, not the library's answer
            raise
        except Exception as e:  # noqa: BLE001 - the comparison is the point
            return type(e).__name__, str(e)
    return _norm(value), [(x.category.__name__, str(x.message)) for x in w]


def _both(fn):
    t, j = (_outcome(lambda lib=lib: fn(lib)) for lib in (torch, jt))
    assert j == t
    return t


def _one_group(lib, kind="SGD", **kw):
    p = lib.zeros(2, requires_grad=True)
    if kind == "SGD":
        return lib.optim.SGD([p], lr=0.1, **kw)
    return getattr(lib.optim, kind)([p], lr=0.1, **kw)


ERRORS = [
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, total_steps=0),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, epochs=2.0,
                                                  steps_per_epoch=3),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, epochs=2,
                                                  steps_per_epoch=-1),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, 10, pct_start=1),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, 10,
                                                  anneal_strategy="exp"),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), [1.0, 2.0], 10),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_one_group(lib), 1.0, 10,
                                                  base_momentum=[0.1, 0.2],
                                                  max_momentum=[0.1, 0.2]),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR("opt", 1.0, 10),
    lambda lib: lib.optim.lr_scheduler.LinearLR(_one_group(lib), start_factor=0),
    lambda lib: lib.optim.lr_scheduler.LinearLR(_one_group(lib), end_factor=1.5),
    lambda lib: lib.optim.lr_scheduler.ConstantLR(_one_group(lib), factor=2),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_one_group(lib), factor=1.0),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_one_group(lib), mode="avg"),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_one_group(lib), threshold_mode="x"),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_one_group(lib), min_lr=[0, 0]),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(None),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_one_group(lib), 0),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_one_group(lib), 2.0),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_one_group(lib), 2,
                                                                   T_mult=0),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_one_group(lib), 2,
                                                                   eta_min="0"),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_one_group(lib), 2).step(-1),
    lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(_one_group(lib), 0.9),
    lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(_one_group(lib), [abs, abs]),
    lambda lib: lib.optim.lr_scheduler.CyclicLR(_one_group(lib), 0.1, 1.0, mode="sine"),
    lambda lib: lib.optim.lr_scheduler.CyclicLR(_one_group(lib), [0.1, 0.2], 1.0),
    lambda lib: lib.optim.lr_scheduler.SequentialLR(_one_group(lib), [], []),
    lambda lib: lib.optim.lr_scheduler.ChainedScheduler([]),
]


def _composite_errors(lib, which):
    s = lib.optim.lr_scheduler
    o1, o2 = _one_group(lib), _one_group(lib)
    a, b = s.ExponentialLR(o1, 0.9), s.StepLR(o1, 2)
    if which == 0:
        return s.SequentialLR(o1, [a, b], milestones=[])
    if which == 1:
        return s.SequentialLR(o1, [a, s.ReduceLROnPlateau(o1)], milestones=[2])
    if which == 2:
        return s.ChainedScheduler([a, 3])
    if which == 3:  # the message names the optimizer's repr, which differs: compare the start
        s.SequentialLR(o2, [a, b], milestones=[2])
    return None


@pytest.mark.parametrize("make", ERRORS)
def test_argument_errors_match_torch(make):
    kind, message = _both(make)
    assert kind.endswith("Error")


@pytest.mark.parametrize("which", range(3))
def test_composite_errors_match_torch(which):
    _both(lambda lib: _composite_errors(lib, which))


def test_other_optimizer_error_names_both_classes():
    msgs = [_outcome(lambda lib=lib: _composite_errors(lib, 3)) for lib in (torch, jt)]
    for kind, msg in msgs:
        assert kind == "ValueError"
        assert msg.startswith("SequentialLR expects all schedulers to belong to the same "
                              "optimizer, but got scheduler ExponentialLR at index 0 has ")
        assert msg.endswith(", which is different from SGD.")


def test_momentum_cycling_needs_momentum_or_betas():
    def make(lib, name):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        del opt.defaults["momentum"]  # an optimizer whose defaults name neither
        s = lib.optim.lr_scheduler
        return (s.OneCycleLR(opt, 1.0, 10) if name == "one"
                else s.CyclicLR(opt, 0.1, 1.0))
    for name in ("one", "cyclic"):
        kind, message = _both(lambda lib, name=name: make(lib, name))
        assert (kind, message) == ("ValueError", "optimizer must support momentum or beta1 "
                                   "with `cycle_momentum` option enabled")


def test_onecycle_past_total_steps_raises_like_torch():
    def run(lib):
        opt = _one_group(lib, momentum=0.9)
        s = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=3)
        for _ in range(4):
            opt.step()
            s.step()
    assert _both(run) == ("ValueError", "Tried to step 4 times. The specified number of total "
                                        "steps is 3")


def _stepping(lib, name, kw, before_opt=False, epoch_steps=(), get_lr=False):
    opt = _one_group(lib, momentum=0.9)
    s = _sched(lib, opt, name, kw)
    out = [s.get_last_lr()]
    if get_lr:
        out.append(s.get_lr())
    if not before_opt:
        opt.step()
    s.step()
    for e in epoch_steps:
        s.step(e)
        out.append(s.get_last_lr())
    return out


@pytest.mark.parametrize("name,kw", [("OneCycleLR", dict(max_lr=1.0, total_steps=10)),
                                     ("LinearLR", {}), ("ConstantLR", {}),
                                     ("PolynomialLR", {}), ("CyclicLR", dict(base_lr=0.1,
                                                                          max_lr=1.0)),
                                     ("MultiplicativeLR", {})])
def test_step_before_optimizer_and_get_lr_warn_like_torch(name, kw):
    _, warned = _both(lambda lib: _stepping(lib, name, kw, before_opt=True, get_lr=True))
    assert [m[:38] for _, m in warned] == ["To get the last learning rate computed",
                                           "Detected call of `lr_scheduler.step()`"]


@pytest.mark.parametrize("name,kw,epochs", [
    ("LinearLR", dict(start_factor=0.25, total_iters=6), [2, 5, 9, 3]),
    ("ConstantLR", dict(factor=0.5, total_iters=4), [1, 4, 7, 2]),
    ("PolynomialLR", dict(total_iters=8, power=2.0), [3, 8, 12, 1]),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=20), [5, 11, 2]),  # no closed form
    ("CosineAnnealingWarmRestarts", dict(T_0=4, T_mult=2), [0.5, 3, 4.5, 13, 30, 2]),
    ("CosineAnnealingWarmRestarts", dict(T_0=3), [7, 2.5, 10]),
])
def test_deprecated_step_epoch_matches_torch(name, kw, epochs):
    _both(lambda lib: _stepping(lib, name, kw, epoch_steps=epochs))


def test_plateau_epoch_argument_and_added_param_group():
    def run(lib, min_lr):
        opt = _one_group(lib)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
        s.step(1.0, epoch=5)  # deprecated: warns, and sets last_epoch
        opt.add_param_group({"params": [lib.ones(1, requires_grad=True)], "lr": 1.0})
        s.step(2.0)
        return s.get_last_lr(), s.last_epoch, s.min_lrs
    assert _both(lambda lib: run(lib, 0.01))[0] == ([0.1 * 0.1, 0.1], 6, [0.01, 0.01])
    kind, message = _both(lambda lib: run(lib, [0.01]))
    assert kind == "RuntimeError" and "param groups" in message


def test_plateau_is_an_lrscheduler_without_the_initial_step():
    for lib in (torch, jt):
        opt = _one_group(lib)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt)
        assert isinstance(s, lib.optim.lr_scheduler.LRScheduler)
        assert not hasattr(opt.step, "_wrapped_by_lr_sched")
        assert "initial_lr" not in opt.param_groups[0]
        assert (s.last_epoch, s.get_last_lr()) == (0, [0.1])
    assert _both(lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(
        _one_group(lib), mode="max").state_dict())[0]["mode_worse"] == -math.inf


def test_lambda_and_scale_fn_objects_are_saved_by_dict():
    class Scale:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** x

    def run(lib):
        opt = _one_group(lib, "Adam")
        s = lib.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, 3, scale_fn=Scale())
        sd = s.state_dict()
        sd["_scale_fn_custom"]["base"] = 0.25
        s.load_state_dict(sd)
        opt.step()
        s.step()
        return sd, s.get_last_lr(), opt.param_groups[0]["betas"], s._scale_fn_custom.base
    _both(run)


def test_public_names_match_torch():
    names = set(torch.optim.lr_scheduler.__all__)
    assert set(jt.optim.lr_scheduler.__all__) == names
    for n in names:
        assert getattr(jt.optim.lr_scheduler, n).__module__ == "jitgrad.optim.lr_scheduler"


def _train_step(w, opt):
    def step(x):
        opt.zero_grad()
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        opt.step()
        return loss
    return step


def test_compiled_step_with_onecycle_between_steps_matches_eager():
    """OneCycleLR rewrites lr and betas between calls: replays must use the new values."""
    runs = []
    for compiled in (False, True):
        w = jt.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
        opt = jt.optim.Adam([w], lr=0.01)
        sched = jt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
        step = _train_step(w, opt)
        f = jt.compile(step) if compiled else step
        x = jt.tensor(np.array([1.0, 2.0, 3.0]))
        losses = []
        with jt.autograd.profile() as prof:
            for _ in range(12):
                losses.append(f(x).item())
                sched.step()
        assert prof.compile_replays == (11 if compiled else 0)
        runs.append((losses, w.detach().numpy().copy(), opt.param_groups[0]["betas"]))
    assert runs[1][0] == runs[0][0] and runs[1][2] == runs[0][2]
    np.testing.assert_array_equal(runs[1][1], runs[0][1])


@pytest.mark.parametrize("name,kw", [("LinearLR", dict(start_factor=0.5, total_iters=3)),
                                     ("OneCycleLR", dict(max_lr=0.3, total_steps=6)),
                                     ("CosineAnnealingWarmRestarts", dict(T_0=2))])
def test_tensor_lr_is_filled_in_place_and_never_aliased(name, kw):
    def run(lib):
        lr = lib.tensor(0.1, dtype=lib.float64)
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=lr, momentum=0.9,
                            foreach=False)
        s = _sched(lib, opt, name, kw)
        out = []
        for _ in range(5):
            opt.step()
            s.step()
            last = s.get_last_lr()[0]
            assert opt.param_groups[0]["lr"] is lr and last is not lr
            out.append((last.item(), lr.item()))
        assert opt.param_groups[0]["initial_lr"] is not lr
        return out
    _both(run)
