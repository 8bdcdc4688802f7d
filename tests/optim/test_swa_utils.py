"""optim.swa_utils against PyTorch: AveragedModel (running mean, EMA, the four averaging
functions, use_buffers, integer buffers), update_bn over a loader of tensors and of (x, y)
pairs, SWALR's learning rates and state dict, and the argument errors word for word.

Both libraries start from the same weights and move them by the same NumPy increments; the
BatchNorm buffers come from each library's own forward pass, so they agree to float64 rounding
(1e-12), and the averages built from them to the same."""
import warnings

import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
X = [RNG.standard_normal((8, 3)) for _ in range(4)]
STEPS = [[RNG.standard_normal(s) * 0.1 for s in [(4, 3), (4,), (4,), (4,), (2, 4), (2,)]]
         for _ in range(4)]
TOL = dict(rtol=1e-12, atol=1e-14)


def _model(lib):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    if lib is torch:
        return ref
    m = jt.nn.Sequential(jt.nn.Linear(3, 4), jt.nn.BatchNorm1d(4), jt.nn.ReLU(),
                         jt.nn.Linear(4, 2)).double()
    m.load_state_dict({k: jt.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    return m


def _train(lib, model, swa, start=0):
    """Move the weights by STEPS[i] and run a training batch (the BN buffers move), then
    average; returns the averaged model's state dict as NumPy after each update."""
    out = []
    for i in range(start, len(STEPS)):
        with lib.no_grad():
            for p, s in zip(model.parameters(), STEPS[i]):
                p.add_(lib.tensor(s))
        model.train()
        model(lib.tensor(X[i]))
        swa.update_parameters(model)
        out.append({k: v.numpy().copy() for k, v in swa.state_dict().items()})
    return out


def _avg_kwargs(lib, kind):
    su = lib.optim.swa_utils
    return {"swa": {}, "ema": dict(avg_fn=su.get_ema_avg_fn(0.9)),
            "ema_multi": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.8)),
            "swa_multi": dict(multi_avg_fn=su.get_swa_multi_avg_fn()),
            "swa_fn": dict(avg_fn=su.get_swa_avg_fn()),
            "custom": dict(avg_fn=lambda a, m, n: a * 0.5 + m * 0.5 + n)}[kind]


@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "swa_multi", "swa_fn", "custom"])
def test_averaged_model_matches_torch(kind, use_buffers):
    res = []
    for lib in (torch, jt):
        model = _model(lib)
        swa = lib.optim.swa_utils.AveragedModel(model, use_buffers=use_buffers,
                                                **_avg_kwargs(lib, kind))
        if kind == "swa_multi" and use_buffers:
            # the integer num_batches_tracked meets addcdiv_, which refuses integers
            with pytest.raises(RuntimeError) as e:
                _train(lib, model, swa)
            res.append(str(e.value))
            continue
        res.append(_train(lib, model, swa))
    if isinstance(res[0], str):
        assert res[1] == res[0]
        return
    for step, (want, got) in enumerate(zip(*res)):
        assert list(got) == list(want)
        for k in want:
            assert got[k].dtype == want[k].dtype, k
            np.testing.assert_allclose(got[k], want[k], **TOL, err_msg=f"{step} {k}")
    assert int(res[1][-1]["n_averaged"]) == 4


def test_averaged_model_is_a_module_copy():
    model = _model(jt)
    swa = jt.optim.swa_utils.AveragedModel(model)
    assert swa.module is not model and isinstance(swa, jt.nn.Module)
    assert swa.n_averaged.dtype == jt.int64 and swa.n_averaged.item() == 0
    on_cpu = jt.optim.swa_utils.AveragedModel(model, device="cpu")
    assert on_cpu.n_averaged.device.type == "cpu"
    x = jt.tensor(X[0])
    model.eval()
    swa.eval()
    np.testing.assert_array_equal(swa(x).detach().numpy(), model(x).detach().numpy())
    tm = torch.optim.swa_utils.AveragedModel(_model(torch))
    assert [n for n, _ in swa.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in swa.named_parameters()] == [n for n, _ in tm.named_parameters()]


def test_averaged_model_errors_like_torch():
    errs = []
    for lib in (torch, jt):
        su = lib.optim.swa_utils
        with pytest.raises(AssertionError) as e:
            su.AveragedModel(lib.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(),
                             multi_avg_fn=su.get_swa_multi_avg_fn())
        errs.append(str(e.value))
        for fn in (su.get_ema_avg_fn, su.get_ema_multi_avg_fn):
            for decay in (1.5, -0.1):
                with pytest.raises(ValueError) as e:
                    fn(decay)
                errs.append(str(e.value))
    assert errs[:5] == errs[5:]


