"""Convolutions, transposed convolutions and unfold/fold on CUDA (simulator or GPU): values
and gradients against the CPU path (itself tested against PyTorch in tests/nn/test_conv.py),
double backward, and no host<->device transfers in forward + backward. Small sizes: the
simulator runs every thread in Python.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_conv.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

RNG = np.random.default_rng(5)
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-5),
       np.float16: dict(rtol=2e-3, atol=2e-3)}


def _host(t):
    return t.detach().cpu().numpy()


def _randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def _check(device, fn, arrays, dt=np.float64, grad=True):
    results = {}
    for dev in ("cpu", "cuda"):
        ts = [None if a is None else jg.tensor(a, device=dev, requires_grad=grad)
              for a in arrays]
        device.reset_stats()
        out = fn(*ts)
        if grad:
            w = jg.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(dt),
                          device=dev)
            before = device.stats.h2d + device.stats.d2h
            (out * w).sum().backward()
            moved = device.stats.h2d + device.stats.d2h
            if dev == "cuda":
                assert moved - before <= 1, device.stats  # the test's upload of w only
        if dev == "cuda":
            assert out.is_cuda
        results[dev] = (out, [t.grad for t in ts if t is not None] if grad else [])
    (oc, gc), (od, gd) = results["cpu"], results["cuda"]
    assert tuple(od.shape) == tuple(oc.shape) and od.dtype == oc.dtype
    assert od.grad_fn.name() == oc.grad_fn.name() if grad else True
    np.testing.assert_allclose(_host(od), _host(oc), **TOL[dt])
    for a, b in zip(gc, gd):
        assert b.is_cuda
        np.testing.assert_allclose(_host(b), _host(a), **TOL[dt])


CASES = [
    ("conv1d", (2, 3, 7), (4, 3, 3), dict(stride=2, padding=1)),
    ("conv2d", (2, 4, 5, 6), (6, 2, 3, 2), dict(padding=(1, 0), dilation=(1, 2), groups=2)),
    ("conv2d", (1, 3, 4, 4), (3, 1, 2, 2), dict(padding="same", groups=3)),
    ("conv3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), dict(stride=(1, 2, 1), padding=1)),
    ("conv_transpose1d", (2, 3, 4), (3, 2, 3), dict(stride=2, output_padding=1)),
    ("conv_transpose2d", (1, 4, 3, 3), (4, 1, 3, 2),
     dict(stride=2, padding=1, groups=2, dilation=(1, 2))),
    ("conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), dict(stride=(2, 1, 1))),
]


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("fn,xs,ws,kw", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_conv_matches_cpu(device, fn, xs, ws, kw):
    transposed = "transpose" in fn
    cout = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    f = getattr(F, fn)
    _check(device, lambda x, w, b: f(x, w, b, **kw), [_randn(*xs), _randn(*ws), _randn(cout)])


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_conv2d_dtypes(device, dt):
    _check(device, lambda x, w: F.conv2d(x, w, padding=1),
           [_randn(2, 3, 4, 4, dt=dt), _randn(2, 3, 3, 3, dt=dt)], dt=dt, grad=dt != np.float16)


def test_empty_batch(device):
    _check(device, lambda x, w, b: F.conv2d(x, w, b, padding=1),
           [_randn(0, 3, 4, 4), _randn(2, 3, 3, 3), _randn(2)])


def test_double_backward(device):
    x0, w0 = _randn(1, 2, 4, 4), _randn(3, 2, 3, 3)
    res = {}
    for dev in ("cpu", "cuda"):
        x = jg.tensor(x0, device=dev, requires_grad=True)
        w = jg.tensor(w0, device=dev, requires_grad=True)
        y = F.conv2d(x, w, padding=1, stride=2)
        gx, gw = jg.autograd.grad((y * y).sum(), [x, w], create_graph=True)
        assert gx.grad_fn.name() == "ConvolutionBackwardBackward0"
        (gx.sum() + (gw * gw).sum()).backward()
        res[dev] = [_host(t) for t in (gx, gw, x.grad, w.grad)]
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(b, a, **TOL[np.float64])


def test_unfold_fold(device):
    _check(device, lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
           [_randn(2, 3, 5, 6)])
    _check(device, lambda c: F.fold(c, (4, 5), 2, padding=1, stride=2), [_randn(2, 8, 9)])


def test_module_on_device(device):
    jg.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.ConvTranspose2d(3, 2, 2,
                                                                                  stride=2))
    x = _randn(2, 2, 3, 3, dt=np.float32)
    ref = m(jg.tensor(x))
    m.to("cuda")
    out = m(jg.tensor(x, device="cuda"))
    np.testing.assert_allclose(_host(out), _host(ref), **TOL[np.float32])


def test_device_mismatch_error(device):
    x = jg.tensor(_randn(1, 2, 4, 4, dt=np.float32), device="cuda")
    w = jg.tensor(_randn(3, 2, 3, 3, dt=np.float32))
    with pytest.raises(RuntimeError, match=r"Input type \(torch.cuda.FloatTensor\) and weight "
                                           r"type \(torch.FloatTensor\) should be the same"):
        F.conv2d(x, w)
