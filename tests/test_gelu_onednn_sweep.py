"""float32 gelu(approximate='none') bit for bit with PyTorch (oneDNN's eltwise_gelu_erf) over a
sweep of float32 bit patterns: every binade of both signs, so every one of the forward's 24
coefficient intervals, subnormals, infinities and NaNs, in the 16-lane kernel (gelu_fwd16) and
in the scalar rest of each chunk (lengths 16k + r). Expected values are PyTorch's."""
import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _sweep(step):
    bits = np.arange(0, 1 << 32, step, dtype=np.uint64).astype(np.uint32)
    return bits.view(np.float32)


def _same_bits(got, want):
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} differ, first at {bad[:5]}: {got[bad[:5]]} vs " \
                          f"{want[bad[:5]]}"


@pytest.mark.parametrize("tail", [0, 1, 15])
def test_forward_and_gradient_over_bit_patterns(threads, tail):
    x = _sweep(4099)
    x = x[:x.size - x.size % 16 + tail - (16 if tail else 0)]
    g = np.random.default_rng(tail).standard_normal(x.size).astype(np.float32)
    outs = []
    for lib in (torch, jitgrad):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gelu(t)
        y.backward(lib.tensor(g))
        outs.append((y.detach().numpy(), t.grad.numpy()))
    _same_bits(outs[1][0], outs[0][0])
    _same_bits(outs[1][1], outs[0][1])
