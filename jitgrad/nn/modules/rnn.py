"""``RNNBase``, ``RNN``, ``LSTM``, ``GRU``: PyTorch's recurrent layers (argument checks and their
messages, parameter names, shapes and registration order, so seeded constructions and state
dicts match; batched, unbatched and packed inputs), over the computation in ``rnn_stack``.

``flatten_parameters`` only matters to cuDNN's flat weight buffer, so it does nothing here.

Credit: the code follows PyTorch's ``torch/nn/modules/rnn.py`` (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

import math
import numbers
import warnings
import weakref

from ... import _dtype as D
from ...ops.basic import empty, zeros
from ...ops.shape_join import stack
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from . import lstm_fused, rnn_fused, rnn_stack
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU"]

_CELLS = {"RNN_TANH": rnn_stack.tanh_cell, "RNN_RELU": rnn_stack.relu_cell,
          "LSTM": rnn_stack.lstm_layer_cell, "GRU": rnn_stack.gru_layer_cell}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _check_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size):
    if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
            or isinstance(dropout, bool)):
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        kw = {"device": device, "dtype": D.to_dtype(dtype) if dtype is not None else None}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._flat_weight_refs = []
        num_directions = 2 if bidirectional else 1
        _check_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size

        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = [(gate_size, layer_input_size), (gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(empty(shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self):
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None
                              for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None
                                  for w in self._flat_weights]
        self.flatten_parameters()

    def __setattr__(self, attr, value):
        if hasattr(self, "_flat_weights_names") and attr in self._flat_weights_names:
            self._flat_weights[self._flat_weights_names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        """cuDNN's contiguous weight buffer; there is no cuDNN here, so nothing to do."""

    def _apply(self, fn, recurse=True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if hx.size() != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def _weights_have_changed(self):
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names):
            weight = getattr(self, name) if hasattr(self, name) else None
            if weight is not None and ref is not None and ref() is not weight:
                return True
        return False

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _update_flat_weights(self):
        if self._weights_have_changed():
            self._init_flat_weights()

    def __getstate__(self):
        self._update_flat_weights()
        state = self.__dict__.copy()
        del state["_flat_weight_refs"]  # weak references do not pickle
        return state

    def __setstate__(self, d):
        super().__setstate__(d)
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None
                                  for w in self._flat_weights]

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    # ------------------------------------------------------------------ the shared forward

    def _cell_params(self):
        """One ``CellParams`` per layer and direction, from ``_flat_weights`` in its order."""
        per_layer = (4 if self.bias else 2) + (1 if self.proj_size > 0 else 0)
        w = self._flat_weights
        params = []
        for k in range(0, len(w), per_layer):
            group = w[k:k + per_layer]
            w_ih, w_hh = group[0], group[1]
            b_ih, b_hh = (group[2], group[3]) if self.bias else (None, None)
            w_hr = group[-1] if self.proj_size > 0 else None
            params.append(rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh, w_hr))
        return params

    def _run(self, input, batch_sizes, hiddens, layer=None, present=None):
        """The last layer's output and the per-layer-direction final hidden states."""
        if batch_sizes is None and self.batch_first:
            input = input.transpose(0, 1)
        output, finals = rnn_stack.run_stack(
            _CELLS[self.mode], input, batch_sizes, hiddens, self._cell_params(),
            self.num_layers, self.dropout, self.training, self.bidirectional, layer, present)
        if batch_sizes is None and self.batch_first:
            output = output.transpose(0, 1)
        return output, finals

    def _zeros(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype,
                     device=input.device)


def _unpack(packed):
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    return data, [int(b) for b in batch_sizes.tolist()], sorted_indices, unsorted_indices


class _SingleStateRNN(RNNBase):
    """``RNN`` and ``GRU``: one hidden-state tensor, the same forward."""

    def forward(self, input, hx=None):
        self._update_flat_weights()
        name = "RNN" if self.mode in ("RNN_TANH", "RNN_RELU") else "GRU"
        orig_input = input
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = _unpack(input)
            if hx is None:
                hx = self._zeros(input, batch_sizes[0], self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                tensor = " tensor" if name == "RNN" else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                                 f"{tensor} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but "
                                           f"got {hx.dim()}-D tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = self._zeros(input, max_batch_size, self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        if rnn_fused.usable(input, hx, self._flat_weights):
            # a layer-direction as one node (PyTorch runs these per op: no oneDNN route)
            output, finals = self._run(input, batch_sizes, hx.unbind(0), rnn_fused.layer,
                                       rnn_fused.present)
        else:
            output, finals = self._run(input, batch_sizes, hx.unbind(0))
        hidden = stack(finals, 0)
        if isinstance(orig_input, PackedSequence):
            packed = PackedSequence(output, orig_input.batch_sizes, sorted_indices,
                                    unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(_SingleStateRNN):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class GRU(_SingleStateRNN):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        self._update_flat_weights()
        orig_input = input
        batch_sizes = None
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = _unpack(input)
            if hx is None:
                hx = (self._zeros(input, batch_sizes[0], real_hidden_size),
                      self._zeros(input, batch_sizes[0], self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = (self._zeros(input, max_batch_size, real_hidden_size),
                      self._zeros(input, max_batch_size, self.hidden_size))
            elif is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but "
                                       f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, batch_sizes)
        if lstm_fused.usable(input, hx, self._flat_weights, self.proj_size, batch_sizes):
            hiddens, present = lstm_fused.hiddens_and_present(input, hx)
            output, finals = self._run(input, batch_sizes, hiddens, lstm_fused.layer, present)
        elif rnn_fused.usable_lstm(input, hx, self._flat_weights, self.proj_size, batch_sizes):
            hiddens = list(zip(hx[0].unbind(0), hx[1].unbind(0)))
            output, finals = self._run(input, batch_sizes, hiddens, rnn_fused.layer,
                                       rnn_fused.present)
        else:
            hiddens = list(zip(hx[0].unbind(0), hx[1].unbind(0)))
            output, finals = self._run(input, batch_sizes, hiddens)
        hidden = (stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0))
        if isinstance(orig_input, PackedSequence):
            packed = PackedSequence(output, orig_input.batch_sizes, sorted_indices,
                                    unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)

