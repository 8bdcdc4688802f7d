"""The fused cells' remembered step (``rnn_cells_fused.remember``/``lstm_step``/...): a call that
repeats the last checked one (same dtype and shapes, the parameters' same storages) skips the
module's checks and ``usable``. Every scenario here changes something between calls (a
replaced parameter or ``.data``, a dtype, requires_grad, in-place and optimizer updates,
shapes, grad mode, the nonlinearity, copies of the cell) and must give PyTorch's values,
gradients, grad_fn names and errors, as the unremembered path did."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from jitgrad.backends import blas
from jitgrad.nn.modules import rnn_cells_fused
from tests._parity import check_observations, torch

pytestmark = [pytest.mark.skipif(torch is None, reason="compares with PyTorch"),
              pytest.mark.skipif(blas.backend() != "mkl", reason="the fused cells need MKL")]

IN, HID, N = 5, 6, 3
CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {"bias": False}),
         ("GRUCell", {"bias": False})]
IDS = [c + "".join(f"-{v}" for v in kw.values()) for c, kw in CELLS]


def _arr(seed, *shape, dt=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _cell(T, cls, kw, dtype="float64"):
    T.manual_seed(0)
    return getattr(T.nn, cls)(IN, HID, dtype=getattr(T, dtype), **kw)


def _hidden(T, cls, batch=N, seed=1, dt=np.float64, width=HID):
    h = T.tensor(_arr(seed, batch, width, dt=dt))
    return (h, T.tensor(_arr(seed + 1, batch, width, dt=dt))) if cls == "LSTMCell" else h


def _step(T, cell, x, hid, record, label):
    """One call, its outputs and (when a graph was recorded) every parameter's and the
    input's gradient of a weighted sum of the outputs."""
    for p in cell.parameters():
        p.grad = None
    out = cell(x, hid)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        record(f"{label} out{i}", o)
    loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs))
    if loss.requires_grad:
        loss.backward()
        record(f"{label} grads", [p.grad for p in cell.parameters()])
        if x.requires_grad:
            record(f"{label} x.grad", [x.grad])
    return out


def _x(T, seed=3, batch=N, dt=np.float64, width=IN, requires_grad=False):
    return T.tensor(_arr(seed, batch, width, dt=dt), requires_grad=requires_grad)


@pytest.fixture(params=CELLS, ids=IDS)
def case(request):
    return request.param


