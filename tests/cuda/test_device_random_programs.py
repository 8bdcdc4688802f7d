"""Random programs on CUDA agree with the CPU path (issue 11's hardware check, as a test):
seeded random chains of elementwise ops (broadcasting), reductions with random dims (0-d
tensors included: dim 0 / -1 and keepdim), softmax, matmul, slicing, transposes, views of
split pieces — forward values and gradients of every input, float32 and float64.

The simulator runs ``N_SIM`` programs; the ``gpu``-marked test runs ``N_GPU`` on hardware.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_random_programs.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

N_SIM, N_GPU = 12, 150

UNARY = ["exp", "tanh", "sigmoid", "abs", "neg", "relu", "sin", "square", "rsqrt_abs1p"]
BINARY = ["add", "mul", "sub", "div_safe", "maximum", "minimum"]


def _unary(name, t):
    if name == "relu":
        return jg.relu(t)
    if name == "square":
        return t * t
    if name == "rsqrt_abs1p":
        return (t.abs() + 1).rsqrt()
    return getattr(t, name)()


def _binary(name, a, b):
    if name == "div_safe":
        return a / (b.abs() + 0.5)
    return getattr(jg, name)(a, b)


def _program(seed):
    """A program as a function of its inputs, built from a seeded RNG (same ops on both
    devices), plus the input arrays."""
    rng = np.random.default_rng(seed)
    shapes = [(), (3,), (2, 3), (4, 1, 3), (2, 3, 4)]
    inputs = [rng.standard_normal(shapes[rng.integers(len(shapes))]) for _ in range(2)]
    steps = []
    for _ in range(rng.integers(3, 7)):
        kind = rng.choice(["unary", "binary", "reduce", "softmax", "shape", "matmul"])
        steps.append((kind, rng.choice(UNARY), rng.choice(BINARY), int(rng.integers(0, 1 << 30)),
                      bool(rng.integers(2))))

    def run(a, b):
        x, y = a, b
        for kind, un, bi, r, flag in steps:
            if kind == "unary":
                x = _unary(un, x)
            elif kind == "binary":
                try:
                    x = _binary(bi, x, y)
                except RuntimeError:  # shapes that do not broadcast: reduce y first
                    x = _binary(bi, x, y.sum())
            elif kind == "reduce":
                dims = [None] + list(range(-max(x.ndim, 1), max(x.ndim, 1)))
                d = dims[r % len(dims)]
                op = ("sum", "mean", "amax", "logsumexp")[r % 4]
                if d is None:
                    x = getattr(x, op)() if op != "logsumexp" else x.logsumexp(0)
                else:
                    x = getattr(x, op)(d, keepdim=flag)
            elif kind == "softmax":
                x = x.softmax(r % max(x.ndim, 1) if x.ndim else 0)
            elif kind == "shape" and x.ndim >= 1 and x.shape[-1] >= 2:
                piece = x.split(max(1, x.shape[-1] // 2), dim=-1)[0]
                x = piece.reshape(-1).view(-1, 1).t() if flag else piece.transpose(0, -1)
            elif kind == "matmul" and x.ndim >= 1:
                w = jg.linspace(-1.0, 1.0, x.shape[-1] * 2, dtype=x.dtype, device=x.device)
                x = x @ w.reshape(x.shape[-1], 2)
        return x.sum() + (x * x).mean()

    return run, inputs


def _check(seed, dtype, rtol):
    run, inputs = _program(seed)
    outs = {}
    for dev in ("cpu", "cuda"):
        ts = [jg.tensor(a.astype(dtype), device=dev, requires_grad=True) for a in inputs]
        out = run(*ts)
        grads = jg.autograd.grad(out, ts, allow_unused=True)
        outs[dev] = (out.item(), [None if g is None else g.cpu().numpy() for g in grads])
    (o_cpu, g_cpu), (o_dev, g_dev) = outs["cpu"], outs["cuda"]
    np.testing.assert_allclose(o_dev, o_cpu, rtol=rtol, atol=rtol, err_msg=f"seed {seed}")
    for a, b in zip(g_dev, g_cpu):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"seed {seed}")


@pytest.mark.parametrize("seed", range(N_SIM))
def test_random_programs_agree_with_cpu(device, seed):
    _check(seed, np.float64, 1e-10)
    _check(seed + 10_000, np.float32, 2e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("first", range(N_SIM, N_GPU, 10))
def test_many_random_programs_agree_with_cpu_on_a_gpu(device, first):
    # in chunks of 10 programs, so that pytest -n spreads them: each program compiles its own
    # kernels, ~20 s per program and dtype on an H200 (2026-11-27); the first N_SIM run above
    if device.simulator_active():
        pytest.skip(f"{N_GPU} programs are for hardware; the simulator runs {N_SIM} above")
    for seed in range(first, min(first + 10, N_GPU)):
        _check(seed, np.float64, 1e-10)
        _check(seed + 10_000, np.float32, 2e-4)
