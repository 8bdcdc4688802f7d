"""The top-level ATen RNN functions (bound lazily by ``jitgrad.__getattr__``): the cells
``torch.rnn_tanh_cell`` / ``rnn_relu_cell`` / ``lstm_cell`` / ``gru_cell`` and the whole-stack
``torch.rnn_tanh`` / ``rnn_relu`` / ``lstm`` / ``gru`` (what ``nn.RNN``/``LSTM``/``GRU`` call
through ``_VF``), each in both of ATen's overloads: padded ``(input, hx, params, has_biases,
num_layers, dropout, train, bidirectional, batch_first)`` and packed ``(data, batch_sizes, hx,
params, has_biases, num_layers, dropout, train, bidirectional)``.

They run the same code as the modules (``nn/modules/rnn_stack.py``: RNN.cpp in tensor ops; a
float32 CPU LSTM takes the fused oneDNN-like layer, as PyTorch does; float64 LSTMs and CPU
GRU/RNN stacks take compiled whole-layer kernels, ``rnn_fused.py``), so values, node names,
dropout draws and devices are the modules'. ``params`` is the flat weight list in PyTorch's
order (w_ih, w_hh[, b_ih, b_hh][, w_hr] per layer and direction), as ATen's gather_params reads
it; an LSTM has projections when its h and c sizes differ."""
from __future__ import annotations

from ...ops.parser_errors import parser_type_name
from ...ops.shape_join import stack
from ...tensor import Tensor
from ..modules import rnn_fused, rnn_stack

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn_tanh", "rnn_relu",
           "lstm", "gru"]


def _tensor(x, name, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


# ----------------------------------------------------------------------------- cells

def _check_weights(w_ih, w_hh, gates):
    """RNN.cpp's cell weight checks (hidden_size is w_hh's second dim), before the input's."""
    hidden = w_hh.size(1)
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.size(0) != gates * hidden:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                               f"{gates * hidden}, but got {w.size(0)}")


def _simple_cell(name, cell, input, hx, w_ih, w_hh, b_ih, b_hh, gates=1):
    for arg, pos, t in (("input", 1, input), ("hx", 2, hx), ("w_ih", 3, w_ih),
                        ("w_hh", 4, w_hh)):
        _tensor(t, name, arg, pos)
    # ATen's order: the tanh/relu cells check their weights first, gru_cell last
    if gates == 1:
        _check_weights(w_ih, w_hh, gates)
    rnn_stack.check_cell_input(input, w_ih.size(1))
    rnn_stack.check_cell_hidden(input, hx, w_hh.size(1), 0)
    if gates != 1:
        _check_weights(w_ih, w_hh, gates)
    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
    return cell(params.linear_ih(input), hx, params)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)`` (TanhBackward0)."""
    return _simple_cell("rnn_tanh_cell", rnn_stack.tanh_cell, input, hx, w_ih, w_hh, b_ih,
                        b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _simple_cell("rnn_relu_cell", rnn_stack.relu_cell, input, hx, w_ih, w_hh, b_ih,
                        b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (RNN.cpp's GRUCell: r, z, n gates; AddBackward0)."""
    return _simple_cell("gru_cell", rnn_stack.gru_cell, input, hx, w_ih, w_hh, b_ih, b_hh, 3)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: ``(hy, cy)`` from ``hx = (h, c)`` (gates i, f, g, o)."""
    _tensor(input, "lstm_cell", "input", 1)
    if isinstance(hx, Tensor) or not all(isinstance(h, Tensor) for h in hx):
        raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not "
                        f"{parser_type_name(hx)}")
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    rnn_stack.check_cell_input(input, w_ih.size(1))
    _check_weights(w_ih, w_hh, 4)
    rnn_stack.check_cell_hidden(input, hx[0], w_hh.size(1), 0)
    rnn_stack.check_cell_hidden(input, hx[1], w_hh.size(1), 1)
    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
    return rnn_stack.lstm_cell(params.linear_ih(input), (hx[0], hx[1]), params)


# ----------------------------------------------------------------------------- stacks

def _gather_params(params, has_biases, has_projections):
    """ATen's gather_params: one CellParams per layer and direction."""
    params = list(params)
    per = (4 if has_biases else 2) + (1 if has_projections else 0)
    if len(params) % per != 0:
        raise RuntimeError("got an incorrect number of RNN parameters")
    out = []
    for k in range(0, len(params), per):
        g = params[k:k + per]
        b_ih, b_hh = (g[2], g[3]) if has_biases else (None, None)
        out.append(rnn_stack.CellParams(g[0], g[1], b_ih, b_hh,
                                        g[-1] if has_projections else None))
    return out


