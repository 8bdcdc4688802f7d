"""Normalization, channel dropout and attention on CUDA tensors: values, gradients, node names
and running statistics against the CPU path (itself checked against PyTorch in tests/nn), and no
host<->device copies inside forward + backward.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_norm_attention.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

RNG = np.random.default_rng(11)
TOL = {np.float64: dict(rtol=1e-9, atol=1e-11), np.float32: dict(rtol=5e-5, atol=5e-6)}


def _host(t):
    return t.detach().cpu().numpy()


def randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def check(device, fn, arrays, grad=(), dt=np.float64, transfers=0):
    """``fn(*tensors)`` on the CPU and on CUDA: outputs, node names and the gradients of
    ``sum(out * w)`` agree; forward + backward on CUDA make ``transfers`` copies."""
    res = {}
    for dev in ("cpu", "cuda"):
        ts = [jg.tensor(a, device=dev, requires_grad=i in grad) for i, a in enumerate(arrays)]
        device.reset_stats()
        out = fn(*ts)
        moved = device.stats.h2d + device.stats.d2h
        name = None if out.grad_fn is None else type(out.grad_fn).__name__
        if grad:
            w = np.random.default_rng(1).standard_normal(tuple(out.shape))
            w = jg.tensor(w.astype(np.dtype(out.dtype.np)), device=dev)  # the test's upload
            device.reset_stats()
            (out * w).sum().backward()
            moved += device.stats.h2d + device.stats.d2h
        if dev == "cuda":
            assert moved == transfers, device.stats
            assert out.is_cuda
        res[dev] = (out, name, [ts[i].grad for i in grad])
    (oc, nc, gc), (od, nd, gd) = res["cpu"], res["cuda"]
    assert nc == nd and tuple(oc.shape) == tuple(od.shape) and oc.dtype == od.dtype
    np.testing.assert_allclose(_host(od), _host(oc), **TOL[dt])
    for a, b in zip(gc, gd):
        assert b.is_cuda
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_batch_norm(device, training, dt):
    x, w, b = randn(3, 2, 4, dt=dt) * 2 + 1, randn(2, dt=dt), randn(2, dt=dt)
    rm, rv = np.array([0.5, -1.0], dt), np.array([2.0, 0.5], dt)
    stats = {}

    def run(x, w, b, rm, rv):
        out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3)
        stats[x.device.type] = (rm, rv)  # read after the transfer count
        return out

    check(device, run, [x, w, b, rm, rv], grad=(0, 1, 2), dt=dt)
    for a, c in zip(stats["cpu"], stats["cuda"]):
        np.testing.assert_allclose(_host(c), _host(a), **TOL[dt])


def test_group_instance_rms_norm(device):
    x, w, b = randn(2, 4, 3), randn(4), randn(4)
    check(device, lambda x, w, b: F.group_norm(x, 2, w, b), [x, w, b], grad=(0, 1, 2))
    check(device, lambda x, w, b: F.instance_norm(x, weight=w[:4], bias=b[:4]), [x, w, b],
          grad=(0, 1, 2))
    check(device, lambda x, w: F.rms_norm(x, (3,), w), [x, w[:3]], grad=(0, 1))


def test_batchnorm_module_on_device(device):
    m = nn.BatchNorm2d(3)
    c = nn.BatchNorm2d(3).to("cuda")
    x0 = randn(2, 3, 2, 2, dt=np.float32) * 3
    for _ in range(2):
        m(jg.tensor(x0))
        c(jg.tensor(x0, device="cuda"))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert getattr(c, name).is_cuda
        np.testing.assert_allclose(_host(getattr(c, name)), _host(getattr(m, name)), rtol=1e-5)


def test_channel_dropout_on_device(device):
    x = jg.ones(4, 5, 3, device="cuda", requires_grad=True)
    y = F.dropout1d(x, 0.5)
    y.sum().backward()
    h = _host(y)
    assert ((h == 0).all(-1) | (h == 2).all(-1)).all()
    np.testing.assert_array_equal(_host(x.grad), h)


def test_double_backward_on_device(device):
    out = {}
    for dev in ("cpu", "cuda"):
        x = jg.tensor(X_DB, device=dev, requires_grad=True)
        y = F.batch_norm(x, None, None, training=True) + F.group_norm(x, 2)
        (g,) = jg.autograd.grad((y ** 3).sum(), x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        out[dev] = (_host(g), _host(gg))
    for a, b in zip(out["cpu"], out["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)


X_DB = np.random.default_rng(2).standard_normal((3, 2, 4))


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"},
                                {"scale": 0.2}])
def test_sdpa(device, kw):
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4)
    arrays = [q, k, v]
    if kw.get("mask") == "bool":
        arrays.append(RNG.random((3, 5)) > 0.3)
    elif kw.get("mask") == "float":
        arrays.append(randn(3, 5))
    extra = {k_: v_ for k_, v_ in kw.items() if k_ != "mask"}

    def run(q, k, v, *m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m[0] if m else None, **extra)

    check(device, run, arrays, grad=(0, 1, 2))


def test_mha_module_on_device(device):
    jg.manual_seed(0)
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    c = nn.MultiheadAttention(4, 2, batch_first=True)
    c.load_state_dict(m.state_dict())
    c = c.to("cuda")
    x0 = randn(2, 3, 4, dt=np.float32)
    kpm = np.array([[False, False, True], [False, False, False]])
    a, wa = m(jg.tensor(x0), jg.tensor(x0), jg.tensor(x0), key_padding_mask=jg.tensor(kpm))
    xc = jg.tensor(x0, device="cuda")
    b, wb = c(xc, xc, xc, key_padding_mask=jg.tensor(kpm, device="cuda"))
    np.testing.assert_allclose(_host(b), _host(a), **TOL[np.float32])
    np.testing.assert_allclose(_host(wb), _host(wa), **TOL[np.float32])


def test_alpha_dropout_on_device(device):
    p, alpha = 0.3, 1.7580993408473766
    a = 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    x0 = randn(4, 6)
    y = _host(F.alpha_dropout(jg.tensor(x0, device="cuda"), p, training=True))
    kept = np.isclose(y, x0 * a + alpha * a * p)
    dropped = np.isclose(y, alpha * a * (p - 1))
    assert (kept | dropped).all() and kept.any() and dropped.any()


def test_zero_eps_constant_channels_on_device(device):
    """InvStd's 0 when var == 0 and eps == 0 on CUDA too (tests/nn checks the CPU vs torch)."""
    x = np.ones((2, 3, 2))
    x[1, 2] = [1.0, 3.0]
    check(device, lambda x: F.instance_norm(x, eps=0.0), [x], grad=(0,))
    y = _host(F.instance_norm(jg.tensor(x, device="cuda"), eps=0.0))
    assert not np.isnan(y).any()


