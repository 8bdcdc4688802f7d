"""``jitgrad.compile(step, mode="reduce-overhead")`` on CUDA tensors: a training step replayed
as one CUDA graph (``_compile/graphed.py``, ``backends/cuda_graph.py``), checked bitwise against
the same step run eagerly on the device: losses, parameters, every ``.grad`` and optimizer state
over many steps with changing batches; steps that must not become a graph (random numbers,
Adam's host step count, arguments that need grad, ...) give eager's results through the
ordinary replay. Under the simulator a graph launch re-issues the taped launches; on a GPU it is
one ``cuGraphLaunch``: the same tests run on both.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_cuda_graphs.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

F = jg.nn.functional


def _batches(n, shape=(4, 4), classes=3, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, classes, shape[0]))
            for _ in range(n)]


def _mlp(seed=0, dropout=0.0):
    jg.manual_seed(seed)
    layers = [jg.nn.Linear(4, 5), jg.nn.ReLU()]  # small: the simulator runs every thread
    if dropout:
        layers.append(jg.nn.Dropout(dropout))
    return jg.nn.Sequential(*layers, jg.nn.Linear(5, 3)).to("cuda")


def _train(make_opt, batches, mode, *, zero_grad=True, between=None, dropout=0.0,
           schedule=None, clip=None):
    """Losses, parameters, gradients and optimizer state after training on ``batches``
    (``mode``: "eager" or a ``jitgrad.compile`` mode); ``between(k, model)`` runs after step k."""
    model = _mlp(dropout=dropout)
    opt = make_opt(model.parameters())
    sched = schedule(opt) if schedule else None

    def step(x, y):
        if zero_grad:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            jg.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        return loss

    fn = step if mode == "eager" else jg.compile(step, mode=mode)
    jg.manual_seed(7)  # the dropout stream
    losses, kept = [], []
    with jg.autograd.profile() as prof:
        for k, (xv, yv) in enumerate(batches):
            loss = fn(jg.tensor(xv, device="cuda"), jg.tensor(yv, device="cuda"))
            kept.append(loss)
            losses.append(loss.item())
            if between is not None:
                between(k, model)
    state = [np.concatenate([v.cpu().numpy().ravel() for v in s.values() if hasattr(v, "cpu")])
             for s in opt.state.values()]
    next_draw = jg.rand(4, device="cuda").cpu().numpy()  # the RNG stream after training
    return {"losses": losses, "kept": [t.item() for t in kept],
            "params": [p.detach().cpu().numpy() for p in model.parameters()],
            "grads": [None if p.grad is None else p.grad.cpu().numpy()
                      for p in model.parameters()],
            "state": state, "profile": prof, "last": kept[-1], "next_draw": next_draw}


def _same_values(x, y):
    """Bitwise: the graph runs eager's kernels on eager's operands (on a GPU with CuPy, its
    matmuls are eager's cuBLAS calls, captured: ``Tape.external``)."""
    np.testing.assert_array_equal(x, y)


def _assert_same(a, b):
    _same_values(np.array(a["losses"]), np.array(b["losses"]))
    assert a["kept"] == a["losses"] and b["kept"] == b["losses"]  # results never overwritten
    np.testing.assert_array_equal(a["next_draw"], b["next_draw"])
    for key in ("params", "grads", "state"):
        assert len(a[key]) == len(b[key])
        for x, y in zip(a[key], b[key]):
            if x is None or y is None:
                assert x is None and y is None
            else:
                _same_values(x, y)


def _sgd(**kw):
    return lambda params: jg.optim.SGD(params, lr=0.1, **kw)


def test_training_step_runs_as_one_graph_and_matches_eager(device):
    batches = _batches(5)
    sgd = _sgd(momentum=0.9, nesterov=True, weight_decay=1e-3)
    eager = _train(sgd, batches, "eager")
    graphed = _train(sgd, batches, "reduce-overhead")
    _assert_same(graphed, eager)
    p = graphed["profile"]
    # call 1 records, calls 2 and 3 are taped (equal tapes), calls 4 and 5 launch the graph
    assert (p.compile_cuda_graphs, p.compile_cuda_graph_replays) == (1, 2), p.compile_reasons
    assert type(graphed["last"].grad_fn).__name__ == type(eager["last"].grad_fn).__name__
    with pytest.raises(RuntimeError, match="second time"):
        graphed["last"].backward()


def test_gradient_clipping_inside_the_graph(device):
    """clip_grad_norm_ computes the norm and the scale on the device: part of the graph."""
    batches = _batches(5)
    eager = _train(_sgd(momentum=0.9), batches, "eager", clip=0.05)
    graphed = _train(_sgd(momentum=0.9), batches, "reduce-overhead", clip=0.05)
    _assert_same(graphed, eager)
    p = graphed["profile"]
    assert (p.compile_cuda_graphs, p.compile_cuda_graph_replays) == (1, 2), p.compile_reasons


def test_a_graph_replay_is_one_launch(device):
    model = _mlp()
    opt = jg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @jg.compile(mode="reduce-overhead")
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    (xv, yv), = _batches(1)
    x, y = jg.tensor(xv, device="cuda"), jg.tensor(yv, device="cuda")
    for _ in range(3):
        step(x, y)
    eager_like = device.stats.launches
    step(x, y)
    assert device.stats.launches - eager_like == 1  # the graph (copies are no launches)
    with jg.autograd.profile() as p:
        step(x, y)
    assert p.compile_cuda_graph_replays == 1


def test_accumulating_gradients_and_the_guards(device):
    """Without zero_grad the graph adds into the same .grad tensors; clearing them, replacing a
    parameter's .data or changing the learning rate between steps drops the graph (then it is
    taped and built again), and every step still matches eager."""
    opts = []

    def make(params):
        opts.append(jg.optim.SGD(params, lr=0.1, momentum=0.9))
        return opts[-1]

    def edit(k, model):
        if k == 3:
            for q in model.parameters():
                q.grad = None
        if k == 6:
            w = model[0].weight
            w.data = w.detach() * 0.5
        if k == 9:
            opts[-1].param_groups[0]["lr"] = 0.05

    batches = _batches(11)
    eager = _train(make, batches, "eager", zero_grad=False, between=edit)
    graphed = _train(make, batches, "reduce-overhead", zero_grad=False, between=edit)
    _assert_same(graphed, eager)
    # graphs built at calls 3, 7 (after a tape of the fresh .grad and one accumulating into
    # it) and 9; launched at calls 4 and 10; dropped at calls 5, 8 and 11
    assert graphed["profile"].compile_cuda_graph_replays == 2
    reasons = jg._compile.compiled.stats.reasons[-3:]
    assert ".grad the step accumulates into" in reasons[0]
    assert "was replaced (.data assigned)" in reasons[1]
    assert "optimizer setting" in reasons[2]


def test_loading_optimizer_state_drops_the_graph(device):
    """load_state_dict puts new tensors in the optimizer's state: the graph, which updates the
    old ones, is dropped and built again over the new ones."""
    opts, saved = [], []

    def make(params):
        opts.append(jg.optim.SGD(params, lr=0.1, momentum=0.9))
        return opts[-1]

    def edit(k, model):
        if k == 1:
            saved.append(opts[-1].state_dict())
        if k == 3:
            opts[-1].load_state_dict(saved[0])

    batches = _batches(7)
    eager = _train(make, batches, "eager", between=edit)
    opts.clear()
    saved.clear()
    graphed = _train(make, batches, "reduce-overhead", between=edit)
    _assert_same(graphed, eager)
    assert graphed["profile"].compile_cuda_graph_replays == 2  # calls 4 and 7 (5: refused)
    assert any("optimizer state was replaced" in r for r in jg._compile.compiled.stats.reasons)


def test_a_scheduler_after_the_step(device):
    sched = lambda opt: jg.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)  # noqa: E731
    batches = _batches(8)
    eager = _train(_sgd(momentum=0.9), batches, "eager", schedule=sched)
    graphed = _train(_sgd(momentum=0.9), batches, "reduce-overhead", schedule=sched)
    _assert_same(graphed, eager)
    # the learning rate changes at the end of calls 4 and 8 (the scheduler step re-run after
    # the launch): graphs built at calls 3 and 7, launched at calls 4 and 8, the first dropped
    # at call 5 (the rest of that call runs the ordinary way)
    assert graphed["profile"].compile_cuda_graph_replays == 2


