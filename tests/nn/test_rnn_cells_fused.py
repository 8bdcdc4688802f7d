"""LSTMCell/GRUCell/RNNCell as one fused node per step (``nn/modules/rnn_cells_fused.py``):
values and every gradient against PyTorch over a hand-written loop (float32/float64, biases or
not, partial requires_grad), and bit for bit at one thread (several shapes), the output nodes
PyTorch shows, values and gradients bit for bit the per-op cell's where its sigmoid has no
scalar tail, float64 finite differences of the kernels, double backward against PyTorch,
in-place checks as PyTorch's, and the routing (no graph, unbatched, per-op elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad.backends import blas
from jitgrad.nn.modules import _rnn_cell_kernels as K
from jitgrad.nn.modules import rnn_cells_fused
from tests.nn.nn_gradcheck import check_grads

pytestmark = pytest.mark.skipif(blas.backend() != "mkl", reason="the fused cells need MKL")

IN, HID, N, STEPS = 5, 6, 3, 3
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {"bias": False}),
         ("GRUCell", {"bias": False})]
_KERNELS = {"LSTMCell": "lstm_forward", "GRUCell": "gru_forward", "RNNCell": "simple_forward"}


def _count(monkeypatch, cls):
    """Count the calls of ``cls``'s forward kernel (proves the fused path ran)."""
    name = _KERNELS[cls]
    real, calls = getattr(K, name), []

    def spy(*args):
        calls.append(True)
        return real(*args)
    monkeypatch.setattr(K, name, spy)
    return calls


def _loop(lib, cls, kw, dt, needs=(True, True, True), seed=0):
    """STEPS steps of a seeded cell over a fixed input; the loss uses every output (hy and cy
    of each step). Returns the outputs, the loss, and the gradients of the leaves that require
    them (inputs per step, h0, c0, parameters), as arrays."""
    lib.manual_seed(seed)
    d = getattr(lib, np.dtype(dt).name)
    m = getattr(lib.nn, cls)(IN, HID, dtype=d, **kw)
    for p in m.parameters():
        p.requires_grad_(needs[2])
    rng = np.random.default_rng(seed + 1)
    xs = [lib.tensor(rng.standard_normal((N, IN)).astype(dt), requires_grad=needs[0])
          for _ in range(STEPS)]
    h0 = lib.tensor(rng.standard_normal((N, HID)).astype(dt), requires_grad=needs[1])
    c0 = lib.tensor(rng.standard_normal((N, HID)).astype(dt), requires_grad=needs[1])
    hid = (h0, c0) if cls == "LSTMCell" else h0
    outs = []
    for x in xs:
        hid = m(x, hid)
        outs.extend(hid if isinstance(hid, tuple) else (hid,))
    w = lib.tensor(rng.standard_normal((N, HID)).astype(dt))
    loss = sum(((o * w).sin() * (k + 1)).sum() for k, o in enumerate(outs))
    leaves = [t for t, need in zip([*xs, h0, c0, *m.parameters()],
                                   [needs[0]] * STEPS + [needs[1]] * 2
                                   + [needs[2]] * len(list(m.parameters())))
              if need and (cls == "LSTMCell" or t is not c0)]
    grads = lib.autograd.grad(loss, leaves) if leaves else []
    return [o.detach().numpy() for o in outs] + [g.numpy() for g in grads]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", CELLS)
def test_loop_matches_pytorch(cls, kw, dt, monkeypatch):
    calls = _count(monkeypatch, cls)
    mine = _loop(jg, cls, kw, dt)
    assert len(calls) == STEPS
    ref = _loop(torch, cls, kw, dt)
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **TOL[dt])


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, False),
                                   (False, False, True), (True, False, True)])
@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_partial_requires_grad_matches_pytorch(cls, needs):
    # the backward kernel skips the GEMMs of the slots that need no gradient
    mine, ref = _loop(jg, cls, {}, np.float64, needs), _loop(torch, cls, {}, np.float64, needs)
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **TOL[np.float64])


def _per_op(monkeypatch):
    monkeypatch.setattr(rnn_cells_fused, "usable", lambda *a: False)


def _step_loop(lib, cls, kw, dt, batch, n_in, hid, steps=3, seed=0):
    """``steps`` steps of a cell with parameters, inputs and output gradients drawn by NumPy;
    returns every output and the gradients of every input, state and parameter."""
    rng = np.random.default_rng(seed)
    m = getattr(lib.nn, cls)(n_in, hid, dtype=getattr(lib, np.dtype(dt).name), **kw)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dt)))
    xs = [lib.tensor(rng.standard_normal((batch, n_in)).astype(dt), requires_grad=True)
          for _ in range(steps)]
    h0 = lib.tensor(rng.standard_normal((batch, hid)).astype(dt), requires_grad=True)
    c0 = lib.tensor(rng.standard_normal((batch, hid)).astype(dt), requires_grad=True)
    state = (h0, c0) if cls == "LSTMCell" else h0
    outs = []
    for x in xs:
        state = m(x, state)
        outs.extend(state if isinstance(state, tuple) else (state,))
    gs = [lib.tensor(rng.standard_normal((batch, hid)).astype(dt)) for _ in outs]
    leaves = [*xs, h0, *([c0] if cls == "LSTMCell" else []), *m.parameters()]
    grads = lib.autograd.grad(outs, leaves, gs)
    return [o.detach().numpy() for o in outs] + [g.numpy() for g in grads]


