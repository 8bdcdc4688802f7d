"""RNN, LSTM, GRU and their cells against PyTorch: seeded construction bit for bit (state dict
keys, values and order, ``_flat_weights_names``, ``all_weights``, repr, warnings), outputs,
final states and every gradient (parameters, input, h0/c0) in float64 and float32, in eval and
in train mode (the inter-layer dropout draws are bit-exact, so training runs compare too), with
batch_first, bidirectional, proj_size, relu, bias=False and unbatched inputs; output node names;
PyTorch's errors and warnings word for word; a float64 finite-difference check."""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
from tests._parity import agree
from tests.nn.nn_gradcheck import check_grads

RNG = np.random.default_rng(23)
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}
IN, HID, T, N = 3, 4, 4, 2


def randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def _lib_dtype(lib, dt):
    return lib.float64 if dt == np.float64 else lib.float32


def build(lib, cls, kw, dt=np.float64, seed=0, args=(IN, HID)):
    """A seeded ``lib.nn.<cls>(*args, **kw)`` and the warnings its construction raised."""
    lib.manual_seed(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = getattr(lib.nn, cls)(*args, dtype=_lib_dtype(lib, dt), **kw)
    return m, [str(w.message) for w in caught]


def _numpy(t):
    return t.detach().numpy()


# ----------------------------------------------------------------------------- construction

LAYER_CTORS = [
    ("RNN", dict()),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bias=False, dropout=0.25)),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(num_layers=2, proj_size=2, bidirectional=True, bias=False)),
    ("GRU", dict(bidirectional=True, dropout=0.5)),
    ("GRU", dict(num_layers=3, batch_first=True)),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("cls,kw", LAYER_CTORS)
def test_seeded_construction_matches(cls, kw, dt):
    (jm, jw), (tm, tw) = build(jg, cls, kw, dt), build(torch, cls, kw, dt)
    assert jw == tw and repr(jm) == repr(tm)
    assert jm._flat_weights_names == tm._flat_weights_names
    assert list(jm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in jm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for (name, a), b in zip(jm.state_dict().items(), tm.state_dict().values()):
        assert str(a.dtype) == str(b.dtype) and a.shape == b.shape, name
        assert np.array_equal(a.numpy(), b.numpy()), name  # the same draws, bit for bit
    assert [[tuple(w.shape) for w in ws] for ws in jm.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in tm.all_weights]
    assert all(w is getattr(jm, n) for w, n in zip(jm._flat_weights, jm._flat_weights_names))


CELL_CTORS = [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu", bias=False)),
              ("LSTMCell", dict()), ("GRUCell", dict(bias=False))]


@pytest.mark.parametrize("cls,kw", CELL_CTORS)
def test_seeded_cell_construction_matches(cls, kw):
    (jm, _), (tm, _) = build(jg, cls, kw), build(torch, cls, kw)
    assert repr(jm) == repr(tm)
    assert list(jm.state_dict()) == list(tm.state_dict())
    for a, b in zip(jm.state_dict().values(), tm.state_dict().values()):
        assert np.array_equal(a.numpy(), b.numpy())


# ----------------------------------------------------------------------------- forward/backward


def _tensors(lib, arrays):
    return [None if a is None else lib.tensor(a, requires_grad=True) for a in arrays]


def run_layer(lib, cls, kw, x, hx, dt, train=False, seed=5):
    """Outputs (flattened), gradients of a fixed weighted sum (input, h0, c0, parameters by
    name) and the output nodes' names."""
    m, _ = build(lib, cls, kw, dt)
    m.train(train)
    xt, *hts = _tensors(lib, [x, *hx])
    lib.manual_seed(seed)  # the dropout stream
    if not hts:
        out, h = m(xt)
    else:
        out, h = m(xt, tuple(hts) if cls == "LSTM" else hts[0])
    outs = [out, *(h if isinstance(h, tuple) else (h,))]
    after = lib.rand(3).numpy()  # the generator continues where PyTorch's does
    w = np.random.default_rng(9)
    loss = sum((o * lib.tensor(w.standard_normal(tuple(o.shape)).astype(dt))).sum() for o in outs)
    loss.backward()
    grads = {"input": xt.grad, **{f"h{i}": t.grad for i, t in enumerate(hts)}}
    grads.update({n: p.grad for n, p in m.named_parameters()})
    return ([_numpy(o) for o in outs], {k: None if g is None else g.numpy() for k, g in
                                        grads.items()},
            [type(o.grad_fn).__name__ for o in outs], after)


def _hidden(cls, kw, batch, dt):
    d = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1) * d
    h_size = kw.get("proj_size") or HID
    shape = (L, batch, h_size) if batch else (L, h_size)
    c_shape = (L, batch, HID) if batch else (L, HID)
    return [randn(*shape, dt=dt)] + ([randn(*c_shape, dt=dt)] if cls == "LSTM" else [])


