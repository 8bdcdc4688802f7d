"""The computation behind ``RNN``/``LSTM``/``GRU`` and their cells: what PyTorch's
``_VF.rnn_tanh``, ``_VF.rnn_relu``, ``_VF.lstm``, ``_VF.gru`` and the ``*_cell`` functions do on
the CPU (``aten/src/ATen/native/RNN.cpp``), built from ordinary tensor ops so autograd and both
devices come for free.

The structure follows RNN.cpp's so that values, node names and random draws line up: each layer
and direction projects its whole input with one ``linear`` (``linear_ih``), then loops over time
applying the hidden projection and the gates; the time steps are stacked (padded input) or
concatenated (packed input), the two directions concatenated on the feature dim, and dropout
(the global generator's stream, as ``at::dropout``) is applied to every layer's output but the
last while training.

Credit: ported from PyTorch's ``aten/src/ATen/native/RNN.cpp`` (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

from ...ops.elementwise_call import call
from ...ops.registry import OPS
from ...ops.shape_join import cat, stack
from .. import functional as F

__all__ = ["CellParams", "tanh_cell", "relu_cell", "lstm_cell", "lstm_layer_cell", "gru_cell",
           "gru_layer_cell", "run_stack",
           "check_cell_input", "check_cell_hidden"]


class CellParams:
    """One layer-direction's weights; ``w_hr`` only for an LSTM with projections."""

    __slots__ = ("w_ih", "w_hh", "b_ih", "b_hh", "w_hr")

    def __init__(self, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
        self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr = w_ih, w_hh, b_ih, b_hh, w_hr

    def linear_ih(self, x):
        return F.linear(x, self.w_ih, self.b_ih)

    def linear_hh(self, h):
        return F.linear(h, self.w_hh, self.b_hh)

    def matmul_hr(self, h):
        return h if self.w_hr is None else h.matmul(self.w_hr.t())


# Each cell takes its input already projected by ``linear_ih`` (RNN.cpp's pre_compute_input).

def tanh_cell(input_w, hidden, params):
    return (params.linear_hh(hidden) + input_w).tanh()


def relu_cell(input_w, hidden, params):
    return (params.linear_hh(hidden) + input_w).relu()


def lstm_cell(input_w, hidden, params):
    hx, cx = hidden
    ingate, forgetgate, cellgate, outgate = (params.linear_hh(hx) + input_w).chunk(4, 1)
    ingate, forgetgate, outgate = ingate.sigmoid(), forgetgate.sigmoid(), outgate.sigmoid()
    cy = forgetgate * cx + ingate * cellgate.tanh()
    hy = outgate * cy.tanh()
    return params.matmul_hr(hy), cy


_LSTM_STATE, _LSTM_HIDDEN = OPS["lstm_cell_state"], OPS["lstm_cell_hidden"]


def lstm_layer_cell(input_w, hidden, params):
    """``lstm_cell`` with the gate arithmetic as two fused ops (``ops/elementwise_rnn.py``): the
    same values and gradients, 2 nodes a step instead of 9. Used inside ``LSTM``'s layers, whose
    outputs are stacked; a per-op ``LSTMCell`` returns ``lstm_cell``'s own nodes (PyTorch's
    names; on the CPU with MKL it runs ``rnn_cells_fused.py``)."""
    hx, cx = hidden
    ingate, forgetgate, cellgate, outgate = (params.linear_hh(hx) + input_w).chunk(4, 1)
    cy = call(_LSTM_STATE, ingate, forgetgate, cellgate, cx)
    hy = call(_LSTM_HIDDEN, outgate, cy)
    return params.matmul_hr(hy), cy


def gru_cell(input_w, hidden, params):
    i_r, i_z, i_n = input_w.chunk(3, 1)
    h_r, h_z, h_n = params.linear_hh(hidden).chunk(3, 1)
    reset_gate = (h_r + i_r).sigmoid()
    input_gate = (h_z + i_z).sigmoid()
    new_gate = (i_n + h_n * reset_gate).tanh()
    return (hidden - new_gate) * input_gate + new_gate


_GRU = OPS["gru_cell"]


def gru_layer_cell(input_w, hidden, params):
    """``gru_cell`` with the gate arithmetic as one fused op (``ops/elementwise_rnn.py``): the
    same values and gradients, 1 node a step instead of 10. Used inside ``GRU``'s layers, whose
    outputs are stacked, and by a per-op ``GRUCell`` when it records no graph."""
    i_r, i_z, i_n = input_w.chunk(3, 1)
    h_r, h_z, h_n = params.linear_hh(hidden).chunk(3, 1)
    return call(_GRU, i_r, i_z, i_n, h_r, h_z, h_n, hidden)


def check_cell_input(input, input_size):
    if input.size(1) != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{input_size}")


def check_cell_hidden(input, hx, hidden_size, label):
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} batch "
                           f"size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, "
                           f"expected {hidden_size}")


