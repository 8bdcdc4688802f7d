"""A GRU or plain (tanh/relu) RNN layer-direction on the CPU as ONE autograd node, its forward
over the whole sequence one compiled call and its backward another (``_rnn_kernels.py``, GEMMs
through MKL's CBLAS), for padded and packed input in float32 and float64; a packed LSTM
(padded ones take ``lstm_fused.py``) and an LSTM with projections, padded or packed
(``_proj_layer``: the state ``(o * tanh(c)) @ w_hr.T`` per step, a weight_hr slot after cx).
The per-op path (``rnn_stack.py``) recorded a node or more per time step and its Python was
most of the cost.

PyTorch runs these layers op by op (RNN.cpp: oneDNN is for padded LSTMs only), so no PyTorch
node stands for the layer: it is ``FusedGruLayerBackward0`` / ``FusedRnnTanhLayerBackward0`` /
``FusedRnnReluLayerBackward0`` / ``FusedLstmLayerBackward0`` (slots input, weight_ih,
weight_hh, bias_ih, bias_hh, hx[, cx[, weight_hr]]; outputs output, hy[, cy]). What users see keeps
PyTorch's names: ``present`` shows the last layer's output as the stack of its steps
(StackBackward0) or, packed, their concatenation (CatBackward0) when that output is the
module's; the final states are stacked by the callers, as before.

Values: RNN.cpp's operations in its order, its gates as ATen's ops compute them, its GEMM
calls, and its gradient sums in the order PyTorch's engine makes them (see ``_rnn_kernels.py``),
so outputs and gradients are PyTorch's bit for bit at one thread.

Gradients of gradients: under ``create_graph`` the layer is rebuilt on the per-op path from the
saved inputs and differentiated with a nested ``autograd.grad`` (as ``lstm_fused.py``).
"""
from __future__ import annotations

import numpy as np

from ..._settings import get_num_threads
from ...autograd import grad_mode
from ...backends import blas, vml
from ...ops.composite import record
from ...ops.shape_join import cat, stack
from ...tensor import Tensor
from . import _rnn_kernels as K
from . import rnn_stack

__all__ = ["usable", "usable_packed_lstm", "usable_lstm", "layer", "present"]

