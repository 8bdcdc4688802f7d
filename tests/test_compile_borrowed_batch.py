"""A lowered step's first-layer GEMMs and the caller's batch (``_compile/lower.py``,
``may_borrow``): the folded weight's ``.grad`` is computed when read, from the batch, so the
step reads a private copy of it, except when the step ends with ``zero_grad()`` right after
the folded SGD (its pending gradients never outlive the call) and nothing the step writes can
alias the batch. Every way a caller can change the batch after the call (in place, through
``.data``, a ``numpy()`` view, the array it came from) must leave the ``.grad`` it reads as
eager's; checked against the same steps run eagerly (bitwise) and in PyTorch."""
import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

SIZES = (20, 32, 32, 5)


@pytest.fixture(autouse=True, params=["one call", "op by op"])
def executor(request, monkeypatch):
    """Both executors of a lowered step: the one compiled call and the ops one by one."""
    from jitgrad._compile import lower, lower_program
    if request.param == "one call":
        if lower_program._gemm(np.dtype(np.float32)) is None:
            pytest.skip("the one-call program needs MKL's CBLAS (pip install 'jitgrad[mkl]')")
    else:
        monkeypatch.setattr(lower, "ONE_CALL", False)
    return request.param


def _model(lib, first_in=SIZES[0]):
    """The same MLP in jitgrad or PyTorch (PyTorch's copy takes jitgrad's numbers)."""
    jitgrad.manual_seed(0)
    sizes = (first_in,) + SIZES[1:]
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i:
            layers.append(jitgrad.nn.ReLU())
        layers.append(jitgrad.nn.Linear(a, b))
    if lib is jitgrad:
        return jitgrad.nn.Sequential(*layers)
    out = []
    for m in layers:
        if isinstance(m, jitgrad.nn.Linear):
            t = torch.nn.Linear(m.in_features, m.out_features)
            with torch.no_grad():
                t.weight.copy_(torch.tensor(m.weight.detach().numpy()))
                t.bias.copy_(torch.tensor(m.bias.detach().numpy()))
            out.append(t)
        else:
            out.append(torch.nn.ReLU())
    return torch.nn.Sequential(*out)


def _step(lib, model, opt, zero):
    def step(x, y):
        if zero == "start":
            opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        if zero == "after_forward":
            opt.zero_grad()
        loss.backward()
        opt.step()
        if zero == "end":
            opt.zero_grad()
        return loss
    return step


def _batches(steps, n=16, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, SIZES[0])).astype(np.float32) for _ in range(steps)], \
        [rng.integers(0, SIZES[-1], n) for _ in range(steps)]


def _write(lib, how, x, source):
    """Change the batch ``x`` after a call, the way ``how`` says (``source``: the NumPy array
    it was made from, shared with it)."""
    if how == "in place":
        x.mul_(-3)
    elif how == ".data":
        x.data.add_(1)
    elif how == "numpy view":
        x.numpy()[::2] = 7
    elif how == "source array":
        source[:] = np.flip(source.copy(), 0)


def _grads(model):
    return [None if p.grad is None else p.grad.detach().numpy().copy()
            for p in model.parameters()]


def _params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def _run(lib, compiled, zero, how, steps=4, reuse=False):
    """``steps`` training steps; after each call the batch is changed (``how``) and then the
    gradients and parameters are read. ``reuse``: one batch tensor for every step."""
    model = _model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    fn = _step(lib, model, opt, zero)
    if compiled:
        fn = jitgrad.compile(fn)
    xs, ys = _batches(steps)
    out = []
    source = xs[0].copy()
    x = lib.from_numpy(source)
    with jitgrad.autograd.profile() as p:
        for k in range(steps):
            if not reuse:
                source = xs[k].copy()
                x = lib.from_numpy(source)
            loss = fn(x, lib.from_numpy(ys[k]))
            _write(lib, how, x, source)
            out.append((loss.item(), _grads(model), _params(model)))
    if compiled:
        assert p.compile_lowered_replays == steps - 1, p.compile_reasons
    return out


