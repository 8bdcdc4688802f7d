"""A fused group hands on the Tensors the unfused pass would (jitgrad/fusion/handoff.py): the
incoming gradient itself where an add passes it out of the group, one shared Tensor where two
edges would get one, that tensor's version after the buffers' in-place adds, and a leaf's copy
where a member's buffer would still hold its gradient. Each scenario runs fused in jitgrad
(asserted) and is compared with PyTorch: values, ``_version``, strides, storage sharing."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import check_observations

import jitgrad
from jitgrad.autograd import profile

pytest.importorskip("torch", reason="needs PyTorch")

_A = np.arange(12.0).reshape(3, 4) / 7 - 0.5
_B = np.arange(12.0).reshape(3, 4)[::-1].copy() / 5 - 1
_C = np.cos(np.arange(12.0)).reshape(3, 4)
_W = np.sin(np.arange(16.0)).reshape(4, 4)


def _leaves(lib):
    return [lib.tensor(a, requires_grad=True) for a in (_A, _B, _C)]


def _mm(lib, t):  # a gradient from MmBackward: dense and held by nothing else
    return (t @ lib.tensor(_W)).sum()


# loss builders: lib, leaves -> scalar
_SCENARIOS = {
    # the incoming gradient (sole, dense: from a matmul) meets another gradient in x's buffer
    "residual_head_mm": lambda lib, x, b, c: _mm(lib, x * b + x),
    "residual_head_sum": lambda lib, x, b, c: (x * b + x).sum(),
    "residual_inside": lambda lib, x, b, c: ((x * b).tanh() + x).exp().sum(),
    "add_of_add": lambda lib, x, b, c: (x + (b + c)).exp().sum(),
    "add_of_add_mm": lambda lib, x, b, c: _mm(lib, x + (b + c)),
    "add_inside_mm": lambda lib, x, b, c: _mm(lib, (x.exp() + b).sin()),
    "sub_self_mm": lambda lib, x, b, c: _mm(lib, (x * 2.0 - b).exp()),
    "arith_chain": lambda lib, x, b, c: ((x * b + c) * b - x).exp().sum(),
    "three_times": lambda lib, x, b, c: (x + x + x).exp().sum(),
    "shared_then_summed": lambda lib, x, b, c: _mm(lib, ((x + b) * 2.0 + (x + b)).tanh()),
}


def _grads(rec, leaves):
    for name, t in zip("xbc", leaves):
        g = t.grad
        rec(f"{name}.grad", g)
        if g is not None:
            rec(f"{name}.grad strides", list(g.stride()))
    ptrs = [t.grad.data_ptr() for t in leaves if t.grad is not None]
    rec("grads sharing storage", [i for i, p in enumerate(ptrs) if ptrs.count(p) > 1])


def _assert_fused(build):
    leaves = _leaves(jitgrad)
    with profile() as p:
        build(jitgrad, *leaves).backward()
    assert p.fused_groups >= 1


@pytest.mark.parametrize("name", sorted(_SCENARIOS))
def test_leaf_gradients(name):
    build = _SCENARIOS[name]
    _assert_fused(build)

    def run(lib, rec):
        leaves = _leaves(lib)
        build(lib, *leaves).backward()
        _grads(rec, leaves)
    check_observations(run, name)


@pytest.mark.parametrize("name", sorted(_SCENARIOS))
def test_second_pass_adds_into_the_first(name):
    """retain_graph: the first pass's ``.grad`` tensors must alias nothing the second writes."""
    build = _SCENARIOS[name]

    def run(lib, rec):
        leaves = _leaves(lib)
        loss = build(lib, *leaves)
        loss.backward(retain_graph=True)
        first = [t.grad for t in leaves]
        rec("first", [g.clone() for g in first])
        loss.backward()
        _grads(rec, leaves)
        rec("kept", [t.grad is g for t, g in zip(leaves, first)])
    check_observations(run, name)


# x's hooked leaf runs while AddBackward0(b, c) still holds x's gradient, so it copies: the
# fused node keeps that tensor referenced for it, for the whole pass (handoff.py), so c, which
# unfused steals the same tensor after AddBackward0 ran, copies it too (version 1, not 0)
_HELD_TOO_LONG = pytest.mark.xfail(strict=True, reason=(
    "known gap: with a hook on a leaf inside a fused group, jitgrad keeps that leaf's gradient "
    "referenced until the whole group is done, so another leaf copies it (version 1) where "
    "PyTorch steals it (version 0); values agree"))


@pytest.mark.parametrize("name", [pytest.param("add_of_add", marks=_HELD_TOO_LONG),
                                  "residual_inside", "add_inside_mm"])
def test_hooks_see_what_the_unfused_pass_hands_on(name):
    """(The hooks keep no reference: a leaf hook that keeps its gradient makes PyTorch copy it,
    and jitgrad's AccumulateGrad decides before its hooks run, fused or not.)"""
    build = _SCENARIOS[name]

    def run(lib, rec):
        leaves = _leaves(lib)
        seen = {}
        for n, t in zip("xbc", leaves):
            t.register_hook(lambda g, n=n: seen.__setitem__(
                n, (g.clone(), g._version, g.data_ptr())))
        build(lib, *leaves).backward()
        for n in sorted(seen):
            rec(f"hook {n}", seen[n][0])
            rec(f"hook {n} version", seen[n][1])
        ptrs = {n: v[2] for n, v in seen.items()}
        rec("hooks sharing", sorted(n for n in ptrs if list(ptrs.values()).count(ptrs[n]) > 1))
        rec("grad is hooked", [t.grad.data_ptr() == ptrs.get(n) for n, t in zip("xbc", leaves)
                               if t.grad is not None])
        _grads(rec, leaves)
    check_observations(run, name)


@pytest.mark.parametrize("name", ["add_of_add", "add_of_add_mm", "arith_chain"])
def test_autograd_grad_returns_the_shared_tensor(name):
    build = _SCENARIOS[name]

    def run(lib, rec):
        leaves = _leaves(lib)
        gs = lib.autograd.grad(build(lib, *leaves), leaves)
        for n, g in zip("xbc", gs):
            rec(f"d{n}", g)
        ptrs = [g.data_ptr() for g in gs]
        rec("sharing", [i for i, p in enumerate(ptrs) if ptrs.count(p) > 1])
    check_observations(run, name)


def test_users_gradient_handed_through_a_fused_add():
    """``backward(go)`` into a group headed by an add: the leaf must copy the user's tensor."""
    def run(lib, rec):
        x, b, _ = _leaves(lib)
        go = lib.tensor(_C * 3)
        (x * 1.5 + b).backward(go)
        go.mul_(2.0)
        _grads(rec, [x, b])
        rec("b.grad is go", b.grad.data_ptr() == go.data_ptr())
    check_observations(run)
