"""LSTM and GRU on CUDA tensors (2 layers, bidirectional, tiny sizes): outputs, final states and
every gradient (input, h0/c0, parameters) against the same module on the CPU (itself checked
against PyTorch in tests/nn/test_rnn.py). The layers are ordinary tensor ops, so this is the
device path of linear/chunk/sigmoid/tanh/stack/cat under a time loop.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_rnn.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(5)
TOL = dict(rtol=1e-9, atol=1e-11)


def _host(t):
    return t.detach().cpu().numpy()


def run(cls, dev, x, hx):
    jg.manual_seed(0)
    m = getattr(jg.nn, cls)(2, 3, num_layers=2, bidirectional=True, dtype=jg.float64).to(dev)
    xt = jg.tensor(x, device=dev, requires_grad=True)
    hts = [jg.tensor(h, device=dev, requires_grad=True) for h in hx]
    out, h = m(xt, tuple(hts) if cls == "LSTM" else hts[0])
    outs = [out, *(h if isinstance(h, tuple) else (h,))]
    w = np.random.default_rng(1)
    sum((o * jg.tensor(w.standard_normal(tuple(o.shape)), device=dev)).sum()
        for o in outs).backward()
    grads = [xt.grad, *(t.grad for t in hts), *(p.grad for p in m.parameters())]
    return outs, grads


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_rnn_layers_on_device_match_cpu(device, cls):
    x = RNG.standard_normal((2, 2, 2))
    hx = [RNG.standard_normal((4, 2, 3)) for _ in range(2 if cls == "LSTM" else 1)]
    (oc, gc), (od, gd) = run(cls, "cpu", x, hx), run(cls, "cuda", x, hx)
    for a, b in zip(oc + gc, od + gd):
        assert b.is_cuda
        np.testing.assert_allclose(_host(b), _host(a), **TOL)
    assert [type(o.grad_fn).__name__ for o in od] == [type(o.grad_fn).__name__ for o in oc]
