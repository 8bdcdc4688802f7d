"""F.pad on CUDA (simulator or GPU) against PyTorch's CPU results: every mode over 1-3 padded
dims (negative pads crop), gradients, node names, double backward, no device->host transfer
(the forward uploads its small index maps, the backward nothing), and the convolution modules' non-zero ``padding_mode`` on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_pad.py
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

RNG = np.random.default_rng(7)


def _host(t):
    return t.detach().cpu().numpy()


CASES = [  # (input shape, pad, mode, value)
    ((2, 3, 5), (2, 1), "reflect", None),
    ((2, 3, 4, 5), (1, 2, 3, 0), "reflect", None),
    ((1, 2, 3, 4, 4), (1, 1, 2, 0, 1, 2), "reflect", None),
    ((3, 4), (0, 3), "replicate", None),
    ((2, 2, 3, 4), (2, 1, 1, 3), "replicate", None),
    ((1, 2, 2, 3, 4), (1, 0, 2, 1, 0, 1), "replicate", None),
    ((2, 3, 5), (2, 3), "circular", None),
    ((2, 2, 3, 4), (-1, 2, 1, -1), "circular", None),
    ((1, 1, 2, 3, 4), (1, 1, 1, 2, 2, 0), "circular", None),
    ((2, 3, 4), (1, 2, 0, 1), "constant", 1.5),
    ((2, 3, 4), (-1, 2, 1, -2), "constant", None),
    ((2, 3, 4, 5), (1, 1, 2, 2, 1, 0), "constant", -2.0),
]


@pytest.mark.parametrize("shape,pad,mode,value", CASES,
                         ids=[f"{c[2]}{i}" for i, c in enumerate(CASES)])
def test_pad_matches_torch(device, shape, pad, mode, value):
    a = RNG.standard_normal(shape)
    kw = {} if value is None else {"value": value}
    t = torch.tensor(a, requires_grad=True)
    ref = torch.nn.functional.pad(t, pad, mode=mode, **kw)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    x = jg.tensor(a, device="cuda", requires_grad=True)
    out = F.pad(x, pad, mode=mode, **kw)
    assert out.is_cuda and tuple(out.shape) == tuple(ref.shape)
    assert out.grad_fn.name() == ref.grad_fn.name()
    np.testing.assert_allclose(_host(out), ref.detach().numpy(), rtol=1e-12, atol=0)
    gd = jg.tensor(g, device="cuda")
    device.reset_stats()
    out.backward(gd)
    assert device.stats.h2d + device.stats.d2h == 0, device.stats
    assert x.grad.is_cuda
    np.testing.assert_allclose(_host(x.grad), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_pad_forward_uploads_only_the_index_maps_and_float32(device):
    x = jg.tensor(RNG.standard_normal((2, 3, 4, 4)).astype(np.float32), device="cuda")
    device.reset_stats()
    out = F.pad(x, (1, 2, 2, 1), mode="reflect")
    assert device.stats.d2h == 0 and device.stats.h2d == 2, device.stats  # one map per dim
    assert out.dtype == jg.float32
    ref = torch.nn.functional.pad(torch.tensor(_host(x)), (1, 2, 2, 1), mode="reflect")
    np.testing.assert_array_equal(_host(out), ref.numpy())


def test_pad_double_backward(device):
    a = RNG.standard_normal((1, 2, 3, 4))
    res = []
    for lib, dev in ((torch, None), (jg, "cuda")):
        x = lib.tensor(a, requires_grad=True) if dev is None else \
            lib.tensor(a, device=dev, requires_grad=True)
        y = lib.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect")
        (gx,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        res.append([gx.detach().cpu().numpy(), x.grad.cpu().numpy()])
    for r, j in zip(*res):
        np.testing.assert_allclose(j, r, rtol=1e-12, atol=1e-12)


def test_pad_errors_on_device(device):
    x = jg.tensor(RNG.standard_normal((1, 2, 3)), device="cuda")
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(IndexError):  # an empty dim to fill: no out-of-range device read
        F.pad(jg.zeros(2, 0, device="cuda"), (1, 1))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_modules_padding_mode_on_device(device, mode):
    for jm, tm, shape in ((nn.Conv2d, torch.nn.Conv2d, (2, 3, 5, 6)),
                          (nn.Conv1d, torch.nn.Conv1d, (2, 3, 7))):
        jg.manual_seed(0)
        torch.manual_seed(0)
        kw = dict(padding=2 if mode != "reflect" else 1, padding_mode=mode)
        j, t = jm(3, 4, 3, **kw), tm(3, 4, 3, **kw)
        with torch.no_grad():
            for pj, pt in zip(j.parameters(), t.parameters()):
                pt.copy_(torch.tensor(pj.detach().numpy()))
        j.to("cuda")
        a = RNG.standard_normal(shape).astype(np.float32)
        xt = torch.tensor(a, requires_grad=True)
        xj = jg.tensor(a, device="cuda", requires_grad=True)
        ref, out = t(xt), j(xj)
        np.testing.assert_allclose(_host(out), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
        ref.sum().backward()
        out.sum().backward()
        np.testing.assert_allclose(_host(xj.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_host(j.weight.grad), t.weight.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)