_SLOTS = ("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "hx", "cx")
# the per-op cell a layer stands for -> (kind, gates per hidden unit, node name)
_KINDS = {
    rnn_stack.gru_layer_cell: ("gru", 3, "FusedGruLayerBackward0"),
    rnn_stack.gru_cell: ("gru", 3, "FusedGruLayerBackward0"),
    rnn_stack.tanh_cell: ("tanh", 1, "FusedRnnTanhLayerBackward0"),
    rnn_stack.relu_cell: ("relu", 1, "FusedRnnReluLayerBackward0"),
    rnn_stack.lstm_layer_cell: ("lstm", 4, "FusedLstmLayerBackward0"),
}


def _gemm(dtype):
    from ..._compile.lower_program import _gemm as gemm  # MKL's cblas_?gemm via ctypes
    return gemm(np.dtype(dtype))


def usable(input, hx, flat_weights) -> bool:
    """Every tensor on the CPU, float32 or float64, the input not empty, and MKL's CBLAS
    present (the kernels' GEMM). Elsewhere the per-op path runs."""
    if input.dtype.name not in ("float32", "float64") or input.is_cuda or input.numel() == 0:
        return False
    if hx.is_cuda or any(t is not None and t.is_cuda for t in flat_weights):
        return False
    dt = input._data.dtype
    # VML's tanh: the gates' tanh is PyTorch's only through it
    return blas.backend() == "mkl" and _gemm(dt) is not None and vml.routine("tanh", dt) != 0


def usable_packed_lstm(input, hx, flat_weights, proj_size, batch_sizes) -> bool:
    """A packed LSTM without projections (a padded one takes ``lstm_fused.py``: PyTorch's
    oneDNN route in float32; PyTorch runs a packed one op by op)."""
    return (batch_sizes is not None and proj_size == 0 and not hx[1].is_cuda
            and usable(input, hx[0], flat_weights))


def usable_lstm(input, hx, flat_weights, proj_size, batch_sizes) -> bool:
    """An LSTM that ``lstm_fused.py`` does not take: packed without projections, or with
    projections (padded or packed; PyTorch runs these op by op, oneDNN has no projections)."""
    if proj_size == 0:
        return usable_packed_lstm(input, hx, flat_weights, proj_size, batch_sizes)
    return not hx[1].is_cuda and usable(input, hx[0], flat_weights)


def present(output, batch_sizes):
    """The last layer's output as PyTorch's graph shows it (its steps stacked, or concatenated
    when packed): real ops over views of the fused output, so gradients are unchanged."""
    if output.grad_fn is None:
        return output
    if batch_sizes is None:
        return stack(output.unbind(0), 0)
    return cat(list(output.split(list(batch_sizes))), 0)


def _steps(batch_sizes, input):
    """(sizes, offsets) of the time steps' rows in the 2-D input."""
    if batch_sizes is None:
        steps, batch = input.shape[0], input.shape[1]
        sizes = np.full(steps, batch, np.int64)
    else:
        sizes = np.asarray(batch_sizes, np.int64)
    offsets = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    return sizes, offsets


def _array(t, dt):
    return np.ascontiguousarray(t._data, dtype=dt)


def _bias(b, n, dt):
    return np.zeros(n, dt) if b is None else _array(b, dt)


def run_kernel(kind, x, w_ih, w_hh, b_ih, b_hh, hx, cx, sizes, offsets, reverse, w_hr=None):
    """The forward kernel on arrays (x 2-D; ``cx`` for an LSTM, else None; ``w_hr`` an LSTM's
    projection or None): (y, hy, cy or None, workspace for ``run_backward_kernel``)."""
    dt = x.dtype
    rows = x.shape[0]
    batch, width = hx.shape  # hidden (or projected) size
    consts, tanh_addr = np.array([0, 1], dt), vml.routine("tanh", dt)
    y, hy = np.empty((rows, width), dt), np.empty((batch, width), dt)
    hprev = np.empty((rows, width), dt)
    if kind == "lstm":
        hid = cx.shape[1]
        no_proj = np.empty((0, hid), dt)  # no w_hr, no hraw
        hraw = no_proj if w_hr is None else np.empty((rows, hid), dt)
        acts, cy = np.empty((rows, 4 * hid), dt), np.empty((batch, hid), dt)
        cprev, tcs = np.empty((rows, hid), dt), np.empty((rows, hid), dt)
        K.lstm_forward(x, w_ih, w_hh, b_ih, b_hh, no_proj if w_hr is None else w_hr, hx, cx,
                       sizes, offsets, reverse, _gemm(dt), consts, tanh_addr, acts,
                       np.empty((batch, 4 * hid), dt), cprev, tcs, hraw, hprev, y, hy, cy)
        return y, hy, cy, (acts, cprev, tcs, hprev, hraw)
    if kind == "gru":
        gates, ghn = np.empty((rows, 3 * width), dt), np.empty((rows, width), dt)
        K.gru_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, _gemm(dt), consts,
                      tanh_addr, gates, ghn, np.empty((batch, 3 * width), dt), hprev, y, hy)
        return y, hy, None, (gates, ghn, hprev)
    K.simple_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, kind == "relu",
                     _gemm(dt), consts, tanh_addr, np.empty((rows, width), dt),
                     np.empty((batch, width), dt), hprev, y, hy)
    return y, hy, None, (hprev, y)


