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