@pytest.mark.parametrize("training", [True, False])
def test_running_stats_requiring_grad_refused_on_device(device, training):
    rm = jg.zeros(3, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'running_mean'"):
        F.batch_norm(jg.ones(4, 3, device="cuda"), rm, jg.ones(3, device="cuda"),
                     training=training)


def test_local_response_norm_on_device(device):
    for size in (1, 2, 3, 5):
        check(device, lambda x, s=size: F.local_response_norm(x, s, alpha=0.3, k=0.5),
              [randn(2, 4, 3)], grad=(0,))


@pytest.mark.parametrize("fn", [F.dropout1d, F.dropout2d, F.dropout3d])
def test_channel_dropout_refuses_integers_on_device(device, fn):
    for dev in ("cpu", "cuda"):
        x = jg.ones(2, 3, 2, 2, 2, dtype=jg.int64, device=dev)[:, :, 0] if fn is F.dropout2d \
            else jg.ones(2, 3, 2, 2, 2, dtype=jg.int64, device=dev)
        if fn is F.dropout1d:
            x = x[:, :, 0, 0]
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            fn(x, 0.5, training=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward_node_on_device(device, training):
    x = jg.tensor(X_DB, device="cuda", requires_grad=True)
    w = jg.ones(2, dtype=jg.float64, device="cuda", requires_grad=True)
    y = F.batch_norm(x, jg.zeros(2, dtype=jg.float64, device="cuda"),
                     jg.ones(2, dtype=jg.float64, device="cuda"), w, training=training)
    g = jg.autograd.grad((y ** 3).sum(), (x, w), create_graph=True)
    assert [type(t.grad_fn).__name__ for t in g] == ["NativeBatchNormBackwardBackward0"] * 2
