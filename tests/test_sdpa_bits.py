"""scaled_dot_product_attention on the CPU gives PyTorch's bits where PyTorch runs its flash
kernel (float32/float64, no dropout): key lengths with and without a vector tail, several key
blocks (> 512 keys), the three query-block sizes, causal, float/bool/broadcast masks, a scale,
strided (head-interleaved) inputs; and through nn.MultiheadAttention /
nn.TransformerEncoderLayer. Compared element for element with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch")

import jitgrad as jg  # noqa: E402
import jitgrad.nn.functional as F  # noqa: E402

DTYPES = [np.float32, np.float64]


@pytest.fixture(autouse=True)
def _one_torch_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


def _qkv(shape_q, shape_kv, dt, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape_q).astype(dt), rng.standard_normal(shape_kv).astype(dt),
            rng.standard_normal(shape_kv).astype(dt))


def _both(q, k, v, mask=None, **kw):
    ref = torch.nn.functional.scaled_dot_product_attention(
        torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
        attn_mask=None if mask is None else torch.from_numpy(mask), **kw).numpy()
    got = F.scaled_dot_product_attention(
        jg.tensor(q), jg.tensor(k), jg.tensor(v),
        attn_mask=None if mask is None else jg.tensor(mask), **kw).numpy()
    return got, ref


def _assert_bits(got, ref):
    assert got.shape == ref.shape and got.dtype == ref.dtype
    assert (got == ref).all(), f"{int((got != ref).sum())} of {got.size} elements differ"


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("b,h,lq,lk,e", [
    (2, 3, 10, 13, 8),     # shorter than one vector: the scalar exp tail only
    (2, 3, 40, 37, 20),    # vectors and a tail
    (1, 2, 33, 600, 16),   # two key blocks (512 + 88)
    (1, 2, 200, 100, 32),  # query blocks of 64
    (1, 1, 800, 40, 8),    # query blocks of 256
])
def test_sdpa_forward_bits(dt, b, h, lq, lk, e):
    q, k, v = _qkv((b, h, lq, e), (b, h, lk, e), dt)
    _assert_bits(*_both(q, k, v))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("lq,lk", [(40, 40), (30, 45), (600, 600)])
def test_sdpa_causal_bits(dt, lq, lk):
    q, k, v = _qkv((1, 2, lq, 16), (1, 2, lk, 16), dt, seed=1)
    _assert_bits(*_both(q, k, v, is_causal=True))


@pytest.mark.parametrize("dt", DTYPES)
def test_sdpa_mask_bits(dt):
    q, k, v = _qkv((2, 3, 40, 20), (2, 3, 37, 20), dt, seed=2)
    rng = np.random.default_rng(3)
    _assert_bits(*_both(q, k, v, rng.standard_normal((40, 37)).astype(dt)))
    _assert_bits(*_both(q, k, v, rng.standard_normal((2, 1, 40, 37)).astype(dt)))
    _assert_bits(*_both(q, k, v, rng.standard_normal((1, 3, 1, 37)).astype(dt)))
    _assert_bits(*_both(q, k, v, rng.random((2, 3, 40, 37)) > 0.3))
    _assert_bits(*_both(q, k, v, rng.random((40, 37)) > 0.3, is_causal=True))


@pytest.mark.parametrize("dt", DTYPES)
def test_sdpa_scale_and_strided_inputs_bits(dt):
    q, k, v = _qkv((2, 50, 4, 16), (2, 70, 4, 16), dt, seed=4)  # (B, L, H, E) buffers
    q, k, v = (a.transpose(0, 2, 1, 3) for a in (q, k, v))
    _assert_bits(*_both(q, k, v))
    _assert_bits(*_both(q, k, v, scale=0.3))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("lq,lk,causal,mask", [
    (40, 37, True, None), (40, 37, False, "float"), (33, 600, False, "bool"),
    (200, 70, True, None), (10, 13, False, None)])
def test_sdpa_backward_bits(dt, lq, lk, causal, mask):
    q, k, v = _qkv((2, 3, lq, 20), (2, 3, lk, 20), dt, seed=5)
    rng = np.random.default_rng(7)
    gout = rng.standard_normal(q.shape).astype(dt)
    m = {None: None, "float": rng.standard_normal((lq, lk)).astype(dt),
         "bool": rng.random((2, 1, lq, lk)) > 0.3}[mask]
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    jq, jk, jv = (jg.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=None if m is None else torch.from_numpy(m), is_causal=causal)
    got = F.scaled_dot_product_attention(
        jq, jk, jv, attn_mask=None if m is None else jg.tensor(m), is_causal=causal)
    _assert_bits(got.detach().numpy(), ref.detach().numpy())
    assert got.grad_fn.name() == ref.grad_fn.name()
    ref.backward(torch.from_numpy(gout))
    got.backward(jg.tensor(gout))
    for j, t in ((jq, tq), (jk, tk), (jv, tv)):
        _assert_bits(j.grad.numpy(), t.grad.numpy())


def test_sdpa_double_backward_still_differentiates():
    """create_graph takes the math composition: second derivatives against PyTorch's math
    backend (PyTorch's flash backward has no derivative)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv((1, 2, 6, 4), (1, 2, 5, 4), np.float64, seed=8)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    jq, jk, jv = (jg.tensor(a, requires_grad=True) for a in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        (tg,) = torch.autograd.grad(
            torch.nn.functional.scaled_dot_product_attention(tq, tk, tv).pow(2).sum(), tq,
            create_graph=True)
    (jgq,) = jg.autograd.grad(F.scaled_dot_product_attention(jq, jk, jv).pow(2).sum(), jq,
                              create_graph=True)
    tg.sum().backward()
    jgq.sum().backward()
    for j, t in ((jq, tq), (jk, tk), (jv, tv)):
        np.testing.assert_allclose(j.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


def _load(jm, tm):
    jm.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("dt", DTYPES)
def test_multihead_attention_and_encoder_layer_bits(dt):
    tdt, jdt = getattr(torch, np.dtype(dt).name), getattr(jg, np.dtype(dt).name)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(32, 4, dtype=tdt)
    jm = jg.nn.MultiheadAttention(32, 4, dtype=jdt)
    _load(jm, tm)
    x = np.random.default_rng(6).standard_normal((20, 3, 32)).astype(dt)
    tx, jx = torch.from_numpy(x), jg.tensor(x)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(20, dtype=tdt)
    for kw, jkw in (({}, {}), ({"attn_mask": mask}, {"attn_mask": jg.tensor(mask.numpy())})):
        ref, _ = tm(tx, tx, tx, need_weights=False, **kw)
        got, _ = jm(jx, jx, jx, need_weights=False, **jkw)
        _assert_bits(got.detach().numpy(), ref.detach().numpy())
    ref, _ = tm(tx, tx, tx, need_weights=False)
    got, _ = jm(jx, jx, jx, need_weights=False)
    ref.sum().backward()
    got.sum().backward()
    for name, p in tm.named_parameters():
        _assert_bits(dict(jm.named_parameters())[name].grad.numpy(), p.grad.numpy())
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, dtype=tdt)
    jl = jg.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, dtype=jdt)
    _load(jl, tl)
    _assert_bits(jl(jx).detach().numpy(), tl(tx).detach().numpy())


@pytest.mark.parametrize("lib", ["torch", "jitgrad"])
def test_sdpa_flash_node_errors_like_torch(lib):
    """The node saves its inputs: an in-place change before backward and a second backward
    raise PyTorch's errors."""
    L = torch if lib == "torch" else jg
    q = L.randn(1, 2, 5, 4, requires_grad=True)
    k = L.randn(1, 2, 5, 4)
    out = L.nn.functional.scaled_dot_product_attention(q, k, k)
    k.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    out = L.nn.functional.scaled_dot_product_attention(q, q, q)
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()
