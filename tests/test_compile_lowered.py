"""jitgrad.compile's lowered steps (``_compile/lower.py``): a training step of dense layers,
ReLU, cross-entropy, ``backward()`` and an optimizer replayed on arrays, with plain SGD folded
into the weight-gradient GEMMs and ``.grad`` computed when read (``_compile/pending.py``).

Checked against the same step run eagerly: bitwise where the same kernels run (everything
but the folded SGD update, whose GEMM rounds ``W - lr * g^T h`` once instead of twice), and
against PyTorch. Every test asserts the lowered path really ran (``compile_lowered_replays``),
so a silent fallback to the ordinary replay cannot pass for it."""
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad import nn
from jitgrad.nn import functional as F

torch = pytest.importorskip("torch")

SIZES = (20, 32, 32, 5)


@pytest.fixture(autouse=True, params=["one call", "op by op"])
def executor(request, monkeypatch):
    """Every test runs with both executors of a lowered step: the one compiled call
    (``lower_program.py``, needs MKL) and the ops called one by one from Python."""
    from jitgrad._compile import lower, lower_program
    if request.param == "one call":
        if lower_program._gemm(np.dtype(np.float32)) is None:
            pytest.skip("the one-call program needs MKL's CBLAS (pip install 'jitgrad[mkl]')")
    else:
        monkeypatch.setattr(lower, "ONE_CALL", False)
    return request.param


def _model(lib, dtype=np.float32, seed=0, sizes=SIZES):
    jitgrad.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i:
            layers.append(jitgrad.nn.ReLU())
        layers.append(jitgrad.nn.Linear(a, b))
    model = jitgrad.nn.Sequential(*layers)
    if dtype == np.float64:
        model = model.double()
    if lib is jitgrad:
        return model
    tl = []  # the same numbers in PyTorch
    for m in layers:
        if isinstance(m, jitgrad.nn.Linear):
            t = torch.nn.Linear(m.in_features, m.out_features, dtype=getattr(torch, np.dtype(
                dtype).name))
            with torch.no_grad():
                t.weight.copy_(torch.tensor(m.weight.detach().numpy()))
                t.bias.copy_(torch.tensor(m.bias.detach().numpy()))
            tl.append(t)
        else:
            tl.append(torch.nn.ReLU())
    return torch.nn.Sequential(*tl)


def _data(lib, dtype=np.float32, n=16, seed=1, classes=SIZES[-1]):
    rng = np.random.default_rng(seed)
    return (lib.tensor(rng.standard_normal((n, SIZES[0])).astype(dtype)),
            lib.tensor(rng.integers(0, classes, n)))


def _step(lib, model, opt, end_zero=False, zero="start", sched=None, **ce_kw):
    """The training step under test. ``zero``: where ``opt.zero_grad()`` goes ("start",
    "end", "after_forward" or None); ``model``: any callable of the batch."""
    if end_zero:
        zero = "end"

    def step(x, y):
        if zero == "start":
            opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y, **ce_kw)
        if zero == "after_forward":
            opt.zero_grad()
        loss.backward()
        opt.step()
        if zero == "end":
            opt.zero_grad()
        if sched is not None:
            sched.step()
        return loss
    return step


def _snapshot(model):
    return ([p.detach().numpy().copy() for p in model.parameters()],
            [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()])


def _train(lib, compiled, opt_kw, steps=12, dtype=np.float32, end_zero=False):
    model = _model(lib, dtype)
    opt = lib.optim.SGD(model.parameters(), **opt_kw)
    fn = _step(lib, model, opt, end_zero)
    if compiled:
        fn = jitgrad.compile(fn)
    x, y = _data(lib, dtype)
    out = []
    with jitgrad.autograd.profile() as p:
        for _ in range(steps):
            loss = fn(x, y).item()
            out.append((loss,) + _snapshot(model))
    if compiled:
        assert p.compile_lowered_replays == steps - 1, p.compile_reasons
    return out, model, opt


def _assert_same(a, b, exact=True, rtol=1e-6):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert (u is None) == (v is None)
        if u is None:
            continue
        if exact:
            np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_allclose(u, v, rtol=rtol, atol=rtol)


