"""The whole-layer kernels of ``nn/modules/rnn_fused.py`` (GRU, tanh/relu RNN, float32 and
float64, padded and packed; packed LSTMs) and the padded float64 LSTM through ``lstm_fused.py``, against PyTorch run
in the same test: outputs, final states, the input's and h0/c0's gradients and every parameter's,
in float32 (tests/nn/test_rnn.py's tolerance, as the fused float32 LSTM) and float64 (1e-12
relative); that the fused layers really ran; the node names users see (PyTorch's: the layer
node sits below a StackBackward0/CatBackward0); dropout streams; double backward; the version
check; float64 finite differences of the kernels themselves (both directions, packed); and
unchecked functional calls that do not fit falling back to the per-op path's errors.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad.backends import blas
from jitgrad.nn.modules import lstm_fused, rnn_fused, rnn_stack
from tests.nn.test_rnn import TOL, _compare, _hidden, randn, run_layer

pytestmark = pytest.mark.skipif(blas.backend() != "mkl",
                                reason="the fused layers need MKL's CBLAS")

IN, HID, T, N = 3, 4, 4, 2
TIGHT = {np.float32: TOL[np.float32], np.float64: dict(rtol=1e-12, atol=1e-13)}
DTYPES = [np.float64, np.float32]


def _count(monkeypatch, module):
    """Count the fused layer-directions that run (``layer`` is looked up at each call)."""
    calls = []
    real = module.layer
    monkeypatch.setattr(module, "layer", lambda *a: calls.append(1) or real(*a))
    return calls


MODELS = [("GRU", {}), ("RNN", {}), ("RNN", dict(nonlinearity="relu"))]
CASES = [
    (dict(), True),
    (dict(), False),
    (dict(bias=False), True),
    (dict(num_layers=2, bidirectional=True), True),
    (dict(num_layers=2, bidirectional=True, batch_first=True), False),
    (dict(num_layers=3, batch_first=True), True),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("cls,base", MODELS)
@pytest.mark.parametrize("kw,with_hx", CASES)
def test_padded_values_and_gradients_match_pytorch(cls, base, kw, with_hx, dt, monkeypatch):
    kw = {**base, **kw}
    shape = (N, T, IN) if kw.get("batch_first") else (T, N, IN)
    x = randn(*shape, dt=dt)
    hx = _hidden(cls, kw, N, dt) if with_hx else []
    calls = _count(monkeypatch, rnn_fused)
    mine = run_layer(jg, cls, kw, x, hx, dt)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    assert len(calls) == layers
    ref = run_layer(torch, cls, kw, x, hx, dt)
    # names: PyTorch transposes a batch_first RNN/GRU output in place (test_rnn's names test)
    _compare(mine, ref, dt, names=not kw.get("batch_first"))
    if dt == np.float64:
        _tight(mine, ref)


def _tight(mine, ref):
    (jo, jg_, *_), (to, tg, *_) = mine, ref
    for a, b in zip(jo, to):
        np.testing.assert_allclose(a, b, **TIGHT[np.float64])
    for k in tg:
        if tg[k] is not None:
            np.testing.assert_allclose(jg_[k], tg[k], err_msg=k, **TIGHT[np.float64])


LSTM_CASES = [
    (dict(), True),
    (dict(), False),
    (dict(bias=False), True),
    (dict(num_layers=2, bidirectional=True, batch_first=True), True),
]


@pytest.mark.parametrize("kw,with_hx", LSTM_CASES)
def test_float64_lstm_takes_the_kernels_and_matches_pytorch(kw, with_hx, monkeypatch):
    dt = np.float64
    shape = (N, T, IN) if kw.get("batch_first") else (T, N, IN)
    x = randn(*shape, dt=dt)
    hx = _hidden("LSTM", kw, N, dt) if with_hx else []
    calls = _count(monkeypatch, lstm_fused)
    mine = run_layer(jg, "LSTM", kw, x, hx, dt)
    assert len(calls) == kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    ref = run_layer(torch, "LSTM", kw, x, hx, dt)
    _compare(mine, ref, dt, names=True)  # float64 PyTorch runs per op: StackBackward0 & co.
    _tight(mine, ref)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("cls", ["GRU", "RNN", "LSTM"])
def test_training_dropout_between_layers(cls, dt, monkeypatch):
    kw = dict(num_layers=3, dropout=0.4, bidirectional=cls != "RNN")
    x = randn(T, N, IN, dt=dt)
    calls = _count(monkeypatch, lstm_fused if cls == "LSTM" else rnn_fused)
    mine = run_layer(jg, cls, kw, x, [], dt, train=True)
    assert len(calls) == (3 if cls == "RNN" else 6)
    _compare(mine, run_layer(torch, cls, kw, x, [], dt, train=True), dt, names=False)


def _packed_run(lib, cls, kw, dt, lengths, with_hx, batch_first=False):
    lib.manual_seed(0)
    m = getattr(lib.nn, cls)(IN, HID, dtype=getattr(lib, np.dtype(dt).name), **kw)
    rng = np.random.default_rng(7)
    batch, steps = len(lengths), max(lengths)
    shape = (batch, steps, IN) if batch_first else (steps, batch, IN)
    x = lib.tensor(rng.standard_normal(shape).astype(dt), requires_grad=True)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    hx = [lib.tensor(rng.standard_normal((layers, batch, HID)).astype(dt), requires_grad=True)
          for _ in range(2 if cls == "LSTM" else 1)]
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                   enforce_sorted=False)
    if with_hx:
        out, h = m(packed, tuple(hx) if cls == "LSTM" else hx[0])
    else:
        out, h = m(packed)
    hs = h if cls == "LSTM" else (h,)
    w = lib.tensor(rng.standard_normal(tuple(out.data.shape)).astype(dt))
    ((out.data * w).sum() + sum((t * t.detach().sin()).sum() for t in hs)).backward()
    grads = [x.grad] + ([t.grad for t in hx] if with_hx else []) + [
        p.grad for p in m.parameters()]
    return ([out.data.detach().numpy()] + [t.detach().numpy() for t in hs] +
            [g.numpy() for g in grads],
            [type(out.data.grad_fn).__name__] + [type(t.grad_fn).__name__ for t in hs])


PACKED = [
    (dict(), [4, 3, 1], True, False),
    (dict(bidirectional=True), [4, 4, 2, 1], True, False),
    (dict(num_layers=2, bidirectional=True), [2, 4, 3], False, True),
    (dict(num_layers=2, bias=False), [1, 4, 4], True, True),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("cls,base", MODELS + [("LSTM", {})])
@pytest.mark.parametrize("kw,lengths,with_hx,batch_first", PACKED)
def test_packed_matches_pytorch(cls, base, kw, lengths, with_hx, batch_first, dt, monkeypatch):
    """Packed input (PyTorch runs it op by op, the LSTM too): every model takes the kernels."""
    kw = {**base, **kw}
    calls = _count(monkeypatch, rnn_fused)
    mine, mine_names = _packed_run(jg, cls, kw, dt, lengths, with_hx, batch_first)
    assert len(calls) == kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    ref, ref_names = _packed_run(torch, cls, kw, dt, lengths, with_hx, batch_first)
    assert mine_names == ref_names
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **TIGHT[dt])


def test_fused_and_per_op_layers_agree_float64(monkeypatch):
    """The kernels against ``rnn_stack``'s per-op layers, both directions, padded and packed
    (independent of PyTorch: the per-op path is RNN.cpp in ordinary ops)."""
    rng = np.random.default_rng(11)
    for cell, gates in ((rnn_stack.gru_layer_cell, 3), (rnn_stack.tanh_cell, 1),
                        (rnn_stack.relu_cell, 1), (rnn_stack.lstm_layer_cell, 4)):
        for batch_sizes in (None, [3, 3, 2, 1, 1]):
            shape = (5, 3, IN) if batch_sizes is None else (10, IN)
            lstm = gates == 4
            arrays = [rng.standard_normal(s) for s in
                      [shape, (gates * HID, IN), (gates * HID, HID), (gates * HID,),
                       (gates * HID,), (3, HID)] + ([(3, HID)] if lstm else [])]
            for reverse in (False, True):
                res = []
                for run in (rnn_fused.layer, rnn_stack._layer):
                    leaves = [jg.tensor(a, requires_grad=True) for a in arrays]
                    x, w_ih, w_hh, b_ih, b_hh, *hidden = leaves
                    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
                    out, h = run(x, batch_sizes, tuple(hidden) if lstm else hidden[0], params,
                                 cell, reverse)
                    outs = (out, *h) if lstm else (out, h)
                    w = np.random.default_rng(5)
                    loss = sum((o * jg.tensor(w.standard_normal(tuple(o.shape)))).sum()
                               for o in outs)
                    loss.backward()
                    res.append([o.detach().numpy() for o in outs] +
                               [a.grad.numpy() for a in leaves])
                for a, b in zip(*res):
                    np.testing.assert_allclose(a, b, **TIGHT[np.float64])


@pytest.mark.parametrize("cell", [rnn_stack.gru_layer_cell, rnn_stack.tanh_cell,
                                  rnn_stack.relu_cell, rnn_stack.lstm_layer_cell])
@pytest.mark.parametrize("batch_sizes,reverse", [(None, False), (None, True),
                                                 ([3, 2, 2, 1], False), ([3, 2, 2, 1], True)])
def test_kernel_gradcheck_float64(cell, batch_sizes, reverse):
    gates = rnn_fused._KINDS[cell][1]
    rng = np.random.default_rng(3)

    def t(*shape):
        return jg.tensor(rng.standard_normal(shape) * 0.5, requires_grad=True)

    x = t(4, 3, IN) if batch_sizes is None else t(8, IN)
    w_ih, w_hh, b_ih, b_hh, hx, cx = (t(gates * HID, IN), t(gates * HID, HID), t(gates * HID),
                                      t(gates * HID), t(3, HID), t(3, HID))

    def fn(x, w_ih, w_hh, b_ih, b_hh, hx, *cx):
        params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
        out, h = rnn_fused.layer(x, batch_sizes, (hx, cx[0]) if cx else hx, params, cell,
                                 reverse)
        return (out, *h) if cx else (out, h)

    inputs = (x, w_ih, w_hh, b_ih, b_hh, hx) + ((cx,) if gates == 4 else ())
    assert type(fn(*inputs)[0].grad_fn).__name__ == rnn_fused._KINDS[cell][2]
    assert jg.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def _double_backward(lib, cls, dt):
    lib.manual_seed(0)
    m = getattr(lib.nn, cls)(IN, HID, num_layers=2, bidirectional=True,
                             dtype=getattr(lib, np.dtype(dt).name))
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((T, N, IN)).astype(dt), requires_grad=True)
    h0 = lib.tensor(rng.standard_normal((4, N, HID)).astype(dt), requires_grad=True)
    out, h = m(x, h0)
    leaves = [x, h0, *m.parameters()]
    gs = lib.autograd.grad((out * out).sum() + (h * h).sum(), leaves, create_graph=True)
    ggs = lib.autograd.grad(sum((g * g).sum() for g in gs), leaves)
    return [g.detach().numpy() for g in gs] + [g.numpy() for g in ggs]


@pytest.mark.parametrize("cls", ["GRU", "RNN"])
def test_double_backward_matches_pytorch(cls):
    # PyTorch's graph is per op; ours rebuilds the layer per op under create_graph
    for a, b in zip(_double_backward(jg, cls, np.float64), _double_backward(torch, cls,
                                                                            np.float64)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", ["GRU", "RNN", "LSTM"])
def test_weight_changed_in_place_before_backward_raises_as_pytorch(cls):
    kinds = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(IN, HID, dtype=lib.float64)
        out, _ = m(lib.randn(T, N, IN, dtype=lib.float64))
        with lib.no_grad():
            m.weight_hh_l0.mul_(2)
        with pytest.raises(RuntimeError) as e:
            out.sum().backward()
        kinds.append("modified by an inplace operation" in str(e.value))
    assert kinds == [True, True]


def test_no_grad_forward_matches_pytorch():
    x = randn(T, N, IN)
    outs = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = lib.nn.GRU(IN, HID, num_layers=2, dtype=lib.float64)
        with lib.no_grad():
            out, h = m(lib.tensor(x))
        assert out.grad_fn is None and h.grad_fn is None
        outs.append([out.numpy(), h.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **TIGHT[np.float64])


@pytest.mark.parametrize("name", ["gru", "rnn_tanh"])
def test_functional_call_that_does_not_fit_raises_as_pytorch(name):
    """torch.gru/rnn_tanh check no shapes before the layers run: a wrong hx must not reach
    the kernels (the per-op path raises)."""
    gates = 3 if name == "gru" else 1
    errors = []
    for lib in (jg, torch):
        x = lib.zeros(T, N, IN, dtype=lib.float64)
        hx = lib.zeros(1, N + 1, HID, dtype=lib.float64)
        params = [lib.zeros(gates * HID, IN, dtype=lib.float64),
                  lib.zeros(gates * HID, HID, dtype=lib.float64)]
        with pytest.raises(RuntimeError) as e:
            getattr(lib, name)(x, hx, params, False, 1, 0.0, False, False, False)
        errors.append(type(e.value))
    assert errors[0] is errors[1]


def test_functional_gru_packed_matches_pytorch():
    outs = []
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in [(6, IN), (2, 3, HID), (3 * HID, IN),
                                               (3 * HID, HID), (3 * HID,), (3 * HID,)]]
    for lib in (jg, torch):
        data, hx, *ps = (lib.tensor(a) for a in arrays)
        ps = ps * 2  # both directions
        out, h = lib.gru(data, lib.tensor([3, 2, 1]), hx, ps, True, 1, 0.0, False, True)
        outs.append([out.numpy(), h.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **TIGHT[np.float64])


@pytest.mark.parametrize("name", ["gru", "rnn_relu"])
def test_functional_call_with_mixed_dtypes_raises_as_pytorch(name):
    """A float32 hx beside float64 input and weights runs the per-op path, which raises."""
    gates = 3 if name == "gru" else 1
    errors = []
    for lib in (jg, torch):
        x = lib.zeros(T, N, IN, dtype=lib.float64)
        hx = lib.zeros(1, N, HID, dtype=lib.float32)
        params = [lib.zeros(gates * HID, IN, dtype=lib.float64),
                  lib.zeros(gates * HID, HID, dtype=lib.float64)]
        with pytest.raises(RuntimeError) as e:
            getattr(lib, name)(x, hx, params, False, 1, 0.0, False, False, False)
        errors.append(type(e.value))
    assert errors[0] is errors[1]


def test_packed_lstm_double_backward_matches_pytorch():
    res = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = lib.nn.LSTM(IN, HID, bidirectional=True, dtype=lib.float64)
        rng = np.random.default_rng(2)
        x = lib.tensor(rng.standard_normal((T, 3, IN)), requires_grad=True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1])
        out, (h, c) = m(packed)
        leaves = [x, *m.parameters()]
        gs = lib.autograd.grad((out.data ** 2).sum() + (h * c).sum(), leaves, create_graph=True)
        ggs = lib.autograd.grad(sum((g * g).sum() for g in gs), leaves)
        res.append([g.detach().numpy() for g in gs] + [g.numpy() for g in ggs])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
