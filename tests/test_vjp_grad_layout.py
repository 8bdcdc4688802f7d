"""Elementwise VJPs lay their gradients out as PyTorch's backward formulas do: those are
elementwise ops themselves (``grad * other``, ``grad * result``, ``where(cond, grad, 0)``), so
TensorIterator gives them the layout of the incoming gradient and the saved operands. A
channels-last or transposed gradient stays so through ``autograd.grad``, and a leaf laid out
like it adopts it as ``.grad`` (``_version`` 0) instead of copying it (1).

Each program runs on both libraries; the strides, versions and values are compared.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")

_rng = np.random.default_rng(1018)
_SHAPES = {"contiguous": (3, 4), "transposed": (4, 3), "permuted": (2, 3, 4),
           "channels_last": (2, 3, 4, 5), "sliced": (3, 8), "expanded_one": (3, 1, 4)}
_DATA = {k: _rng.standard_normal(s) for k, s in _SHAPES.items()}
_OTHER = {k: _rng.standard_normal(s) for k, s in _SHAPES.items()}


def _laid_out(lib, a, layout):
    t = lib.tensor(a)
    if layout == "transposed":
        return t.t()
    if layout == "permuted":
        return t.permute(2, 0, 1)
    if layout == "channels_last":
        return t.to(memory_format=lib.channels_last)
    if layout == "sliced":
        return t[:, ::2]
    return t


def _leaf(lib, layout):
    return _laid_out(lib, _DATA[layout], layout).detach().requires_grad_()


def _other(lib, layout, like):
    """The second operand: laid out like the leaf, or C-contiguous."""
    t = _laid_out(lib, _OTHER[layout], layout)
    return t if like else t.contiguous()


def _bias(lib, x):
    """A broadcast operand: one value per channel (dim 1) for rank >= 3, per column else."""
    if x.dim() >= 3:
        shape = (x.shape[1],) + (1,) * (x.dim() - 2)
    else:
        shape = (x.shape[-1],)
    return lib.tensor(np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)) \
        .requires_grad_()


_OPS = {
    "mul_like": lambda lib, x, layout: x * _other(lib, layout, True),
    "mul_contiguous": lambda lib, x, layout: x * _other(lib, layout, False),
    "mul_scalar": lambda lib, x, layout: x * 2.5,
    "exp": lambda lib, x, layout: x.exp(),
    # AddBackward0 hands the incoming gradient on itself (sum()'s expanded one included:
    # strides 0; a leaf's AccumulateGrad copies it, version 1)
    "add_broadcast": lambda lib, x, layout: x + _bias(lib, x),
    # chains: jitgrad's backward fusion runs them as one kernel (jitgrad/fusion/node.py), whose
    # gradients must come out as the unfused nodes' would
    "mul_add_chain": lambda lib, x, layout: x * 1.5 + _bias(lib, x),
    "exp_sin_mul_chain": lambda lib, x, layout: x.exp().sin() * x,
    "where": lambda lib, x, layout: lib.where(_other(lib, layout, True) > 0, x,
                                              _other(lib, layout, False)),
}


def _observe(t):
    return [t.stride(), t._version, t.detach().numpy().copy()]


def _leaf_grad(lib, op, layout):
    """``.grad`` from ``sum().backward()`` (an expanded incoming gradient: the saved operands
    decide the layout)."""
    x = _leaf(lib, layout)
    _OPS[op](lib, x, layout).sum().backward()
    return _observe(x.grad)


def _grad_like_output(lib, op, layout):
    """``autograd.grad`` with a gradient laid out like the output (``ones_like``)."""
    x = _leaf(lib, layout)
    y = _OPS[op](lib, x, layout)
    g, = lib.autograd.grad(y, x, lib.ones_like(y) * 0.5)
    return _observe(g)


def _non_leaf_grad(lib, op, layout):
    """The gradient of a non-leaf laid out like the leaf (``x * 1``) through ``op``."""
    x = _leaf(lib, layout)
    h = x * 1.0
    y = _OPS[op](lib, h, layout)
    g, = lib.autograd.grad(y.sum(), h)
    return _observe(g)


def _same(got, want):
    assert got[0] == want[0], f"strides {got[0]} != PyTorch's {want[0]}"
    assert got[1] == want[1], f"_version {got[1]} != PyTorch's {want[1]}"
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12)


_PROGRAMS = {"leaf_grad": _leaf_grad, "grad_like_output": _grad_like_output,
             "non_leaf_grad": _non_leaf_grad}


def _cases():
    for program in sorted(_PROGRAMS):
        for op in sorted(_OPS):
            for layout in sorted(_SHAPES):
                yield pytest.param(program, op, layout, id=f"{program}-{op}-{layout}")


@pytest.mark.parametrize("program, op, layout", _cases())
def test_vjp_gradient_layout_matches_pytorch(program, op, layout):
    _same(_PROGRAMS[program](jg, op, layout), _PROGRAMS[program](torch, op, layout))


def test_broadcast_operand_gradient_matches_pytorch():
    """The reduced gradient of the broadcast operand (its own shape) as PyTorch lays it out."""
    def run(lib):
        x = _leaf(lib, "channels_last")
        b = _bias(lib, x)
        (x + b).exp().sum().backward()
        return _observe(b.grad)
    _same(run(jg), run(torch))