def run_backward_kernel(kind, x, w_ih, w_hh, hx, sizes, offsets, reverse, work, dy, dhy, dcy,
                        w_hr=None):
    """The backward kernel on arrays (``hx`` the forward's: the first step's GEMM operand):
    (dx, dw_ih, dw_hh, db_ih, db_hh, dhx, dcx or None, dw_hr or None)."""
    dt = x.dtype
    rows, n_in = x.shape
    consts = np.array([0, 1], dt)
    dx, dh = np.empty((rows, n_in), dt), np.empty(dhy.shape, dt)
    dw_ih, dw_hh = np.empty(w_ih.shape, dt), np.empty(w_hh.shape, dt)
    gemm = _gemm(dt)
    dc = dw_hr = None
    if kind == "lstm":
        acts, cprev, tcs, hprev, hraw = work
        hid = dcy.shape[1]
        no_proj = np.empty((0, hid), dt)
        dc = np.empty(dcy.shape, dt)
        dgi = dgh = np.empty((rows, 4 * hid), dt)
        dhp = no_proj if w_hr is None else np.empty((rows, dhy.shape[1]), dt)
        K.lstm_backward(w_hh, no_proj if w_hr is None else w_hr, sizes, offsets, reverse, gemm,
                        consts, acts, cprev, tcs, dy, dhy, dcy, dhp, dgi, dh, dc)
        if w_hr is not None:
            dw_hr = np.empty(w_hr.shape, dt)
            K.proj_grad(dhp, hraw, sizes, offsets, reverse, gemm, consts, dw_hr)
    elif kind == "gru":
        gates, ghn, hprev = work
        hid = w_hh.shape[1]
        dgi, dgh = np.empty((rows, 3 * hid), dt), np.empty((rows, 3 * hid), dt)
        K.gru_backward(w_hh, sizes, offsets, reverse, gemm, consts, gates, ghn, hprev, dy, dhy,
                       dgi, dgh, dh, np.empty(dhy.shape, dt))
    else:
        hprev, y = work
        dgi = dgh = np.empty((rows, w_hh.shape[1]), dt)
        K.simple_backward(w_hh, sizes, offsets, reverse, kind == "relu", gemm, consts, y, dy,
                          dhy, dgi, dh)
    db_ih = np.empty(dgi.shape[1], dt)
    db_hh = np.empty(dgi.shape[1], dt)
    K.weight_grads(dgi, dgh, x, hprev, hx, w_ih, sizes, offsets, reverse, gemm, consts,
                   get_num_threads(), dx, dw_ih, dw_hh, db_ih, db_hh)
    return dx, dw_ih, dw_hh, db_ih, db_hh, dh, dc, dw_hr


def shapes_fit(input, hidden_rows, hidden, params, gates):
    """Whether the kernels may take these tensors: the shapes a valid call has, and one dtype
    throughout. ATen's functional forms (``torch.gru`` & co.) reach here unchecked; a call that
    does not fit runs the per-op path, which raises PyTorch's errors."""
    hid = params.w_hh.shape[-1] if params.w_hh.dim() == 2 else -1
    n = gates * hid
    fits = (input.dim() >= 2 and params.w_ih.dim() == 2 and params.w_hh.dim() == 2
            and tuple(params.w_ih.shape) == (n, input.shape[-1])
            and tuple(params.w_hh.shape) == (n, hid)
            and tuple(hidden.shape) == (hidden_rows, hid))
    tensors = (hidden, params.w_ih, params.w_hh, params.b_ih, params.b_hh)
    return fits and all(b is None or tuple(b.shape) == (n,) for b in (params.b_ih, params.b_hh)) \
        and all(t is None or t.dtype == input.dtype for t in tensors)


def layer(input, batch_sizes, hidden, params, cell, reverse):
    """``rnn_stack._layer``'s signature: one direction of one layer (``cell`` names the kind:
    ``gru_layer_cell``, ``tanh_cell``, ``relu_cell``, or ``lstm_layer_cell`` with ``hidden``
    the pair (hx, cx) and no projections) as one node."""
    kind, gates, name = _KINDS[cell]
    if kind == "lstm" and params.w_hr is not None:
        return _proj_layer(input, batch_sizes, hidden, params, cell, reverse)
    hx, cx = hidden if kind == "lstm" else (hidden, None)
    rows = input.shape[1] if batch_sizes is None else batch_sizes[0]
    fits = shapes_fit(input, rows, hx, params, gates) and params.w_hr is None and (
        cx is None or (tuple(cx.shape) == tuple(hx.shape) and cx.dtype == input.dtype))
    if not fits or (batch_sizes is not None and sum(batch_sizes) != input.shape[0]):
        return rnn_stack._layer(input, batch_sizes, hidden, params, cell, reverse)
    dt = input._data.dtype
    x = _array(input, dt)
    x = x.reshape(-1, x.shape[-1])
    w_ih, w_hh = _array(params.w_ih, dt), _array(params.w_hh, dt)
    hid = w_hh.shape[1]
    b_ih, b_hh = _bias(params.b_ih, gates * hid, dt), _bias(params.b_hh, gates * hid, dt)
    sizes, offsets = _steps(batch_sizes, input)
    y, hy, cy, work = run_kernel(kind, x, w_ih, w_hh, b_ih, b_hh, _array(hx, dt),
                                 None if cx is None else _array(cx, dt), sizes, offsets, reverse)
    if batch_sizes is None:
        y = y.reshape(input.shape[0], input.shape[1], hid)
    slots = (input, params.w_ih, params.w_hh, params.b_ih, params.b_hh, hx, cx)
    save = [(n, t) for n, t in zip(_SLOTS, slots) if t is not None]
    outs = record(name, slots if cx is not None else slots[:-1],
                  [y, hy] if cy is None else [y, hy, cy], _backward, save=save,
                  attrs={"kind": kind, "reverse": reverse, "work": work, "sizes": sizes,
                         "offsets": offsets, "batch_sizes": batch_sizes, "cell": cell})
    return (outs[0], (outs[1], outs[2])) if cy is not None else (outs[0], outs[1])


