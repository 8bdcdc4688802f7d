"""``.grad._version`` as PyTorch's AccumulateGrad leaves it: a gradient it steals keeps its
version, one it copies into a fresh tensor laid out like a dense leaf (clone_obey_contract's
``copy_``) is at 1, accumulation in place bumps it, ``autograd.grad`` results are untouched.
Each program runs on both libraries and compares the versions it reads."""
from __future__ import annotations

import warnings

import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")


def _sum_backward(lib):
    x = lib.ones(3, requires_grad=True)
    x.sum().backward()
    out = [x.grad._version]
    x.sum().backward()  # accumulates in place
    out.append(x.grad._version)
    (x * 2).sum().backward()
    out.append(x.grad._version)
    return out


def _stolen(lib):
    y = lib.ones(3, requires_grad=True)
    (y * 3).sum().backward()
    u = lib.ones(3, requires_grad=True)
    u.exp().sum().backward()
    return [y.grad._version, u.grad._version]


def _retain_graph(lib):
    z = lib.ones(3, requires_grad=True)
    loss = (z * z).sum()
    loss.backward(retain_graph=True)
    first = z.grad._version
    loss.backward()
    return [first, z.grad._version]


def _autograd_grad(lib):
    w = lib.ones(3, requires_grad=True)
    g1, = lib.autograd.grad((w * 2).sum(), w)
    g2, = lib.autograd.grad(w.sum(), w)
    return [g1._version, g2._version, w.grad is None]


def _two_dims(lib):
    v = lib.ones(2, 3, requires_grad=True)
    v.sum().backward()
    m = lib.ones(2, 2, requires_grad=True)
    (m @ m).sum().backward()
    return [v.grad._version, m.grad._version]


def _reset_zero_and_assign(lib):
    u = lib.ones(3, requires_grad=True)
    (u * 1).sum().backward()
    u.grad = None
    (u * 1).sum().backward()
    out = [u.grad._version]
    u.grad.zero_()
    out.append(u.grad._version)
    (u * 1).sum().backward()
    out.append(u.grad._version)
    p = lib.ones(3, requires_grad=True)
    p.grad = lib.zeros(3)
    out.append(p.grad._version)
    (p * 2).sum().backward()
    out.append(p.grad._version)
    return out


def _user_gradient(lib):
    s = lib.ones(3, requires_grad=True)
    g = lib.ones(3)
    s.backward(g)
    return [s.grad._version, s.grad is g, g._version]


def _create_graph(lib):
    q = lib.ones(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (both warn about the reference cycle)
        (q * 2).sum().backward(create_graph=True)
        first = q.grad._version
        (q * 2).sum().backward(create_graph=True)
    return [first, q.grad._version]


def _index(lib):
    r = lib.ones(3, requires_grad=True)
    (r[0] + r[1]).backward()
    return [r.grad._version]


@pytest.mark.parametrize("program", [_sum_backward, _stolen, _retain_graph, _autograd_grad,
                                     _two_dims, _reset_zero_and_assign, _user_gradient,
                                     _create_graph, _index])
def test_grad_version(program):
    assert program(jg) == program(torch)


# A leaf's hook result: PyTorch stores it itself (its .grad keeps the result's version and
# memory) when nothing else holds it and it is laid out like the leaf, and copies it
# (clone_obey_contract: version 1 for a dense leaf) when the hook or the user keeps it or its
# layout is unlike the leaf's. Both libraries run each program; layouts are channels-last and
# contiguous leaves, the result laid out one way or the other.
_KEPT = []
HOOKS = {
    "temporary_like_leaf": lambda lib: lambda g: g.to(memory_format=lib.channels_last) * 1,
    "temporary_contiguous": lambda lib: lambda g: g.contiguous() * 1,
    "kept_by_hook": lambda lib: lambda g: _KEPT.append(g.to(memory_format=lib.channels_last)
                                                       * 1) or _KEPT[-1],
    "identity": lambda lib: lambda g: g,
    "identity_kept_by_hook": lambda lib: lambda g: _KEPT.append(g) or g,
    "written_in_place": lambda lib: lambda g: (g.to(memory_format=lib.channels_last) * 1).mul_(2),
    "view_of_temporary": lambda lib: lambda g: (g.to(memory_format=lib.channels_last) * 1)[:],
}


def _hooked_leaf(lib, hook, channels_last, device="cpu"):
    t = lib.ones(2, 3, 4, 5)
    if channels_last:
        t = t.to(memory_format=lib.channels_last)
    x = t.to(device).requires_grad_()
    x.register_hook(HOOKS[hook](lib))
    (x * 2).sum().backward()
    out = [x.grad._version, x.grad.stride(), x.grad.sum().item()]
    _KEPT.clear()
    return out


@pytest.mark.parametrize("channels_last", [True, False], ids=["channels_last", "contiguous"])
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hook_result_stolen_or_copied(hook, channels_last):
    assert _hooked_leaf(jg, hook, channels_last) == _hooked_leaf(torch, hook, channels_last)


def _hook_returns_users_detach(lib, device="cpu"):
    # stored itself, the gradient shares the user's memory and version counter
    u = lib.ones(2, 3, 4, 5, device=device).to(memory_format=lib.channels_last) * 1
    x = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last).to(device).requires_grad_()
    x.register_hook(lambda g: u.detach())
    (x * 2).sum().backward()
    first = x.grad._version
    with lib.no_grad():
        u.add_(1)
    return [first, x.grad._version, x.grad.sum().item(), x.grad.stride()]


def test_hook_result_detached_from_users_tensor_is_stored_itself():
    assert _hook_returns_users_detach(jg) == _hook_returns_users_detach(torch)


def _stolen_then_accumulated(lib):
    x = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last).requires_grad_()
    x.register_hook(lambda g: g.to(memory_format=lib.channels_last) * 1)
    (x * 2).sum().backward()
    (x * 3).sum().backward()  # in place into the stolen gradient: one bump
    return [x.grad._version, x.grad.stride(), x.grad.sum().item()]


def test_hook_result_stolen_then_accumulated():
    assert _stolen_then_accumulated(jg) == _stolen_then_accumulated(torch)
