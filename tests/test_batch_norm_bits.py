"""Batch norm on the CPU gives PyTorch's bits (float32/float64): the training and eval
forward (output, running buffers, native_batch_norm's saved mean/invstd) and the backward
(input, weight and bias gradients), for (N, C) inputs (ATen's channels-last kernels, whose
sums depend on the thread count) and (N, C, *) inputs (the per-plane kernels, serial and
parallel sides of jitgrad's threshold)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")


@pytest.fixture
def threads():
    """Sets both libraries' thread counts, restored afterwards."""
    before = (torch.get_num_threads(), jitgrad.get_num_threads())

    def set_(n):
        torch.set_num_threads(n)
        jitgrad.set_num_threads(n)
    yield set_
    torch.set_num_threads(before[0])
    jitgrad.set_num_threads(before[1])


def _differing(ours, theirs):
    """How many elements differ in their bits (NaNs alike included)."""
    a = np.ascontiguousarray(ours)
    b = np.ascontiguousarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    return int((a.view(np.uint8) != b.view(np.uint8)).reshape(a.size, -1).any(1).sum())


def _run(lib, arrays, training, affine, momentum=0.1, eps=1e-5):
    x, g, w, b, rm, rv = arrays
    X = lib.tensor(x, requires_grad=True)
    W = lib.tensor(w, requires_grad=True) if affine else None
    B = lib.tensor(b, requires_grad=True) if affine else None
    RM, RV = lib.tensor(rm.copy()), lib.tensor(rv.copy())
    y = lib.nn.functional.batch_norm(X, RM, RV, W, B, training, momentum, eps)
    y.backward(lib.tensor(g))
    out = {"out": y, "running_mean": RM, "running_var": RV, "grad_input": X.grad}
    if affine:
        out.update(grad_weight=W.grad, grad_bias=B.grad)
    return {k: v.detach().numpy() for k, v in out.items()}


def _arrays(shape, dtype, seed):
    rs = np.random.RandomState(seed)
    c = shape[1]
    return [(rs.randn(*shape) * 2 + 0.5).astype(dtype), rs.randn(*shape).astype(dtype),
            rs.randn(c).astype(dtype), rs.randn(c).astype(dtype), rs.randn(c).astype(dtype),
            (rs.rand(c) + 0.5).astype(dtype)]


def _assert_same_bits(shape, dtype, training, affine, seed=0):
    arrays = _arrays(shape, dtype, seed)
    ours = _run(jitgrad, arrays, training, affine)
    theirs = _run(torch, arrays, training, affine)
    diffs = {k: _differing(ours[k], theirs[k]) for k in theirs}
    assert not any(diffs.values()), diffs


# (N, C, *) with planes of 2..65 elements (odd lengths: the float64 statistics' contracted
# remainder; lengths off the 8/4-lane vector: reduce_all's partial last vector), and one
# above jitgrad's 2^17-element threshold (the parallel kernels)
PLANES = [(7, 3, 5, 13), (3, 17, 33), (4, 5, 2), (4, 6, 8), (2, 3, 4, 4), (4, 300, 5),
          (3, 4, 7), (4, 8, 64, 65)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", PLANES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_planes_forward_and_backward_bits(threads, shape, dtype, training, affine):
    threads(1)
    _assert_same_bits(shape, dtype, training, affine)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 9), (2, 64), (3, 40), (5, 9), (7, 33), (64, 13),
                                   (256, 512), (9, 3, 1, 1),
                                   # above jitgrad's 2^17-element threshold: the parallel
                                   # kernels (row chunks per thread; channels for N <= threads)
                                   (1027, 131), (4099, 37), (3, 50000)])
def test_rows_forward_and_backward_bits_per_thread_count(threads, n_threads, shape, dtype):
    """(N, C) inputs: rows split by thread (N > threads), or the tiled / per-channel
    routes (N <= threads); the backward's partial last vector of channels."""
    threads(n_threads)
    _assert_same_bits(shape, dtype, True, True, seed=n_threads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(256, 512), (32, 16, 28, 28), (3, 40)])
def test_native_batch_norm_saved_statistics(threads, shape, dtype):
    threads(1)
    x, _, w, b, rm, rv = _arrays(shape, dtype, 1)
    results = []
    for lib in (jitgrad, torch):
        out, mean, invstd = lib.native_batch_norm(lib.tensor(x), lib.tensor(w), lib.tensor(b),
                                                  lib.tensor(rm.copy()), lib.tensor(rv.copy()),
                                                  True, 0.1, 1e-5)
        results.append([t.numpy() for t in (out, mean, invstd)])
    for ours, theirs in zip(*results):
        assert _differing(ours, theirs) == 0


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm2d_module_gradients_bits(threads, training):
    """The module route (running buffers, momentum, eval after training)."""
    threads(1)
    x, g, *_ = _arrays((8, 6, 9, 7), np.float32, 2)
    results = []
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        bn = lib.nn.BatchNorm2d(6, momentum=0.2)
        with lib.no_grad():
            bn.weight.copy_(lib.tensor(np.linspace(0.5, 1.5, 6, dtype=np.float32)))
            bn.bias.copy_(lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32)))
        bn(lib.tensor(x * 0.5))  # one training step moves the running buffers
        bn.train(training)
        X = lib.tensor(x, requires_grad=True)
        y = bn(X)
        y.backward(lib.tensor(g))
        results.append([t.detach().numpy() for t in (y, X.grad, bn.weight.grad, bn.bias.grad,
                                                     bn.running_mean, bn.running_var)])
    for ours, theirs in zip(*results):
        assert _differing(ours, theirs) == 0


