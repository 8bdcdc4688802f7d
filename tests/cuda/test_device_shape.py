"""Shape and view ops on CUDA tensors (jitgrad/ops/shape_*.py), against the CPU path (which
tests/test_shape_parity.py checks against PyTorch): values, shapes, strides, views sharing the
device buffer, gradients and double backward, all on the device.

Run on the simulator in its own process (tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_shape.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(21)
A = RNG.standard_normal((3, 4, 5))
M = RNG.standard_normal((4, 6))

CASES = {
    "diagonal": (lambda x: x.diagonal(), (M,)),
    "diagonal_offset_dims": (lambda x: x.diagonal(1, -1, 0), (A,)),
    "diagonal_neg_offset": (lambda x: x.diagonal(-2, 1, 2), (A,)),
    "diagonal_of_transpose": (lambda x: x.transpose(0, 2).diagonal(0, 1, 2), (A,)),
    "unfold": (lambda x: x.unfold(1, 3, 1), (M,)),
    "unfold_step": (lambda x: x.unfold(2, 2, 2), (A,)),
    "unfold_of_diagonal": (lambda x: x.diagonal(0, 1, 2).unfold(1, 2, 1), (A,)),
    "movedim": (lambda x: x.movedim((0, 1), (2, 0)), (A,)),
    "swapdims_moveaxis": (lambda x: x.swapdims(0, 1).moveaxis(-1, 0), (A,)),
    "unsqueeze_strides": (lambda x: x.transpose(0, 2).unsqueeze(3).unsqueeze(1), (A,)),
    "transpose_0d": (lambda x: x.sum().transpose(0, -1), (A,)),
    "flip_empty_dims": (lambda x: x.flip(()), (A,)),
    "roll_flat_transposed": (lambda x: x.transpose(0, 1).roll(5), (A,)),
    "repeat": (lambda x: x.repeat(2, 1, 1, 2), (A,)),
    "tile": (lambda x: x.tile(2, 1), (M,)),
    "contiguous": (lambda x: x.transpose(0, 2).contiguous(), (A,)),
    "tensor_split": (lambda x: jg.cat([p * (i + 1) for i, p in
                                       enumerate(x.tensor_split([1, 4], 2))], 2), (A,)),
    "hsplit_vsplit": (lambda x: jg.cat(x.hsplit(2), 1) * jg.cat(x.vsplit([1]), 0), (M,)),
    "chunk_empty_dim": (lambda x: jg.cat(x[:0].chunk(2) + (x,), 0), (M,)),
    "cat_legacy_empty": (lambda x: jg.cat([x, jg.zeros(0, device=x.device,
                                                     requires_grad=True)], 0), (M,)),
    "ravel": (lambda x: x.t().ravel(), (M,)),
    "atleast_3d_dstack": (lambda x: jg.dstack([x, x * 2]), (M,)),
    "unflatten": (lambda x: x.unflatten(-1, (2, -1)), (M,)),
}


def _run(fn, arrays, dev):
    ts = [jg.tensor(a, device=dev, requires_grad=True) for a in arrays]
    y = fn(*ts)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (g,) = jg.autograd.grad((y * w).sum(), ts[0], create_graph=True)
    (gg,) = jg.autograd.grad((g * g).sum() + (y ** 2).sum(), ts[0])
    return (y.detach().cpu().numpy(), tuple(y.shape), y.stride(), y.is_contiguous(),
            type(y.grad_fn).__name__, g.detach().cpu().numpy(), gg.cpu().numpy())


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_backward_and_double_backward_match_cpu(device, name):
    fn, arrays = CASES[name]
    c, d = _run(fn, arrays, "cpu"), _run(fn, arrays, "cuda")
    np.testing.assert_allclose(d[0], c[0], rtol=1e-12, atol=1e-12)
    assert d[1:5] == c[1:5]  # shape, stride, is_contiguous, grad_fn name
    np.testing.assert_allclose(d[5], c[5], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d[6], c[6], rtol=1e-12, atol=1e-12)


def test_diagonal_and_unfold_are_views_of_the_device_buffer(device):
    x = jg.zeros(3, 4, device="cuda")
    d, u = x.diagonal(1), x.unfold(1, 2, 2)
    assert d._data.buf is x._data.buf and u._data.buf is x._data.buf
    assert d.stride() == (5,) and u.stride() == (4, 2, 1)
    device.reset_stats()
    x.add_(1.0)
    assert d._version == x._version == u._version
    assert device.stats.h2d == 0
    expected = np.ones((3, 4))
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    np.testing.assert_array_equal(d.cpu().numpy(), np.ones(3))
    np.testing.assert_array_equal(u.cpu().numpy(), np.ones((3, 2, 2)))
