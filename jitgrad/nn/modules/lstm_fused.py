"""A float32 CPU LSTM layer-direction as ONE autograd node, ``MkldnnRnnLayerBackward0``: what
PyTorch records when its ``lstm`` takes oneDNN (``aten/src/ATen/native/RNN.cpp``: ``use_mkldnn``
and no projections), with that node's slots (input, w_ih, w_hh, b_ih, b_hh, hx, cx) and outputs
(output, hy, cy). The forward over the whole sequence is one compiled call, and so is the
backward (``_lstm_kernels.py``, GEMMs through MKL's CBLAS): a 2-layer step recorded 1000 nodes
on the per-op path (``rnn_stack.py``), whose Python per time step was the whole cost.

``usable`` says when ``nn.LSTM`` routes here; a packed input takes ``rnn_fused.py``'s kernels by
rows, and elsewhere (CUDA, proj_size, no MKL) the per-op path runs. Dropout between layers
stays outside, in ``rnn_stack.run_stack``.

float64: PyTorch runs its float64 LSTM op by op (oneDNN has no float64), so ``layer`` hands it
to ``rnn_fused.py``'s LSTM kernels by rows, which make those ops' arithmetic: jitgrad's own
``FusedLstmLayerBackward0`` node, PyTorch's bits at one thread; as PyTorch's graph shows it, the
hidden states are unbound and a unidirectional output is the stack of its steps
(``rnn_fused.present``). The kernels here stay generic over the dtype (their float64 build is
what the tests' finite differences check; without VML's tanh float64 still runs them).

Gradients of gradients: PyTorch's node switches, under ``create_graph``, to a differentiable
backward built of ops (``mkldnn_rnn_layer_differentiable_backward``); here the layer is rebuilt
on the per-op path from the saved inputs and differentiated with a nested ``autograd.grad``, so
double backward works as it does in PyTorch (its graph's node names differ).
"""
from __future__ import annotations

import warnings

import numpy as np

from ...autograd import grad_mode
from ...backends import blas
from ...ops.composite import record
from ...tensor import Tensor
from . import _lstm_kernels as K
from . import rnn_stack

__all__ = ["usable", "layer"]

_SLOTS = ("input", "weight0", "weight1", "weight2", "weight3", "hx", "cx")


def _gemm(dtype):
    from ..._compile.lower_program import _gemm as gemm  # MKL's cblas_?gemm via ctypes
    return gemm(np.dtype(dtype))


_warned = []
_PROJ_WARNING = ("LSTM with projections is not supported with oneDNN. Using default "
                 "implementation. (Triggered internally at "
                 "/__w/pytorch/pytorch/aten/src/ATen/native/RNN.cpp:1512.)")


def usable(input, hx, flat_weights, proj_size, batch_sizes) -> bool:
    """RNN.cpp's ``use_mkldnn`` for a padded LSTM without projections: every tensor on the CPU,
    float32 input, not empty; and MKL's CBLAS present (the kernels' GEMM). PyTorch also takes
    oneDNN for bfloat16 (and float16 without grad); jitgrad keeps the per-op path for them.
    With projections PyTorch warns once per process (TORCH_WARN_ONCE) and runs the per-op
    path; so does this. float64 (no oneDNN in PyTorch) takes the kernels too, without the
    warning."""
    if batch_sizes is not None:
        return False
    dtype = input.dtype.name
    if dtype not in ("float32", "float64") or input.is_cuda or input.numel() == 0:
        return False
    if any(t is not None and t.is_cuda for t in (*flat_weights, *hx)):
        return False
    if proj_size > 0:
        if not _warned and dtype == "float32":
            _warned.append(True)
            warnings.warn(_PROJ_WARNING, UserWarning, stacklevel=3)
        return False
    return blas.backend() == "mkl" and _gemm(input._data.dtype) is not None


def hiddens_and_present(input, hx):
    """The per-layer-direction (h, c) pairs and the output's ``present`` for ``run_stack``:
    float32 mirrors oneDNN's graph (hx[k] a select, the layer's node the output's), float64
    the per-op graph PyTorch records (hx unbound, the output a stack)."""
    from . import rnn_fused
    h0, c0 = hx
    if input.dtype.name == "float32":
        return [(h0.select(0, k), c0.select(0, k)) for k in range(h0.size(0))], None
    return list(zip(h0.unbind(0), c0.unbind(0))), rnn_fused.present


def _contiguous(t, dtype):
    return np.ascontiguousarray(t._data, dtype=dtype)


def run_kernel(x, w_ih, w_hh, bias, hx, cx, reverse):
    """The forward kernel on arrays: (output, hy, cy, workspace) for ``lstm_backward``."""
    dt = x.dtype
    steps, batch, _ = x.shape
    hid = w_hh.shape[1]
    acts = np.empty((steps, batch, 4 * hid), dt)
    cprev, tcs, hprev, y = (np.empty((steps, batch, hid), dt) for _ in range(4))
    hy, cy = np.empty((batch, hid), dt), np.empty((batch, hid), dt)
    K.lstm_forward(x, w_ih, w_hh, bias, hx, cx, reverse, _gemm(dt), np.array([0, 1], dt),
                   acts, cprev, tcs, hprev, y, hy, cy)
    return y, hy, cy, (acts, cprev, tcs, hprev)