FORWARD_CASES = [
    ("RNN", dict(), True),
    ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True, bias=False), False),
    ("LSTM", dict(), False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), True),
    ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True), True),
    ("GRU", dict(), True),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True, bias=False), False),
]


def _compare(mine, ref, dt, names=True):
    (jo, jg_, jn, ja), (to, tg, tn, ta) = mine, ref
    assert [o.shape for o in jo] == [o.shape for o in to]
    for a, b in zip(jo, to):
        np.testing.assert_allclose(a, b, **TOL[dt])
    assert jg_.keys() == tg.keys()
    for k in tg:
        assert (jg_[k] is None) == (tg[k] is None), k
        if tg[k] is not None:
            np.testing.assert_allclose(jg_[k], tg[k], err_msg=k, **TOL[dt])
    if names:
        assert jn == tn
    np.testing.assert_array_equal(ja, ta)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("cls,kw,with_hx", FORWARD_CASES)
def test_layer_forward_backward(cls, kw, with_hx, dt):
    shape = (N, T, IN) if kw.get("batch_first") else (T, N, IN)
    x = randn(*shape, dt=dt)
    hx = _hidden(cls, kw, N, dt) if with_hx else []
    mine = run_layer(jg, cls, kw, x, hx, dt)
    ref = run_layer(torch, cls, kw, x, hx, dt)
    # float32 LSTMs run through oneDNN in PyTorch (MkldnnRnnLayerBackward0, a fused node);
    # RNN/GRU transpose a batch_first output in place (TransposeBackward1): see the names test
    _compare(mine, ref, dt, names=False)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_training_dropout_between_layers(cls, dt):
    kw = dict(num_layers=3, dropout=0.4, bidirectional=cls == "GRU")
    x = randn(T, N, IN, dt=dt)
    _compare(run_layer(jg, cls, kw, x, [], dt, train=True),
             run_layer(torch, cls, kw, x, [], dt, train=True), dt, names=False)


def test_dropout_is_off_in_eval_mode():
    x = randn(T, N, IN)
    kw = dict(num_layers=2, dropout=0.9)
    a = run_layer(jg, "LSTM", kw, x, [], np.float64)[0][0]
    b = run_layer(jg, "LSTM", dict(num_layers=2), x, [], np.float64)[0][0]
    np.testing.assert_array_equal(a, b)


def test_output_node_names():
    """float64 runs PyTorch's native path, whose nodes are ordinary ops: the same names."""
    x = randn(T, N, IN)
    cases = [("RNN", dict()), ("RNN", dict(nonlinearity="relu", bidirectional=True)),
             ("LSTM", dict(batch_first=True)), ("LSTM", dict(proj_size=2, bidirectional=True)),
             ("GRU", dict(num_layers=2))]
    for cls, kw in cases:
        assert run_layer(jg, cls, kw, x, [], np.float64)[2] == \
            run_layer(torch, cls, kw, x, [], np.float64)[2], (cls, kw)


@pytest.mark.parametrize("cls,kw", [("RNN", dict(batch_first=True)),
                                    ("LSTM", dict(bidirectional=True, proj_size=3)),
                                    ("GRU", dict(num_layers=2))])
@pytest.mark.parametrize("with_hx", [False, True])
def test_unbatched_input(cls, kw, with_hx):
    x = randn(T, IN)
    hx = _hidden(cls, kw, 0, np.float64) if with_hx else []
    mine, ref = (run_layer(lib, cls, kw, x, hx, np.float64) for lib in (jg, torch))
    _compare(mine, ref, np.float64, names=cls != "RNN")  # RNN: TransposeBackward1 (in place)


