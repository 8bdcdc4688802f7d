"""layer_norm's CPU backward (input, weight and bias gradients) bit for bit with PyTorch's
kernel (float32/float64, with and without weight/bias, 1 and 2 threads: ATen splits the rows'
weight/bias sums by thread). Expected values come from PyTorch run on the same inputs in the
same test."""
import numpy as np
import pytest

import jitgrad
from tests._parity import assert_same_bits, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

DTYPES = ("float32", "float64")
# rows shorter than a vector, whole vectors only, a partial last vector, one row, more threads
# than rows, a multi-dim normalized shape
CASES = (((5, 3), 1), ((3, 8), 1), ((64, 1003), 1), ((1, 17), 1), ((2, 4, 33), 1),
         ((6, 4, 3), 2), ((300, 768), 1), ((7, 100), 1))


def _case(shape, k, dtype, seed, offset=0.5):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + offset).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    ns = shape[len(shape) - k:]
    return x, dy, rng.standard_normal(ns).astype(dtype), rng.standard_normal(ns).astype(dtype)


def _grads(lib, x, dy, w, b, ns, wants=(True, True, True), eps=1e-5):
    xt = lib.tensor(x, requires_grad=wants[0])
    wt = None if w is None else lib.tensor(w, requires_grad=wants[1])
    bt = None if b is None else lib.tensor(b, requires_grad=wants[2])
    y = lib.nn.functional.layer_norm(xt, ns, wt, bt, eps)
    ins = [t for t in (xt, wt, bt) if t is not None and t.requires_grad]
    return [g.numpy() for g in lib.autograd.grad(y, ins, lib.tensor(dy))]


def _check(x, dy, w, b, ns, what, wants=(True, True, True), eps=1e-5):
    got = _grads(jitgrad, x, dy, w, b, ns, wants, eps)
    want = _grads(torch, x, dy, w, b, ns, wants, eps)
    assert len(got) == len(want), what
    for g, t, name in zip(got, want, ("first", "second", "third")):
        assert_same_bits(g, t, f"layer_norm backward {what}: {name} gradient")


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_backward_bits(dtype, threads):
    for seed, (shape, k) in enumerate(CASES):
        x, dy, w, b = _case(shape, k, dtype, seed)
        ns = shape[len(shape) - k:]
        for wb in range(4):
            _check(x, dy, w if wb & 1 else None, b if wb & 2 else None, ns,
                   f"{shape} weight={bool(wb & 1)} bias={bool(wb & 2)}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_backward_partial_needs(dtype, threads):
    """Only some inputs want a gradient (ATen's output mask): each alone is still exact."""
    x, dy, w, b = _case((37, 70), 1, dtype, 11)
    for wants in ((True, False, False), (False, True, False), (False, False, True),
                  (False, True, True)):
        _check(x, dy, w, b, (70,), f"wants={wants}", wants)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_backward_row_blocks(dtype):
    """Past the parallel threshold, on 1, 2 and 3 threads: the weight/bias sums' split into
    per-thread blocks of rows is ATen's (odd row counts, a partial last vector)."""
    old_t, old_j = torch.get_num_threads(), jitgrad.get_num_threads()
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            jitgrad.set_num_threads(threads)
            x, dy, w, b = _case((203, 1031), 1, dtype, 30 + threads)
            _check(x, dy, w, b, (1031,), f"(203, 1031) threads={threads}")
    finally:
        torch.set_num_threads(old_t)
        jitgrad.set_num_threads(old_j)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_backward_edges(dtype):
    """A large offset, a constant row, NaN and inf, eps 0 and a large eps, a non-contiguous
    input and gradient."""
    x, dy, w, b = _case((5, 300), 1, dtype, 9, offset=1e4)
    _check(x, dy, w, b, (300,), "offset 1e4")
    _check(x, dy, None, None, (300,), "offset 1e4, eps=0", eps=0.0)
    x[1] = 2.5
    x[2, 7] = np.nan
    x[3, 100] = np.inf
    _check(x, dy, w, b, (300,), "constant/NaN/inf rows, eps=0.5", eps=0.5)
    x, dy, _, _ = _case((40, 20), 1, dtype, 10)
    w = np.linspace(-2, 2, 40).astype(dtype)
    _check(x.T, dy.T, w, None, (40,), "transposed input and gradient")


def test_layer_norm_backward_double_backward_matches_torch():
    """create_graph=True keeps the recorded formulas: the gradient of the gradient agrees with
    PyTorch's (float64, to rounding)."""
    x, dy, w, b = _case((4, 6), 1, "float64", 3)
    out = []
    for lib in (torch, jitgrad):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.layer_norm(xt, (6,), wt, lib.tensor(b))
        gx, gw = lib.autograd.grad(y, [xt, wt], lib.tensor(dy), create_graph=True)
        out.append([g.detach().numpy() for g in lib.autograd.grad((gx * gx).sum() + gw.sum(),
                                                                   [xt, wt])])
    for g, t in zip(out[1], out[0]):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_forward_short_tails(dtype):
    """The forward's saved rstd (which the backward reads) on many rows whose scalar Welford
    tail has 3 or more values: rows shorter than a vector and long rows with a tail of 7."""
    from jitgrad.nn.functional._layer_norm_aten import layer_norm_forward
    for n in (3, 5, 7, 11, 15, 1031):
        x, _, w, b = _case((200, n), 1, dtype, n)
        want = torch.native_layer_norm(torch.tensor(x), [n], torch.tensor(w), torch.tensor(b),
                                       1e-5)
        got = layer_norm_forward(x, w, b, 1e-5, 1)
        for g, t, name in zip(got, want, ("output", "mean", "rstd")):
            assert_same_bits(g, t.numpy().reshape(g.shape), f"layer_norm (200, {n}) {name}")