# ----------------------------------------------------------------------------- hidden states
# An LSTM's hidden state is the pair (h, c); the other cells' a single tensor.

def _as_output(hidden):
    return hidden[0] if isinstance(hidden, tuple) else hidden


def _slice(hidden, start, end):
    if isinstance(hidden, tuple):
        return tuple(h.narrow(0, start, end - start) for h in hidden)
    return hidden.narrow(0, start, end - start)


def _concat(hiddens):
    if isinstance(hiddens[0], tuple):
        return tuple(cat(list(parts), 0) for parts in zip(*hiddens))
    return cat(hiddens, 0)


# ----------------------------------------------------------------------------- layers

def _full_layer(input, hidden, params, cell, reverse):
    """A padded (seq, batch, feature) input through one direction: the outputs, stacked."""
    steps = params.linear_ih(input).unbind(0)
    if not steps:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    outputs = []
    for step in (reversed(steps) if reverse else steps):
        hidden = cell(step, hidden, params)
        outputs.append(_as_output(hidden))
    if reverse:
        outputs.reverse()
    return stack(outputs, 0), hidden


def _packed_layer(data, batch_sizes, hidden, params, cell):
    """A packed input forwards: sequences that end leave their final hidden state behind."""
    data_w = params.linear_ih(data)
    outputs, finished = [], []
    offset, last = 0, batch_sizes[0]
    for batch_size in batch_sizes:
        step = data_w.narrow(0, offset, batch_size)
        offset += batch_size
        if batch_size < last:
            finished.append(_slice(hidden, batch_size, last))
            hidden = _slice(hidden, 0, batch_size)
        last = batch_size
        hidden = cell(step, hidden, params)
        outputs.append(_as_output(hidden))
    finished.append(hidden)
    finished.reverse()
    return cat(outputs, 0), _concat(finished)


def _reversed_packed_layer(data, batch_sizes, input_hidden, params, cell):
    """A packed input backwards: sequences join as their last time step is reached."""
    data_w = params.linear_ih(data)
    outputs = []
    offset, last = data.size(0), batch_sizes[-1]
    hidden = _slice(input_hidden, 0, last)
    for batch_size in reversed(batch_sizes):
        if batch_size > last:
            hidden = _concat([hidden, _slice(input_hidden, last, batch_size)])
        step = data_w.narrow(0, offset - batch_size, batch_size)
        offset -= batch_size
        last = batch_size
        hidden = cell(step, hidden, params)
        outputs.append(_as_output(hidden))
    outputs.reverse()
    return cat(outputs, 0), hidden


def _layer(input, batch_sizes, hidden, params, cell, reverse):
    if batch_sizes is None:
        return _full_layer(input, hidden, params, cell, reverse)
    if reverse:
        return _reversed_packed_layer(input, batch_sizes, hidden, params, cell)
    return _packed_layer(input, batch_sizes, hidden, params, cell)


def run_stack(cell, input, batch_sizes, hiddens, params, num_layers, dropout, train,
              bidirectional, layer=None, present=None):
    """``input`` is (seq, batch, feature), or the packed data with ``batch_sizes`` a list of
    ints; ``hiddens`` and ``params`` hold one entry per layer and direction, in PyTorch's order
    (l0, l0_reverse, l1, ...). Returns the last layer's output and the final hidden states in
    that order. ``layer``: what runs one layer-direction (``_layer``'s signature), e.g. the
    fused LSTM layer of ``lstm_fused.py``. ``present(output, batch_sizes)``: applied to a
    unidirectional last layer's output, which is the caller's (a fused layer's output shown as
    the per-op path's stack, ``rnn_fused.present``)."""
    run_layer = layer or _layer
    num_directions = 2 if bidirectional else 1
    final_hiddens = []
    layer_input = input
    for layer in range(num_layers):
        outputs = []
        for direction in range(num_directions):
            k = layer * num_directions + direction
            out, hidden = run_layer(layer_input, batch_sizes, hiddens[k], params[k], cell,
                                    direction == 1)
            outputs.append(out)
            final_hiddens.append(hidden)
        layer_input = outputs[0] if num_directions == 1 else cat(outputs, outputs[0].dim() - 1)
        if dropout != 0 and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    if present is not None and num_directions == 1:
        layer_input = present(layer_input, batch_sizes)
    return layer_input, final_hiddens
