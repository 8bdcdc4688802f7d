"""scaled_dot_product_attention where PyTorch's CPU dispatcher takes its math backend
(``_scaled_dot_product_attention_math``): 3-D and 5-D inputs, grouped-query attention that the
flash kernel refuses (a mask that requires grad, a transposed head dim, 3-D), bool and float
masks, is_causal, positive and negative scales, float32 and float64. Values and gradients are
compared element for element with PyTorch, and the autograd graph node by node."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch")

import jitgrad as jg  # noqa: E402
import jitgrad.nn.functional as F  # noqa: E402

DTYPES = [np.float32, np.float64]


@pytest.fixture(autouse=True)
def _same_threads(threads):
    """Both libraries on 1, then 2 threads (conftest's ``threads``): MKL's GEMM splits by it."""
    return threads


def _graph(t):
    """The grad_fn tree as nested (name, children) tuples, leaves as AccumulateGrad."""
    def walk(node):
        if node is None:
            return None
        name = node.name().replace("torch::autograd::", "")
        return (name, tuple(walk(f) for f, _ in node.next_functions))
    return walk(t.grad_fn)


def _run(lib, fn, arrays, mask, mask_grad, transpose_head_dim, kw):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays[:3]]
    used = [t.transpose(-2, -1) for t in ts] if transpose_head_dim else ts
    m = None
    if mask is not None:
        m = lib.tensor(mask, requires_grad=mask_grad)
    out = fn(*used, attn_mask=m, **kw)
    out.backward(lib.tensor(arrays[3]))
    grads = [t.grad.numpy() for t in ts] + ([m.grad.numpy()] if mask_grad else [])
    return out.detach().numpy(), grads, _graph(out)


def _compare(shape_q, shape_kv, dt, mask=None, mask_grad=False, transpose_head_dim=False,
             seed=0, **kw):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(shape_q).astype(dt)
    k = rng.standard_normal(shape_kv).astype(dt)
    v = rng.standard_normal(shape_kv).astype(dt)
    if transpose_head_dim:  # the arrays are (..., E, L), seen transposed
        gshape = shape_q[:-2] + (shape_q[-1], shape_kv[-2])
    else:
        gshape = shape_q[:-1] + (shape_kv[-1],)
    g = rng.standard_normal(gshape).astype(dt)
    arrays = (q, k, v, g)
    want = _run(torch, torch.nn.functional.scaled_dot_product_attention, arrays, mask,
                mask_grad, transpose_head_dim, kw)
    got = _run(jg, F.scaled_dot_product_attention, arrays, mask, mask_grad,
               transpose_head_dim, kw)
    assert "ScaledDotProductFlashAttentionForCpuBackward0" not in str(want[2]), \
        "PyTorch took its flash kernel: not a math-backend case"
    assert got[2] == want[2]
    for name, a, b in zip(("output", "grad q", "grad k", "grad v", "grad mask"),
                          (got[0], *got[1]), (want[0], *want[1])):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert (a == b).all(), f"{name}: {int((a != b).sum())} of {a.size} elements differ"


@pytest.mark.parametrize("dt", DTYPES)
def test_3d_inputs_bits(dt):
    _compare((4, 40, 32), (4, 40, 32), dt)
    _compare((3, 17, 8), (3, 23, 8), dt, seed=1)


@pytest.mark.parametrize("dt", DTYPES)
def test_3d_causal_bits(dt):
    _compare((4, 40, 32), (4, 37, 32), dt, is_causal=True)
    _compare((2, 30, 16), (2, 45, 16), dt, is_causal=True, seed=2)


@pytest.mark.parametrize("dt", DTYPES)
def test_3d_masks_and_scale_bits(dt):
    rng = np.random.default_rng(7)
    _compare((4, 40, 32), (4, 37, 32), dt, mask=rng.random((40, 37)) > 0.3)
    _compare((4, 40, 32), (4, 37, 32), dt, mask=rng.standard_normal((4, 40, 37)).astype(dt),
             scale=0.3)
    _compare((4, 40, 32), (4, 37, 32), dt, mask=rng.standard_normal((40, 37)).astype(dt),
             mask_grad=True)
    # a row masked out entirely: _safe_softmax's zeros, in values and gradients
    dead = rng.random((40, 37)) > 0.3
    dead[5] = False
    _compare((4, 40, 32), (4, 37, 32), dt, mask=dead)


@pytest.mark.parametrize("dt", DTYPES)
def test_5d_and_negative_scale_bits(dt):
    _compare((2, 2, 3, 10, 8), (2, 2, 3, 12, 8), dt, scale=-0.5)
    _compare((2, 2, 3, 10, 8), (2, 2, 3, 12, 8), dt, scale=2.0, is_causal=True)


@pytest.mark.parametrize("dt", DTYPES)
def test_gqa_math_bits(dt):
    rng = np.random.default_rng(9)
    # a mask that requires grad sends PyTorch to the math backend (repeat_interleave)
    _compare((2, 8, 20, 16), (2, 2, 24, 16), dt,
             mask=rng.standard_normal((20, 24)).astype(dt), mask_grad=True, enable_gqa=True)
    # 3-D: the heads are dim -3
    _compare((8, 20, 16), (2, 24, 16), dt, enable_gqa=True, is_causal=True)
    # a transposed head dim (stride(-1) != 1)
    _compare((2, 8, 16, 20), (2, 2, 16, 24), dt, transpose_head_dim=True, enable_gqa=True)


@pytest.mark.parametrize("dt", DTYPES)
def test_transposed_head_dim_bits(dt):
    rng = np.random.default_rng(11)
    _compare((2, 3, 16, 20), (2, 3, 16, 24), dt, transpose_head_dim=True)
    _compare((2, 3, 16, 20), (2, 3, 16, 24), dt, transpose_head_dim=True,
             mask=rng.random((20, 24)) > 0.2)


def test_math_backend_double_backward_matches_torch():
    rng = np.random.default_rng(13)
    q, k, v = (rng.standard_normal(s) for s in ((3, 6, 4), (3, 5, 4), (3, 5, 4)))
    res = []
    for lib, fn in ((torch, torch.nn.functional.scaled_dot_product_attention),
                    (jg, F.scaled_dot_product_attention)):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        out = fn(*ts, scale=0.7)
        gs = lib.autograd.grad((out * out).sum(), ts, create_graph=True)
        gg = lib.autograd.grad(sum((g * g).sum() for g in gs), ts)
        res.append([g.detach().numpy() for g in gs] + [g.numpy() for g in gg])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