@pytest.mark.parametrize("pairs", [False, True])
def test_update_bn_matches_torch(pairs):
    res = []
    for lib in (torch, jt):
        model = _model(lib)
        bn = model[1]
        bn.momentum = 0.3
        model.eval()
        loader = [(lib.tensor(x), lib.tensor(x[:, 0])) if pairs else lib.tensor(x) for x in X]
        lib.optim.swa_utils.update_bn(loader, model, device="cpu" if pairs else None)
        assert not model.training and bn.momentum == 0.3
        res.append({k: v.numpy().copy() for k, v in bn.state_dict().items()})
    for k in res[0]:
        np.testing.assert_allclose(res[1][k], res[0][k], **TOL, err_msg=k)
    assert int(res[1]["num_batches_tracked"]) == len(X)


def test_update_bn_without_batchnorm_does_nothing_and_keeps_mode():
    model = jt.nn.Sequential(jt.nn.Linear(3, 2))
    model.eval()
    calls = []
    jt.optim.swa_utils.update_bn(iter(calls), model)
    assert not model.training


def _swalr_lrs(lib, epochs=14, **kw):
    p = lib.ones(2, requires_grad=True)
    q = lib.ones(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.5)
    sched = lib.optim.swa_utils.SWALR(opt, **kw)
    lrs = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, sched, opt


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01], anneal_epochs=4),
                                dict(swa_lr=0.05, anneal_strategy="linear", anneal_epochs=5),
                                dict(swa_lr=0.2, anneal_epochs=0),
                                dict(swa_lr=0.1, anneal_epochs=1, anneal_strategy="linear")])
def test_swalr_learning_rates_match_torch(kw):
    (want, tsched, topt), (got, jsched, jopt) = (_swalr_lrs(lib, **kw) for lib in (torch, jt))
    assert got == want  # the same float operations: equal, not close
    assert [g["swa_lr"] for g in jopt.param_groups] == [g["swa_lr"] for g in topt.param_groups]
    tsd, jsd = tsched.state_dict(), jsched.state_dict()
    assert sorted(jsd) == sorted(tsd)
    for k in tsd:
        assert jsd[k] == tsd[k], k


def test_swalr_state_dict_round_trip_continues_like_torch():
    """Three epochs; a new optimizer and a linear SWALR load the old state dicts (the cosine
    strategy comes back with them); four more epochs, as PyTorch does them."""
    out = []
    for lib in (torch, jt):
        _, sched, opt = _swalr_lrs(lib, epochs=3, swa_lr=0.05, anneal_epochs=6)
        p = lib.ones(2, requires_grad=True)
        q = lib.ones(1, requires_grad=True)
        opt2 = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.5)
        opt2.load_state_dict(opt.state_dict())
        sched2 = lib.optim.swa_utils.SWALR(opt2, swa_lr=0.05, anneal_strategy="linear")
        sched2.load_state_dict(sched.state_dict())
        assert sched2.anneal_func is lib.optim.swa_utils.SWALR._cosine_anneal
        lrs = []
        for _ in range(4):
            opt2.step()
            sched2.step()
            lrs.append(sched2.get_last_lr())
        out.append(lrs)
    assert out[1] == out[0]


@pytest.mark.parametrize("kw", [dict(swa_lr=0.1, anneal_strategy="exp"),
                                dict(swa_lr=0.1, anneal_epochs=-1),
                                dict(swa_lr=0.1, anneal_epochs=2.0),
                                dict(swa_lr=[0.1, 0.2, 0.3])])
def test_swalr_errors_like_torch(kw):
    errs = []
    for lib in (torch, jt):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)
        with pytest.raises(Exception) as e:
            lib.optim.swa_utils.SWALR(opt, **kw)
        errs.append(e.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])


def test_swalr_get_lr_outside_step_warns():
    _, sched, _ = _swalr_lrs(jt, epochs=1, swa_lr=0.1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sched.get_lr()
    assert any("get_last_lr()" in str(x.message) for x in w)


def test_module_layout_matches_torch():
    import jitgrad.optim.swa_utils as su
    assert sorted(su.__all__) == sorted(torch.optim.swa_utils.__all__)
    assert jt.optim.swa_utils is su