def test_adam_without_capturable_replays_the_ordinary_way(device):
    batches = _batches(3)
    make = lambda params: jg.optim.Adam(params, lr=1e-2)  # noqa: E731
    eager = _train(make, batches, "eager")
    graphed = _train(make, batches, "reduce-overhead")
    _assert_same(graphed, eager)
    assert graphed["profile"].compile_cuda_graphs == 0
    assert any("Adam's step count" in r for r in jg._compile.compiled.stats.reasons)


def test_dropout_runs_as_a_graph_with_eager_random_streams(device):
    """Dropout's draws read (seed, offset) from a device array that each replay rewrites and
    count their offsets from the step's start: the masks are eager's, step after step, and the
    generator ends where eager leaves it (``next_draw``)."""
    batches = _batches(5)
    eager = _train(_sgd(momentum=0.9), batches, "eager", dropout=0.5)
    graphed = _train(_sgd(momentum=0.9), batches, "reduce-overhead", dropout=0.5)
    _assert_same(graphed, eager)
    p = graphed["profile"]
    assert (p.compile_cuda_graphs, p.compile_cuda_graph_replays) == (1, 2), p.compile_reasons


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_capturable_adam_runs_as_a_graph(device, cls):
    """With capturable=True (PyTorch's flag for graph capture) Adam's step count lives on the
    device and its kernels' scalars repeat: the step becomes a graph."""
    make = lambda params: getattr(jg.optim, cls)(params, lr=1e-2, capturable=True)  # noqa: E731
    batches = _batches(5)
    eager = _train(make, batches, "eager")
    graphed = _train(make, batches, "reduce-overhead")
    _assert_same(graphed, eager)
    p = graphed["profile"]
    assert (p.compile_cuda_graphs, p.compile_cuda_graph_replays) == (1, 2), p.compile_reasons


