"""fractional_max_pool2d/3d, lazy modules, CrossMapLRN2d and Muon on CUDA tensors: the same
tensor-op code as on the CPU (itself tested against PyTorch in tests/nn and tests/optim), so
results agree with the CPU's; the pool's forward + backward reads nothing back to the host.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_fractional_lazy.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

RNG = np.random.default_rng(11)


def _host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("nsp,shape,kernel,out", [
    (2, (2, 2, 5, 6), (2, 3), (3, 3)),
    (3, (2, 4, 4, 5), 2, (2, 2, 3)),  # unbatched
])
def test_fractional_max_pool_on_cuda(device, nsp, shape, kernel, out):
    x = RNG.standard_normal(shape)
    x[(0,) * len(shape)] = np.nan  # a NaN window: ATen's last-NaN rule on the device too
    batch = shape[0] if len(shape) == nsp + 2 else 1
    u = RNG.random((batch, shape[-nsp - 1], nsp))
    g = None
    results = {}
    fn = getattr(F, f"fractional_max_pool{nsp}d")
    for dev in ("cpu", "cuda"):
        t = jg.tensor(x, device=dev, requires_grad=True)
        ut = jg.tensor(u, device=dev)
        if g is None:
            g = RNG.standard_normal(fn(jg.tensor(x), kernel, out, _random_samples=ut).shape)
        gt = jg.tensor(g, device=dev)
        device.reset_stats()
        y, idx = fn(t, kernel, out, return_indices=True, _random_samples=ut)
        y.backward(gt)
        results[dev] = (y, idx, t.grad)
    (yc, ic, gc), (yd, idd, gd) = results["cpu"], results["cuda"]
    # nothing read back to the host; the only uploads are the small aranges (window offsets,
    # interval positions) that the device factory builds on the host
    assert device.stats.d2h == 0 and device.stats.h2d_bytes < 1024, device.stats
    assert yd.is_cuda and idd.is_cuda and gd.is_cuda
    np.testing.assert_array_equal(_host(yd), _host(yc))
    np.testing.assert_array_equal(_host(idd), _host(ic))
    np.testing.assert_allclose(_host(gd), _host(gc), rtol=1e-12, atol=1e-13)
    assert yd.grad_fn.name() == yc.grad_fn.name() == f"FractionalMaxPool{nsp}DBackward0"


def test_fractional_max_pool_draws_its_samples_on_cuda(device):
    m = jg.nn.FractionalMaxPool2d(2, output_ratio=0.5)
    y = m(jg.tensor(RNG.standard_normal((1, 2, 4, 4)), device="cuda"))
    assert y.is_cuda and tuple(y.shape) == (1, 2, 2, 2)


def test_lazy_linear_on_cuda(device):
    m = jg.nn.LazyLinear(3).cuda()
    assert type(m.weight).__name__ == "UninitializedParameter" and m.weight.is_cuda
    x = jg.tensor(RNG.standard_normal((4, 5)).astype(np.float32), device="cuda")
    y = m(x)
    assert type(m) is jg.nn.Linear and m.in_features == 5
    assert m.weight.is_cuda and tuple(m.weight.shape) == (3, 5) and y.is_cuda
    # the initialized module computes what a Linear with its parameters computes on the CPU
    ref = F.linear(x.cpu(), m.weight.detach().cpu(), m.bias.detach().cpu())
    np.testing.assert_allclose(_host(y), _host(ref), rtol=1e-5, atol=1e-6)
    bound = 1 / np.sqrt(5)  # PyTorch's init bounds, drawn on the device
    assert np.all(np.abs(_host(m.weight)) <= bound) and np.all(np.abs(_host(m.bias)) <= bound)


def test_lazy_batch_norm_on_cuda(device):
    m = jg.nn.LazyBatchNorm2d(device="cuda")
    assert m.running_mean.is_cuda
    m(jg.randn(2, 3, 4, 4, device="cuda"))
    assert type(m) is jg.nn.BatchNorm2d and m.running_mean.is_cuda
    assert tuple(m.running_var.shape) == (3,) and m.weight.is_cuda


def test_zero_dim_fill_on_cuda(device):
    # a scalar fill of a 0-d CUDA tensor (BatchNorm's num_batches_tracked.zero_() when it is
    # built on the device) expanded a (1,) source to ()
    t = jg.tensor(5, device="cuda")
    t.zero_()
    u = jg.tensor(0.5, device="cuda").fill_(2.0)
    assert int(t.item()) == 0 and float(u.item()) == 2.0
    assert jg.nn.BatchNorm1d(2, device="cuda").num_batches_tracked.is_cuda


def test_cross_map_lrn_and_muon_on_cuda(device):
    x = RNG.standard_normal((1, 4, 2, 2))
    res = []
    for dev in ("cpu", "cuda"):
        t = jg.tensor(x, device=dev, requires_grad=True)
        y = jg.nn.CrossMapLRN2d(3, 0.1)(t)
        y.backward(jg.ones_like(y))
        w = jg.nn.Parameter(jg.tensor(x.reshape(4, 4).astype(np.float32), device=dev))
        opt = jg.optim.Muon([w], lr=0.1)
        w.grad = jg.tensor(np.sin(x).reshape(4, 4).astype(np.float32), device=dev)
        opt.step()
        res.append((_host(y), _host(t.grad), _host(w), y.grad_fn.name()))
    for a, b in zip(res[0][:3], res[1][:3]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-7)
    assert res[0][3] == res[1][3] == "CrossMapLRN2dBackward"
