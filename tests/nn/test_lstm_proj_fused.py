"""LSTM with projections (``proj_size > 0``) on the fused layer (``rnn_fused._proj_layer`` over
``_rnn_kernels.lstm_forward/backward`` with ``w_hr``): outputs, final states and every gradient against
PyTorch (padded and packed, both directions, 2 layers, biases or not, h0/c0 given or not,
float32 and float64), the output node names, float64 finite differences of the layer and double
backward against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad.backends import blas
from jitgrad.nn.modules import _rnn_kernels as K
from jitgrad.nn.modules import rnn_fused, rnn_stack

pytestmark = [pytest.mark.skipif(blas.backend() != "mkl", reason="the fused layer needs MKL"),
              pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")]

IN, HID, PROJ, T, N = 5, 7, 3, 6, 4
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
LENGTHS = [6, 5, 3, 2]


def _count(monkeypatch):
    real, calls = K.lstm_forward, []

    def spy(*args):
        calls.append(True)
        return real(*args)
    monkeypatch.setattr(K, "lstm_forward", spy)
    return calls


def _run(lib, dt, kw, packed, with_hx):
    lib.manual_seed(0)
    m = lib.nn.LSTM(IN, HID, proj_size=PROJ, dtype=getattr(lib, np.dtype(dt).name), **kw)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((T, N, IN)).astype(dt), requires_grad=True)
    layers = m.num_layers * (2 if m.bidirectional else 1)
    h0 = lib.tensor(rng.standard_normal((layers, N, PROJ)).astype(dt), requires_grad=True)
    c0 = lib.tensor(rng.standard_normal((layers, N, HID)).astype(dt), requires_grad=True)
    inp = lib.nn.utils.rnn.pack_padded_sequence(x, LENGTHS) if packed else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, (h, c) = m(inp, (h0, c0)) if with_hx else m(inp)
    out = out.data if packed else out
    w = lib.tensor(rng.standard_normal(tuple(out.shape)).astype(dt))
    ((out * w).sum() + (h * h).sum() + c.sin().sum()).backward()
    grads = [x.grad] + ([h0.grad, c0.grad] if with_hx else []) + [p.grad for p in
                                                                    m.parameters()]
    names = [type(t.grad_fn).__name__ for t in (out, h, c)]
    return [t.detach().numpy() for t in (out, h, c)] + [g.numpy() for g in grads], names


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"bias": False, "bidirectional": True}])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("with_hx", [False, True])
def test_matches_pytorch(dt, kw, packed, with_hx, monkeypatch):
    calls = _count(monkeypatch)
    mine, mine_names = _run(jg, dt, kw, packed, with_hx)
    assert len(calls) == kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    ref, ref_names = _run(torch, dt, kw, packed, with_hx)
    assert mine_names == ref_names
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **TOL[dt])


@pytest.mark.parametrize("batch_sizes,reverse", [(None, False), (None, True),
                                                 ([3, 2, 2, 1], False), ([3, 2, 2, 1], True)])
def test_layer_gradcheck_float64(batch_sizes, reverse):
    rng = np.random.default_rng(3)

    def t(*shape):
        return jg.tensor(rng.standard_normal(shape) * 0.5, requires_grad=True)

    x = t(4, 3, IN) if batch_sizes is None else t(8, IN)
    inputs = (x, t(4 * HID, IN), t(4 * HID, PROJ), t(4 * HID), t(4 * HID), t(PROJ, HID),
              t(3, PROJ), t(3, HID))

    def fn(x, w_ih, w_hh, b_ih, b_hh, w_hr, hx, cx):
        params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh, w_hr)
        out, (h, c) = rnn_fused.layer(x, batch_sizes, (hx, cx), params,
                                      rnn_stack.lstm_layer_cell, reverse)
        return out, h, c

    assert type(fn(*inputs)[0].grad_fn).__name__ == "FusedLstmLayerBackward0"
    assert jg.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def _double_backward(lib):
    lib.manual_seed(0)
    m = lib.nn.LSTM(IN, HID, proj_size=PROJ, num_layers=2, bidirectional=True,
                    dtype=lib.float64)
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((T, N, IN)), requires_grad=True)
    out, (h, c) = m(x)
    leaves = [x, *m.parameters()]
    gs = lib.autograd.grad((out * out).sum() + (h * c.sum()).sum(), leaves, create_graph=True)
    ggs = lib.autograd.grad(sum((g * g).sum() for g in gs), leaves)
    return [g.detach().numpy() for g in gs] + [g.numpy() for g in ggs]


def test_double_backward_matches_pytorch(monkeypatch):
    calls = _count(monkeypatch)
    mine = _double_backward(jg)
    assert calls
    for a, b in zip(mine, _double_backward(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