def test_an_argument_that_requires_grad_keeps_its_gradient(device):
    w = jg.tensor(np.linspace(-1, 1, 6, dtype=np.float32), device="cuda")

    def f(x):
        return ((x * w).tanh() * 2).sum()

    g = jg.compile(f, mode="reduce-overhead")
    for k in range(4):
        xs = [jg.tensor(np.full(6, 0.1 * k, np.float32), device="cuda", requires_grad=True)
              for _ in range(2)]
        f(xs[0]).backward()
        g(xs[1]).backward()
        np.testing.assert_array_equal(xs[1].grad.cpu().numpy(), xs[0].grad.cpu().numpy())


def test_a_result_with_a_live_graph_is_not_graphed(device):
    model = _mlp()

    @jg.compile(mode="reduce-overhead")
    def forward(x):
        return model(x).relu()

    (xv, _), = _batches(1)
    for _ in range(3):
        out = forward(jg.tensor(xv, device="cuda"))
        out.sum().backward()  # the result's graph is the caller's to use
    assert model[0].weight.grad is not None
    assert any("live graph" in r for r in jg._compile.compiled.stats.reasons)


def test_no_grad_evaluation_is_graphed(device):
    model = _mlp()
    model.eval()

    @jg.compile(mode="reduce-overhead")
    def evaluate(x):
        with jg.no_grad():
            return F.softmax(model(x), dim=1)

    with jg.autograd.profile() as p:
        for xv, _ in _batches(5):
            x = jg.tensor(xv, device="cuda")
            got = evaluate(x)
            with jg.no_grad():
                want = F.softmax(model(x), dim=1)
            _same_values(got.cpu().numpy(), want.cpu().numpy())
            assert got.grad_fn is None
    assert p.compile_cuda_graph_replays == 2


def test_a_step_writing_its_input_is_not_graphed(device):
    def f(x):
        x.mul_(2)
        return x.sum()

    g = jg.compile(f, mode="reduce-overhead")
    for k in range(3):
        a = jg.tensor(np.full(4, k, np.float32), device="cuda")
        b = jg.tensor(np.full(4, k, np.float32), device="cuda")
        assert g(a).item() == f(b).item()
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert any("writes to its input" in r for r in jg._compile.compiled.stats.reasons)


def test_tape_signatures(device):
    from jitgrad.backends import cuda_graph
    x = jg.tensor(np.arange(8, dtype=np.float32), device="cuda")

    def run(scale):
        tape = cuda_graph.Tape()
        with cuda_graph.taping(tape):
            y = (x * scale + 1).exp()
        return tape, y

    t1, y1 = run(2.0)
    t2, y2 = run(2.0)
    t3, _ = run(3.0)
    assert t1.entries and t1.broken is None
    assert t1.signature() == t2.signature()  # new buffers named by allocation order
    assert t1.signature() != t3.signature()  # a different scalar
    assert t1.allocated_here(y1._data.buf) and not t1.allocated_here(x._data.buf)
    tape = cuda_graph.Tape()
    with cuda_graph.taping(tape):
        x.sum().item()
    assert "read of device data on the host" in tape.broken
    graph = cuda_graph.build(t1)
    y1._data.buf.copy_to_device(np.zeros(8, np.float32))
    graph.launch()
    np.testing.assert_array_equal(y1.cpu().numpy(), y2.cpu().numpy())
