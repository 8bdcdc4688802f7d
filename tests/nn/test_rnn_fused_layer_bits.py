"""The fused recurrent layers (``nn/modules/rnn_fused.py`` over ``_rnn_kernels.py``: GRU, tanh and
relu RNN, packed LSTM, LSTM with projections) against PyTorch bit for bit at one thread: outputs,
final states and the gradients of the input, the initial states and every parameter, float32
and float64, padded and packed (sequences ending at different steps), one and two layers, one
and two directions, hidden widths with and without ATen's sigmoid tail, batches below and above
the bias sums' first cascade level. PyTorch runs these layers op by op (RNN.cpp), so its bits
are the target; the fused kernels must have run (counted)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends import blas
from jitgrad.nn.modules import _rnn_kernels as K

torch = pytest.importorskip("torch", reason="needs PyTorch")

pytestmark = pytest.mark.skipif(blas.backend() != "mkl", reason="the fused layers need MKL")

_FORWARDS = {"GRU": "gru_forward", "RNN": "simple_forward", "LSTM": "lstm_forward"}


def _count(monkeypatch, cls):
    name = _FORWARDS[cls]  # lstm_forward: packed, or with projections
    real, calls = getattr(K, name), []

    def spy(*args):
        calls.append(True)
        return real(*args)
    monkeypatch.setattr(K, name, spy)
    return calls


def _run(lib, cls, kw, dt, steps, batch, n_in, hid, lengths, seed=0):
    """One call of a seeded layer on NumPy-drawn parameters, input, states and output
    gradients: every output and every gradient, as arrays."""
    rng = np.random.default_rng(seed)
    m = getattr(lib.nn, cls)(n_in, hid, dtype=getattr(lib, np.dtype(dt).name), **kw)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor((rng.standard_normal(tuple(p.shape)) * 0.5).astype(dt)))
    x = lib.tensor(rng.standard_normal((steps, batch, n_in)).astype(dt), requires_grad=True)
    n_states = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    out_width = kw.get("proj_size") or hid
    h0 = lib.tensor(rng.standard_normal((n_states, batch, out_width)).astype(dt),
                    requires_grad=True)
    c0 = lib.tensor(rng.standard_normal((n_states, batch, hid)).astype(dt), requires_grad=True)
    inp = x
    if lengths is not None:
        inp = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor(lengths), enforce_sorted=False)
    out, state = m(inp, (h0, c0) if cls == "LSTM" else h0)
    if lengths is not None:
        out = out.data
    outs = [out, *(state if isinstance(state, tuple) else (state,))]
    gs = [lib.tensor(rng.standard_normal(tuple(o.shape)).astype(dt)) for o in outs]
    leaves = [x, h0, *([c0] if cls == "LSTM" else []), *m.parameters()]
    grads = lib.autograd.grad(outs, leaves, gs)
    return [o.detach().numpy() for o in outs] + [g.numpy() for g in grads]


LAYERS = [("GRU", {}), ("GRU", {"bias": False}), ("GRU", {"num_layers": 2, "bidirectional": True}),
          ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
          ("RNN", {"bidirectional": True}),
          ("LSTM", {"proj_size": 3}), ("LSTM", {"proj_size": 4, "num_layers": 2,
                                                "bidirectional": True})]
# (steps, batch, input, hidden); hidden 33/37: vector lanes and a scalar tail
SHAPES = [(5, 3, 4, 6), (7, 20, 5, 37), (4, 18, 3, 33)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cls,kw", LAYERS)
def test_padded_layers_are_pytorchs_bit_for_bit(cls, kw, shape, dt, monkeypatch, one_thread):
    calls = _count(monkeypatch, cls)
    mine = _run(jg, cls, kw, dt, *shape, None)
    assert calls
    ref = _run(torch, cls, kw, dt, *shape, None)
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        np.testing.assert_array_equal(a, b)


PACKED = [("GRU", {}), ("GRU", {"bidirectional": True}), ("RNN", {}),
          ("RNN", {"nonlinearity": "relu", "bidirectional": True}), ("LSTM", {}),
          ("LSTM", {"num_layers": 2, "bidirectional": True}), ("LSTM", {"proj_size": 3})]
# lengths in no order (pack sorts them); batches shrinking by several rows at once
PACKED_SHAPES = [(6, 4, 3, 5, [3, 6, 1, 3]),
                 (4, 18, 3, 33, [4] * 5 + [3] * 6 + [2] * 6 + [1])]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", PACKED_SHAPES)
@pytest.mark.parametrize("cls,kw", PACKED)
def test_packed_layers_are_pytorchs_bit_for_bit(cls, kw, shape, dt, monkeypatch, one_thread):
    calls = _count(monkeypatch, cls)
    mine = _run(jg, cls, kw, dt, *shape)
    assert calls
    ref = _run(torch, cls, kw, dt, *shape)
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}])
def test_padded_float64_lstm_is_pytorchs_bit_for_bit(kw, shape, monkeypatch, one_thread):
    # PyTorch runs a float64 LSTM op by op (oneDNN is float32): lstm_fused hands it to the
    # kernels by rows (a float32 one is oneDNN's arithmetic in PyTorch, not compared here)
    calls = _count(monkeypatch, "LSTM")
    mine = _run(jg, "LSTM", kw, np.float64, *shape, None)
    assert calls
    ref = _run(torch, "LSTM", kw, np.float64, *shape, None)
    for a, b in zip(mine, ref):
        np.testing.assert_array_equal(a, b)
