"""jitgrad.compile: replays give what the eager run gives (values, every .grad, optimizer state,
RNG streams), guards re-record or fall back, graph breaks run eagerly; checked against eager
jitgrad (bitwise where the same kernels run) and, for the training steps, PyTorch."""
import warnings

import numpy as np
import pytest

import jitgrad
from jitgrad import nn

torch = pytest.importorskip("torch")


def _chain(x, n_ops=100):
    for _ in range(n_ops // 4):
        x = x * 1.01
        x = x + 0.5
        x = x.tanh()
        x = x - 0.25
    return x


def _grads(params):
    return [None if p.grad is None else p.grad.numpy().copy() for p in params]


def _assert_replayed(p, n):
    """The compiled runs were replays (a test comparing an eager fallback with eager code
    could not fail)."""
    assert (p.compile_replays, p.compile_eager_calls) == (n, 0), p.compile_reasons


def _same(a, b, exact=True):
    for u, v in zip(a, b):
        assert (u is None) == (v is None)
        if u is not None:
            if exact:
                np.testing.assert_array_equal(u, v)
            else:
                np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_scalar_graph_fuses_into_one_node_and_matches_eager():
    def step(x):
        y = _chain(x)
        y.backward()
        return y

    compiled = jitgrad.compile(step)
    xe = jitgrad.tensor(0.3, requires_grad=True)
    xc = jitgrad.tensor(0.3, requires_grad=True)
    with jitgrad.autograd.profile() as p:
        for _ in range(4):
            xe.grad = xc.grad = None
            ye, yc = step(xe), compiled(xc)
            # one fused loop may contract a*b+c into an FMA: float rounding, not bits
            assert yc.item() == pytest.approx(ye.item(), rel=1e-6)
            assert xc.grad.item() == pytest.approx(xe.grad.item(), rel=1e-5)
    assert p.compile_captures == 1 and p.compile_replays == 3
    assert type(yc.grad_fn).__name__ == "CompiledFunctionBackward"
    # against PyTorch too
    xt = torch.tensor(0.3, requires_grad=True)
    step(xt)
    np.testing.assert_allclose(xc.grad.item(), xt.grad.item(), rtol=1e-5)


def test_fused_group_double_backward_matches_eager():
    def f(x, w):
        return ((x * w).sin() * x + w.exp()).sum()

    cf = jitgrad.compile(f)
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for _ in range(2):
        outs = []
        for fn in (f, cf):
            x = jitgrad.tensor(xv, requires_grad=True)
            w = jitgrad.tensor(wv, requires_grad=True)
            (gx,) = jitgrad.autograd.grad(fn(x, w), [x], create_graph=True)
            gx.sum().backward()
            outs.append((gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
        _same(outs[0], outs[1], exact=False)


def test_multi_output_group_and_unused_output():
    def f(x):
        a = x.sin() * 2
        b = a.exp() + 1
        return a, b

    cf = jitgrad.compile(f)
    xv = np.linspace(-1, 1, 7).astype(np.float32)
    for k in range(3):
        res = []
        for fn in (f, cf):
            x = jitgrad.tensor(xv, requires_grad=True)
            a, b = fn(x)
            (b.sum() * (k + 1)).backward() if k == 0 else (a * 3 + b).sum().backward()
            res.append((a.detach().numpy(), b.detach().numpy(), x.grad.numpy()))
        _same(res[0], res[1], exact=False)


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(20, 32), lib.nn.ReLU(), lib.nn.Linear(32, 32),
                             lib.nn.Tanh(), lib.nn.Linear(32, 5))


def _train_step(model, opt, clip=None):
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y) if isinstance(x, jitgrad.Tensor) \
            else torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            (jitgrad if isinstance(x, jitgrad.Tensor) else torch).nn.utils.clip_grad_norm_(
                model.parameters(), clip)
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("clip", [None, 0.5])
def test_mlp_twenty_steps_match_eager_and_torch(clip):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((16, 20)).astype(np.float32)
    Y = rng.integers(0, 5, 16)
    runs = {}
    for name, lib in (("eager", jitgrad), ("compiled", jitgrad), ("torch", torch)):
        model = _mlp(lib)
        if lib is torch:  # the same initial numbers
            for pt, pj in zip(model.parameters(), _mlp(jitgrad).parameters()):
                pt.data = torch.tensor(pj.detach().numpy())
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = _train_step(model, opt, clip)
        if name == "compiled":
            step = jitgrad.compile(step)
        x, y = lib.tensor(X), lib.tensor(Y)
        losses, grads = [], []
        with jitgrad.autograd.profile() as p:
            for _ in range(20):
                losses.append(step(x, y).item())
                grads.append(_grads(model.parameters()))
        if name == "compiled":
            _assert_replayed(p, 19)
        runs[name] = (losses, grads, [p.detach().numpy().copy() for p in model.parameters()])
    assert runs["eager"][0] == runs["compiled"][0]
    for ge, gc in zip(runs["eager"][1], runs["compiled"][1]):
        _same(ge, gc)
    _same(runs["eager"][2], runs["compiled"][2])
    np.testing.assert_allclose(runs["compiled"][0], runs["torch"][0], rtol=1e-4, atol=1e-5)


def test_cnn_step_matches_eager():
    def make():
        jitgrad.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    rng = np.random.default_rng(2)
    x = jitgrad.tensor(rng.standard_normal((6, 1, 8, 8)).astype(np.float32))
    y = jitgrad.tensor(rng.integers(0, 3, 6))
    out = []
    for compiled in (False, True):
        model = make()
        opt = jitgrad.optim.Adam(model.parameters(), lr=1e-2)
        step = _train_step(model, opt)
        step = jitgrad.compile(step) if compiled else step
        with jitgrad.autograd.profile() as p:
            out.append(([step(x, y).item() for _ in range(5)], _grads(model.parameters()),
                        model[1].running_mean.numpy().copy()))
    _assert_replayed(p, 4)
    assert out[0][0] == out[1][0]
    _same(out[0][1], out[1][1])
    _same([out[0][2]], [out[1][2]])


def test_gpt_style_block_with_dropout_keeps_rng_streams():
    def make():
        jitgrad.manual_seed(0)
        emb = nn.Embedding(11, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
        head = nn.Linear(16, 11)
        return nn.ModuleList([emb, layer, head])

    rng = np.random.default_rng(3)
    tok = jitgrad.tensor(rng.integers(0, 11, (2, 5)))
    runs = []
    for compiled in (False, True):
        m = make()
        opt = jitgrad.optim.AdamW(m.parameters(), lr=1e-3)
        mask = nn.Transformer.generate_square_subsequent_mask(5) \
            if hasattr(nn, "Transformer") else None

        def step(t, m=m, opt=opt, mask=mask):
            opt.zero_grad()
            h = m[1](m[0](t), src_mask=mask, is_causal=mask is not None)
            logits = m[2](h)
            loss = nn.functional.cross_entropy(logits.reshape(-1, 11), t.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        step = jitgrad.compile(step) if compiled else step
        jitgrad.manual_seed(123)
        with jitgrad.autograd.profile() as p:
            runs.append(([step(tok).item() for _ in range(4)], _grads(m.parameters()),
                         jitgrad.rand(3).numpy()))
    _assert_replayed(p, 3)
    assert runs[0][0] == runs[1][0]
    _same(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][2], runs[1][2])  # the generator advanced alike


def test_parameter_hooks_fire_on_replay_and_module_hooks_run_eagerly():
    model = _mlp(jitgrad)
    seen = []
    model[0].weight.register_hook(lambda g: seen.append(g.shape))

    def step(x):
        out = model(x).sum()
        out.backward()
        return out

    cstep = jitgrad.compile(step)
    x = jitgrad.randn(3, 20)
    with jitgrad.autograd.profile() as p:
        for _ in range(3):
            cstep(x)
    _assert_replayed(p, 2)
    assert len(seen) == 3
    model[2].register_forward_hook(lambda mod, i, o: seen.append("fwd"))
    with pytest.warns(UserWarning, match="hooks"):
        cstep(x)  # module structure unchanged but a hook now runs: recorded again, eagerly
    cstep(x)
    assert seen.count("fwd") == 2


def test_retain_graph_and_accumulation_across_calls():
    def make_step(w):
        def step(x):
            loss = ((x * w).tanh() * 2).sum()
            loss.backward(retain_graph=True)
            loss.backward()
            return loss
        return step

    w = jitgrad.tensor(np.arange(4.0), requires_grad=True)
    we = jitgrad.tensor(np.arange(4.0), requires_grad=True)
    cstep, eager = jitgrad.compile(make_step(w)), make_step(we)
    x = jitgrad.tensor(np.linspace(0, 1, 4))
    with jitgrad.autograd.profile() as p:
        for _ in range(3):  # .grad accumulates across calls, as eagerly
            cstep(x)
            eager(x)
            np.testing.assert_array_equal(w.grad.numpy(), we.grad.numpy())
    _assert_replayed(p, 2)


def test_guards_shapes_variants_and_eager_after_too_many():
    f = jitgrad.compile(lambda x: (x * 2).exp().sum(), max_variants=2)
    with jitgrad.autograd.profile() as p:
        for n in (3, 4, 3, 4):
            x = jitgrad.randn(n)
            assert f(x).item() == pytest.approx((x * 2).exp().sum().item())
        assert p.compile_captures == 2 and p.compile_replays == 2
        with pytest.warns(UserWarning, match="variants"):
            f(jitgrad.randn(5))
        assert p.compile_eager_calls == 1


def test_replaced_parameters_are_seen():
    model = nn.Linear(4, 2)
    f = jitgrad.compile(lambda x: model(x).sum())
    x = jitgrad.randn(3, 4)
    f(x), f(x)
    model.weight = nn.Parameter(jitgrad.zeros(2, 4))
    with jitgrad.autograd.profile() as p:
        assert f(x).item() == pytest.approx(model.bias.sum().item() * 3)
    assert p.compile_captures == 1  # module structure changed: recorded again
    model.weight.data = jitgrad.ones(2, 4)  # new storage, same tensor: read at each call
    assert f(x).item() == model(x).sum().item()


def test_no_grad_evaluation():
    model = _mlp(jitgrad)
    f = jitgrad.compile(lambda x: model(x).softmax(-1))
    x = jitgrad.randn(4, 20)
    with jitgrad.no_grad():
        a, b = f(x), f(x)
    assert a.grad_fn is None and b.grad_fn is None
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = f(x)  # grad mode is part of the guards
    assert c.grad_fn is not None


def test_graph_breaks_run_eagerly_and_fullgraph_raises():
    def f(x):
        y = x * 2
        if y.sum().item() > 0:  # data-dependent control flow
            return y + 1
        return y - 1

    cf = jitgrad.compile(f)
    with pytest.warns(UserWarning, match=r"item\(\) reads tensor data"):
        assert cf(jitgrad.ones(3)).tolist() == [3.0, 3.0, 3.0]
    assert cf(-jitgrad.ones(3)).tolist() == [-3.0, -3.0, -3.0]  # eager: the branch follows data
    with pytest.raises(RuntimeError, match="fullgraph"):
        jitgrad.compile(f, fullgraph=True)(jitgrad.ones(3))

    def g(x):
        y = x + 1
        y.add_(1)  # in place: replayed as a call on the replay's own tensor
        return y.sin()

    cg = jitgrad.compile(g)
    for v in (1.0, 2.0):
        x = jitgrad.full((2,), v, requires_grad=True)
        xe = jitgrad.full((2,), v, requires_grad=True)
        cg(x).sum().backward()
        g(xe).sum().backward()
        assert x.grad.tolist() == xe.grad.tolist()

    def h(x):
        return jitgrad.Tensor(np.ones(2)) * x  # a tensor made outside jitgrad's operations

    ch = jitgrad.compile(h)
    with pytest.warns(UserWarning, match="outside"):
        ch(jitgrad.ones(2))


def test_python_scalar_arguments_are_guarded():
    f = jitgrad.compile(lambda x, s: (x * s).sum())
    x = jitgrad.ones(3)
    assert f(x, 2.0).item() == 6.0
    assert f(x, 3.0).item() == 9.0
    assert f(x, 2.0).item() == 6.0


def test_compiled_module_trains_like_eager():
    model = _mlp(jitgrad)
    ref = _mlp(jitgrad)
    cm = jitgrad.compile(model)
    assert cm._orig_mod is model
    assert [id(p) for p in cm.parameters()] == [id(p) for p in model.parameters()]
    x = jitgrad.randn(8, 20)
    with jitgrad.autograd.profile() as p:
        for _ in range(3):
            for m in (cm, ref):
                m.zero_grad()
                m(x).pow(2).mean().backward()
            _same(_grads(model.parameters()), _grads(ref.parameters()))
    _assert_replayed(p, 2)


def test_inplace_write_between_forward_and_backward_is_caught():
    w = jitgrad.tensor([1.0, 2.0], requires_grad=True)
    f = jitgrad.compile(lambda x: (x * w).sin() * x)
    x = jitgrad.tensor([0.5, 0.25], requires_grad=True)
    f(x)
    y = f(x)
    with jitgrad.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_nested_structures_and_broadcasting_fall_back_per_op():
    def f(d):
        a, b = d["pair"]
        return {"out": (a * b + a).relu() * 2.0, "n": 3}  # b broadcasts: that op runs eagerly

    cf = jitgrad.compile(f)
    a, b = jitgrad.randn(4, 3), jitgrad.randn(3)
    for _ in range(2):
        r = cf({"pair": [a, b]})
        assert r["n"] == 3
        np.testing.assert_array_equal(r["out"].numpy(), f({"pair": [a, b]})["out"].numpy())


def test_lr_scheduler_step_inside_replays():
    model = nn.Linear(3, 1)
    opt = jitgrad.optim.SGD(model.parameters(), lr=1.0)
    sched = jitgrad.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        sched.step()

    cstep = jitgrad.compile(step)
    x = jitgrad.ones(2, 3)
    with jitgrad.autograd.profile() as p:
        for _ in range(4):
            cstep(x)
    _assert_replayed(p, 3)
    assert opt.param_groups[0]["lr"] == 1.0 / 16


def test_other_threads_are_not_recorded():
    import threading
    done = []

    def f(x):
        t = threading.Thread(target=lambda: done.append((jitgrad.ones(2) * 3).sum().item()))
        t.start()
        t.join()
        return x * 2

    cf = jitgrad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cf(jitgrad.ones(2))
        cf(jitgrad.ones(2))
    assert done == [6.0]  # the thread's work is Python the replay skips (documented)


def test_guard_failure_on_a_parameter_reshaped_through_data_records_again():
    w = nn.Parameter(jitgrad.ones(3))
    f = jitgrad.compile(lambda x: (x * w).sin() + w)  # one fused group reading w
    f(jitgrad.ones(3)), f(jitgrad.ones(3))
    w.data = jitgrad.zeros(5)  # the same Parameter, a new shape: the recording is stale
    with jitgrad.autograd.profile() as p:
        assert f(jitgrad.ones(5)).tolist() == [0.0] * 5
        assert f(jitgrad.ones(5)).tolist() == [0.0] * 5
    assert (p.compile_guard_failures, p.compile_captures, p.compile_replays) == (0, 1, 1)
    w.data = jitgrad.zeros(3)
    with jitgrad.autograd.profile() as p:  # back to the first recording's shapes: replayed
        assert f(jitgrad.ones(3)).tolist() == [0.0] * 3
    assert p.compile_replays == 1
    w.data = jitgrad.zeros(3, dtype=jitgrad.float64)
    with jitgrad.autograd.profile() as p:
        assert f(jitgrad.ones(3)).dtype == jitgrad.float64
    assert (p.compile_guard_failures, p.compile_captures) == (1, 1)
    assert "changed" in p.compile_reasons[0]


def test_train_eval_switch_records_each_mode():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    f = jitgrad.compile(lambda x: model(x))
    x = jitgrad.ones(2, 4)
    f(x), f(x)
    model.eval()
    with jitgrad.no_grad():
        ref = model(x)
    np.testing.assert_array_equal(f(x).detach().numpy(), ref.numpy())  # no dropout in eval


def test_scheduler_made_before_compile_and_evaluation_between_epochs():
    """The examples' pattern: the scheduler wraps opt.step before anything is compiled, the
    model switches to eval and back between epochs, the last batch is smaller."""
    runs = []
    rng = np.random.default_rng(5)
    X = jitgrad.tensor(rng.standard_normal((50, 20)).astype(np.float32))
    Y = jitgrad.tensor(rng.integers(0, 5, 50))
    for compiled in (False, True):
        model = nn.Sequential(_mlp(jitgrad), nn.Dropout(0.2))
        opt = jitgrad.optim.AdamW(model.parameters(), lr=1e-2)
        sched = jitgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
        step = _train_step(model, opt)
        step = jitgrad.compile(step) if compiled else step
        jitgrad.manual_seed(0)
        losses = []
        for _ in range(3):
            for i in range(0, 50, 16):
                losses.append(step(X[i:i + 16], Y[i:i + 16]).item())
            sched.step()
            model.eval()
            with jitgrad.no_grad():
                losses.append(model(X).sum().item())
            model.train()
        runs.append((losses, _grads(model.parameters())))
    assert runs[0][0] == runs[1][0]
    _same(runs[0][1], runs[1][1])


def test_an_inplace_write_no_boundary_saw_makes_it_eager():
    w = jitgrad.ones(3)

    def f(x):
        w._data[...] += 1  # jitgrad internals, not a public op: not replayable
        w._vc.value += 1
        return x * w

    cf = jitgrad.compile(f)
    with pytest.warns(UserWarning, match="in-place write outside"):
        cf(jitgrad.ones(3))
    assert cf(jitgrad.ones(3)).tolist() == [3.0, 3.0, 3.0]  # eager: the write happened again


def test_autograd_grad_inside_replays():
    w = jitgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)

    def f(x):
        y = (x * w).sin().sum()
        (g,) = jitgrad.autograd.grad(y, [w], create_graph=True)
        return (g * g).sum()

    cf = jitgrad.compile(f)
    x = jitgrad.tensor([1.0, 2.0, 3.0])
    with jitgrad.autograd.profile() as p:
        for _ in range(3):
            a, b = cf(x), f(x)
            assert a.item() == pytest.approx(b.item(), rel=1e-6)
            (ga,) = jitgrad.autograd.grad(a, [w])
            (gb,) = jitgrad.autograd.grad(b, [w])
            np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-5)
    assert (p.compile_replays, p.compile_eager_calls) == (2, 0), p.compile_reasons