_PROJ_SLOTS = _SLOTS + ("weight_hr",)


def _proj_fits(input, batch_sizes, hx, cx, params):
    """The shapes and dtypes of a valid projected LSTM layer call (else the per-op path)."""
    w_ih, w_hh, w_hr = params.w_ih, params.w_hh, params.w_hr
    if input.dim() < 2 or any(t.dim() != 2 for t in (w_ih, w_hh, w_hr)):
        return False
    proj, hid = w_hr.shape
    rows = input.shape[1] if batch_sizes is None else batch_sizes[0]
    if batch_sizes is not None and sum(batch_sizes) != input.shape[0]:
        return False
    fits = (tuple(w_ih.shape) == (4 * hid, input.shape[-1])
            and tuple(w_hh.shape) == (4 * hid, proj) and tuple(hx.shape) == (rows, proj)
            and tuple(cx.shape) == (rows, hid) and proj > 0)
    tensors = (hx, cx, w_ih, w_hh, w_hr, params.b_ih, params.b_hh)
    return fits and all(b is None or tuple(b.shape) == (4 * hid,)
                        for b in (params.b_ih, params.b_hh)) \
        and all(t is None or t.dtype == input.dtype for t in tensors)


def _proj_layer(input, batch_sizes, hidden, params, cell, reverse):
    """``layer`` for an LSTM with projections: ``FusedLstmLayerBackward0`` with a weight_hr
    slot after cx."""
    hx, cx = hidden
    if not _proj_fits(input, batch_sizes, hx, cx, params):
        return rnn_stack._layer(input, batch_sizes, hidden, params, cell, reverse)
    dt = input._data.dtype
    x = _array(input, dt)
    x = x.reshape(-1, x.shape[-1])
    w_ih, w_hh, w_hr = (_array(w, dt) for w in (params.w_ih, params.w_hh, params.w_hr))
    proj, hid = w_hr.shape
    b_ih, b_hh = _bias(params.b_ih, 4 * hid, dt), _bias(params.b_hh, 4 * hid, dt)
    sizes, offsets = _steps(batch_sizes, input)
    y, hy, cy, work = run_kernel("lstm", x, w_ih, w_hh, b_ih, b_hh, _array(hx, dt),
                                 _array(cx, dt), sizes, offsets, reverse, w_hr)
    if batch_sizes is None:
        y = y.reshape(input.shape[0], input.shape[1], proj)
    slots = (input, params.w_ih, params.w_hh, params.b_ih, params.b_hh, hx, cx, params.w_hr)
    save = [(n, t) for n, t in zip(_PROJ_SLOTS, slots) if t is not None]
    outs = record("FusedLstmLayerBackward0", slots, [y, hy, cy], _proj_backward, save=save,
                  attrs={"reverse": reverse, "work": work, "sizes": sizes, "offsets": offsets,
                         "batch_sizes": batch_sizes, "cell": cell})
    return outs[0], (outs[1], outs[2])