def _split_args(name, args):
    """The two overloads: ``(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` or ``(data, batch_sizes, hx, params, has_biases, num_layers,
    dropout, train, bidirectional)`` (packed: the fourth argument is the parameter list).
    Returns (input, batch_sizes or None, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)."""
    if len(args) != 9:
        raise TypeError(f"{name}() takes 9 positional arguments but {len(args)} were given")
    if isinstance(args[3], (list, tuple)):
        data, batch_sizes, hx, params, hb, nl, dp, tr, bi = args
        _tensor(batch_sizes, name, "batch_sizes", 2)
        return data, [int(b) for b in batch_sizes.tolist()], hx, params, hb, nl, dp, tr, bi, \
            False
    input, hx, params, hb, nl, dp, tr, bi, bf = args
    return input, None, hx, params, hb, nl, dp, tr, bi, bf


def _run(cell, input, batch_sizes, hiddens, params, num_layers, dropout, train, bidirectional,
         batch_first, layer=None, transpose_in_place=True, present=None):
    if batch_sizes is None and batch_first:
        input = input.transpose(0, 1)
    output, finals = rnn_stack.run_stack(cell, input, batch_sizes, hiddens, params,
                                         int(num_layers), float(dropout), bool(train),
                                         bool(bidirectional), layer, present)
    if batch_sizes is None and batch_first:
        # RNN.cpp transposes rnn_tanh/relu/gru's output in place (TransposeBackward1),
        # lstm's out of place (TransposeBackward0)
        output = output.transpose_(0, 1) if transpose_in_place else output.transpose(0, 1)
    return output, finals


def _single_state(name, cell, args):
    input, batch_sizes, hx, params, hb, nl, dp, tr, bi, bf = _split_args(name, args)
    _tensor(input, name, "input", 1)
    _tensor(hx, name, "hx", 2)
    cells = _gather_params(params, bool(hb), False)
    fused = rnn_fused.usable(input, hx, list(params))
    output, finals = _run(cell, input, batch_sizes, hx.unbind(0), cells, nl, dp, tr, bi, bf,
                          rnn_fused.layer if fused else None,
                          present=rnn_fused.present if fused else None)
    return output, stack(finals, 0)


def rnn_tanh(*args):
    """``(output, h_n)`` of a tanh RNN stack."""
    return _single_state("rnn_tanh", rnn_stack.tanh_cell, args)


def rnn_relu(*args):
    return _single_state("rnn_relu", rnn_stack.relu_cell, args)


def gru(*args):
    """``(output, h_n)`` of a GRU stack."""
    return _single_state("gru", rnn_stack.gru_layer_cell, args)


def lstm(*args):
    """``(output, h_n, c_n)`` of an LSTM stack; ``hx`` is the pair ``(h_0, c_0)``."""
    from ..modules import lstm_fused
    input, batch_sizes, hx, params, hb, nl, dp, tr, bi, bf = _split_args("lstm", args)
    _tensor(input, "lstm", "input", 1)
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    h0, c0 = hx
    has_proj = h0.size(2) != c0.size(2)
    cells = _gather_params(params, bool(hb), has_proj)
    if lstm_fused.usable(input, hx, list(params), 1 if has_proj else 0, batch_sizes):
        hiddens, present = lstm_fused.hiddens_and_present(input, hx)
        layer = lstm_fused.layer
    else:
        hiddens = list(zip(h0.unbind(0), c0.unbind(0)))
        layer = present = None
        if rnn_fused.usable_packed_lstm(input, hx, list(params), 1 if has_proj else 0,
                                        batch_sizes):
            layer, present = rnn_fused.layer, rnn_fused.present
    output, finals = _run(rnn_stack.lstm_layer_cell, input, batch_sizes, hiddens, cells, nl,
                          dp, tr, bi, bf, layer, transpose_in_place=False, present=present)
    return output, stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0)
