"""float16 sum on the CPU: ATen accumulates half in float and rounds once, so its bits are the
float32 cascade's rounded to half; NumPy's float16 reduction rounded partial sums (1 ulp off on
a 3x4 sum over dim 0, and so the gradient of a broadcast float16 add). Expected values are
PyTorch's."""
import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

SHAPES = [(3, 4), (17, 33), (1000,), (5, 7, 9), (64, 130)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_half_sum_bits(shape):
    g = (np.random.default_rng(1).standard_normal(shape) * 3).astype(np.float16)
    for d in [None, *range(len(shape))]:
        args = () if d is None else (d,)
        got = jitgrad.tensor(g).sum(*args).numpy()
        want = torch.tensor(g).sum(*args).numpy()
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=str(d))


def test_broadcast_add_gradient_is_pytorchs():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float16), rng.standard_normal(4).astype(np.float16)
    g = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float16)
    grads = []
    for lib in (jitgrad, torch):
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        (ta + tb).backward(lib.tensor(g))
        grads.append(tb.grad.numpy().view(np.uint16))
    np.testing.assert_array_equal(*grads)
