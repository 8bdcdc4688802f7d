"""Kernel launches of a backward pass, counted with jitgrad.autograd.profile (tinygrad-style)."""
from __future__ import annotations

from fusion_helpers import fusion

import jitgrad
from jitgrad.autograd import profile


def _x(shape=(8,)):
    return jitgrad.randn(shape, requires_grad=True)


def test_tanh_sin_chain_is_one_launch():
    x = _x()
    y = jitgrad.tanh(jitgrad.sin(x) * 2 + 1)
    with fusion(True), profile() as p:
        y.backward(jitgrad.ones(8))
    assert p.kernel_launches == 1
    assert p.fused_groups == 1
    assert p.fused_nodes == 4


def test_tanh_sin_chain_scalar_loss_is_one_launch():
    x = _x()
    y = jitgrad.tanh(jitgrad.sin(x) * 2 + 1).sum()
    with fusion(True), profile() as p:
        y.backward()
    assert p.kernel_launches == 1  # SumBackward is a broadcast view: no kernel


def test_unfused_is_one_launch_per_node():
    x = _x()
    y = jitgrad.tanh(jitgrad.sin(x) * 2 + 1)
    with fusion(False), profile() as p:
        y.backward(jitgrad.ones(8))
    # tanh, mul and sin each launch their VJP; AddBackward0 hands its gradient on (no kernel)
    assert p.kernel_launches == 3
    assert p.fused_groups == 0


def test_chain_broken_by_sum_dim0_is_two_groups_plus_the_reduction():
    x = _x((4, 8))
    y = jitgrad.exp(jitgrad.sin(x) * 2).sum(dim=0)
    z = jitgrad.tanh(y * 3 + 1)
    executed = []
    with fusion(True), profile() as p:
        from jitgrad.autograd import engine
        old = engine._release
        engine._release = lambda task: (executed.extend(task.executed), old(task))
        try:
            z.backward(jitgrad.ones(8))
        finally:
            engine._release = old
    assert p.fused_groups == 2
    assert p.kernel_launches == 2  # the reduction's VJP is an expand (a view, no kernel)
    names = [n.name() for n in executed]
    assert names.count("FusedBackward") == 2
    assert "SumBackward1" in names
    assert names.index("SumBackward1") == 1  # group, then the reduction, then group


def test_arith_workload_is_one_launch():
    x, a = _x((64,)), _x((64,))
    y = x * a
    y = y + x
    y = y * y
    y = y - a
    y = jitgrad.relu(y)
    y = y * 0.5
    y = y + x
    with fusion(True), profile() as p:
        y.backward(jitgrad.ones(64))
    assert p.kernel_launches == 1
    assert p.fused_nodes == 7


def test_env_switch_and_setter():
    from jitgrad.autograd import is_fusion_enabled, set_fusion_enabled
    old = is_fusion_enabled()
    try:
        set_fusion_enabled(False)
        assert not is_fusion_enabled()
        x = _x()
        y = jitgrad.tanh(jitgrad.sin(x) * 2)
        with profile() as p:
            y.sum().backward()
        assert p.fused_groups == 0 and p.kernel_launches == 3
    finally:
        set_fusion_enabled(old)


def test_profile_is_live_and_nests():
    x = _x()
    with fusion(True), profile() as outer:
        y = jitgrad.tanh(jitgrad.sin(x) * 2)
        launched_forward = outer.kernel_launches
        with profile() as inner:
            y.sum().backward()
    assert launched_forward == 3
    assert inner.kernel_launches == 1
    assert outer.kernel_launches == 4
    assert outer.fused_groups == inner.fused_groups == 1
    assert "kernel_launches=1" in repr(inner)
