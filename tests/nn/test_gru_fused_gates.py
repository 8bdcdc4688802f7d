"""The fused GRU gate op (``ops/elementwise_rnn.py``: ``gru_cell``): the same values and every
gradient as the separate ops of ``nn/modules/rnn_stack.gru_cell`` bit for bit, finite-difference
gradients (first and second order) in float64, ``GRU`` layers with the fused cell equal to the
unfused cell (padded, packed, bidirectional), PyTorch's values, and the node names users see:
``GRU``'s outputs are stacked (StackBackward0 as in PyTorch), ``GRUCell`` keeps the separate ops
(AddBackward0 over MulBackward0/TanhBackward0, PyTorch's graph) and takes the fused op only when
it records no graph."""
import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.nn.modules import rnn, rnn_cells_fused, rnn_fused, rnn_stack
from jitgrad.ops.elementwise_call import call
from jitgrad.ops.registry import OPS

GRU = OPS["gru_cell"]
DTYPES = {np.float32: (jg.float32, torch.float32), np.float64: (jg.float64, torch.float64)}


def _inputs(dt, shape=(37, 29), seed=0):
    rng = np.random.default_rng(seed)
    return [jg.tensor(rng.standard_normal(shape).astype(dt) * 2, requires_grad=True)
            for _ in range(7)]


def _unfused(i_r, i_z, i_n, h_r, h_z, h_n, hx):
    # rnn_stack.gru_cell's expressions, in RNN.cpp's order
    reset_gate = (h_r + i_r).sigmoid()
    input_gate = (h_z + i_z).sigmoid()
    new_gate = (i_n + h_n * reset_gate).tanh()
    return (hx - new_gate) * input_gate + new_gate


def _fused(*xs):
    return call(GRU, *xs)


