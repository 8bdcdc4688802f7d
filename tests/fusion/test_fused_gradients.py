"""Fused and unfused backward agree: every differentiable registry op, generated chains, float64
and float32. Each case builds the same graph twice from the same seed, once with fusion on and
once off, and compares every leaf gradient."""
from __future__ import annotations

import pytest
from fusion_helpers import (
    AUX,
    BINARY,
    BOUNDED,
    POSITIVE,
    UNARY,
    ChainBuilder,
    apply_op,
    bounded,
    positive,
    run_both,
)

import jitgrad

DTYPES = ["float64", "float32"]


def _prep(name, y):
    if name in BOUNDED:
        y = bounded(y)
    if POSITIVE.get(name) == "a":
        y = positive(y)
    return y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_op_inside_a_chain(name, dtype):
    def build(leaf, rng):
        x = leaf((4, 6))
        y = _prep(name, jitgrad.sin(x) * 1.3 + 0.2)
        out = apply_op(name, y, None)
        # out fans out to two consumers, both inside the group
        z = jitgrad.tanh(out) * 1.5 + out
        return z, [x]

    _, _, p = run_both(build, seed=len(name), dtype=dtype)
    assert p.fused_groups == 1
    assert p.kernel_launches == 1


BINARY_KINDS = ["leaf", "bleaf", "const", "scalar_b", "scalar_a", "self", "x"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", BINARY_KINDS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_op_inside_a_chain(name, kind, dtype):
    def build(leaf, rng):
        shape = (4, 6)
        x = leaf(shape)
        watched = [x]
        y = _prep(name, jitgrad.sin(x) * 1.3 + 0.2)
        if kind == "leaf":
            other = leaf(shape)
            watched.append(other)
        elif kind == "bleaf":  # broadcast at the group's edge
            other = leaf(shape[-1:])
            watched.append(other)
        elif kind == "const":
            other = leaf(shape, requires_grad=False)
        elif kind in ("scalar_a", "scalar_b"):
            other = 0.75
        elif kind == "self":
            other = y
        else:
            other = x
        if POSITIVE.get(name) == "b" and not isinstance(other, float):
            other = positive(other)
        if name == "pow_tensor" and not isinstance(other, float):
            other = bounded(other)
        aux = {"cond": jitgrad.tensor(rng.uniform(size=shape) > 0.5)} if name == "where" else None
        if kind == "scalar_a":
            from jitgrad.ops.elementwise_call import call
            from jitgrad.ops.registry import OPS
            out = call(OPS[name], 0.75, y, **(aux or AUX.get(name, {})))
        else:
            out = apply_op(name, y, other, aux)
        z = jitgrad.tanh(out) * 1.5 + out
        return z, watched

    run_both(build, seed=len(name) + len(kind), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(40))
def test_generated_chains(seed, dtype):
    run_both(ChainBuilder(seed, length=4 + seed % 9), seed=seed, dtype=dtype, check_fused=False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(6))
def test_generated_chains_scalar_loss(seed, dtype):
    # .sum().backward(): the head's gradient is a broadcast scalar (passed as a scalar)
    def build(leaf, rng):
        y, watched = ChainBuilder(100 + seed, length=6)(leaf, rng)
        return y.sum(), watched

    run_both(build, seed=seed, dtype=dtype, grad_out=None, check_fused=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_tensor_parallel_kernel(dtype):
    # above the prange threshold the parallel kernel runs
    def build(leaf, rng):
        x, a = leaf((600, 500)), leaf((600, 500))
        y = x * a
        y = y + x
        y = y * y
        y = y - a
        y = jitgrad.relu(y)
        y = y * 0.5
        y = y + x
        return y, [x, a]

    _, _, p = run_both(build, dtype=dtype)
    assert p.fused_groups == 1 and p.kernel_launches == 1


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 0, 2), (1, 1)])
def test_degenerate_shapes(shape):
    def build(leaf, rng):
        x = leaf(shape)
        return jitgrad.tanh(jitgrad.sin(x) * 2 + 1) * x, [x]

    run_both(build, check_fused=False)
