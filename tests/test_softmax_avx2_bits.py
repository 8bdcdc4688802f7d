"""softmax / log_softmax and the flash-attention kernel at the lengths where ATen's vector width
matters, bit for bit with PyTorch on this host, whichever ATen build it runs (AVX-512: 16 float
/ 8 double lanes; AVX2: 8 / 4; ``jitgrad.backends.cpu_capability``).

A row is split into whole vectors and a tail, and its lanes are folded by a build-specific
tree, so lengths just under, at and just over one, two and three vectors of either build are
the ones that tell the builds apart (a kernel following the wrong build differs there by an
ulp in some elements). Expected values come from PyTorch on the same inputs in the same test.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as F
from tests._parity import assert_same_bits, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

# 1..34 covers 0-4 AVX2 float vectors and 0-2 AVX-512 ones with every tail; the rest add
# several whole vectors of both builds with and without a tail
ROW_LENGTHS = tuple(range(1, 35)) + (47, 48, 49, 63, 64, 65, 129)
DTYPES = (np.float32, np.float64)


def test_capability_is_torchs():
    """The kernels follow the build jitgrad thinks PyTorch runs: it must be the one it runs."""
    from jitgrad.backends.cpu_capability import CAPABILITY
    assert CAPABILITY == torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_row_lengths_forward_and_backward_bits(log, dtype, threads):
    """Each length as the last dim (reduce_all's lanes and tree) and as dim 0 of an (n, 37)
    input (the per-position vector groups and their scalar tail), values and input gradients."""
    name = "log_softmax" if log else "softmax"
    rng = np.random.default_rng(11)
    for n in ROW_LENGTHS:
        for shape, d in (((5, n), 1), ((n, 37), 0)):
            x = (rng.standard_normal(shape) * 4).astype(dtype)
            g = rng.standard_normal(shape).astype(dtype)
            res = []
            for lib in (torch, jitgrad):
                t = lib.tensor(x, requires_grad=True)
                y = getattr(lib.nn.functional, name)(t, d)
                y.backward(lib.tensor(g))
                res.append((y.detach().numpy(), t.grad.numpy()))
            assert_same_bits(res[1][0], res[0][0], f"{name}{shape} dim={d}")
            assert_same_bits(res[1][1], res[0][1], f"{name}{shape} dim={d} grad")


@pytest.fixture
def _one_torch_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.mark.usefixtures("_one_torch_thread")
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("lk,e", [(4, 3), (5, 4), (8, 5), (9, 8), (16, 9), (17, 12), (24, 16),
                                  (25, 17), (33, 20)])
def test_flash_attention_vector_boundaries_bits(dt, lk, e):
    """PyTorch's CPU flash kernel with key lengths (the exp_u20 vector part, its lane tree and
    the scalar tail) and head dims (the backward's row dot product of grad_out and out) at the
    vector boundaries: output and the three input gradients."""
    rng = np.random.default_rng(lk * 100 + e)
    q = rng.standard_normal((2, 2, 11, e)).astype(dt)
    k = rng.standard_normal((2, 2, lk, e)).astype(dt)
    v = rng.standard_normal((2, 2, lk, e)).astype(dt)
    gout = rng.standard_normal(q.shape).astype(dt)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    jq, jk, jv = (jitgrad.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    got = F.scaled_dot_product_attention(jq, jk, jv)
    assert "Flash" in ref.grad_fn.name(), "PyTorch did not take its flash kernel"
    assert got.grad_fn.name() == ref.grad_fn.name()
    assert_same_bits(got.detach().numpy(), ref.detach().numpy(), "output")
    ref.backward(torch.from_numpy(gout))
    got.backward(jitgrad.tensor(gout))
    for name, j, t in (("grad q", jq, tq), ("grad k", jk, tk), ("grad v", jv, tv)):
        assert_same_bits(j.grad.numpy(), t.grad.numpy(), name)