def _same(a, b, exact):
    assert len(a) == len(b)
    for (la, ga, pa), (lb, gb, pb) in zip(a, b):
        if exact:
            assert la == lb
        else:
            np.testing.assert_allclose(lb, la, rtol=1e-5)
        for u, v in zip(ga + pa, gb + pb):
            assert (u is None) == (v is None)
            if u is None:
                continue
            if exact:
                np.testing.assert_array_equal(u, v)
            else:
                np.testing.assert_allclose(v, u, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("reuse", [False, True], ids=["fresh batches", "one batch reused"])
@pytest.mark.parametrize("how", ["in place", ".data", "numpy view", "source array", "nothing"])
@pytest.mark.parametrize("zero", ["start", "after_forward", "end"])
def test_changing_the_batch_after_the_call_leaves_eager_s_gradients(zero, how, reuse):
    eager = _run(jitgrad, False, zero, how, reuse=reuse)
    compiled = _run(jitgrad, True, zero, how, reuse=reuse)
    reference = _run(torch, False, zero, how, reuse=reuse)
    # the folded update rounds W - lr * g^T h once (eager: twice): parameters agree closely,
    # the first step's gradients and losses bitwise
    assert eager[0][0] == compiled[0][0]
    for a, b in zip(eager[0][1], compiled[0][1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    _same(eager, compiled, exact=False)
    _same(reference, compiled, exact=False)


def _borrow_spy(monkeypatch):
    """Records each lowered step's ``may_borrow`` answers."""
    from jitgrad._compile import lower
    seen = []
    original = lower.LoweredStep.may_borrow

    def spy(self, x, needs_grad):
        answer = original(self, x, needs_grad)
        seen.append((self, answer))
        return answer
    monkeypatch.setattr(lower.LoweredStep, "may_borrow", spy)
    return seen


def _copied_this_run(step):
    """Did the last run's first-layer GEMMs read a copy of the batch?"""
    from jitgrad._compile import lower_kernels as K
    from jitgrad._compile.lower_ops import Dense
    from jitgrad._compile.lower_program import ArrayProgram
    ops = [op for op in step.forward_ops if isinstance(op, Dense) and op.copies_input]
    assert len(ops) == 1
    if isinstance(step.program, ArrayProgram):
        return step.program.code[ops[0].slots["copy"][0], 0] == K.COPY
    return ops[0].copy is not None


def test_a_step_ending_in_zero_grad_reads_the_batch_itself(monkeypatch):
    seen = _borrow_spy(monkeypatch)
    _run(jitgrad, True, "end", "in place", steps=3)
    assert seen and all(answer for _, answer in seen)
    assert not _copied_this_run(seen[-1][0])
    seen.clear()
    _run(jitgrad, True, "start", "in place", steps=3)  # .grad outlives the call: copied
    assert seen and not any(answer for _, answer in seen)
    assert _copied_this_run(seen[-1][0])


def test_a_batch_sharing_a_parameter_s_memory_is_copied(monkeypatch):
    """The folded GEMM writes W while it reads the batch: a batch inside W's memory must be
    read from a copy (eager computes the gradient before the update)."""
    seen = _borrow_spy(monkeypatch)
    runs = []
    for lib, compiled in ((jitgrad, False), (jitgrad, True), (torch, False)):
        model = _model(lib, first_in=SIZES[1])  # first weight (32, 32): a batch of its rows
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        fn = _step(lib, model, opt, "end")
        if compiled:
            fn = jitgrad.compile(fn)
        y = lib.from_numpy(np.arange(16) % SIZES[-1])
        out = []
        with jitgrad.autograd.profile() as p:
            for _ in range(3):
                x = model[0].weight.detach()[:16]
                out.append((fn(x, y).item(), _grads(model), _params(model)))
        if compiled:
            assert p.compile_lowered_replays == 2, p.compile_reasons
        runs.append(out)
    assert seen and not any(answer for _, answer in seen)
    _same(runs[0], runs[1], exact=False)
    _same(runs[2], runs[1], exact=False)
