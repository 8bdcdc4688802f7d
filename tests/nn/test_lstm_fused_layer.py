"""The fused float32 LSTM layer (``nn/modules/lstm_fused.py``): PyTorch records one
``MkldnnRnnLayerBackward0`` node per layer-direction for a float32 CPU LSTM (oneDNN), and so
does jitgrad. Checked here: node names and edges against PyTorch's, values and every gradient
against PyTorch and against jitgrad's per-op path (same float32 error order against a float64
run), the cases that route away (float64, proj_size, packed input, no MKL), batch_first,
bidirectional, unbatched, given hx/cx, dropout between layers, no_grad, double backward against
PyTorch's, and a float64 finite-difference check of the kernels (they are generic over dtype).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad.backends import blas
from jitgrad.nn.modules import lstm_fused, rnn_stack
from tests.nn.test_rnn import TOL, _compare, _hidden, randn, run_layer

pytestmark = pytest.mark.skipif(blas.backend() != "mkl",
                                reason="the fused LSTM layer needs MKL's CBLAS")

IN, HID, T, N = 3, 4, 4, 2
F32 = np.float32


def _per_op(monkeypatch):
    """Route every LSTM to the per-op path, as without MKL."""
    monkeypatch.setattr(lstm_fused, "usable", lambda *a, **k: False)


def _edges(node):
    return [(None if f is None else type(f).__name__, nr) for f, nr in node.next_functions]


def _graph(lib, kw, dt=F32, with_hx=False, x_grad=True, batch=N):
    """The output's node, its edges, and the final states' nodes with their edges."""
    lib.manual_seed(0)
    m = lib.nn.LSTM(IN, HID, dtype=getattr(lib, np.dtype(dt).name), **kw)
    shape = (T, batch, IN) if batch else (T, IN)
    x = lib.tensor(randn(*shape, dt=dt), requires_grad=x_grad)
    if with_hx:
        hx = tuple(lib.tensor(a, requires_grad=True) for a in _hidden("LSTM", kw, batch, dt))
        out, (h, c) = m(x, hx)
    else:
        out, (h, c) = m(x)
    return [(type(t.grad_fn).__name__, _edges(t.grad_fn)) for t in (out, h, c)]


NAME_CASES = [
    (dict(), False),
    (dict(), True),
    (dict(num_layers=2), False),
    (dict(num_layers=2), True),
    (dict(bias=False), False),
    (dict(bidirectional=True), True),
    (dict(batch_first=True), False),
]


@pytest.mark.parametrize("kw,with_hx", NAME_CASES)
def test_node_names_and_edges_match_pytorch(kw, with_hx):
    mine, ref = _graph(jg, kw, with_hx=with_hx), _graph(torch, kw, with_hx=with_hx)
    assert mine == ref
    if not kw.get("bidirectional") and not kw.get("batch_first"):
        assert mine[0][0] == "MkldnnRnnLayerBackward0"


def test_inner_layer_edge_and_unbatched():
    # the second layer's input edge is the first layer's node, output 0
    assert _graph(jg, dict(num_layers=2), x_grad=False) == \
        _graph(torch, dict(num_layers=2), x_grad=False)
    assert _graph(jg, dict(), batch=0) == _graph(torch, dict(), batch=0)


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True)])
def test_float64_graph_unchanged(kw):
    # the output nodes are PyTorch's per-op ones (StackBackward0, CatBackward0); below them
    # jitgrad's own whole-layer node (PyTorch has no oneDNN float64), never oneDNN's name
    mine, ref = _graph(jg, kw, dt=np.float64), _graph(torch, kw, dt=np.float64)
    assert [n for n, _ in mine] == [n for n, _ in ref]
    assert "MkldnnRnnLayerBackward0" not in str(mine)
    assert "FusedLstmLayerBackward0" in str(mine)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_proj_size_routes_away():
    kw = dict(proj_size=2)
    mine, ref = _graph(jg, kw), _graph(torch, kw)
    assert [n for n, _ in mine] == [n for n, _ in ref] == ["StackBackward0"] * 3
    assert "MkldnnRnnLayerBackward0" not in str(mine)


PROJ_WARNING = ("LSTM with projections is not supported with oneDNN. Using default "
                "implementation. (Triggered internally at "
                "/__w/pytorch/pytorch/aten/src/ATen/native/RNN.cpp:1512.)")


def _warnings_of(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught]


def test_projection_warning_once_as_pytorch(monkeypatch):
    """PyTorch's TORCH_WARN_ONCE: its text (taken from PyTorch 2.13), once per process, only
    where oneDNN would otherwise run (a padded float32 CPU input; not float64, not packed)."""
    monkeypatch.setattr(lstm_fused, "_warned", [])
    m64 = jg.nn.LSTM(IN, HID, proj_size=2, dtype=jg.float64)
    assert _warnings_of(lambda: m64(jg.randn(T, N, IN, dtype=jg.float64))) == []
    m = jg.nn.LSTM(IN, HID, proj_size=2)
    packed = jg.nn.utils.rnn.pack_padded_sequence(jg.randn(T, N, IN), [T, 2])
    assert _warnings_of(lambda: m(packed)) == []
    assert _warnings_of(lambda: (m(jg.randn(T, N, IN)), m(jg.randn(T, N, IN)))) == \
        [PROJ_WARNING]
    assert _warnings_of(lambda: m(jg.randn(T, N, IN))) == []


def test_no_mkl_routes_away(monkeypatch):
    monkeypatch.setattr(blas, "backend", lambda: "numpy")
    assert _graph(jg, dict())[0][0] == "StackBackward0"


def test_packed_routes_away_and_matches():
    lengths = [4, 3, 1]
    xs = randn(T, 3, IN, dt=F32)
    res = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = lib.nn.LSTM(IN, HID, bidirectional=True, dtype=lib.float32)
        x = lib.tensor(xs, requires_grad=True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, (h, c) = m(packed)
        (out.data.sum() + (h * c).sum()).backward()
        res.append((type(out.data.grad_fn).__name__, out.data.detach().numpy(),
                    x.grad.numpy(), [p.grad.numpy() for p in m.parameters()]))
    assert res[0][0] == res[1][0] != "MkldnnRnnLayerBackward0"
    for a, b in zip(res[0][1:3] + tuple(res[0][3]), res[1][1:3] + tuple(res[1][3])):
        np.testing.assert_allclose(a, b, **TOL[F32])


VALUE_CASES = [
    (dict(), False, False),
    (dict(), True, False),
    (dict(bias=False), True, False),
    (dict(num_layers=2, bidirectional=True, batch_first=True), True, False),
    (dict(num_layers=3, dropout=0.4), False, True),
    (dict(num_layers=2, dropout=0.5, bidirectional=True), True, True),
]


@pytest.mark.parametrize("kw,with_hx,train", VALUE_CASES)
def test_values_and_gradients_match_pytorch(kw, with_hx, train):
    shape = (N, T, IN) if kw.get("batch_first") else (T, N, IN)
    x = randn(*shape, dt=F32)
    hx = _hidden("LSTM", kw, N, F32) if with_hx else []
    mine = run_layer(jg, "LSTM", kw, x, hx, F32, train=train)
    ref = run_layer(torch, "LSTM", kw, x, hx, F32, train=train)
    _compare(mine, ref, F32)  # names too: the dropout draws stay PyTorch's stream


def test_unbatched_matches_pytorch():
    x = randn(T, IN, dt=F32)
    hx = _hidden("LSTM", dict(), 0, F32)
    _compare(run_layer(jg, "LSTM", dict(), x, hx, F32),
             run_layer(torch, "LSTM", dict(), x, hx, F32), F32)


def _max_errors(a, b):
    (ao, ag, *_), (bo, bg, *_) = a, b
    errs = [np.abs(p - q).max() for p, q in zip(ao, bo)]
    return errs + [np.abs(ag[k] - bg[k]).max() for k in bg if bg[k] is not None]


@pytest.mark.parametrize("kw", [dict(num_layers=2), dict(bidirectional=True)])
def test_fused_error_is_the_per_op_paths_order(kw, monkeypatch):
    """Against a float64 run of the same model: the fused kernel's float32 error is of the
    same order as the per-op path's, and the two float32 results agree to float32 tolerance."""
    seq, batch = 12, 5
    x = randn(seq, batch, IN, dt=F32)
    hx = _hidden("LSTM", kw, batch, F32)
    exact = run_layer(jg, "LSTM", kw, x.astype(np.float64), [h.astype(np.float64) for h in hx],
                      np.float64)
    calls = []
    fused_layer = lstm_fused.layer
    with monkeypatch.context() as mp:  # count the fused layers that ran
        mp.setattr(lstm_fused, "layer", lambda *a: calls.append(1) or fused_layer(*a))
        fused = run_layer(jg, "LSTM", kw, x, hx, F32)
    assert len(calls) == 2
    with monkeypatch.context() as mp:
        _per_op(mp)
        mp.setattr(lstm_fused, "layer", None)
        per_op = run_layer(jg, "LSTM", kw, x, hx, F32)
    _compare(fused, per_op, F32, names=False)
    e_fused, e_per_op = _max_errors(fused, exact), _max_errors(per_op, exact)
    for ef, ep in zip(e_fused, e_per_op):
        assert ef <= 4 * ep + 4e-7, (e_fused, e_per_op)