def _run(fn, dt, shape=(37, 29)):
    xs = _inputs(dt, shape)
    hy = fn(*xs)
    w = np.random.default_rng(1).standard_normal(hy.shape).astype(dt)
    (hy * jg.tensor(w)).sum().backward()
    return [hy.detach().numpy()] + [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_values_and_gradients_match_the_separate_ops(dt, without_vml):
    # 1073 elements of each operand: without the NaN selects in gru_cell, LLVM's contract flag
    # forms FMAs and about a third of the values and of i_n's gradient differ in the last bit
    for a, b in zip(_run(_unfused, dt), _run(_fused, dt)):
        assert b.dtype == dt
        np.testing.assert_array_equal(b, a)


def test_nan_and_inf_propagate_like_the_separate_ops():
    xs = _inputs(np.float64, shape=(4, 3), seed=3)
    for t, v in ((0, np.nan), (5, np.inf), (6, -np.inf), (2, 1e308)):
        xs[t].data[t % 4, 1] = v
    a, b = _unfused(*xs).detach().numpy(), _fused(*xs).detach().numpy()
    np.testing.assert_array_equal(b, a)
    assert np.isnan(a).any()


def test_node_name_and_inputs():
    xs = _inputs(np.float64, shape=(3, 4))
    hy = _fused(*xs)
    assert type(hy.grad_fn).__name__ == "GruCellBackward0"
    assert len(hy.grad_fn.next_functions) == 7


def test_gradcheck_and_gradgradcheck():
    xs = _inputs(np.float64, shape=(3, 4), seed=2)
    assert gradcheck(_fused, xs)
    assert gradgradcheck(_fused, xs)


def _gru_run(cell, dt, monkeypatch, packed=False):
    monkeypatch.setitem(rnn._CELLS, "GRU", cell)
    monkeypatch.setattr(rnn_fused, "usable", lambda *a: False)  # the per-op layers
    jg.manual_seed(0)
    m = jg.nn.GRU(3, 4, num_layers=2, bidirectional=True, dtype=DTYPES[dt][0])
    rng = np.random.default_rng(3)
    x = jg.tensor(rng.standard_normal((6, 3, 3)).astype(dt), requires_grad=True)
    h0 = jg.tensor(rng.standard_normal((4, 3, 4)).astype(dt), requires_grad=True)
    inp = jg.nn.utils.rnn.pack_padded_sequence(x, [6, 4, 2]) if packed else x
    out, h = m(inp, h0)
    if packed:
        out = out.data
    (out.pow(2).sum() + (h * h.detach().sin()).sum()).backward()
    return [out.detach().numpy(), h.detach().numpy(), x.grad.numpy(), h0.grad.numpy()] + [
        p.grad.numpy() for p in m.parameters()]


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_gru_layers_match_the_unfused_cell(dt, packed, monkeypatch, without_vml):
    """A 2-layer bidirectional GRU: the fused layer cell against ``gru_cell``, bit for bit
    (outputs, final state, and the gradients of input, h0 and every parameter)."""
    assert rnn._CELLS["GRU"] is rnn_stack.gru_layer_cell
    a = _gru_run(rnn_stack.gru_cell, dt, monkeypatch, packed)
    b = _gru_run(rnn_stack.gru_layer_cell, dt, monkeypatch, packed)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("dt,tol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_gru_matches_pytorch(dt, tol):
    jdt, tdt = DTYPES[dt]
    torch.manual_seed(0)
    tm = torch.nn.GRU(5, 6, num_layers=2, dtype=tdt)
    jm = jg.nn.GRU(5, 6, num_layers=2, dtype=jdt)
    jm.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((7, 3, 5)).astype(dt)
    tx, jx = torch.tensor(x, requires_grad=True), jg.tensor(x, requires_grad=True)
    (to, th), (jo, jh) = tm(tx), jm(jx)
    (to.pow(2).sum() + th.sum()).backward()
    (jo.pow(2).sum() + jh.sum()).backward()
    assert type(jo.grad_fn).__name__ == type(to.grad_fn).__name__ == "StackBackward0"
    assert type(jh.grad_fn).__name__ == type(th.grad_fn).__name__ == "StackBackward0"
    pairs = [(jo, to), (jh, th), (jx.grad, tx.grad)] + [
        (jp.grad, tp.grad) for jp, tp in zip(jm.parameters(), tm.parameters())]
    for j, t in pairs:
        np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def test_gru_cell_keeps_pytorchs_nodes_and_fuses_without_a_graph(monkeypatch):
    # the per-op cell (CUDA, no MKL: where rnn_cells_fused's kernels do not run) shows
    # PyTorch's nodes below the output too; the fused cell is tested in test_rnn_cells_fused
    monkeypatch.setattr(rnn_cells_fused, "usable", lambda *a: False)
    torch.manual_seed(0)
    tc = torch.nn.GRUCell(3, 4, dtype=torch.float64)
    jc = jg.nn.GRUCell(3, 4, dtype=jg.float64)
    jc.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in tc.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((2, 3))
    h = np.random.default_rng(6).standard_normal((2, 4))
    ty = tc(torch.tensor(x), torch.tensor(h))
    jy = jc(jg.tensor(x), jg.tensor(h))

    def names(node):
        return [type(n).__name__ for n, _ in node.next_functions]
    assert type(jy.grad_fn).__name__ == type(ty.grad_fn).__name__ == "AddBackward0"
    assert names(jy.grad_fn) == names(ty.grad_fn) == ["MulBackward0", "TanhBackward0"]
    assert (names(jy.grad_fn.next_functions[0][0])
            == names(ty.grad_fn.next_functions[0][0]) == ["SubBackward0", "SigmoidBackward0"])
    with jg.no_grad():
        jn = jc(jg.tensor(x), jg.tensor(h))
    assert jn.grad_fn is None
    np.testing.assert_array_equal(jn.numpy(), jy.detach().numpy())
    np.testing.assert_allclose(jn.numpy(), ty.detach().numpy(), rtol=1e-13, atol=1e-13)


def test_gru_cell_without_a_graph_takes_the_fused_op(monkeypatch):
    """The per-op cell's no-graph path really is the fused op (and the graph path is not)."""
    monkeypatch.setattr(rnn_cells_fused, "usable", lambda *a: False)
    seen = []
    real = rnn_stack.gru_layer_cell

    def spy(*args):
        seen.append(True)
        return real(*args)
    monkeypatch.setattr(rnn_stack, "gru_layer_cell", spy)
    c = jg.nn.GRUCell(3, 4)
    c(jg.randn(2, 3))
    assert not seen
    with jg.no_grad():
        c(jg.randn(3))
    assert seen == [True]
