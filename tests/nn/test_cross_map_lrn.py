"""nn.CrossMapLRN2d against PyTorch's run in the same test (values, gradients, node name,
repr, errors) and float64 finite differences of its gradient."""
import numpy as np
import pytest

import jitgrad
from tests._parity import agree

torch = pytest.importorskip("torch")

CASES = [
    ((2, 5, 3, 4), (3, 1e-2, 0.75, 1.0)),
    ((1, 7, 2, 2), (5, 0.5, 0.3, 2.0)),   # pre_pad < channels: the window's subtraction branch
    ((2, 3, 2, 3), (4, 1e-1, 0.75, 1)),   # an even size
    ((2, 2, 2, 2), (6, 1.0, 1.0, 1.0)),   # a window wider than the channels
    ((1, 4, 1, 1), (2, 2.0, 1.5, 0.5)),
]


def _run(lib, x, g, args):
    t = lib.tensor(x, requires_grad=True)
    m = lib.nn.CrossMapLRN2d(*args)
    y = m(t)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy(), y.grad_fn.name(), repr(m)


@pytest.mark.parametrize("shape,args", CASES)
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-6), (np.float64, 1e-14)])
def test_values_and_gradients_match_torch(shape, args, dtype, rtol):
    # the same ops in PyTorch's order: bit-equal except where pow(scale, -beta) differs from
    # PyTorch's vectorized pow in the last ulp (beta = 0.3 here)
    rng = np.random.default_rng(len(shape) + args[0])
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    mine, ref = _run(jitgrad, x, g, args), _run(torch, x, g, args)
    np.testing.assert_allclose(mine[0], ref[0], rtol=rtol, atol=0)
    np.testing.assert_allclose(mine[1], ref[1], rtol=rtol, atol=rtol * np.abs(ref[1]).max())
    assert mine[0].dtype == ref[0].dtype and mine[2:] == ref[2:]
    assert mine[2] == "CrossMapLRN2dBackward"


def _numpy_forward(x, size, alpha, beta, k):
    """Lua-torch's window, written directly: channel c sums the squares of channels
    [c - pre_pad + 1, c + pre_pad - 1] (clipped), plus channel 0 always: the running sum
    removes a leaving channel only past c = pre_pad, so channel 0 is never removed."""
    c_n = x.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    sq = x.astype(np.float64) ** 2
    scale = np.zeros_like(sq)
    for c in range(c_n):
        lo = max(c - pre_pad + 1, 0)
        hi = min(c + pre_pad - 1, c_n - 1)
        scale[:, c] = sq[:, lo:hi + 1].sum(1) + (sq[:, 0] if lo > 0 else 0)
    return x * (scale * (alpha / size) + k) ** -beta


@pytest.mark.parametrize("shape,args", CASES)
def test_forward_against_numpy(shape, args):
    # PyTorch's backward is not the exact derivative of this forward (its window is symmetric,
    # the forward's is not: torch.autograd.gradcheck fails on PyTorch's own module), so
    # gradients are compared with PyTorch's only, values also with this reference
    x = np.random.default_rng(3).standard_normal(shape)
    got = jitgrad.nn.CrossMapLRN2d(*args)(jitgrad.tensor(x)).numpy()
    np.testing.assert_allclose(got, _numpy_forward(x, *args), rtol=1e-12, atol=0)


@pytest.mark.parametrize("run", [
    lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(3, 2, 2)),
    lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 0, 2)),
    lambda lib: repr(lib.nn.CrossMapLRN2d(4, alpha=0.5, beta=2, k=3)),
    lambda lib: lib.nn.CrossMapLRN2d(3)(lib.arange(24.0).reshape(1, 4, 2, 3)),
])
def test_module_cases(run):
    agree(run)


def test_size_one_backward_and_double_backward_errors():
    def backward_size_one(lib):
        x = lib.ones(1, 3, 2, 2, requires_grad=True)
        lib.nn.CrossMapLRN2d(1)(x).sum().backward()

    def double_backward(lib):
        x = lib.ones(1, 3, 2, 2, requires_grad=True)
        y = lib.nn.CrossMapLRN2d(3)(x)
        return lib.autograd.grad(y.sum(), x, create_graph=True)
    agree(backward_size_one)
    agree(double_backward)
