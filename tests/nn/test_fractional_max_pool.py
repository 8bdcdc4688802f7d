"""fractional_max_pool2d/3d and FractionalMaxPool2d/3d against PyTorch run in the same test:
seeded samples (drawn as PyTorch draws them), values, indices, gradients and node names bit for
bit, NaN windows, double backward, PyTorch's errors; and an independent NumPy port of ATen's
interval rule and window loop."""
import numpy as np
import pytest

import jitgrad
from tests._parity import agree

torch = pytest.importorskip("torch")


def _pool(lib, nsp, shape, kernel, output_size=None, output_ratio=None, dtype="float32",
          seed=0, nan=False, unbatched_samples=None):
    lib.manual_seed(seed)
    x = lib.randn(*shape, dtype=getattr(lib, dtype))
    if nan:
        x = x.masked_fill(x > 0.8, float("nan"))
    x.requires_grad_(True)
    fn = getattr(lib.nn.functional, f"fractional_max_pool{nsp}d")
    y, idx = fn(x, kernel, output_size=output_size, output_ratio=output_ratio,
                return_indices=True)
    weights = lib.arange(y.numel(), dtype=x.dtype).reshape(y.shape) / 7
    y.backward(weights)
    return y, idx, x.grad, y.grad_fn.name(), idx.dtype


CASES = [
    (2, (2, 3, 9, 11), 2, (4, 5), None),
    (2, (3, 10, 10), 3, None, (0.5, 0.5)),           # unbatched, ratio
    (2, (2, 3, 9, 11), (2, 3), (5, 4), None),
    (2, (1, 2, 8, 8), 2, (7, 7), None),              # the largest output: every start
    (2, (2, 1, 6, 6), 2, 1, None),                   # one window per plane
    (3, (2, 2, 7, 8, 9), 2, (3, 4, 5), None),
    (3, (2, 9, 8, 7), (2, 3, 2), None, (0.5, 0.5, 0.5)),
    (3, (1, 3, 5, 6, 7), (1, 2, 3), (4, 4, 4), None),
]