def test_backward_without_input_gradient(threads):
    """Only the parameters' gradients asked for: the same sums, no input gradient pass."""
    threads(1)
    x, g, w, b, _, _ = _arrays((4, 5, 6, 3), np.float64, 3)
    results = []
    for lib in (jitgrad, torch):
        W, B = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        lib.nn.functional.batch_norm(lib.tensor(x), None, None, W, B, True).backward(
            lib.tensor(g))
        results.append([W.grad.numpy(), B.grad.numpy()])
    for ours, theirs in zip(*results):
        assert _differing(ours, theirs) == 0


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 9, 5, 3), (8, 16, 7, 7), (2, 3, 4, 5, 6),
                                   (16, 40, 15, 15)])
@pytest.mark.parametrize("training", [True, False])
def test_channels_last_input_and_gradient_bits(threads, n_threads, shape, dtype, training):
    """A channels-last input (and output gradient) takes ATen's channels-last kernels: the
    (N * spatial, C) rows; the output keeps the layout."""
    threads(n_threads)
    x, g, w, b, rm, rv = _arrays(shape, dtype, 4)
    to_last = (0,) + tuple(range(2, len(shape))) + (1,)
    back = tuple(int(i) for i in np.argsort(to_last))
    results = []
    for lib in (jitgrad, torch):
        X = lib.tensor(np.ascontiguousarray(x.transpose(to_last))).permute(*back)
        X = X.detach().requires_grad_(True)
        W, B = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        RM, RV = lib.tensor(rm.copy()), lib.tensor(rv.copy())
        y = lib.nn.functional.batch_norm(X, RM, RV, W, B, training, 0.1, 1e-5)
        y.backward(lib.tensor(np.ascontiguousarray(g.transpose(to_last))).permute(*back))
        results.append(([t.detach().numpy() for t in (y, RM, RV, X.grad, W.grad, B.grad)],
                        y.stride()))
    (ours, our_strides), (theirs, their_strides) = results
    assert our_strides == their_strides
    for a, e in zip(ours, theirs):
        assert _differing(a, e) == 0


def _layout(lib, t, form):
    if form == "channels_last":
        return t.contiguous(memory_format=lib.channels_last)
    if form == "transposed":  # strided in no memory format (H and W swapped in memory)
        return t.transpose(2, 3).contiguous().transpose(2, 3)
    return t


@pytest.mark.parametrize("n_threads", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 9, 5, 3), (8, 16, 7, 7), (16, 40, 15, 15)])
@pytest.mark.parametrize("layouts", [("channels_last", "contiguous"),
                                     ("contiguous", "channels_last"),
                                     ("contiguous", "transposed"),
                                     ("contiguous", "expanded"), ("channels_last", "expanded")])
@pytest.mark.parametrize("training", [True, False])
def test_mixed_layouts_take_the_tensor_iterator_route(threads, n_threads, shape, dtype, layouts,
                                                      training):
    """Input and output gradient not both contiguous in one memory format (an expanded
    gradient is what y.sum().backward() passes): Normalization.cpp's TensorIterator route,
    each channel walked in the iterator's order, the gradient's sum by at::sum."""
    threads(n_threads)
    x, g, w, b, rm, rv = _arrays(shape, dtype, 6)
    x_form, g_form = layouts
    results = []
    for lib in (jitgrad, torch):
        X = _layout(lib, lib.tensor(x), x_form).detach().requires_grad_(True)
        W, B = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        RM, RV = lib.tensor(rm.copy()), lib.tensor(rv.copy())
        y = lib.nn.functional.batch_norm(X, RM, RV, W, B, training, 0.1, 1e-5)
        if g_form == "expanded":
            y.sum().backward()
        else:
            y.backward(_layout(lib, lib.tensor(g), g_form))
        results.append(([t.detach().numpy() for t in (X.grad, W.grad, B.grad)],
                        X.grad.stride()))
    (ours, our_strides), (theirs, their_strides) = results
    assert our_strides == their_strides
    diffs = [_differing(a, e) for a, e in zip(ours, theirs)]
    assert not any(diffs), diffs