def test_no_grad_forward():
    x = randn(T, N, IN, dt=F32)
    outs = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = lib.nn.LSTM(IN, HID, num_layers=2, dtype=lib.float32)
        with lib.no_grad():
            out, (h, c) = m(lib.tensor(x))
        assert out.grad_fn is None and h.grad_fn is None
        outs.append([t.numpy() for t in (out, h, c)])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **TOL[F32])


def _double_backward(lib, kw, arrays):
    lib.manual_seed(0)
    m = lib.nn.LSTM(IN, HID, dtype=lib.float32, **kw)
    x, *hx = (lib.tensor(a, requires_grad=True) for a in arrays)
    out, (h, c) = m(x, tuple(hx))
    leaves = [x, *hx, *m.parameters()]
    gs = lib.autograd.grad((out * out).sum() + (h * c).sum(), leaves, create_graph=True)
    ggs = lib.autograd.grad(sum((g * g).sum() for g in gs), leaves)
    return [g.detach().numpy() for g in gs], [g.numpy() for g in ggs]


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True)])
def test_double_backward_matches_pytorch(kw):
    # PyTorch's node switches to a differentiable backward under create_graph; so does ours
    arrays = [randn(T, N, IN, dt=F32), *_hidden("LSTM", kw, N, F32)]
    (g1, gg1), (g2, gg2) = _double_backward(jg, kw, arrays), _double_backward(torch, kw, arrays)
    for a, b in zip(g1 + gg1, g2 + gg2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_second_backward_raises_as_pytorch():
    msgs = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = lib.nn.LSTM(IN, HID, dtype=lib.float32)
        out, _ = m(lib.tensor(randn(T, N, IN, dt=F32)))
        out.sum().backward()
        with pytest.raises(RuntimeError) as e:
            out.sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_kernel_gradcheck_float64(reverse, bias):
    """The fused layer itself in float64 (jitgrad's FusedLstmLayerBackward0 there: PyTorch has
    no oneDNN float64), against central finite differences: input, weights, biases, hx, cx."""
    rng = np.random.default_rng(3)

    def t(*shape):
        return jg.tensor(rng.standard_normal(shape) * 0.5, requires_grad=True)

    x, w_ih, w_hh = t(5, 2, IN), t(4 * HID, IN), t(4 * HID, HID)
    b_ih, b_hh = (t(4 * HID), t(4 * HID)) if bias else (None, None)
    hx, cx = t(2, HID), t(2, HID)

    def fn(x, w_ih, w_hh, hx, cx, *b):
        params = rnn_stack.CellParams(w_ih, w_hh, *(b or (None, None)))
        out, (h, c) = lstm_fused.layer(x, None, (hx, cx), params, None, reverse)
        return out, h, c

    inputs = (x, w_ih, w_hh, hx, cx) + ((b_ih, b_hh) if bias else ())
    assert type(fn(*inputs)[0].grad_fn).__name__ == "FusedLstmLayerBackward0"
    assert jg.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_kernel_matches_per_op_layer_float64():
    """The fused layer and ``rnn_stack``'s per-op layer in float64, both directions."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in
              [(6, 3, IN), (4 * HID, IN), (4 * HID, HID), (4 * HID,), (4 * HID,), (3, HID),
               (3, HID)]]
    for reverse in (False, True):
        res = []
        for run in (lstm_fused.layer, rnn_stack._layer):
            x, w_ih, w_hh, b_ih, b_hh, hx, cx = (jg.tensor(a, requires_grad=True)
                                                 for a in arrays)
            params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
            out, (h, c) = run(x, None, (hx, cx), params, rnn_stack.lstm_layer_cell, reverse)
            w = np.random.default_rng(5)
            loss = sum((o * jg.tensor(w.standard_normal(tuple(o.shape)))).sum()
                       for o in (out, h, c))
            loss.backward()
            res.append([o.detach().numpy() for o in (out, h, c)] +
                       [a.grad.numpy() for a in (x, w_ih, w_hh, b_ih, b_hh, hx, cx)])
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, **TOL[np.float64])