# widths with and without sigmoid_'s scalar tail (hid % 32 floats / % 16 doubles), batches
# below and above the bias sums' first cascade level (16 rows)
SHAPES = [(1, 3, 5), (3, 5, 6), (16, 32, 64), (20, 17, 37), (33, 8, 48)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cls,kw", CELLS)
def test_values_and_gradients_are_pytorchs_bit_for_bit(cls, kw, shape, dt, monkeypatch,
                                                       one_thread):
    calls = _count(monkeypatch, cls)
    mine = _step_loop(jg, cls, kw, dt, *shape)
    assert len(calls) == 3
    ref = _step_loop(torch, cls, kw, dt, *shape)
    assert len(mine) == len(ref)
    # bitwise on AVX-512 and AVX2 builds alike: sigmoid_'s scalar tail follows the host's
    # vector width (backends.cpu_capability)
    for a, b in zip(mine, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", CELLS)
def test_values_and_gradients_are_the_per_op_cells_bit_for_bit(cls, kw, dt, monkeypatch,
                                                                one_thread):
    # a width without sigmoid tails: jitgrad's per-op sigmoid computes every element with
    # ATen's vector formula, PyTorch's tail elements with glibc's exp
    fused = _step_loop(jg, cls, kw, dt, 5, 7, 32)
    _per_op(monkeypatch)
    calls = _count(monkeypatch, cls)
    per_op = _step_loop(jg, cls, kw, dt, 5, 7, 32)
    assert not calls
    for a, b in zip(fused, per_op):
        np.testing.assert_array_equal(a, b)


def _names(out):
    return type(out.grad_fn).__name__, [type(n).__name__ if n is not None else None
                                        for n, _ in out.grad_fn.next_functions]


@pytest.mark.parametrize("cls,kw", CELLS[:4])
def test_output_nodes_are_pytorchs(cls, kw):
    outs = {}
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(IN, HID, **kw)
        x, h = lib.randn(N, IN), lib.randn(N, HID)
        out = m(x, (h, h) if cls == "LSTMCell" else h)
        outs[lib] = out if isinstance(out, tuple) else (out,)
        outs[lib, "unbatched"] = m(x[0], (h[0], h[0]) if cls == "LSTMCell" else h[0])
    for mine, ref in zip(outs[jg], outs[torch]):
        assert _names(mine)[0] == _names(ref)[0]
        # one level down: the fused node where PyTorch has the per-op cell's own nodes (GRU:
        # beside the real mul of (hx - n) * z)
        below, ref_below = _names(mine)[1], _names(ref)[1]
        assert len(below) == len(ref_below)
        assert any(name.startswith("Fused") for name in below)
        assert all(name.startswith("Fused") or name == r for name, r in zip(below, ref_below))
    un_mine, un_ref = outs[jg, "unbatched"], outs[torch, "unbatched"]
    for mine, ref in zip(un_mine if cls == "LSTMCell" else (un_mine,),
                         un_ref if cls == "LSTMCell" else (un_ref,)):
        assert _names(mine)[0] == _names(ref)[0] == "SqueezeBackward1"
        assert tuple(mine.shape) == tuple(ref.shape)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_fused_node_slots(cls):
    m = getattr(jg.nn, cls)(IN, HID, dtype=jg.float64)
    x = jg.randn(N, IN, dtype=jg.float64, requires_grad=True)
    h = jg.randn(N, HID, dtype=jg.float64)
    out = m(x, (h, h) if cls == "LSTMCell" else h)
    node = next(n for n, _ in (out[0] if cls == "LSTMCell" else out).grad_fn.next_functions
                if type(n).__name__.startswith("Fused"))
    edges = [n is not None for n, _ in node.next_functions]
    # input, weight_ih, weight_hh, bias_ih, bias_hh require grad; hx (and cx) do not
    assert edges == [True] * 5 + [False] * (2 if cls == "LSTMCell" else 1)


@pytest.mark.parametrize("cls,kw", CELLS)
def test_no_graph_returns_the_kernels_results(cls, kw, monkeypatch):
    calls = _count(monkeypatch, cls)
    jg.manual_seed(0)
    m = getattr(jg.nn, cls)(IN, HID, dtype=jg.float64, **kw)
    x, h = jg.randn(N, IN, dtype=jg.float64), jg.randn(N, HID, dtype=jg.float64)
    hid = (h, h) if cls == "LSTMCell" else h
    with jg.no_grad():
        quiet = m(x, hid)
    loud = m(x, hid)
    assert len(calls) == 2
    quiet = quiet if isinstance(quiet, tuple) else (quiet,)
    loud = loud if isinstance(loud, tuple) else (loud,)
    for a, b in zip(quiet, loud):
        assert a.grad_fn is None and b.grad_fn is not None
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


@pytest.mark.parametrize("cls,kw", CELLS)
def test_gradients_match_finite_differences(cls, kw, monkeypatch):
    calls = _count(monkeypatch, cls)
    jg.manual_seed(3)
    m = getattr(jg.nn, cls)(IN, HID, dtype=jg.float64, **kw)
    names = [n for n, _ in m.named_parameters()]
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((N, IN)), rng.standard_normal((N, HID)),
              rng.standard_normal((N, HID))] + [p.detach().numpy().copy()
                                                for p in m.parameters()]

    def fn(x, h, c, *params):
        for name, p in zip(names, params):
            setattr(m, name, p)  # plain tensors in place of the parameters
        out = m(x, (h, c)) if cls == "LSTMCell" else m(x, h)
        return out[0] * 2 + out[1] if cls == "LSTMCell" else out
    wrt = [0, 1] + ([2] if cls == "LSTMCell" else []) + list(range(3, len(arrays)))
    for name in names:
        delattr(m, name)
    check_grads(fn, arrays, wrt, atol=1e-7, rtol=1e-6)
    assert calls


def _double_backward(lib, cls):
    lib.manual_seed(0)
    m = getattr(lib.nn, cls)(IN, HID, dtype=lib.float64)
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((N, IN)), requires_grad=True)
    h = lib.tensor(rng.standard_normal((N, HID)), requires_grad=True)
    c = lib.tensor(rng.standard_normal((N, HID)), requires_grad=True)
    out = m(x, (h, c)) if cls == "LSTMCell" else (m(x, h),)
    out = m(x, out) if cls == "LSTMCell" else (m(x, out[0]),)
    leaves = [x, h, *m.parameters()] + ([c] if cls == "LSTMCell" else [])
    gs = lib.autograd.grad(sum((o * o).sum() for o in out), leaves, create_graph=True)
    ggs = lib.autograd.grad(sum((g * g.sin()).sum() for g in gs), leaves)
    return [g.detach().numpy() for g in gs] + [g.numpy() for g in ggs]


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_double_backward_matches_pytorch(cls):
    for a, b in zip(_double_backward(jg, cls), _double_backward(torch, cls)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("param", ["weight_hh", "bias_ih"])
@pytest.mark.parametrize("h_grad", [False, True])
def test_parameter_changed_in_place_before_backward_as_pytorch(cls, param, h_grad):
    # addmm saves a matrix when the other one needs a gradient: weight_hh when hx does, then
    # the backward raises; a bias is never saved, so PyTorch's backward runs, and so does ours
    results = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(IN, HID, dtype=lib.float64)
        x, h = lib.randn(N, IN, dtype=lib.float64), lib.randn(N, HID, dtype=lib.float64)
        h.requires_grad_(h_grad)
        out = m(x, (h, h))[0] if cls == "LSTMCell" else m(x, h)
        with lib.no_grad():
            getattr(m, param).mul_(2)
        try:
            out.sum().backward()
            results.append([p.grad.numpy() for p in m.parameters()])
        except RuntimeError as e:
            results.append(str(e).split(";")[0])
    mine, ref = results
    assert isinstance(ref, str) == (h_grad and param == "weight_hh")
    if isinstance(ref, str):
        # PyTorch names the saved w.t() view ([6, 24] ... output 0 of AsStrided); jitgrad
        # names the weight, as its per-op cell did
        assert mine.split(": [")[0] == ref.split(": [")[0]
        assert "modified by an inplace operation" in mine
    else:
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_mixed_dtypes_take_the_per_op_path_and_raise_as_it_did(cls, monkeypatch):
    calls = _count(monkeypatch, cls)
    m = getattr(jg.nn, cls)(IN, HID)  # float32 weights
    x = jg.randn(N, IN, dtype=jg.float64)
    h = jg.randn(N, HID)
    fused_error = None
    try:
        m(x, (h, h) if cls == "LSTMCell" else h)
    except RuntimeError as e:
        fused_error = str(e)
    assert not calls
    _per_op(monkeypatch)
    try:
        m(x, (h, h) if cls == "LSTMCell" else h)
        per_op_error = None
    except RuntimeError as e:
        per_op_error = str(e)
    assert fused_error == per_op_error