@pytest.mark.parametrize("nsp,shape,kernel,output_size,output_ratio", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seeded_pool_matches_torch(nsp, shape, kernel, output_size, output_ratio, dtype):
    agree(lambda lib: _pool(lib, nsp, shape, kernel, output_size, output_ratio, dtype))


@pytest.mark.parametrize("nsp,shape", [(2, (2, 3, 9, 11)), (3, (1, 2, 6, 7, 8))])
def test_nan_windows_pick_the_last_nan(nsp, shape):
    agree(lambda lib: _pool(lib, nsp, shape, 3, 3, seed=4, nan=True))


def test_float16_values_and_gradients():
    # values and indices bit for bit; the gradient within half rounding: ATen adds each
    # output's gradient into the half input gradient (one rounding per add), jitgrad adds in
    # float32 and rounds once
    mine = _pool(jitgrad, 2, (1, 2, 40, 40), 3, (17, 17), dtype="float16")
    ref = _pool(torch, 2, (1, 2, 40, 40), 3, (17, 17), dtype="float16")
    np.testing.assert_array_equal(mine[0].detach().numpy(), ref[0].detach().numpy())
    np.testing.assert_array_equal(mine[1].numpy(), ref[1].numpy())
    np.testing.assert_allclose(mine[2].numpy().astype(np.float32),
                               ref[2].numpy().astype(np.float32), rtol=2e-3, atol=1e-3)


def test_given_samples_and_double_backward():
    def run(lib):
        x = lib.tensor(np.random.default_rng(1).standard_normal((2, 2, 7, 9)),
                       requires_grad=True)
        u = lib.tensor([[[0.0, 0.999], [0.5, 0.25]], [[0.9, 0.1], [0.33, 0.66]],
                        [[0.7, 0.7], [0.2, 0.2]]], dtype=lib.float64)  # more samples than batch
        y = lib.nn.functional.fractional_max_pool2d(x, (2, 3), (4, 3), _random_samples=u)
        g = lib.ones_like(y, requires_grad=True)
        gx, = lib.autograd.grad(y, x, g, create_graph=True)
        gg, = lib.autograd.grad((gx * x.detach()).sum(), g)
        return y, gx, gx.grad_fn.name(), gg
    agree(run)


def _numpy_intervals(u, n_in, n_out, k, dt):
    seq = np.empty(n_out, np.int64)
    if n_out > 1:
        alpha = dt.type(n_in - k) / dt.type(n_out - 1)
        for i in range(n_out - 1):
            seq[i] = int((dt.type(i) + u) * alpha) - int(u * alpha)
    seq[n_out - 1] = n_in - k
    return seq


def test_against_a_numpy_port_of_the_kernel():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    u = rng.random((2, 3, 2)).astype(np.float32)
    y, idx = jitgrad.nn.functional.fractional_max_pool2d(
        jitgrad.tensor(x), (3, 2), (5, 6), return_indices=True,
        _random_samples=jitgrad.tensor(u))
    for b in range(2):
        for c in range(3):
            sw = _numpy_intervals(u[b, c, 0], 10, 6, 2, np.dtype(np.float32))
            sh = _numpy_intervals(u[b, c, 1], 11, 5, 3, np.dtype(np.float32))
            for i, h0 in enumerate(sh):
                for j, w0 in enumerate(sw):
                    win = x[b, c, h0:h0 + 3, w0:w0 + 2]
                    r, s = np.unravel_index(np.argmax(win), win.shape)
                    assert y.numpy()[b, c, i, j] == win[r, s]
                    assert idx.numpy()[b, c, i, j] == (h0 + r) * 10 + w0 + s


def test_module_with_a_samples_buffer():
    def run(lib):
        lib.manual_seed(3)
        u = lib.rand(1, 2, 3)
        m = lib.nn.FractionalMaxPool3d(2, output_ratio=0.6, return_indices=True,
                                       _random_samples=u)
        x = lib.randn(1, 2, 6, 5, 7, requires_grad=True)
        y, idx = m(x)
        y.sum().backward()
        m2 = lib.nn.FractionalMaxPool2d((2, 2), output_size=3)
        z = m2(lib.randn(2, 4, 5, 6))  # samples drawn per call
        return repr(m), repr(m2), list(m.state_dict()), y, idx, x.grad, z, m.kernel_size, \
            m.output_ratio
    agree(run)


@pytest.mark.parametrize("call", [
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_ratio=(0.5, 0.5, 0.5)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_ratio=0.5),  # PyTorch's len()
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x5, 2, output_size=3),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(lib.randn(7, 8), 2, output_size=3),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 5, output_size=5),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, (2, 5), output_size=5),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(lib.randn(2, 0, 7, 8), 2, output_size=3),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(lib.randn(0, 3, 7, 8), 2, output_size=3),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(
        x4, 2, output_size=3, _random_samples=lib.rand(2, 3, 2, dtype=lib.float64)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=3,
                                                   _random_samples=lib.rand(2, 3)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=3,
                                                   _random_samples=lib.rand(1, 3, 2)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=3,
                                                   _random_samples=lib.rand(2, 4, 2)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=3,
                                                   _random_samples=lib.rand(2, 3, 3)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, (2, 2, 2), output_size=3),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=(3, 3, 3)),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 0, output_size=3, return_indices=True),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=0),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(x4, 2, output_size=-1),
    lambda lib, F, x4, x5: F.fractional_max_pool2d(
        lib.ones(2, 3, 7, 8, dtype=lib.int64), 2, output_size=3,
        _random_samples=lib.zeros(2, 3, 2, dtype=lib.int64)),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(lib.randn(3, 4, 5), 2, output_size=2),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, 2, output_size=(5, 2, 2)),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, 2, output_size=(2, 7, 7)),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, 2, output_size=(2, 6, 2)),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(lib.randn(2, 0, 6, 7, 8), 2, output_size=2),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, 2, output_size=2,
                                                   _random_samples=lib.rand(2, 3, 2)),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, (2, 2), output_size=2),
    lambda lib, F, x4, x5: F.fractional_max_pool3d(x5, 2),
    lambda lib, F, x4, x5: lib.nn.FractionalMaxPool2d(2),
    lambda lib, F, x4, x5: lib.nn.FractionalMaxPool2d(2, 3, 0.5),
    lambda lib, F, x4, x5: lib.nn.FractionalMaxPool2d(2, output_ratio=1.0),
    lambda lib, F, x4, x5: lib.nn.FractionalMaxPool3d(0, 3),
    lambda lib, F, x4, x5: lib.nn.FractionalMaxPool3d((2, -1, 2), 3),
])
def test_errors_and_edge_cases(call):
    def run(lib):
        lib.manual_seed(0)
        x4, x5 = lib.randn(2, 3, 7, 8), lib.randn(2, 3, 6, 7, 8)
        return call(lib, lib.nn.functional, x4, x5)
    agree(run)


def test_backward_after_an_inplace_change_of_the_input():
    def run(lib):
        x = lib.randn(1, 1, 6, 6, requires_grad=True)
        y = x * 1
        z = lib.nn.functional.fractional_max_pool2d(y, 2, output_size=3)
        y.add_(1)
        z.sum().backward()
    agree(run)