W_GLOBAL = jitgrad.ones(3)
SCALE = 2.0


def _reads_globals(x):
    return (x * W_GLOBAL * SCALE).sum()


def test_rebound_globals_and_closure_cells_are_guards():
    global W_GLOBAL, SCALE
    f = jitgrad.compile(_reads_globals)
    x = jitgrad.ones(3)
    assert f(x).item() == 6.0 and f(x).item() == 6.0
    W_GLOBAL = jitgrad.full((3,), 2.0)  # the replay would read the old tensor
    assert f(x).item() == 12.0
    SCALE = 0.5  # a Python number the recording baked in
    assert f(x).item() == 3.0
    W_GLOBAL, SCALE = jitgrad.ones(3), 2.0

    k = jitgrad.tensor(1.0)

    def g(x):
        return x * k

    cg = jitgrad.compile(g)
    assert cg(x).tolist() == [1.0] * 3 and cg(x).tolist() == [1.0] * 3
    k = jitgrad.tensor(5.0)  # noqa: F841 - read through g's closure cell
    assert cg(x).tolist() == [5.0] * 3


def test_odd_signatures_and_results():
    w = jitgrad.ones(2, requires_grad=True)

    @jitgrad.compile
    def f(*xs, scale=1.0, bias=None):
        out = sum(x * w for x in xs) * scale
        return (out if bias is None else out + bias), xs[0], None, "tag"

    a, b = jitgrad.ones(2), jitgrad.full((2,), 3.0)
    for _ in range(3):
        out, first, none, tag = f(a, b, scale=2.0, bias=jitgrad.ones(2))
        assert out.tolist() == [9.0, 9.0] and first is a and none is None and tag == "tag"
    assert f(a, scale=2.0)[0].tolist() == [2.0, 2.0]  # another variant (no bias, one x)

    @jitgrad.compile
    def g(x):
        x.grad = None if False else x.grad  # noqa: SIM108 - .grad access: a graph break

    with pytest.warns(UserWarning, match=r"\.grad"):
        g(jitgrad.ones(1, requires_grad=True))


