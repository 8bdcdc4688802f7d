"""The planner on hand-built graphs: pure Python, nothing compiled or launched."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import jitgrad
from jitgrad import _dtype as D
from jitgrad.autograd import engine
from jitgrad.autograd.node import Ctx, FunctionNode, node_class
from jitgrad.fusion.planner import plan
from jitgrad.ops.elementwise_call import ElementwiseNode
from jitgrad.ops.registry import OPS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def leaf(shape=(4,), dtype=D.float32):
    t = jitgrad.zeros(shape, dtype=dtype)
    t.requires_grad_(True)
    return t


def ew(op_name, *inputs, shape=(4,), ct=D.float32, input_shapes=None):
    """An ElementwiseNode of ``op_name`` whose inputs are nodes, leaves (Tensors) or None."""
    op = OPS[op_name]
    nf, meta, needs = [], [], []
    for i, x in enumerate(inputs):
        ishape = input_shapes[i] if input_shapes else shape
        if x is None:
            nf.append((None, 0))
            meta.append(None)
            needs.append(False)
        else:
            node = x._accumulator() if isinstance(x, jitgrad.Tensor) else x
            nf.append((node, 0))
            meta.append((tuple(ishape), ct))
            needs.append(True)
    n = node_class(op.node, ElementwiseNode)(nf, meta)
    n.op, n.needs, n.shape, n.ct, n.saved, n.kinds = op, tuple(needs), tuple(shape), ct, {}, {}
    return n


def opaque(*inputs, shape=(4,), ct=D.float32):
    nf = [(x._accumulator() if isinstance(x, jitgrad.Tensor) else x, 0) for x in inputs]
    return node_class("SumBackward1", FunctionNode)(nf, [(shape, ct)] * len(nf), Ctx(), None)


def task_for(*roots, capture=None, needed=None):
    task = engine.GraphTask(False, True)
    for r in roots:
        task.buffers[r] = {0: None}
    engine._discover(task, list(roots))
    if capture is not None:
        task.capture = {(n, 0): i for i, n in enumerate(capture)}
        engine._mark_needed(task, set(capture))
    return task


def groups_of(*roots, **kw):
    return [[m.name() for m in g.members] for g in plan(task_for(*roots, **kw))]


def test_chain_is_one_group():
    x = leaf()
    s = ew("sin", x)
    m = ew("mul", s, None)
    a = ew("add", m, None)
    t = ew("tanh", a)
    [g] = plan(task_for(t))
    assert g.members == [t, a, m, s]
    assert g.head is t
    assert g.edges == [(x._accumulator(), 0)]
    assert g.routes == [(("m", 1),), (("m", 2), None), (("m", 3), None), (("e", 0),)]
    assert g.wanted == [True]


def test_single_node_is_not_a_group():
    x = leaf()
    assert plan(task_for(ew("sin", x))) == []


def test_two_inputs_of_a_group_come_out_of_one_kernel_and_merge():
    # (x * a + x): x receives two contributions, merged into one out edge
    x, a = leaf(), leaf()
    m = ew("mul", x, a)
    r = ew("add", m, x)
    [g] = plan(task_for(r))
    assert [m_.name() for m_ in g.members] == ["AddBackward0", "MulBackward0"]
    assert g.edges == [(x._accumulator(), 0), (a._accumulator(), 0)]
    assert g.counts == [2, 1]


def test_diamond_inside_the_group():
    # y = sin(x); z = y * y + y : every consumer of y is inside the group
    x = leaf()
    y = ew("sin", x)
    sq = ew("mul", y, y)
    z = ew("add", sq, y)
    [g] = plan(task_for(z))
    assert g.members == [z, sq, y]
    assert g.routes[1] == (("m", 2), ("m", 2))


def test_fan_out_to_outside_ends_the_group():
    # y feeds the chain and an opaque op: its gradient has consumers outside the group
    x = leaf()
    y = ew("sin", x)
    e = ew("exp", y)
    c = ew("tanh", e)
    o = opaque(y)
    m = ew("mul", o, None)
    root = ew("add", c, m)
    [g] = plan(task_for(root))
    assert g.members == [root, m, c, e]  # y (sin) runs alone: two groups feed it
    assert g.edges == [(o, 0), (y, 0)]


def test_opaque_op_splits_chain():
    x = leaf()
    low = ew("exp", ew("sin", x))
    mid = opaque(low)
    high = ew("tanh", ew("mul", mid, None))
    assert groups_of(high) == [["TanhBackward0", "MulBackward0"], ["ExpBackward0", "SinBackward0"]]


def test_broadcast_edge_ends_group():
    # b (shape (4,)) is broadcast to (3, 4) by mul: the b chain is a separate group
    x, w = leaf((3, 4)), leaf((4,))
    b = ew("exp", ew("sin", w))
    m = ew("mul", ew("cos", x, shape=(3, 4)), b, shape=(3, 4), input_shapes=[(3, 4), (4,)])
    t = ew("tanh", m, shape=(3, 4))
    assert groups_of(t) == [["TanhBackward0", "MulBackward0", "CosBackward0"],
                            ["ExpBackward0", "SinBackward0"]]


def test_dtype_change_ends_group():
    x = leaf(dtype=D.float32)
    inner = ew("sin", x, ct=D.float32)
    outer = ew("tanh", ew("exp", inner, ct=D.float64), ct=D.float64)
    # exp computes in float64 from a float32 input: the edge exp -> sin casts
    outer.next_functions[0][0]._input_meta = ((4,), D.float32)
    assert groups_of(outer) == [["TanhBackward0", "ExpBackward0"]]


def test_tensor_hook_forces_boundary():
    x = leaf()
    s = ew("sin", x)
    e = ew("exp", s)
    t = ew("tanh", e)
    e._add_pre_hook(0, lambda g: g)
    assert groups_of(t) == [["ExpBackward0", "SinBackward0"]]  # tanh alone: no group


def test_removed_hook_does_not_force_boundary():
    x = leaf()
    e = ew("exp", ew("sin", x))
    t = ew("tanh", e)
    h = e._add_pre_hook(0, lambda g: g)
    h.remove()
    assert groups_of(t) == [["TanhBackward0", "ExpBackward0", "SinBackward0"]]


def test_retain_grad_forces_boundary():
    x = leaf()
    s = ew("sin", x)
    e = ew("exp", s)
    t = ew("tanh", e)
    e._retained = {0: lambda: None}
    assert groups_of(t) == [["ExpBackward0", "SinBackward0"]]


def test_post_hook_excludes_node():
    x = leaf()
    s = ew("sin", x)
    e = ew("exp", s)
    t = ew("neg", ew("tanh", e))
    e.register_hook(lambda gi, go: None)
    assert groups_of(t) == [["NegBackward0", "TanhBackward0"]]


def test_capture_forces_boundary_and_needed_prunes():
    x = leaf()
    s = ew("sin", x)
    e = ew("exp", s)
    t = ew("tanh", ew("neg", e))
    # autograd.grad(t, e_output): the gradient arriving at e is captured; below e nothing runs
    g = plan(task_for(t, capture=[e]))
    assert [[m.name() for m in gr.members] for gr in g] == [["TanhBackward0", "NegBackward0"]]


def test_unwanted_outputs_are_marked():
    x, a = leaf(), leaf()
    m = ew("mul", x, a)
    t = ew("tanh", m)
    task = task_for(t, capture=[x._accumulator()])
    [g] = plan(task)
    assert g.wanted == [True, False]


def test_root_is_never_interior():
    x = leaf()
    s = ew("sin", x)
    t = ew("tanh", s)
    assert groups_of(t, s) == []


def test_create_graph_skips_planning():
    called = []
    old = engine.plan_hook
    engine.plan_hook = lambda task: called.append(task)
    try:
        x = jitgrad.tensor([0.5, 1.0], requires_grad=True)
        y = jitgrad.sin(x).sum()
        (gx,) = jitgrad.autograd.grad(y, x, create_graph=True)
        assert called == []
        y2 = jitgrad.sin(x).sum()
        y2.backward()
        assert len(called) == 1
    finally:
        engine.plan_hook = old


def test_max_group_size():
    x = leaf()
    y = x
    for _ in range(10):
        y = ew("sin", y)
    sizes = [len(g.members) for g in plan(task_for(y), max_size=4)]
    assert sizes == [4, 4, 2]


def test_planner_imports_and_runs_without_numba():
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(REPO, 'tests', 'fusion')!r})
        import test_planner as t
        x = t.leaf()
        root = t.ew("tanh", t.ew("add", t.ew("mul", t.ew("sin", x), None), None))
        assert len(t.plan(t.task_for(root))) == 1
        t.test_broadcast_edge_ends_group()
        assert "numba" not in sys.modules, "planning imported numba"
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.differentiable))
def test_every_differentiable_op_joins_groups(name):
    op = OPS[name]
    x = leaf()
    inner = ew("sin", x)
    args = [inner] + [leaf() for _ in op.inputs[1:]]
    mid = ew(name, *args)
    top = ew("exp", mid)
    [g] = plan(task_for(top))
    assert g.members == [top, mid, inner]
