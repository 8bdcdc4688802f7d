"""softmax / log_softmax (every dim) and layer_norm forwards bit for bit with PyTorch's CPU
kernels (float32/float64), on 1 and 2 threads (ATen's non-last-dim softmax splits its vector
groups by thread). Expected values come from PyTorch run on the same inputs in the same test."""
import numpy as np
import pytest

import jitgrad
from tests._parity import assert_same_bits, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

SHAPES = ((7,), (100,), (8, 33), (4, 1000), (3, 5, 17), (2, 40, 70))
DTYPES = ("float32", "float64")


def _input(shape, dtype, seed, edges=False):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    if edges and x.shape[-1] >= 8:
        # a row with -inf and a huge value, one with +inf, one with NaN, one all -inf
        flat = x.reshape(-1, x.shape[-1])
        flat[0, :3] = (-np.inf, 80.0, -80.0)
        if flat.shape[0] > 3:
            flat[1, 5] = np.inf
            flat[2, 4] = np.nan
            flat[3, :] = -np.inf
    return x


def _both(fn, x):
    want = fn(torch, torch.tensor(x)).numpy()
    got = fn(jitgrad, jitgrad.tensor(x)).numpy()
    return got, want


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_forward_bits(log, dtype, threads):
    name = "log_softmax" if log else "softmax"
    for k, shape in enumerate(SHAPES):
        x = _input(shape, dtype, k)
        for d in range(-1, len(shape)):
            got, want = _both(lambda lib, t, d=d: getattr(lib.nn.functional, name)(t, d), x)
            assert_same_bits(got, want, f"{name}{shape} dim={d}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_forward_edges(log, dtype):
    """inf, -inf, NaN and far-apart values: the same NaN rows and the same saturations."""
    name = "log_softmax" if log else "softmax"
    for shape in ((6, 40), (5, 8), (4, 9, 8)):
        x = _input(shape, dtype, 3, edges=True)
        for d in range(len(shape)):
            got, want = _both(lambda lib, t, d=d: getattr(lib.nn.functional, name)(t, d), x)
            assert_same_bits(got, want, f"{name}{shape} dim={d} (edges)")


def test_softmax_noncontiguous_and_dtype_arg():
    x = _input((33, 20), "float64", 5)
    got, want = _both(lambda lib, t: lib.softmax(t.t(), 1, dtype=lib.float32), x)
    assert_same_bits(got, want, "softmax of a transposed input, dtype=float32")
    got, want = _both(lambda lib, t: lib.log_softmax(t[:, ::3], 0), x)
    assert_same_bits(got, want, "log_softmax of a strided view")


# layer_norm: the ATen-order kernel (nn/functional/_layer_norm_aten.py) against
# torch.native_layer_norm's output, mean and rstd
LN_SHAPES = ((7,), (100,), (8, 33), (4, 1000), (3, 5, 17), (2, 5000), (6, 777), (3, 16))


def _layer_norm_case(shape, dtype, seed, offset=1.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + offset).astype(dtype)
    n = shape[-1]
    return x, rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


def _check_layer_norm(x, w, b, eps, what, threads=1):
    from jitgrad.nn.functional._layer_norm_aten import layer_norm_forward
    n = x.shape[-1]
    want = torch.native_layer_norm(torch.tensor(x), [n], None if w is None else torch.tensor(w),
                                   None if b is None else torch.tensor(b), eps)
    got = layer_norm_forward(x.reshape(-1, n), w, b, eps, threads)
    for g, t, name in zip(got, want, ("output", "mean", "rstd")):
        assert_same_bits(g, t.numpy().reshape(g.shape), f"layer_norm {what} {name}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_kernel_bits(dtype, threads):
    for k, shape in enumerate(LN_SHAPES):
        x, w, b = _layer_norm_case(shape, dtype, k)
        for wb in range(4):
            _check_layer_norm(x, w if wb & 1 else None, b if wb & 2 else None, 1e-5,
                              f"{shape} weight={bool(wb & 1)} bias={bool(wb & 2)}", threads)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_kernel_edges(dtype):
    """A large offset (the variance cancels), constant rows, eps 0 and a large eps, NaN/inf."""
    x, w, b = _layer_norm_case((5, 300), dtype, 9, offset=1e4)
    _check_layer_norm(x, w, b, 1e-5, "offset 1e4")
    _check_layer_norm(x, None, None, 0.0, "offset 1e4, eps=0")
    x[1] = 2.5
    x[2, 7] = np.nan
    x[3, 100] = np.inf
    _check_layer_norm(x, w, b, 0.5, "constant/NaN/inf rows, eps=0.5")


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_kernel_row_blocks(dtype):
    """Inputs past the parallel threshold (65536 values): rows split in blocks over threads,
    each block reusing its scratch across rows; odd row counts and row lengths with a partial
    last chunk and a tail."""
    for k, shape in enumerate(((203, 1031), (67, 4099))):
        x, w, b = _layer_norm_case(shape, dtype, 20 + k)
        for threads in (1, 2, 3):
            _check_layer_norm(x, w, b, 1e-5, f"{shape} threads={threads}", threads)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_backward_bits(log, dtype, threads):
    """The input gradient (ATen's backward kernels, _softmax_backward_aten and
    _loss_kernels.log_softmax_rows_backward), rows of 17 included (the partial last vector)."""
    name = "log_softmax" if log else "softmax"
    for k, shape in enumerate(SHAPES + ((64, 17),)):
        x = _input(shape, dtype, k)
        g = np.random.default_rng(k + 50).standard_normal(shape).astype(dtype)
        for d in range(len(shape)):
            grads = []
            for lib in (torch, jitgrad):
                t = lib.tensor(x, requires_grad=True)
                getattr(lib.nn.functional, name)(t, d).backward(lib.tensor(g))
                grads.append(t.grad.numpy())
            assert_same_bits(grads[1], grads[0], f"{name}{shape} dim={d} grad")


def test_softmax_double_backward_still_recorded():
    x = _input((4, 9), "float64", 2)
    for lib in (torch, jitgrad):
        t = lib.tensor(x, requires_grad=True)
        y = lib.softmax(t, 0)
        (gx,) = lib.autograd.grad(y[0].sum(), t, create_graph=True)
        assert gx.requires_grad
        gx.sum().backward()
        assert t.grad is not None