def test_compile_signature_like_torch():
    def f(x):
        return x * 2

    assert jitgrad.compile(f, disable=True) is f
    cf = jitgrad.compile(mode="reduce-overhead", dynamic=False)(f)
    assert cf.__name__ == "f" and cf(jitgrad.ones(1)).tolist() == [2.0]
    for lib in (jitgrad, torch):
        with pytest.raises(AssertionError, match="A callable function is expected, but "
                                                 "<class 'int'> is provided."):
            lib.compile(3)


@pytest.mark.parametrize("kwargs", [{"mode": "fast"}, {"mode": "default", "options": {}},
                                    {"mode": "reduce-overhead", "options": {"a": 1}}])
def test_compile_mode_errors_like_torch(kwargs):
    def f(x):
        return x * 2

    with pytest.raises(RuntimeError) as want:
        torch.compile(f, **kwargs)
    with pytest.raises(RuntimeError) as got:
        jitgrad.compile(f, **kwargs)
    assert str(got.value) == str(want.value)


def test_reduce_overhead_on_cpu_tensors_replays_as_the_default_mode():
    def f(x):
        return ((x * 2).sin() + 1).sum()

    g = jitgrad.compile(f, mode="reduce-overhead")
    with jitgrad.autograd.profile() as p:
        for k in range(4):
            x = jitgrad.full((5,), 0.1 * k)
            assert g(x).item() == f(x).item()
    assert (p.compile_replays, p.compile_cuda_graphs) == (3, 0)


def test_data_dependent_shapes_upstream_of_a_fused_group():
    def f(x):
        y = x[x > 0]  # its length depends on the data
        return ((y * 2).sin() + 1).sum()

    cf = jitgrad.compile(f)
    # 2 kept, then 1 (a fused kernel would broadcast it silently), 3 (it would raise), 2 again
    for v in ([1.0, -1.0, 2.0], [-1.0, -2.0, 0.5], [1.0, 2.0, 3.0], [1.0, -1.0, 2.0]):
        x = jitgrad.tensor(v, requires_grad=True)
        xe = jitgrad.tensor(v, requires_grad=True)
        cf(x).backward()
        f(xe).backward()
        assert x.grad.tolist() == pytest.approx(xe.grad.tolist(), rel=1e-6)


def test_callable_objects_without_a_name():
    import functools

    def f(scale, x):
        return (x * scale).sum().item()  # a graph break: the warning names the object

    cf = jitgrad.compile(functools.partial(f, 2.0))
    with pytest.warns(UserWarning, match="partial runs eagerly"):
        assert cf(jitgrad.ones(2)) == 4.0