def run_backward_kernel(x, w_ih, w_hh, reverse, work, dy, dhy, dcy):
    """The backward kernel on arrays: (dx, dw_ih, dw_hh, db, dhx, dcx)."""
    dt = x.dtype
    steps, batch, n_in = x.shape
    hid = w_hh.shape[1]
    acts, cprev, tcs, hprev = work
    dgates = np.empty((steps, batch, 4 * hid), dt)
    dh, dc = np.empty((batch, hid), dt), np.empty((batch, hid), dt)
    dx = np.empty((steps, batch, n_in), dt)
    dw_ih, dw_hh = np.empty(w_ih.shape, dt), np.empty(w_hh.shape, dt)
    db = np.empty(4 * hid, dt)
    K.lstm_backward(x, w_ih, w_hh, reverse, _gemm(dt), np.array([0, 1], dt), acts, cprev, tcs,
                    hprev, dy, dhy, dcy, dgates, dh, dc, dx, dw_ih, dw_hh, db)
    return dx, dw_ih, dw_hh, db, dh, dc


def layer(input, batch_sizes, hidden, params, cell, reverse):
    """``rnn_stack._layer``'s signature (``batch_sizes`` is None, ``cell`` unused): one
    direction of one layer over a padded (seq, batch, feature) input, as one node: PyTorch's
    MkldnnRnnLayerBackward0 in float32, jitgrad's FusedLstmLayerBackward0 otherwise."""
    hx, cx = hidden
    from .rnn_fused import shapes_fit
    if input.dim() != 3 or not (shapes_fit(input, input.shape[1], hx, params, 4)
                                and tuple(cx.shape) == tuple(hx.shape)
                                and cx.dtype == input.dtype):
        # an unchecked functional call (torch.lstm) that does not fit: the per-op path raises
        return rnn_stack._layer(input, None, hidden, params, rnn_stack.lstm_layer_cell, reverse)
    if input.dtype.name == "float64":
        # PyTorch runs a float64 LSTM op by op: rnn_fused's kernels by rows make its operations
        # (its separate biases, gates, sums), so there the bits are PyTorch's
        from . import rnn_fused
        if rnn_fused.usable(input, hx, (params.w_ih, params.w_hh, params.b_ih, params.b_hh)):
            return rnn_fused.layer(input, None, hidden, params, rnn_stack.lstm_layer_cell,
                                   reverse)
    dt = input._data.dtype
    x = _contiguous(input, dt)
    w_ih, w_hh = _contiguous(params.w_ih, dt), _contiguous(params.w_hh, dt)
    hid = w_hh.shape[1]
    if params.b_ih is not None:
        bias = params.b_ih._data.astype(dt) + params.b_hh._data.astype(dt)
    else:
        bias = np.zeros(4 * hid, dt)
    y, hy, cy, work = run_kernel(x, w_ih, w_hh, bias, _contiguous(hx, dt), _contiguous(cx, dt),
                                 reverse)
    slots = (input, params.w_ih, params.w_hh, params.b_ih, params.b_hh, hx, cx)
    save = [(n, t) for n, t in zip(_SLOTS, slots) if t is not None]
    name = "MkldnnRnnLayerBackward0" if dt == np.float32 else "FusedLstmLayerBackward0"
    out, h, c = record(name, slots, [y, hy, cy], _backward, save=save,
                       attrs={"reverse": reverse, "work": work,
                              "has_biases": params.b_ih is not None})
    return out, (h, c)


def _grad_array(g, shape, dt):
    if g is None:
        return np.zeros(shape, dt)
    return np.ascontiguousarray(g._data, dtype=dt)


def _backward(node, gy, ghy, gcy):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (gy, ghy, gcy))
    attrs = node.ctx.attrs
    x = np.ascontiguousarray(node.saved_array("input"))
    dt = x.dtype
    w_ih = np.ascontiguousarray(node.saved_array("weight0"))
    w_hh = np.ascontiguousarray(node.saved_array("weight1"))
    steps, batch, _ = x.shape
    hid = w_hh.shape[1]
    dx, dw_ih, dw_hh, db, dhx, dcx = run_backward_kernel(
        x, w_ih, w_hh, attrs["reverse"], attrs["work"],
        _grad_array(gy, (steps, batch, hid), dt), _grad_array(ghy, (batch, hid), dt),
        _grad_array(gcy, (batch, hid), dt))
    grads = (dx, dw_ih, dw_hh, db, db.copy(), dhx, dcx)
    return tuple(Tensor._make(g) if need else None
                 for g, need in zip(grads, node.ctx.needs_input_grad))


def _differentiable_backward(node, gs):
    """Under ``create_graph``: the layer rebuilt on the per-op path from aliases of the saved
    inputs (partial derivatives per slot, as ``record_composition``), differentiated by a
    nested ``autograd.grad`` that records its own graph."""
    from ...autograd import engine
    from ...ops.shape_views import _alias
    saved = node.ctx._saved
    inputs = [node.saved(n) if n in saved else None for n in _SLOTS]
    seen = [_alias(t) if need else t for t, need in zip(inputs, node.ctx.needs_input_grad)]
    x, w_ih, w_hh, b_ih, b_hh, hx, cx = seen
    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
    engine._same_pass[0] += 1
    try:
        with grad_mode.enable_grad():
            out, (hy, cy) = rnn_stack._full_layer(x, (hx, cx), params,
                                                  rnn_stack.lstm_layer_cell,
                                                  node.ctx.attrs["reverse"])
            pairs = [(o, g) for o, g in zip((out, hy, cy), gs) if g is not None]
            diff = [t for t, need in zip(seen, node.ctx.needs_input_grad) if need]
            grads = iter(engine.grad([o for o, _ in pairs], diff, [g for _, g in pairs],
                                     retain_graph=True, create_graph=True, allow_unused=True))
    finally:
        engine._same_pass[0] -= 1
    return tuple(next(grads) if need else None for need in node.ctx.needs_input_grad)
