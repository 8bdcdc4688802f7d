"""``RNNCellBase``, ``RNNCell``, ``LSTMCell``, ``GRUCell``: one time step of PyTorch's recurrent
cells (parameter names, registration order and initialization, so seeded constructions match;
batched and unbatched inputs), with the checks and messages of ``_VF.*_cell``. On the CPU with
MKL a batched step runs as one fused node (``rnn_cells_fused.py``: the outputs keep PyTorch's
grad_fn names); elsewhere the per-op cell of ``rnn_stack.py``.

Credit: the code follows PyTorch's ``torch/nn/modules/rnn.py`` (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

import math

from ... import _dtype as D
from ...autograd.grad_mode import is_grad_enabled
from ...ops.basic import empty, zeros
from .. import init
from ..parameter import Parameter
from . import rnn_cells_fused, rnn_stack
from .module import Module

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        kw = {"device": device, "dtype": D.to_dtype(dtype) if dtype is not None else None}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _params(self):
        return rnn_stack.CellParams(self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

    def _check_input(self, input, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")

    def _batched(self, input, hx):
        """``input`` as a batch and ``hx`` (zeros when None) to match; whether it was one."""
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        return input, hx, is_batched


class RNNCell(RNNCellBase):
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        ret = rnn_cells_fused.rnn_step(self, input, hx)
        if ret is not None:  # repeats the last checked call
            return ret
        self._check_input(input, "RNNCell")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, hx, is_batched = self._batched(input, hx)
        if self.nonlinearity == "tanh":
            cell = rnn_stack.tanh_cell
        elif self.nonlinearity == "relu":
            cell = rnn_stack.relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        rnn_stack.check_cell_input(input, self.weight_ih.size(1))
        rnn_stack.check_cell_hidden(input, hx, self.weight_hh.size(1), 0)
        params = self._params()
        if rnn_cells_fused.usable(input, (hx,), params, 1):
            if is_batched:
                rnn_cells_fused.remember(self, input, (hx,), params, 1)
            ret = rnn_cells_fused.rnn_cell(input, hx, params, cell is rnn_stack.relu_cell)
        else:
            ret = cell(params.linear_ih(input), hx, params)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        ret = rnn_cells_fused.lstm_step(self, input, hx)
        if ret is not None:  # repeats the last checked call
            return ret
        self._check_input(input, "LSTMCell")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            h0 = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (h0, h0)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        if len(hx) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        rnn_stack.check_cell_input(input, self.weight_ih.size(1))
        rnn_stack.check_cell_hidden(input, hx[0], self.weight_hh.size(1), 0)
        rnn_stack.check_cell_hidden(input, hx[1], self.weight_hh.size(1), 1)
        params = self._params()
        if rnn_cells_fused.usable(input, hx, params, 4):
            if is_batched:
                rnn_cells_fused.remember(self, input, hx, params, 4)
            hy, cy = rnn_cells_fused.lstm_cell(input, tuple(hx), params)
        else:
            hy, cy = rnn_stack.lstm_cell(params.linear_ih(input), tuple(hx), params)
        return (hy, cy) if is_batched else (hy.squeeze(0), cy.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        ret = rnn_cells_fused.gru_step(self, input, hx)
        if ret is not None:  # repeats the last checked call
            return ret
        self._check_input(input, "GRUCell")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, hx, is_batched = self._batched(input, hx)
        rnn_stack.check_cell_input(input, self.weight_ih.size(1))
        rnn_stack.check_cell_hidden(input, hx, self.weight_hh.size(1), 0)
        params = self._params()
        if rnn_cells_fused.usable(input, (hx,), params, 3):
            if is_batched:
                rnn_cells_fused.remember(self, input, (hx,), params, 3)
            ret = rnn_cells_fused.gru_cell(input, hx, params)
            return ret if is_batched else ret.squeeze(0)
        # PyTorch's output shows AddBackward0 over the separate ops' nodes: keep those when a
        # graph is recorded; otherwise the fused op gives the same values faster
        records = is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (input, hx, params.w_ih, params.w_hh, params.b_ih, params.b_hh))
        cell = rnn_stack.gru_cell if records else rnn_stack.gru_layer_cell
        ret = cell(params.linear_ih(input), hx, params)
        return ret if is_batched else ret.squeeze(0)
