"""The planner's cache: a hit gives exactly the plan ``plan_fresh`` makes for the same pass."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import engine
from jitgrad.fusion import planner
from jitgrad.fusion.planner import plan, plan_fresh


def _task(root):
    task = engine.GraphTask(False, True)
    task.buffers[root.grad_fn] = {0: None}
    engine._discover(task, [root.grad_fn])
    return task


def _as_data(groups):
    """A plan with its nodes as themselves (identity), comparable with ==."""
    return [(list(map(id, g.members)), list(g.routes), [(id(c), nr) for c, nr in g.edges],
             list(g.metas), list(g.counts), list(g.wanted)) for g in groups]


def _graphs(dtype):
    """Passes of different structure but the same node count and sizes, built twice each."""
    rng = np.random.default_rng(0)

    def t(shape=(4,)):
        return jitgrad.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)

    def chain(x, a):
        return ((x * 2.0 + 1.0).tanh() - a).sin()

    def diamond(x, a):
        y = x.sin()
        return (y * y + y).exp() - a

    def two_leaves(x, a):
        return (x * a + x).tanh().sin() - 1.0

    def fan_out(x, a):  # y feeds the chain and a sum (a reduction ends a group)
        y = x.sin()
        return (y.exp().tanh() + y.sum() * a).cos()

    def broadcast(x, a):  # a (1,)-shaped operand: its edge cannot join a group
        b = a[:1]
        return ((x + b).tanh() * 3.0).sin()

    def float_cast(x, a):  # a dtype change inside the chain
        return (x.double().sin() * 2.0).float().tanh() + a

    for f in (chain, diamond, two_leaves, fan_out, broadcast, float_cast):
        yield f.__name__, (lambda f=f: f(t(), t()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hits_equal_fresh_plans(dtype):
    planner._plans.clear()
    graphs = list(_graphs(dtype))
    for round_ in range(3):  # the first round fills the cache, later rounds hit it
        for name, build in graphs:
            task = _task(build())
            got = plan(task)
            assert _as_data(got) == _as_data(plan_fresh(task)), name
        # every structure has its own entry (no two share a key), and hits add none
        assert len(planner._plans) == len(graphs), round_


def test_hook_added_later_is_not_served_from_the_cache():
    planner._plans.clear()
    x = jitgrad.randn(4, requires_grad=True)
    for hook in (False, True, False):
        y = x.sin()
        z = (y * 2.0).tanh()
        if hook:
            y.register_hook(lambda g: g)  # y's gradient must exist: sin cannot be interior
        task = _task(z)
        assert _as_data(plan(task)) == _as_data(plan_fresh(task))
    y = x.sin()
    z = (y * 2.0).tanh()
    y.retain_grad()
    task = _task(z)
    assert _as_data(plan(task)) == _as_data(plan_fresh(task))
    assert [len(g.members) for g in plan(task)] == [2]  # tanh <- mul; sin alone


def test_cached_plan_keeps_no_node_alive():
    import gc
    import weakref
    planner._plans.clear()
    x = jitgrad.randn(4, requires_grad=True)
    z = (x.sin() * 2.0).tanh()
    ref = weakref.ref(z.grad_fn)
    plan(_task(z))
    assert planner._plans
    del z
    gc.collect()
    assert ref() is None


def test_backward_results_with_the_cache_match_pytorch():
    torch = pytest.importorskip("torch", reason="needs PyTorch")
    planner._plans.clear()
    data = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    for _ in range(3):
        grads = {}
        for lib in (jitgrad, torch):
            x = lib.tensor(data, requires_grad=True)
            y = x.sin()
            ((y * y + y).tanh() * 1.5 - x).sum().backward()
            grads[lib.__name__] = x.grad.numpy()
        np.testing.assert_allclose(grads["jitgrad"], grads["torch"], rtol=1e-6, atol=1e-7)


def test_cache_memory_is_bounded(monkeypatch):
    # keys are sized by their candidates: a pass beyond the budget is planned, not cached, and
    # passes of ever new shapes start the cache over instead of growing it
    monkeypatch.setattr(planner, "_MAX_CACHED_NODES", 10)
    planner._plans.clear()
    monkeypatch.setattr(planner, "_cached_nodes", 0)
    x = jitgrad.randn(4, requires_grad=True)
    y = x
    for _ in range(12):
        y = (y * 1.5).sin()
    task = _task(y)
    assert _as_data(plan(task)) == _as_data(plan_fresh(task))
    assert not planner._plans
    for k in range(2, 8):
        y = x
        for _ in range(k):
            y = y.sin()
        task = _task(y)
        assert _as_data(plan(task)) == _as_data(plan_fresh(task))
        assert planner._cached_nodes <= 10


def test_cache_still_used_after_pack_hooks_were_used_elsewhere():
    # a pass under saved_tensors_hooks is planned fresh (its nodes hold packed tensors); later
    # passes without hooks are cached again (the process-wide flag alone no longer turns the
    # cache off for good)
    x = jitgrad.randn(4, requires_grad=True)
    with jitgrad.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        packed = (x.sin() * 2.0).tanh()
    task = _task(packed)
    planner._plans.clear()
    assert _as_data(plan(task)) == _as_data(plan_fresh(task))
    assert not planner._plans
    z = (x.sin() * 2.0).tanh()
    task = _task(z)
    assert _as_data(plan(task)) == _as_data(plan_fresh(task))
    assert len(planner._plans) == 1
