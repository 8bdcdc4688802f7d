"""The fused LSTM gate ops (``ops/elementwise_rnn.py``): the same values and gradients as the
separate ops they replace in ``nn/modules/rnn_stack.py``, finite-difference gradients (first and
second order) in float64, and an ``LSTM`` run with the fused cell equal to one with the unfused
cell."""
import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn.modules import lstm_fused, rnn, rnn_stack
from jitgrad.ops.elementwise_call import call
from jitgrad.ops.registry import OPS

STATE, HIDDEN = OPS["lstm_cell_state"], OPS["lstm_cell_hidden"]


def _inputs(dt, n, shape=(5, 7), seed=0):
    rng = np.random.default_rng(seed)
    return [jg.tensor(rng.standard_normal(shape).astype(dt) * 2, requires_grad=True)
            for _ in range(n)]


def _unfused(i, f, g, o, c):
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def _fused(i, f, g, o, c):
    cy = call(STATE, i, f, g, c)
    return call(HIDDEN, o, cy), cy


@pytest.mark.parametrize("dt,tol", [(np.float64, 0.0), (np.float32, 0.0)])
def test_values_and_gradients_match_the_separate_ops(dt, tol, without_vml):
    results = []
    for fn in (_unfused, _fused):
        xs = _inputs(dt, 5)
        hy, cy = fn(*xs)
        w = np.random.default_rng(1)
        loss = ((hy * jg.tensor(w.standard_normal(hy.shape).astype(dt))).sum()
                + (cy * jg.tensor(w.standard_normal(cy.shape).astype(dt))).sum())
        loss.backward()
        results.append([hy.detach().numpy(), cy.detach().numpy()] + [x.grad.numpy() for x in xs])
    for a, b in zip(*results):
        assert a.dtype == dt
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def test_node_names():
    i, f, g, o, c = _inputs(np.float64, 5)
    hy, cy = _fused(i, f, g, o, c)
    assert type(cy.grad_fn).__name__ == "LstmCellStateBackward0"
    assert type(hy.grad_fn).__name__ == "LstmCellHiddenBackward0"
    assert len(cy.grad_fn.next_functions) == 4


def test_gradcheck_and_gradgradcheck():
    xs = _inputs(np.float64, 5, shape=(3, 4), seed=2)
    assert gradcheck(lambda *a: _fused(*a), xs)
    assert gradgradcheck(lambda *a: _fused(*a), xs)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_lstm_layers_match_the_unfused_cell(dt, monkeypatch, without_vml):
    """A 2-layer bidirectional LSTM: the fused layer cell against ``lstm_cell``, bit for bit."""
    # the per-op path, which a float32 LSTM leaves for its fused layer (lstm_fused.py) with MKL
    monkeypatch.setattr(lstm_fused, "usable", lambda *a, **k: False)
    results = []
    for cell in (rnn_stack.lstm_cell, rnn_stack.lstm_layer_cell):
        monkeypatch.setitem(rnn._CELLS, "LSTM", cell)
        jg.manual_seed(0)
        m = jg.nn.LSTM(3, 4, num_layers=2, bidirectional=True,
                       dtype=jg.float64 if dt == np.float64 else jg.float32)
        x = jg.tensor(np.random.default_rng(3).standard_normal((6, 2, 3)).astype(dt),
                      requires_grad=True)
        out, (h, c) = m(x)
        (out.pow(2).sum() + h.sum() + c.pow(2).sum()).backward()
        results.append([out.detach().numpy(), h.detach().numpy(), c.detach().numpy(),
                        x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(b, a)
