"""F.gelu (approximate 'none' and 'tanh') and F.softplus bit for bit with PyTorch's CPU kernels,
forward and input gradient, float32/float64, at 1 and 2 threads, over sizes that end in every
scalar tail length of ATen's vector loop (2 x 64-byte vectors per step) and past gelu's
16384-element threshold (its grain becomes numel / threads) and the 32768-element grain.

float32 gelu(approximate='none') of a contiguous tensor of more than one element is oneDNN's
eltwise_gelu_erf in PyTorch (math/_onednn_gelu.py), of one element ATen's scalar lambda: both
checked. Expected values come from PyTorch run on the same inputs in the same test, float64
finite differences, or NumPy/math."""
import math

import numpy as np
import pytest

import jitgrad
from tests._parity import assert_same_bits, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

SIZES = tuple(range(1, 70)) + (127, 128, 129, 1000, 4095, 4096, 4097, 4099, 5000)
BIG = (16385, 20000, 40001)  # gelu's numel / threads grain; two parfor chunks

CASES = {
    "gelu_tanh": (lambda F, x: F.gelu(x, approximate="tanh"), ("float32", "float64")),
    "gelu": (lambda F, x: F.gelu(x), ("float32", "float64")),
    "softplus": (lambda F, x: F.softplus(x), ("float32", "float64")),
    "softplus_beta": (lambda F, x: F.softplus(x, 2.0, 5.0), ("float32", "float64")),
    "softplus_small_beta": (lambda F, x: F.softplus(x, 0.5, 3.0), ("float32", "float64")),
}


def _run(lib, fn, x, g):
    t = lib.tensor(x, requires_grad=True)
    y = fn(lib.nn.functional, t)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


def _inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4).astype(dtype)
    if n > 12:  # zeros of both signs, NaN, infinities, values where exp/erf/tanh saturate
        x[:12] = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 100.0, -100.0, 25.0, -20.0,
                           2.5, 6.0, 1e-9], dtype)
    return x, rng.standard_normal(n).astype(dtype)


def _check(name, dtype, sizes):
    fn = CASES[name][0]
    for k, n in enumerate(sizes):
        x, g = _inputs(n, dtype, k)
        want_y, want_g = _run(torch, fn, x, g)
        got_y, got_g = _run(jitgrad, fn, x, g)
        assert_same_bits(got_y, want_y, f"{name} {dtype} forward n={n}")
        assert_same_bits(got_g, want_g, f"{name} {dtype} grad n={n}")


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds) in CASES.items() for d in ds])
def test_bits(threads, name, dtype):
    _check(name, dtype, SIZES)


@pytest.mark.parametrize("name,dtype", [("gelu_tanh", "float32"), ("gelu", "float64"),
                                        ("gelu", "float32"), ("softplus_beta", "float64")])
def test_bits_past_the_grain(threads, name, dtype):
    _check(name, dtype, BIG)


def test_float32_gelu_one_element_is_atens_kernel():
    # one element: PyTorch skips oneDNN (numel <= 1) and runs ATen's scalar lambda (glibc erff)
    for k, v in enumerate((0.3, -1.7, 4.2, -0.0, 1e-3, -7.5)):
        x = np.array([v], np.float32)
        g = np.array([0.5 + k], np.float32)
        want = _run(torch, lambda F, t: F.gelu(t), x, g)
        got = _run(jitgrad, lambda F, t: F.gelu(t), x, g)
        assert_same_bits(got[0], want[0], f"gelu({v}) forward")
        assert_same_bits(got[1], want[1], f"gelu({v}) grad")


def test_float32_gelu_close_to_the_float64_reference():
    # oneDNN's approximations (a piecewise minimax erf; Abramowitz-Stegun in the gradient) are
    # float32-accurate against a float64 reference
    x = np.random.default_rng(5).standard_normal(3000).astype(np.float32) * 4
    t = jitgrad.tensor(x, requires_grad=True)
    y = jitgrad.nn.functional.gelu(t)
    y.sum().backward()
    x64 = x.astype(np.float64)
    erf = np.array([math.erf(v / math.sqrt(2)) for v in x64])
    ref_y = 0.5 * x64 * (1 + erf)
    ref_g = 0.5 * (1 + erf) + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(y.detach().numpy(), ref_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), ref_g, rtol=1e-5, atol=1e-6)


def test_float32_gelu_of_a_transposed_tensor_is_close():
    # not contiguous: PyTorch runs ATen's kernel (not oneDNN) over memory order, jitgrad over
    # the logical order, so other elements take the vector lanes' erf (Abramowitz-Stegun,
    # |error| < 1.5e-7) instead of glibc's erff: equal within that
    x = np.random.default_rng(6).standard_normal((40, 30)).astype(np.float32) * 3
    res = []
    for lib in (torch, jitgrad):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gelu(t.t())
        y.backward(lib.ones_like(y))
        res.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    fn = CASES[name][0]
    x0 = np.random.default_rng(7).standard_normal(40) * 3
    t = jitgrad.tensor(x0, requires_grad=True)
    fn(jitgrad.nn.functional, t).sum().backward()
    h = 1e-6
    f = lambda v: fn(jitgrad.nn.functional, jitgrad.tensor(v)).numpy()  # noqa: E731
    fd = (f(x0 + h) - f(x0 - h)) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_create_graph_matches_torch(name):
    """With create_graph the gradient is recorded in differentiable ops: first and second
    derivatives as PyTorch's."""
    fn = CASES[name][0]
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


def test_integer_input_raises_like_torch():
    for fn in (lambda F, x: F.gelu(x), lambda F, x: F.softplus(x)):
        msgs = []
        for lib in (torch, jitgrad):
            with pytest.raises(Exception) as e:
                fn(lib.nn.functional, lib.tensor([1, 2, 3]))
            msgs.append((type(e.value).__name__, str(e.value)))
        assert msgs[1] == msgs[0]