def test_replaced_parameter(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        x, hid = _x(T), _hidden(T, cls)
        _step(T, cell, x, hid, record, "first")
        cell.weight_hh = T.nn.Parameter(T.tensor(_arr(9, *cell.weight_hh.shape)))
        _step(T, cell, x, hid, record, "new weight_hh")
        if kw.get("bias", True):
            cell.bias_ih = T.nn.Parameter(T.tensor(_arr(10, *cell.bias_ih.shape)))
            _step(T, cell, x, hid, record, "new bias_ih")
        cell.weight_ih = T.nn.Parameter(T.tensor(_arr(11, *cell.weight_ih.shape)),
                                        requires_grad=False)
        _step(T, cell, x, hid, record, "frozen weight_ih")
    check_observations(run)


def test_data_replaced(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        x, hid = _x(T), _hidden(T, cls)
        _step(T, cell, x, hid, record, "first")
        cell.weight_ih.data = T.tensor(_arr(12, *cell.weight_ih.shape))
        _step(T, cell, x, hid, record, "weight_ih.data")
        if kw.get("bias", True):
            cell.bias_hh.data = T.tensor(_arr(13, *cell.bias_hh.shape))
            _step(T, cell, x, hid, record, "bias_hh.data")
        # another dtype under .data: the next call is checked and raises as PyTorch's
        cell.weight_hh.data = T.tensor(_arr(14, *cell.weight_hh.shape, dt=np.float32))
        _step(T, cell, x, hid, record, "float32 weight_hh.data")
    check_observations(run)


def test_dtype_change_of_the_module(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        _step(T, cell, _x(T), _hidden(T, cls), record, "float64")
        cell.float()
        x32, hid32 = _x(T, dt=np.float32), _hidden(T, cls, dt=np.float32)
        _step(T, cell, x32, hid32, record, "float32")
        _step(T, cell, x32, hid32, record, "float32 again")
        _step(T, cell, _x(T), hid32, record, "float64 input")  # raises
    check_observations(run)


def test_requires_grad_toggled(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        x, hid = _x(T), _hidden(T, cls)
        _step(T, cell, x, hid, record, "first")
        cell.weight_ih.requires_grad_(False)
        _step(T, cell, x, hid, record, "weight_ih frozen")
        for p in cell.parameters():
            p.requires_grad_(False)
        _step(T, cell, x, hid, record, "all frozen")
        xg = _x(T, requires_grad=True)
        _step(T, cell, xg, hid, record, "input requires grad")
        for p in cell.parameters():
            p.requires_grad_(True)
        _step(T, cell, x, hid, record, "all again")
        with T.no_grad():
            _step(T, cell, x, hid, record, "no_grad")
        _step(T, cell, x, hid, record, "grad again")
    check_observations(run)


def test_in_place_updates_and_an_optimizer(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        opt = T.optim.SGD(cell.parameters(), lr=0.1, momentum=0.9)
        hid = _hidden(T, cls)
        for k in range(3):
            out = _step(T, cell, _x(T, seed=20 + k), hid, record, f"step {k}")
            opt.step()
            hid = tuple(o.detach() for o in out) if isinstance(out, tuple) else out.detach()
        with T.no_grad():
            cell.weight_hh.mul_(0.5)
            cell.weight_ih[0].fill_(0.25)
        _step(T, cell, _x(T), hid, record, "after in-place writes")
    check_observations(run)


def test_non_contiguous_parameter_is_read_at_each_call(case):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        rows, cols = cell.weight_ih.shape
        cell.weight_ih.data = T.tensor(_arr(15, cols, rows)).t()  # a transposed view
        x, hid = _x(T), _hidden(T, cls)
        _step(T, cell, x, hid, record, "first")
        with T.no_grad():
            cell.weight_ih.mul_(2)
        _step(T, cell, x, hid, record, "weight_ih doubled in place")
    check_observations(run)


def test_shapes_and_bad_inputs_after_a_remembered_call(case):
    cls, kw = case
    bad = [("input size", lambda T: (_x(T, width=IN + 1), _hidden(T, cls))),
           ("hidden batch", lambda T: (_x(T), _hidden(T, cls, batch=N + 1))),
           ("hidden size", lambda T: (_x(T), _hidden(T, cls, width=HID + 1))),
           ("input dtype", lambda T: (_x(T, dt=np.float32), _hidden(T, cls))),
           ("hidden dtype", lambda T: (_x(T), _hidden(T, cls, dt=np.float32))),
           ("3-D input", lambda T: (T.tensor(_arr(4, 1, N, IN)), _hidden(T, cls)))]
    for label, make in bad:
        def run(T, record, make=make, label=label):
            cell = _cell(T, cls, kw)
            _step(T, cell, _x(T), _hidden(T, cls), record, "first")
            _step(T, cell, _x(T, batch=N + 2), _hidden(T, cls, batch=N + 2), record,
                  "another batch")
            _step(T, cell, _x(T, batch=1)[0], _hidden(T, cls, batch=1, seed=5)[0]
                  if cls != "LSTMCell" else tuple(h[0] for h in _hidden(T, cls, batch=1)),
                  record, "unbatched")
            _step(T, cell, _x(T), None, record, "no hidden state")
            _step(T, cell, _x(T), _hidden(T, cls), record, "first shapes again")
            x, hid = make(T)
            _step(T, cell, x, hid, record, label)  # raises
        check_observations(run, where=label)


def test_lstm_hidden_as_a_list_or_the_wrong_length():
    def run(T, record):
        cell = _cell(T, "LSTMCell", {})
        h, c = _hidden(T, "LSTMCell")
        _step(T, cell, _x(T), (h, c), record, "tuple")
        _step(T, cell, _x(T), [h, c], record, "list")
        _step(T, cell, _x(T), (h, c, h), record, "three states")  # raises
    check_observations(run)


def test_nonlinearity_changed_between_calls():
    def run(T, record):
        cell = _cell(T, "RNNCell", {})
        x, h = _x(T), _hidden(T, "RNNCell")
        _step(T, cell, x, h, record, "tanh")
        cell.nonlinearity = "relu"
        _step(T, cell, x, h, record, "relu")
        cell.nonlinearity = "softsign"
        _step(T, cell, x, h, record, "unknown")  # raises
    check_observations(run)


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "copy"])
def test_copies_of_a_cell(case, how):
    cls, kw = case

    def run(T, record):
        cell = _cell(T, cls, kw)
        x, hid = _x(T), _hidden(T, cls)
        _step(T, cell, x, hid, record, "original")
        other = {"deepcopy": copy.deepcopy, "copy": copy.copy,
                 "pickle": lambda m: pickle.loads(pickle.dumps(m))}[how](cell)
        _step(T, other, x, hid, record, "copy")
        if how != "copy":  # a shallow copy shares the parameters
            with T.no_grad():
                other.weight_hh.mul_(-1)
        _step(T, other, x, hid, record, "copy changed")
        _step(T, cell, x, hid, record, "original again")
    check_observations(run)


@pytest.mark.parametrize("cls,kw", CELLS, ids=IDS)
def test_a_repeated_call_skips_the_checks(cls, kw, monkeypatch):
    """What the cache is for: the module's checks and ``usable`` run once for a run of calls
    with the same shapes, again when something changes."""
    import jitgrad as jg
    calls = []
    real = rnn_cells_fused.usable

    def spy(*args):
        calls.append(True)
        return real(*args)
    monkeypatch.setattr(rnn_cells_fused, "usable", spy)
    cell = _cell(jg, cls, kw)
    x, hid = _x(jg), _hidden(jg, cls)
    for _ in range(3):
        cell(x, hid)
    assert len(calls) == 1
    cell.weight_hh = jg.nn.Parameter(jg.tensor(_arr(9, *cell.weight_hh.shape)))
    cell(x, hid)
    cell(x, hid)
    assert len(calls) == 2
    cell(_x(jg, batch=N + 1), _hidden(jg, cls, batch=N + 1))
    assert len(calls) == 3