UNFOLDED = [dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True,
                                             weight_decay=1e-2),
            dict(lr=0.1, weight_decay=1e-2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opt_kw", UNFOLDED)
def test_unfolded_optimizers_are_bitwise_eager(opt_kw, dtype):
    """Momentum or weight decay: SGD runs its own kernel, so every number is eager's."""
    eager, _, _ = _train(jitgrad, False, opt_kw, dtype=dtype)
    comp, _, opt = _train(jitgrad, True, opt_kw, dtype=dtype)
    for e, c in zip(eager, comp):
        assert e[0] == c[0]
        _assert_same(e[1], c[1])
        _assert_same(e[2], c[2])
    if opt_kw.get("momentum"):
        assert all("momentum_buffer" in opt.state[p] for p in opt.param_groups[0]["params"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opt_kw", [dict(lr=0.1), dict(lr=0.05, maximize=True)])
@pytest.mark.parametrize("end_zero", [False, True])
def test_folded_sgd_matches_eager_and_torch(opt_kw, dtype, end_zero):
    eager, _, _ = _train(jitgrad, False, opt_kw, dtype=dtype, end_zero=end_zero)
    comp, model, _ = _train(jitgrad, True, opt_kw, dtype=dtype, end_zero=end_zero)
    ref, _, _ = _train(torch, False, opt_kw, dtype=dtype, end_zero=end_zero)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    # step 2 (the first replay) starts from the same parameters: its gradients are eager's
    # bits, and so are the biases it updates (the optimizer's kernel on those gradients)
    _assert_same(eager[1][2], comp[1][2])
    _assert_same(eager[1][1][1::2], comp[1][1][1::2])
    for e, c, t in zip(eager, comp, ref):
        np.testing.assert_allclose(c[0], e[0], rtol=tol)
        _assert_same(e[1], c[1], exact=False, rtol=tol)
        _assert_same(e[2], c[2], exact=False, rtol=tol)
        np.testing.assert_allclose(c[0], t[0], rtol=1e-4 if dtype == np.float32 else 1e-10)
    # the folded weights' versions move as eager's do: one per step
    assert [p._version for p in model.parameters()] == \
        [p._version for p in _train(jitgrad, False, opt_kw, dtype=dtype,
                                    end_zero=end_zero)[1].parameters()]


def _pair(opt_kw=None):
    """An eager and a compiled copy of the same model and step (plain SGD: folds)."""
    out = []
    for compiled in (False, True):
        model = _model(jitgrad)
        opt = jitgrad.optim.SGD(model.parameters(), **(opt_kw or dict(lr=0.1)))
        fn = _step(jitgrad, model, opt)
        out.append((model, opt, jitgrad.compile(fn) if compiled else fn))
    return out


def _both(build, steps=6, exact=False):
    """Run ``build() -> (model, opt, step)`` eagerly and compiled for ``steps`` steps; check the
    compiled replays were lowered and every loss, parameter and gradient agrees (bitwise with
    ``exact``). Returns the two optimizers."""
    runs, opts = [], []
    for compiled in (False, True):
        model, opt, step = build()
        fn = jitgrad.compile(step) if compiled else step
        x, y = _data(jitgrad)
        with jitgrad.autograd.profile() as p:
            runs.append([(fn(x, y).item(),) + _snapshot(model) for _ in range(steps)])
        if compiled:
            assert p.compile_lowered_replays == steps - 1, p.compile_reasons
        opts.append(opt)
    for e, c in zip(*runs):
        if exact:
            assert e[0] == c[0]
        else:
            np.testing.assert_allclose(c[0], e[0], rtol=1e-6)
        _assert_same(e[1], c[1], exact=exact)
        _assert_same(e[2], c[2], exact=exact)
    return opts


def test_a_kept_gradient_keeps_its_step_numbers():
    (me, _, fe), (mc, _, fc) = _pair()
    x, y = _data(jitgrad)
    fe(x, y), fc(x, y)  # records
    with jitgrad.autograd.profile() as p:
        fe(x, y), fc(x, y)
        kept_e = [q.grad for q in me.parameters()]
        # ._grad, not .grad (which computes it): still pending, as an internal reader may hold
        kept_c = [q._grad for q in mc.parameters()]
        assert sum(type(g) is not jitgrad.Tensor for g in kept_c) == 3  # the three weights
        for _ in range(3):  # later steps reuse the buffers the pending gradients come from
            fe(x, y), fc(x, y)
    assert p.compile_lowered_replays == 4
    for a, b in zip(kept_e, kept_c):
        assert type(b) is jitgrad.Tensor  # computed when the buffers were about to change
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_zero_grad_after_the_forward():
    """The common order ``loss = ...; opt.zero_grad(); loss.backward()``: the previous step's
    pending gradients are still ``.grad`` when the forward runs, and dropped right after."""
    def build():
        model = _model(jitgrad)
        opt = jitgrad.optim.SGD(model.parameters(), lr=0.1)
        return model, opt, _step(jitgrad, model, opt, zero="after_forward")
    _both(build)


def test_reading_and_writing_grad_between_steps():
    (me, oe, fe), (mc, oc, fc) = _pair()
    x, y = _data(jitgrad)
    for _ in range(2):
        fe(x, y), fc(x, y)
    w_e, w_c = me[0].weight, mc[0].weight
    assert type(w_c.grad) is jitgrad.Tensor and w_c.grad.shape == w_e.grad.shape
    np.testing.assert_array_equal(w_c.grad.numpy(), w_e.grad.numpy())
    # in-place ops and internal readers (clip_grad_norm_ reads ._grad) see the numbers too
    mc[2].weight.grad.mul_(2)
    me[2].weight.grad.mul_(2)
    ne = jitgrad.nn.utils.clip_grad_norm_(me.parameters(), 0.5)
    nc = jitgrad.nn.utils.clip_grad_norm_(mc.parameters(), 0.5)
    assert ne.item() == nc.item()
    _assert_same(_snapshot(me)[1], _snapshot(mc)[1])


def _functional_mlp(params):
    def forward(x):
        h = F.relu(F.linear(x, params[0], params[1]))
        return F.linear(h, params[2], params[3])
    return forward


def test_functional_layers_and_an_input_that_needs_its_gradient():
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((16, 20)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((4, 16)).astype(np.float32)
    b2 = rng.standard_normal(4).astype(np.float32)
    runs = []
    for compiled in (False, True):
        params = [jitgrad.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
        opt = jitgrad.optim.SGD(params, lr=0.05)
        step = _step(jitgrad, _functional_mlp(params), opt, ignore_index=-1)
        fn = jitgrad.compile(step) if compiled else step
        got = []
        with jitgrad.autograd.profile() as p:
            for k in range(4):
                x = jitgrad.tensor(rng.standard_normal((8, 20)).astype(np.float32) + k,
                                   requires_grad=True)
                got.append((fn(x, jitgrad.tensor(np.arange(8) % 4)).item(), x.grad.numpy()))
        if compiled:
            assert p.compile_lowered_replays == 3, p.compile_reasons
        runs.append((got, [q.detach().numpy() for q in params]))
        rng = np.random.default_rng(3)  # the same batches for the second run
        rng.standard_normal((16, 20)), rng.standard_normal(16), rng.standard_normal((4, 16))
        rng.standard_normal(4)
    (ge, pe), (gc, pc) = runs
    for (le, xe), (lc, xc) in zip(ge, gc):
        np.testing.assert_allclose(lc, le, rtol=1e-5)
        np.testing.assert_allclose(xc, xe, rtol=1e-5, atol=1e-6)
    _assert_same(pe, pc, exact=False, rtol=1e-5)


def test_bad_targets_raise_eager_errors_and_ignored_ones_replay_ordinarily():
    (_, _, fe), (mc, _, fc) = _pair()
    x, y = _data(jitgrad)
    fe(x, y), fc(x, y), fe(x, y), fc(x, y)
    bad = jitgrad.tensor(np.array([0, 1, 7] + [0] * 13))
    with pytest.raises(Exception) as want:
        fe(x, bad)
    before = [q.detach().numpy().copy() for q in mc.parameters()]
    with pytest.raises(type(want.value)) as got:
        fc(x, bad)
    assert str(got.value) == str(want.value)
    # nothing of the step ran before the error (no zero_grad, no forward into the buffers)
    _assert_same(before, [q.detach().numpy() for q in mc.parameters()])
    ignored = jitgrad.tensor(np.array([-100, 1, 2] + [0] * 13))
    with jitgrad.autograd.profile() as p:
        lc = fc(x, ignored).item()
    le = fe(x, ignored).item()
    assert p.compile_replays == 1 and p.compile_lowered_replays == 0
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    with jitgrad.autograd.profile() as p:
        fc(x, y)
    assert p.compile_lowered_replays == 1


def test_the_loss_is_eager_s_loss_tensor():
    (_, _, fe), (_, _, fc) = _pair()
    x, y = _data(jitgrad)
    fe(x, y), fc(x, y)
    le, lc = fe(x, y), fc(x, y)
    assert repr(le) == repr(lc)
    assert type(le.grad_fn).__name__ == type(lc.grad_fn).__name__ == "NllLossBackward0"
    assert lc.requires_grad and not lc.is_leaf and lc.dtype == le.dtype
    with pytest.raises(RuntimeError) as want:
        le.backward()
    with pytest.raises(RuntimeError) as got:
        lc.backward()
    assert str(got.value) == str(want.value)


def test_gradient_accumulation_without_zero_grad():
    def build():  # gradients add up, so nothing folds: eager's bits
        model = _model(jitgrad)
        opt = jitgrad.optim.SGD(model.parameters(), lr=0.01)
        return model, opt, _step(jitgrad, model, opt, zero=None)
    _both(build, steps=5, exact=True)


def test_hooks_frozen_layers_schedulers_and_partial_optimizers():
    def build():
        model = _model(jitgrad)
        model[0].weight.requires_grad_(False)
        model[2].weight.register_hook(lambda g: g * 0.5)
        opt = jitgrad.optim.SGD(list(model.parameters())[1:-1], lr=0.2)  # not the last bias
        sched = jitgrad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        return model, opt, _step(jitgrad, model, opt, sched=sched)
    eager, compiled = _both(build)
    assert eager.param_groups[0]["lr"] == compiled.param_groups[0]["lr"] == 0.2 * 0.5 ** 3


def _twice(lin, head):
    return lambda x: head(F.relu(lin(F.relu(lin(x)))))


def test_a_layer_used_twice_and_guards_on_parameters():
    runs = []
    for compiled in (False, True):
        jitgrad.manual_seed(0)
        lin, head = nn.Linear(20, 20), nn.Linear(20, 5)
        opt = jitgrad.optim.SGD(list(lin.parameters()) + list(head.parameters()), lr=0.1)
        step = _step(jitgrad, _twice(lin, head), opt)
        fn = jitgrad.compile(step) if compiled else step
        x, y = _data(jitgrad)
        out = [(fn(x, y).item(),) + _snapshot(head) + _snapshot(lin) for _ in range(3)]
        lin.weight.requires_grad_(False)  # a guard: the lowered step must not use its plan
        out += [(fn(x, y).item(),) + _snapshot(head) + _snapshot(lin) for _ in range(2)]
        lin.weight.requires_grad_(True)
        with jitgrad.autograd.profile() as p:
            out += [(fn(x, y).item(),) + _snapshot(head) + _snapshot(lin) for _ in range(2)]
        if compiled:
            assert p.compile_lowered_replays == 2
        runs.append(out)
    for e, c in zip(*runs):
        np.testing.assert_allclose(c[0], e[0], rtol=1e-6)
        for k in (1, 2, 3, 4):
            _assert_same(e[k], c[k], exact=False)


def test_what_is_not_lowered_still_replays_ordinarily():
    model = _model(jitgrad)
    opt = jitgrad.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):  # returns the logits too: only the loss may leave a lowered step
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return loss, logits
    fn = jitgrad.compile(step)
    x, y = _data(jitgrad)
    with jitgrad.autograd.profile() as p:
        for _ in range(3):
            loss, logits = fn(x, y)
    assert p.compile_replays == 2 and p.compile_lowered_replays == 0
    assert logits.grad_fn is not None and loss.shape == ()


def test_anomaly_mode_replays_ordinarily():
    (_, _, fe), (_, _, fc) = _pair()
    x, y = _data(jitgrad)
    fe(x, y), fc(x, y)
    with jitgrad.autograd.set_detect_anomaly(True):
        with jitgrad.autograd.profile() as p:
            lc = fc(x, y).item()
        le = fe(x, y).item()
    assert p.compile_replays == 1 and p.compile_lowered_replays == 0
    assert lc == le


def test_batches_of_any_layout():
    """Guards see shapes, not strides: a transposed or read-only batch replays the same lowered
    step (its array is copied into the layout the GEMMs read)."""
    rng = np.random.default_rng(5)
    batches = [rng.standard_normal((16, 20)).astype(np.float32) for _ in range(4)]
    targets = jitgrad.tensor(np.arange(16) % 5)
    runs = []
    for compiled in (False, True):
        model = _model(jitgrad)
        opt = jitgrad.optim.SGD(model.parameters(), lr=0.1)
        step = _step(jitgrad, model, opt)
        fn = jitgrad.compile(step) if compiled else step
        out = []
        with jitgrad.autograd.profile() as p:
            for k, b in enumerate(batches):
                if k == 1:
                    x = jitgrad.tensor(np.ascontiguousarray(b.T)).t()  # transposed view
                elif k == 2:
                    ro = b.copy()
                    ro.flags.writeable = False
                    with warnings.catch_warnings():  # PyTorch's read-only-array warning
                        warnings.simplefilter("ignore")
                        x = jitgrad.from_numpy(ro)
                else:
                    x = jitgrad.tensor(b)
                out.append((fn(x, targets).item(),) + _snapshot(model))
        if compiled:
            assert p.compile_lowered_replays == 3, p.compile_reasons
        runs.append(out)
    for e, c in zip(*runs):
        np.testing.assert_allclose(c[0], e[0], rtol=1e-6)
        _assert_same(e[1], c[1], exact=False)
        _assert_same(e[2], c[2], exact=False)