# ----------------------------------------------------------------------------- cells


def run_cell(lib, cls, kw, x, hx, dt=np.float64):
    m, _ = build(lib, cls, kw, dt)
    xt, *hts = _tensors(lib, [x, *hx])
    out = m(xt) if not hts else m(xt, tuple(hts) if cls == "LSTMCell" else hts[0])
    outs = list(out) if isinstance(out, tuple) else [out]
    w = np.random.default_rng(3)
    sum((o * lib.tensor(w.standard_normal(tuple(o.shape)).astype(dt))).sum()
        for o in outs).backward()
    grads = {"input": xt.grad, **{f"h{i}": t.grad for i, t in enumerate(hts)}}
    grads.update({n: p.grad for n, p in m.named_parameters()})
    return ([_numpy(o) for o in outs], {k: None if g is None else g.numpy() for k, g in
                                        grads.items()},
            [type(o.grad_fn).__name__ for o in outs], np.zeros(0))


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("cls,kw", CELL_CTORS)
@pytest.mark.parametrize("batched,with_hx", [(True, True), (True, False), (False, True)])
def test_cell_forward_backward(cls, kw, batched, with_hx, dt):
    x = randn(N, IN, dt=dt) if batched else randn(IN, dt=dt)
    h_shape = (N, HID) if batched else (HID,)
    hx = [randn(*h_shape, dt=dt) for _ in range(2 if cls == "LSTMCell" else 1)] if with_hx \
        else []
    _compare(run_cell(jg, cls, kw, x, hx, dt), run_cell(torch, cls, kw, x, hx, dt), dt)


