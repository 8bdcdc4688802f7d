"""Activations bit for bit with PyTorch's CPU kernels (float32/float64, forward and input
gradient), over sizes that hit ATen's vector body (2 * lanes per step) and its scalar tail; for
the ones not made exact, the ulp distance to PyTorch is bounded instead.

Expected values come from PyTorch run on the same inputs in the same test."""
import numpy as np
import pytest

import jitgrad
from tests._parity import assert_same_bits, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

SIZES = (1, 7, 16, 31, 32, 33, 47, 1000, 4099)  # 16, 47: one vector + a tail
DTYPES = ("float32", "float64")

# name -> fn(F, x): the same call under torch.nn.functional and jitgrad.nn.functional
EXACT = {
    "silu": lambda F, x: F.silu(x),
    "elu": lambda F, x: F.elu(x),
    "elu_alpha": lambda F, x: F.elu(x, 0.5),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x),
    "celu_alpha": lambda F, x: F.celu(x, 2.0),
    "mish": lambda F, x: F.mish(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "relu6": lambda F, x: F.relu6(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x),
    "softsign": lambda F, x: F.softsign(x),
    "hardshrink": lambda F, x: F.hardshrink(x),
    "softshrink": lambda F, x: F.softshrink(x),
    "softshrink_lambd": lambda F, x: F.softshrink(x, 1.5),
    # in place: elu_/selu_/celu_ differentiate through their result (ATen's is_result form)
    "elu_": lambda F, x: F.elu(x * 1, inplace=True),
    "selu_": lambda F, x: F.selu(x * 1, inplace=True),
    "celu_": lambda F, x: F.celu(x * 1, 2.0, inplace=True),
    "silu_": lambda F, x: F.silu(x * 1, inplace=True),
    "mish_": lambda F, x: F.mish(x * 1, inplace=True),
}


def _run(lib, fn, x, g):
    t = lib.tensor(x, requires_grad=True)
    y = fn(lib.nn.functional, t)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


def _inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4).astype(dtype)
    if n > 8:  # the edges: zeros of both signs, a NaN, and values where exp saturates
        x[:8] = np.array([0.0, -0.0, np.nan, 100.0, -100.0, 25.0, -20.0, 3.0], dtype)
    return x, rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(EXACT))
def test_bitwise_forward_and_grad(name, dtype):
    """Bit for bit against the PyTorch build running here (AVX-512 or AVX2: jitgrad follows
    its vector width, backends.cpu_capability)."""
    fn = EXACT[name]
    for k, n in enumerate(SIZES):
        x, g = _inputs(n, dtype, k)
        want_y, want_g = _run(torch, fn, x, g)
        got_y, got_g = _run(jitgrad, fn, x, g)
        assert_same_bits(got_y, want_y, f"{name} forward n={n}")
        assert_same_bits(got_g, want_g, f"{name} grad n={n}")


def test_sigmoid_grad_order():
    """sigmoid's backward is ATen's grad * (1 - y) * y: bit for bit given the same forward."""
    for dtype in DTYPES:
        x, g = _inputs(4096, dtype, 1)
        want_y, want_g = _run(torch, lambda F, t: F.sigmoid(t), x, g)
        got_y, got_g = _run(jitgrad, lambda F, t: F.sigmoid(t), x, g)
        assert_same_bits(got_y, want_y, "sigmoid forward (vector lanes only)")
        assert_same_bits(got_g, want_g, "sigmoid grad")


def _ulps(a, b):
    """Distance between a and b in units in the last place (of their dtype, at the larger
    magnitude)."""
    scale = np.spacing(np.maximum(np.abs(a), np.abs(b))).astype(np.float64)
    d = np.abs(a.astype(np.float64) - b.astype(np.float64)) / scale
    return np.where(np.isnan(a) & np.isnan(b), 0.0, d)


# not exact: torch.tanh (MKL's), sigmoid's scalar tail (glibc's exp: the registry's kernels
# have no tail); measured bounds + margin. (softplus and gelu: tests/test_gelu_softplus_bits.py)
BOUNDED = {
    "tanh": (lambda F, x: F.tanh(x), 2, 3),
    "sigmoid": (lambda F, x: F.sigmoid(x), 2, 3),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_ulp_bound(name, dtype):
    fn, fwd_ulps, grad_ulps = BOUNDED[name]
    for k, n in enumerate(SIZES):
        x, g = _inputs(n, dtype, k)
        x[np.isnan(x)] = 0.5
        want_y, want_g = _run(torch, fn, x, g)
        got_y, got_g = _run(jitgrad, fn, x, g)
        fwd = _ulps(got_y, want_y).max()
        assert fwd <= fwd_ulps, f"{name} forward n={n}: {fwd} ulp"
        # the gradient's error is relative to the terms it is made of: measured against the
        # larger of |grad| and |g| (the incoming gradient)
        scale = np.spacing(np.maximum(np.abs(want_g), np.abs(g)))
        grad = (np.abs(got_g.astype(np.float64) - want_g) / scale).max()
        assert grad <= grad_ulps, f"{name} grad n={n}: {grad} ulp"


@pytest.mark.parametrize("name", ["silu", "elu", "selu", "celu_alpha", "mish", "logsigmoid",
                                  "hardswish", "elu_", "celu_", "silu_", "mish_"])
def test_create_graph_matches_torch(name):
    """With create_graph the gradients are recorded in differentiable ops (PyTorch's
    infinitely-differentiable formulas): first and second derivatives as PyTorch's, node names
    too."""
    fn = EXACT[name]
    x0 = np.random.default_rng(3).standard_normal(50) * 3
    res = []
    for lib in (torch, jitgrad):
        x = lib.tensor(x0, requires_grad=True)
        y = fn(lib.nn.functional, x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        res.append((g.detach().numpy(), gg.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-8, atol=1e-10)
    assert res[1][2] == res[0][2]


@pytest.mark.parametrize("eps", [None, 0.0, 0.01, 0.2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_logit_backward_kernel_bits(dtype, eps):
    """activation_kernels.logit_backward is ATen's logit_backward bit for bit: its vector
    lambda and its scalar tail differ at x == -0.0 (dy / -0.0 against dy * inf), so -0.0, 0, 1
    and out-of-range values are placed at random over sizes with and without a tail."""
    from jitgrad.nn.functional import activation_kernels as K
    rng = np.random.default_rng(7)
    special = np.array([0.0, -0.0, 1.0, -0.5, 1.5, np.nan, 1e-3, 0.999], dtype)
    for n in list(range(1, 40)) + [100, 4099]:
        x = rng.random(n).astype(dtype)
        idx = rng.integers(0, n, min(n, 12))
        x[idx] = special[rng.integers(0, special.size, idx.size)]
        g = rng.standard_normal(n).astype(dtype)
        g[rng.integers(0, n, 2)] = 0.0
        want = torch.ops.aten.logit_backward(torch.from_numpy(g), torch.from_numpy(x),
                                             eps).numpy()
        assert_same_bits(K.logit_backward(g, x, eps), want, f"logit_backward n={n}")
