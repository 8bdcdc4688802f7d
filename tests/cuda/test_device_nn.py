"""nn.functional, nn modules and Module.to/.cuda/.cpu on CUDA: values and gradients against the
CPU path, and no host<->device transfers inside forward + backward.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_nn.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

RNG = np.random.default_rng(3)
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-6)}


def _host(t):
    return t.detach().cpu().numpy()


def check(device, fn, arrays, grad=(), dt=np.float64, transfers=0):
    """Run ``fn(*tensors)`` on the CPU and on CUDA (``grad``: indices of arrays that require
    grad); compare outputs and input gradients (backward of ``(out * w).sum()`` with a fixed
    random ``w``); forward + backward on CUDA make ``transfers`` host<->device copies."""
    results = {}
    for dev in ("cpu", "cuda"):
        ts = [jg.tensor(a, device=dev, requires_grad=i in grad) for i, a in enumerate(arrays)]
        device.reset_stats()
        out = fn(*ts)
        moved = device.stats.h2d + device.stats.d2h
        if grad:
            w = np.random.default_rng(1).standard_normal(tuple(out.shape))
            w = jg.tensor(w.astype(np.dtype(out.dtype.np)), device=dev)  # the test's upload
            device.reset_stats()
            (out * w).sum().backward()
            moved += device.stats.h2d + device.stats.d2h
        if dev == "cuda":
            assert moved == transfers, device.stats
            assert out.is_cuda
        results[dev] = (out, [ts[i].grad for i in grad])
    (oc, gc), (od, gd) = results["cpu"], results["cuda"]
    assert tuple(od.shape) == tuple(oc.shape) and od.dtype == oc.dtype
    tol = TOL.get(dt, {})
    np.testing.assert_allclose(_host(od), _host(oc), **tol)
    for a, b in zip(gc, gd):
        assert b.is_cuda
        np.testing.assert_allclose(_host(b), _host(a), **tol)
    return od


def randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


# ----------------------------------------------------------------------------- linear


@pytest.mark.parametrize("xshape,bias,dt", [((5, 4), True, np.float32), ((5, 4), True, np.float64),
                                            ((2, 3, 4), True, np.float64),
                                            ((4,), True, np.float64), ((5, 4), False, np.float64)])
def test_linear(device, xshape, bias, dt):
    arrays = [randn(*xshape, dt=dt), randn(3, 4, dt=dt)] + ([randn(3, dt=dt)] if bias else [])
    out = check(device, lambda *t: F.linear(*t), arrays, grad=tuple(range(len(arrays))), dt=dt)
    if bias and len(xshape) == 2:
        assert type(out.grad_fn).__name__ == "AddmmBackward0"


# ----------------------------------------------------------------------------- losses

TGT = np.array([0, 2, 1, 3, 2, 0])


@pytest.mark.parametrize("reduction,weighted,ignore", [
    ("mean", False, -100), ("mean", True, 2), ("sum", True, -100), ("sum", False, 2),
    ("none", True, 2), ("none", False, -100)])
def test_nll_loss(device, reduction, weighted, ignore):
    arrays = [randn(6, 4), TGT] + ([np.array([0.5, 1.0, 2.0, 0.25])] if weighted else [])
    check(device, lambda x, t, *w: F.nll_loss(x, t, *w, ignore_index=ignore, reduction=reduction),
          arrays, grad=(0,))


def test_nll_loss_kdim_and_single_sample(device):
    t = RNG.integers(0, 3, (2, 4, 5))
    check(device, lambda x, t: F.nll_loss(x, t, reduction="mean"), [randn(2, 3, 4, 5), t],
          grad=(0,))
    check(device, lambda x, t: F.nll_loss(x, t), [randn(4), np.array([2])], grad=(0,))
    check(device, lambda x, t: F.nll_loss(x, t), [randn(4), np.array(1)], grad=(0,))


CE_CASES = [({}, np.float32), ({}, np.float64), ({"reduction": "sum"}, np.float64),
            ({"ignore_index": 1, "reduction": "none"}, np.float64),
            ({"label_smoothing": 0.2}, np.float64),
            ({"label_smoothing": 0.1, "ignore_index": 0, "reduction": "none"}, np.float64),
            ({"label_smoothing": 0.3, "ignore_index": 3, "weight": True}, np.float32),
            ({"weight": True, "reduction": "sum"}, np.float64)]


@pytest.mark.parametrize("kw,dt", CE_CASES, ids=[
    ",".join(f"{a}={b}" for a, b in k.items()) + f"-{np.dtype(d).name}" for k, d in CE_CASES])
def test_cross_entropy_class_indices(device, kw, dt):
    kw = dict(kw)
    arrays = [randn(6, 4, dt=dt), TGT]
    if kw.pop("weight", False):
        arrays.append(np.array([0.5, 1.0, 2.0, 0.25], dt))
    check(device, lambda x, t, *w: F.cross_entropy(x, t, *w, **kw), arrays, grad=(0,), dt=dt)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.2, "reduction": "sum"},
                                {"weight": True}, {"reduction": "none"}],
                         ids=["mean", "smooth-sum", "weight", "none"])
def test_cross_entropy_probabilities(device, kw):
    kw = dict(kw)
    p = RNG.random((5, 3))
    arrays = [randn(5, 3), p / p.sum(1, keepdims=True)]
    if kw.pop("weight", False):
        arrays.append(np.array([0.2, 1.0, 3.0]))
    check(device, lambda x, t, *w: F.cross_entropy(x, t, *w, **kw), arrays, grad=(0, 1))


def test_cross_entropy_kdim_and_module(device):
    check(device, lambda x, t: F.cross_entropy(x, t), [randn(2, 3, 4), RNG.integers(0, 3, (2, 4))],
          grad=(0,))
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    check(device, crit, [randn(6, 4), TGT], grad=(0,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_and_l1(device, reduction):
    arrays = [randn(3, 4), randn(3, 4)]
    check(device, lambda a, b: F.mse_loss(a, b, reduction=reduction), arrays, grad=(0, 1))
    check(device, lambda a, b: F.l1_loss(a, b, reduction=reduction), arrays, grad=(0, 1))
    check(device, nn.MSELoss(reduction=reduction), arrays, grad=(0,))


def test_mse_broadcast_warns_like_cpu(device):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        check(device, lambda a, b: F.mse_loss(a, b), [randn(3, 4), randn(4)], grad=(0, 1))
    assert sum("different to the input size" in str(x.message) for x in w) == 2


@pytest.mark.parametrize("reduction,weighted", [("mean", False), ("sum", True), ("none", True)])
def test_binary_cross_entropy(device, reduction, weighted):
    x = RNG.uniform(0.05, 0.95, (4, 3))
    x[0, 0], x[0, 1] = 0.0, 1.0  # the logs clamp at -100 and the gradient uses eps, as on CPU
    t = RNG.random((4, 3)).round()
    arrays = [x, t] + ([RNG.uniform(0.5, 2, (3,))] if weighted else [])
    out = check(device, lambda a, b, *w: F.binary_cross_entropy(a, b, *w, reduction=reduction),
                arrays, grad=(0, 1))
    assert type(out.grad_fn).__name__ == "BinaryCrossEntropyBackward0"


@pytest.mark.parametrize("reduction,pos_weight,weighted", [
    ("mean", False, False), ("sum", True, False), ("none", True, True), ("mean", False, True)])
def test_bce_with_logits(device, reduction, pos_weight, weighted):
    x = randn(4, 3) * 4
    x[0, 0] = 60.0  # far tails stay finite
    x[0, 1] = -60.0
    arrays = [x, RNG.random((4, 3))]
    kw = {}
    if pos_weight:
        arrays.append(RNG.uniform(0.5, 3, (3,)))
    if weighted:
        arrays.append(RNG.uniform(0.5, 2, (4, 1)))

    def fn(a, b, *rest):
        rest = list(rest)
        pw = rest.pop(0) if pos_weight else None
        w = rest.pop(0) if weighted else None
        return F.binary_cross_entropy_with_logits(a, b, w, reduction=reduction, pos_weight=pw,
                                                  **kw)
    check(device, fn, arrays, grad=(0, 1))


def test_loss_double_backward_on_device(device):
    """create_graph=True through the device losses: second derivatives equal the CPU's."""
    x0, t0 = RNG.uniform(0.1, 0.9, (3, 4)), RNG.random((3, 4))
    out = {}
    for dev in ("cpu", "cuda"):
        x = jg.tensor(x0, device=dev, requires_grad=True)
        t = jg.tensor(t0, device=dev)
        loss = F.binary_cross_entropy(x, t) + F.cross_entropy(x, t.argmax(1)) + \
            F.layer_norm(x, (4,)).pow(3).sum()
        (g,) = jg.autograd.grad(loss, x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        out[dev] = (_host(g), _host(gg))
    for a, b in zip(out["cpu"], out["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- layers


@pytest.mark.parametrize("shape,norm,affine,dt", [((4, 6), (6,), False, np.float32),
                                                  ((4, 6), (6,), True, np.float64),
                                                  ((2, 3, 4), (3, 4), True, np.float32)])
def test_layer_norm(device, shape, norm, affine, dt):
    arrays = [randn(*shape, dt=dt) * 3 + 1]
    if affine:
        arrays += [randn(*norm, dt=dt), randn(*norm, dt=dt)]
    check(device, lambda x, *wb: F.layer_norm(x, norm, *wb, eps=1e-5), arrays,
          grad=tuple(range(len(arrays))), dt=dt)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding(device, padding_idx):
    idx = np.array([[0, 2, 4], [2, 1, 2]])
    check(device, lambda w, i: F.embedding(i, w, padding_idx=padding_idx),
          [randn(5, 3), idx], grad=(0,))


def test_embedding_module_and_dropout_eval(device):
    emb = nn.Embedding(6, 4, padding_idx=0).to("cuda")
    out = emb(jg.tensor([[0, 1, 5]], device="cuda"))
    assert out.is_cuda and out.shape == (1, 3, 4)
    np.testing.assert_array_equal(_host(out)[0, 0], np.zeros(4))
    x = jg.randn(3, 4, device="cuda")
    assert F.dropout(x, 0.5, training=False) is x


def test_one_hot(device):
    t = np.array([[0, 3], [2, 1]])
    check(device, lambda x: F.one_hot(x, 5), [t])
    out = check(device, lambda x: F.one_hot(x), [t], transfers=1)  # reads the maximum
    assert out.dtype is jg.int64 and out.shape == (2, 2, 4)


def test_softmax_log_softmax(device):
    check(device, lambda x: F.softmax(x, 0), [randn(3, 5)], grad=(0,))
    check(device, lambda x: F.log_softmax(x, -1), [randn(3, 5)], grad=(0,))


def test_dropout_gradient_is_the_mask(device):
    x = jg.ones(8, 8, device="cuda", requires_grad=True)
    device.reset_stats()
    y = F.dropout(x, 0.25)
    y.sum().backward()
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    yv, gv = _host(y), _host(x.grad)
    np.testing.assert_array_equal(gv, yv)  # d(x*mask)/dx = mask = y for x = 1
    assert set(np.unique(yv)) <= {0.0, np.float32(1) / np.float32(0.75)}


# ----------------------------------------------------------------------------- Module.to


def test_module_to_cuda_and_back(device):
    jg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.LayerNorm(5), nn.ReLU(), nn.Linear(5, 2))
    model.register_buffer("scale", jg.ones(2))
    params = list(model.parameters())
    host = [_host(p) for p in params]
    model[0].weight.grad = jg.ones(5, 4)
    device.reset_stats()
    assert model.to("cuda") is model
    assert device.stats.h2d == len(params) + 2  # every parameter, the grad and the buffer
    assert list(model.parameters()) == params  # the same Parameter objects (optimizers stay)
    assert all(p.is_cuda for p in params) and model.scale.is_cuda
    assert model[0].weight.grad.is_cuda
    for p, h in zip(params, host):
        np.testing.assert_array_equal(_host(p), h)
    device.reset_stats()
    model.cuda()
    assert device.stats.h2d == 0  # already there
    assert model.cpu() is model and all(p.is_cpu for p in params) and model.scale.is_cpu
    model.cuda(0)
    assert all(p.is_cuda for p in params)
    model.to(jg.device("cpu"))
    assert all(p.is_cpu for p in params)
    model.to("cuda", jg.float64)
    assert all(p.is_cuda and p.dtype is jg.float64 for p in params)


def test_module_zero_grad_on_device(device):
    lin = nn.Linear(3, 2).cuda()
    lin(jg.randn(4, 3, device="cuda")).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.is_cuda and not _host(lin.weight.grad).any()


def _grad_fn_names(dev):
    jg.manual_seed(0)
    x = jg.randn(4, 3).to(dev).requires_grad_()
    t = jg.tensor([0, 2, 1, 0]).to(dev)
    p = jg.rand(4, 3).to(dev)
    w = jg.randn(3).to(dev).requires_grad_()
    e = jg.randn(5, 3).to(dev).requires_grad_()
    ids = jg.tensor([1, 4]).to(dev)
    outs = [F.cross_entropy(x, t), F.nll_loss(x, t), F.cross_entropy(x, t, reduction="none"),
            F.mse_loss(x, p), F.l1_loss(x, p), F.binary_cross_entropy(x.sigmoid(), p),
            F.binary_cross_entropy_with_logits(x, p), F.layer_norm(x, (3,), w, w),
            F.embedding(ids, e), F.linear(x, e), F.cross_entropy(x, p)]
    return [(type(o.grad_fn).__name__, len(o.grad_fn.next_functions)) for o in outs]


def test_losses_record_the_cpu_paths_nodes(device):
    """Device losses are compositions inside, but record PyTorch's node (NllLossBackward0, ...)
    with the same input slots as the CPU path."""
    assert _grad_fn_names("cuda") == _grad_fn_names("cpu")


def test_composed_loss_node_frees_and_refuses_a_second_backward(device):
    x = jg.tensor(randn(4, 3), device="cuda", requires_grad=True)
    loss = F.nll_loss(x.log_softmax(1), jg.tensor([0, 2, 1, 0], device="cuda"))
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