def test_gru_cell_equations():
    """r, z, n in PyTorch's order with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""
    jg.manual_seed(1)
    cell = jg.nn.GRUCell(IN, HID, dtype=jg.float64)
    x, h = randn(N, IN), randn(N, HID)
    w_ir, w_iz, w_in = np.split(cell.weight_ih.detach().numpy(), 3)
    w_hr, w_hz, w_hn = np.split(cell.weight_hh.detach().numpy(), 3)
    b_ir, b_iz, b_in = np.split(cell.bias_ih.detach().numpy(), 3)
    b_hr, b_hz, b_hn = np.split(cell.bias_hh.detach().numpy(), 3)

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    r = sigmoid(x @ w_ir.T + b_ir + h @ w_hr.T + b_hr)
    z = sigmoid(x @ w_iz.T + b_iz + h @ w_hz.T + b_hz)
    n = np.tanh(x @ w_in.T + b_in + r * (h @ w_hn.T + b_hn))
    np.testing.assert_allclose(cell(jg.tensor(x), jg.tensor(h)).detach().numpy(),
                               (1 - z) * n + z * h, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_finite_difference_gradients(cls):
    jg.manual_seed(2)
    m = getattr(jg.nn, cls)(2, 3, num_layers=2, bidirectional=True, dtype=jg.float64)
    names = [n for n, _ in m.named_parameters()][:4] + ["weight_hh_l1_reverse"]
    params = [getattr(m, n).detach().numpy().copy() for n in names]

    def forward(x, *ws):
        for n, w in zip(names, ws):
            m._parameters[n] = w  # the tensors under test stand in for the parameters
        m._init_flat_weights()
        return m(x)[0]

    check_grads(forward, [randn(3, 2, 2), *params], wrt=range(len(params) + 1),
                atol=1e-7, rtol=1e-6)


# ----------------------------------------------------------------------------- module behaviour


def test_conversion_copy_pickle_and_reassigned_weights():
    x = randn(T, N, IN)
    m = jg.nn.LSTM(IN, HID, num_layers=2)
    m.double()  # the flat weights follow the converted parameters
    ref = m(jg.tensor(x))[0].detach().numpy()
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        np.testing.assert_array_equal(other(jg.tensor(x))[0].detach().numpy(), ref)
    m.weight_hh_l1 = jg.nn.Parameter(jg.zeros(4 * HID, HID, dtype=jg.float64))
    assert m._flat_weights[m._flat_weights_names.index("weight_hh_l1")] is m.weight_hh_l1
    assert not np.array_equal(m(jg.tensor(x))[0].detach().numpy(), ref)


# ----------------------------------------------------------------------------- errors


CTOR_ERRORS = [
    ("RNN", (3, 4), dict(dropout=0.5)),                  # the num_layers=1 warning
    ("RNN", (3, 4, 2, "relu", True, False, 0.5), {}),    # nonlinearity as 4th positional
    ("RNN", (3, 4), dict(nonlinearity="sigmoid")),
    ("RNN", (3, 4), dict(proj_size=2)),
    ("GRU", (3, 4), dict(proj_size=2)),
    ("LSTM", (3, 4), dict(proj_size=4)),
    ("LSTM", (3, 4), dict(proj_size=-1)),
    ("LSTM", (3, 4), dict(dropout=1.5)),
    ("LSTM", (3, 4), dict(dropout=True)),
    ("GRU", (3, 4), dict(num_layers=0)),
    ("GRU", (3.0, 4), {}),
    ("GRU", (3, 0), {}),
    ("GRU", (0, 4), {}),
    ("GRU", (3, 4), dict(bias=1)),
    ("GRU", (3, 4), dict(batch_first=None)),
    ("LSTM", (3, 4), dict(foo=1)),
    ("RNNCell", (3, 4), dict(nonlinearity="sigmoid")),
]


@pytest.mark.parametrize("cls,args,kw", CTOR_ERRORS)
def test_constructor_errors_and_warnings(cls, args, kw):
    def make(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = getattr(lib.nn, cls)(*args, **kw)
        return repr(m), [str(w.message) for w in caught]
    agree(make)


def _call(cls, kw, x_shape, hx_shapes, dt=np.float64, x_dt=None):
    def fn(lib):
        m = getattr(lib.nn, cls)(IN, HID, dtype=_lib_dtype(lib, dt), **kw)
        x = lib.tensor(np.zeros(x_shape, dtype=x_dt or dt))
        hx = [lib.tensor(np.zeros(s, dtype=dt)) for s in hx_shapes]
        if not hx:
            return m(x)
        return m(x, tuple(hx) if cls in ("LSTM", "LSTMCell") else hx[0])
    return fn


FORWARD_ERRORS = [
    ("RNN", {}, (T, N, IN, 1), []),
    ("GRU", {}, (IN,), []),
    ("LSTM", {}, (IN,), []),
    ("RNN", {}, (T, N, IN), [(1, N, HID, 1)]),
    ("GRU", {}, (T, IN), [(1, 1, HID)]),
    ("LSTM", {}, (T, N, IN), [(1, N, HID), (N, HID)]),
    ("LSTM", {}, (T, IN), [(1, HID), (1, 1, HID)]),
    ("RNN", {}, (T, N, IN + 1), []),
    ("GRU", dict(bidirectional=True), (T, N, IN), [(1, N, HID)]),
    ("GRU", dict(batch_first=True), (T, N, IN), [(1, N, HID)]),
    ("LSTM", dict(proj_size=2), (T, N, IN), [(1, N, HID), (1, N, HID)]),
    ("LSTM", {}, (T, N, IN), [(1, N, HID), (1, N, HID + 1)]),
    ("LSTM", {}, (0, N, IN), []),
    ("RNNCell", {}, (N, IN, 1), []),
    ("RNNCell", {}, (N, IN), [(N, HID, 1)]),
    ("GRUCell", {}, (N, IN + 1), []),
    ("GRUCell", {}, (N, IN), [(N + 1, HID)]),
    ("GRUCell", {}, (N, IN), [(N, HID + 1)]),
    ("LSTMCell", {}, (N, IN), [(N, HID), (N, HID, 1)]),
    ("LSTMCell", {}, (N, IN), [(N, HID), (N, HID + 1)]),
]


@pytest.mark.parametrize("cls,kw,x_shape,hx_shapes", FORWARD_ERRORS)
def test_forward_errors(cls, kw, x_shape, hx_shapes):
    agree(_call(cls, kw, x_shape, hx_shapes))


def test_input_dtype_mismatch():
    agree(_call("GRU", {}, (T, N, IN), [], dt=np.float32, x_dt=np.float64))


def test_zero_batch():
    agree(lambda lib: [t.shape for t in jg_flat(lib.nn.GRU(IN, HID, num_layers=2)(
        lib.zeros(T, 0, IN)))])


def jg_flat(out):
    output, h = out
    return [output, h]