def _proj_backward(node, gy, ghy, gcy):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (gy, ghy, gcy))
    attrs = node.ctx.attrs
    x_in = node.saved_array("input")
    dt = x_in.dtype
    x = np.ascontiguousarray(x_in).reshape(-1, x_in.shape[-1])
    w_ih, w_hh, w_hr = (np.ascontiguousarray(node.saved_array(n))
                        for n in ("weight_ih", "weight_hh", "weight_hr"))
    proj, hid = w_hr.shape
    rows, batch = x.shape[0], int(attrs["sizes"][0])
    dx, dw_ih, dw_hh, db_ih, db_hh, dh, dc, dw_hr = run_backward_kernel(
        "lstm", x, w_ih, w_hh, np.ascontiguousarray(node.saved_array("hx")), attrs["sizes"],
        attrs["offsets"], attrs["reverse"], attrs["work"], _grad_array(gy, (rows, proj), dt),
        _grad_array(ghy, (batch, proj), dt), _grad_array(gcy, (batch, hid), dt), w_hr)
    grads = (dx.reshape(x_in.shape), dw_ih, dw_hh, db_ih, db_hh, dh, dc, dw_hr)
    return tuple(Tensor._make(g) if need else None
                 for g, need in zip(grads, node.ctx.needs_input_grad))


def _grad_array(g, shape, dt):
    if g is None:
        return np.zeros(shape, dt)
    return np.ascontiguousarray(g._data, dtype=dt).reshape(shape)


def _backward(node, gy, ghy, gcy=None):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (gy, ghy, gcy))
    attrs = node.ctx.attrs
    x_in = node.saved_array("input")
    dt = x_in.dtype
    x = np.ascontiguousarray(x_in).reshape(-1, x_in.shape[-1])
    w_ih = np.ascontiguousarray(node.saved_array("weight_ih"))
    w_hh = np.ascontiguousarray(node.saved_array("weight_hh"))
    hx = np.ascontiguousarray(node.saved_array("hx"))
    hid = w_hh.shape[1]
    batch = int(attrs["sizes"][0])
    lstm = attrs["kind"] == "lstm"
    dx, dw_ih, dw_hh, db_ih, db_hh, dhx, dcx, _ = run_backward_kernel(
        attrs["kind"], x, w_ih, w_hh, hx, attrs["sizes"], attrs["offsets"], attrs["reverse"],
        attrs["work"], _grad_array(gy, (x.shape[0], hid), dt),
        _grad_array(ghy, (batch, hid), dt), _grad_array(gcy, (batch, hid), dt) if lstm else None)
    grads = (dx.reshape(x_in.shape), dw_ih, dw_hh, db_ih, db_hh, dhx, dcx)
    return tuple(Tensor._make(g) if need else None
                 for g, need in zip(grads, node.ctx.needs_input_grad))


def _differentiable_backward(node, gs):
    """Under ``create_graph``: the layer rebuilt on the per-op path from aliases of the saved
    inputs, differentiated by a nested ``autograd.grad`` that records its own graph."""
    from ...autograd import engine
    from ...ops.shape_views import _alias
    saved = node.ctx._saved
    attrs = node.ctx.attrs
    needs = node.ctx.needs_input_grad
    inputs = [node.saved(n) if n in saved else None for n in _PROJ_SLOTS[:len(needs)]]
    seen = [_alias(t) if need else t for t, need in zip(inputs, needs)]
    x, w_ih, w_hh, b_ih, b_hh, hx, *cx = seen[:7]
    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh, seen[7] if len(seen) > 7 else None)
    engine._same_pass[0] += 1
    try:
        with grad_mode.enable_grad():
            out, hidden = rnn_stack._layer(x, attrs["batch_sizes"], (hx, cx[0]) if cx else hx,
                                           params, attrs["cell"], attrs["reverse"])
            outs = (out, *hidden) if cx else (out, hidden)
            pairs = [(o, g) for o, g in zip(outs, gs) if g is not None]
            diff = [t for t, need in zip(seen, node.ctx.needs_input_grad) if need]
            grads = iter(engine.grad([o for o, _ in pairs], diff, [g for _, g in pairs],
                                     retain_graph=True, create_graph=True, allow_unused=True))
    finally:
        engine._same_pass[0] -= 1
    return tuple(next(grads) if need else None for need in node.ctx.needs_input_grad)
