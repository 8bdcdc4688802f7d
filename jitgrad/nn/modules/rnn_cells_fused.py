"""``LSTMCell``/``GRUCell``/``RNNCell`` on the CPU as ONE fused node per step (plus the op
PyTorch shows on the output), their forward one compiled call and their backward another
(``_rnn_cell_kernels.py``, GEMMs through MKL's CBLAS). The per-op cell (``rnn_stack``) recorded
10 to 16 nodes a step, and its Python was most of a hand-written loop's cost.

What users see keeps PyTorch's names. PyTorch's CPU cells are compositions of ATen ops, so
their outputs' grad_fn are those ops' nodes: LSTMCell's ``hy`` MulBackward0 and ``cy``
AddBackward0, GRUCell's AddBackward0, RNNCell's TanhBackward0/ReluBackward0. The fused node
(``FusedLstmCellBackward0``: slots input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx;
``FusedGruCellBackward0`` and ``FusedRnnCellBackward0`` without cx) computes everything up to
the operands of that last op, and the last op runs as the real op on them (as
``rnn_fused.present`` shows a fused layer's output as a real stack):

- LSTM: the node gives ``sigmoid(o)``, ``tanh(cy)``, ``sigmoid(f) * cx``, ``sigmoid(i) *
  tanh(g)``; ``cy`` is the real sum of the last two, ``hy`` the real product of the first two;
- GRU: the node gives ``n`` and ``z``; ``hy`` is RNN.cpp's ``(hx - n) * z + n`` in real ops
  (sub, mul, add: hx's gradient then sums its parts in PyTorch's order, the sub's before the
  node's ``linear_hh`` one);
- RNN: the node gives the pre-activation; ``hy`` is its real tanh/relu.

So ``out.grad_fn`` and its name are PyTorch's; one level further down, its next_functions
lead to the fused node instead of PyTorch's SigmoidBackward0/TanhBackward0/MulBackward0/
AddBackward0. The kernels make PyTorch's CPU cell's operations in its order, its gates as
ATen's ``sigmoid_``/``tanh_`` compute them (``_rnn_gates.py``: SLEEF's exp in the vector lanes,
glibc's in each chunk row's scalar tail, MKL VML's tanh), and the presenting op recomputes its
result from the same operands, so forward values are PyTorch's bit for bit; so are the
gradients at one thread (ATen's VJP arithmetic, tanh_backward's FMA included, addmm's backward
GEMM calls, ``sum_to``'s cascade bias sums), in a loop too: each output's gradients arrive in
the order PyTorch's engine adds them.

With no graph recorded the kernel's own results are returned (no presenting op). Gradients of
gradients: under ``create_graph`` the node rebuilds its part of the cell per-op from the saved
inputs and differentiates it with a nested ``autograd.grad`` (as ``rnn_fused.py``).
``usable`` says when the cells route here; elsewhere (CUDA, other dtypes, empty tensors, no
MKL, mismatched dtypes or shapes, which the per-op path reports as PyTorch does) the per-op cell
runs.
"""
from __future__ import annotations

import numpy as np

from ..._settings import get_num_threads
from ...autograd import grad_mode
from ...backends import blas, vml
from ...ops.composite import record
from ...ops.elementwise_call import call
from ...ops.registry import OPS
from ...tensor import Tensor
from . import _rnn_cell_kernels as K
from . import rnn_stack

__all__ = ["usable", "remember", "lstm_step", "gru_step", "rnn_step", "lstm_cell", "gru_cell",
           "rnn_cell"]

_SLOTS = ("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "hx", "cx")
_CONSTS = {np.dtype(np.float32): np.array([0, 1], np.float32),
           np.dtype(np.float64): np.array([0, 1], np.float64)}


_ADD, _SUB, _MUL, _TANH, _RELU = (OPS[n] for n in ("add", "sub", "mul", "tanh", "relu"))
_GEMMS = {}


def _gemm(dtype):
    fn = _GEMMS.get(dtype)
    if fn is None:
        from ..._compile.lower_program import _gemm as gemm  # MKL's cblas_?gemm via ctypes
        fn = _GEMMS[dtype] = gemm(dtype)
    return fn


def usable(input, hiddens, params, gates) -> bool:
    """A batched 2-D ``input`` and 2-D hidden states, every tensor on the CPU in one dtype
    (float32 or float64) with the shapes a valid cell call has (``gates`` chunks), nothing
    empty, and MKL's CBLAS present. The modules have checked sizes already; anything else runs
    the per-op cell, which raises as PyTorch."""
    # runs every step: the arrays' own attributes (a host tensor's _data is exactly an
    # ndarray, Tensor.is_cuda's test), no Tensor properties (~2.5 us of the ~4.6 us it took)
    ndarray = np.ndarray
    d = input._data
    dt = d.dtype
    if dt not in _CONSTS or d.__class__ is not ndarray or d.ndim != 2 or d.size == 0:
        return False
    wi, wh = params.w_ih._data, params.w_hh._data
    if wi.__class__ is not ndarray or wh.__class__ is not ndarray or wi.ndim != 2 \
            or wh.ndim != 2 or wi.dtype != dt or wh.dtype != dt:
        return False
    batch, hid = d.shape[0], wh.shape[1]
    n = gates * hid
    if hid == 0 or wi.shape != (n, d.shape[1]) or wh.shape != (n, hid):
        return False
    for t in (params.b_ih, params.b_hh):
        if t is not None:
            b = t._data
            if b.__class__ is not ndarray or b.dtype != dt or b.shape != (n,):
                return False
    for t in hiddens:
        h = t._data
        if h.__class__ is not ndarray or h.dtype != dt or h.shape != (batch, hid):
            return False
    # VML's tanh: the gates' tanh is PyTorch's only through it
    return blas.backend() == "mkl" and _gemm(dt) is not None and vml.routine("tanh", dt) != 0


def _array(t, dt):
    return np.ascontiguousarray(t._data, dtype=dt)


def _bias(b, n, dt):
    return np.zeros(n, dt) if b is None else _array(b, dt)


# ----------------------------------------------------------------------------- checked steps
# A cell called step after step with the same shapes repeats the module's checks and
# ``usable`` (~5 us of a ~45 us small step). The module remembers the last call that passed
# them (``remember``); a call whose input and states are exact host Tensors of that dtype and
# those shapes, and whose parameters' storages are the same arrays, passes them again and
# runs from the remembered arrays (``lstm_step``, ...). Anything else misses and the module
# checks it as before: a replaced parameter or ``.data``, a dtype change (``.to``) or a move
# gives other arrays; in-place updates (an optimizer's) write into the remembered arrays, whose
# values the kernels read at each call; requires_grad and grad mode are read at each call.


class _CheckedStep:
    """The last checked call of one cell: dtype, the input's and states' shapes, the
    parameters' storages (identity only) and the kernels' weight arrays (those storages; a
    zero bias for a missing one)."""

    __slots__ = ("dt", "shapes", "storages", "arrays")

    def __init__(self, dt, shapes, storages, arrays):
        self.dt, self.shapes, self.storages, self.arrays = dt, shapes, storages, arrays

    def __reduce__(self):  # a pickled or copied cell checks its first call again
        return (_forgotten, ())


def _forgotten():
    return None


def _storage(t):
    return getattr(t, "_data", None)


def remember(cell, input, hiddens, params, gates):
    """After a batched call passed the module's checks and ``usable``: keep what the next call
    needs to skip them. Parameters whose storage the kernels would copy (not C-contiguous) are
    not remembered: the copy would go stale under in-place updates."""
    dt = input._data.dtype
    weights = (params.w_ih, params.w_hh, params.b_ih, params.b_hh)
    storages = tuple(_storage(w) for w in weights)
    n = gates * params.w_hh._data.shape[1]
    arrays = (_array(params.w_ih, dt), _array(params.w_hh, dt), _bias(params.b_ih, n, dt),
              _bias(params.b_hh, n, dt))
    if any(s is not None and a is not s for s, a in zip(storages, arrays)):
        cell.__dict__.pop("_fused_step", None)
        return
    shapes = [input._data.shape] + [h._data.shape for h in hiddens]
    cell.__dict__["_fused_step"] = _CheckedStep(dt, shapes, storages, (dt, *arrays))


def _checked(cell, input, hiddens):
    """The cell's parameters (w_ih, w_hh, b_ih, b_hh) and remembered arrays when this call
    repeats its remembered one; None otherwise."""
    step = cell.__dict__.get("_fused_step")
    if step is None or input.__class__ is not Tensor:
        return None
    dt = step.dt
    d = input._data
    if d.__class__ is not np.ndarray or d.dtype != dt:
        return None
    shapes = [d.shape]
    for t in hiddens:
        if t.__class__ is not Tensor:
            return None
        a = t._data
        if a.__class__ is not np.ndarray or a.dtype != dt:
            return None
        shapes.append(a.shape)
    if shapes != step.shapes:
        return None
    weights = (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    s = step.storages
    if (_storage(weights[0]) is not s[0] or _storage(weights[1]) is not s[1]
            or _storage(weights[2]) is not s[2] or _storage(weights[3]) is not s[3]):
        return None
    return weights, step.arrays


def lstm_step(cell, input, hx):
    """``LSTMCell.forward`` for a call that repeats the remembered one, else None."""
    if hx.__class__ is not tuple or len(hx) != 2:
        return None
    checked = _checked(cell, input, hx)
    if checked is None:
        return None
    return _lstm(input, hx[0], hx[1], *checked)


def gru_step(cell, input, hx):
    """``GRUCell.forward`` for a call that repeats the remembered one, else None."""
    checked = _checked(cell, input, (hx,))
    if checked is None:
        return None
    return _gru(input, hx, *checked)


def rnn_step(cell, input, hx):
    """``RNNCell.forward`` for a call that repeats the remembered one, else None."""
    nonlinearity = cell.nonlinearity
    if nonlinearity != "tanh" and nonlinearity != "relu":
        return None
    checked = _checked(cell, input, (hx,))
    if checked is None:
        return None
    return _rnn(input, hx, *checked, nonlinearity == "relu")


# ----------------------------------------------------------------------------- forward


def _record(name, slots, need, outs, backward, attrs):
    """The fused node over ``slots`` (input, w_ih, w_hh, b_ih, b_hh, hx[, cx]; ``need``: which
    require grad). Saved (so version-checked) as PyTorch's addmm saves them: each matrix only
    when its partner in the product needs a gradient (the input for w_ih's, w_ih for the
    input's, ...), biases never; cx (LSTM: ``sigmoid(f) * cx``) when a gate can need a
    gradient. The slots themselves are kept unchecked in ``attrs`` for create_graph's per-op
    rebuild."""
    plan = _SAVE_PLANS.get(need)
    if plan is None:
        plan = [(n, i) for n, i, partner in (("input", 0, 1), ("weight_ih", 1, 0),
                                             ("weight_hh", 2, 5), ("hx", 5, 2))
                if need[partner]]
        if len(need) == 7 and any(need[:6]):
            plan.append(("cx", 6))
        plan = _SAVE_PLANS[need] = tuple(plan)
    attrs["slots"] = slots
    return record(name, slots, outs, backward, save=[(n, slots[i]) for n, i in plan],
                  attrs=attrs)


_SAVE_PLANS = {}  # need -> ((saved name, slot), ...)


def _need(slots):
    """Which slots require grad, or None when no graph is recorded."""
    if not grad_mode.is_grad_enabled():
        return None
    need = tuple([t is not None and t._requires_grad for t in slots])
    return need if True in need else None


def _params_arrays(input, params, gates):
    """(dt, w_ih, w_hh, b_ih, b_hh) for the kernels, and the weights as slots."""
    dt = input._data.dtype
    n = gates * params.w_hh._data.shape[1]
    weights = (params.w_ih, params.w_hh, params.b_ih, params.b_hh)
    return weights, (dt, _array(params.w_ih, dt), _array(params.w_hh, dt),
                     _bias(params.b_ih, n, dt), _bias(params.b_hh, n, dt))


def lstm_cell(input, hidden, params):
    """``rnn_stack.lstm_cell`` on the unprojected input: (hy, cy)."""
    hx, cx = hidden
    return _lstm(input, hx, cx, *_params_arrays(input, params, 4))


def _lstm(input, hx, cx, weights, arrays):
    dt, w_ih, w_hh, b_ih, b_hh = arrays
    x, h, c = _array(input, dt), _array(hx, dt), _array(cx, dt)
    batch, hid = h.shape
    acts, gh = np.empty((batch, 4 * hid), dt), np.empty((batch, 4 * hid), dt)
    shape, empty = (batch, hid), np.empty
    og, tc, kept, added = empty(shape, dt), empty(shape, dt), empty(shape, dt), empty(shape, dt)
    hy, cy = empty(shape, dt), empty(shape, dt)
    K.lstm_forward(x, w_ih, w_hh, b_ih, b_hh, h, c, _gemm(dt), _CONSTS[dt], vml.routine("tanh", dt),
                   acts, gh, og, tc, kept, added, hy, cy)
    slots = (input, *weights, hx, cx)
    need = _need(slots)
    if need is None:
        t_hy, t_cy = Tensor._make(hy), Tensor._make(cy)
    else:
        t_og, t_tc, t_kept, t_added = _record("FusedLstmCellBackward0", slots, need,
                                              [og, tc, kept, added], _lstm_backward,
                                              {"acts": acts, "tc": tc})
        # the presenting ops through ``call`` (what ``a * b`` and ``a + b`` of two Tensors run)
        t_hy, t_cy = call(_MUL, t_og, t_tc), call(_ADD, t_kept, t_added)
    # RNN.cpp's cy is ``forgetgate.mul(cx).add_(...)``: one in-place write, its _version 1
    t_cy._vc.value += 1
    return t_hy, t_cy


def gru_cell(input, hx, params):
    """``rnn_stack.gru_cell`` on the unprojected input: hy."""
    return _gru(input, hx, *_params_arrays(input, params, 3))


def _gru(input, hx, weights, arrays):
    dt, w_ih, w_hh, b_ih, b_hh = arrays
    x, h = _array(input, dt), _array(hx, dt)
    batch, hid = h.shape
    acts, gh = np.empty((batch, 3 * hid), dt), np.empty((batch, 3 * hid), dt)
    n, z, hy = np.empty((batch, hid), dt), np.empty((batch, hid), dt), np.empty((batch, hid), dt)
    K.gru_forward(x, w_ih, w_hh, b_ih, b_hh, h, _gemm(dt), _CONSTS[dt], vml.routine("tanh", dt),
                  acts, gh, n, z, hy)
    slots = (input, *weights, hx)
    need = _need(slots)
    if need is None:
        out = Tensor._make(hy)
    else:
        t_n, t_z = _record("FusedGruCellBackward0", slots, need, [n, z], _gru_backward,
                           {"acts": acts, "gh": gh})
        # RNN.cpp's (hidden - new_gate).mul_(input_gate).add_(new_gate) as real ops: hx's two
        # gradients (through the sub, then through linear_hh in the node) arrive as PyTorch's
        out = call(_ADD, call(_MUL, call(_SUB, hx, t_n), t_z), t_n)
    out._vc.value += 2  # those two in-place writes: PyTorch's output has _version 2
    return out


def rnn_cell(input, hx, params, relu):
    """``rnn_stack.tanh_cell`` (``relu`` False) or ``relu_cell`` on the unprojected input."""
    return _rnn(input, hx, *_params_arrays(input, params, 1), relu)


def _rnn(input, hx, weights, arrays, relu):
    dt, w_ih, w_hh, b_ih, b_hh = arrays
    x, h = _array(input, dt), _array(hx, dt)
    batch, hid = h.shape
    pre, gh = np.empty((batch, hid), dt), np.empty((batch, hid), dt)
    K.simple_forward(x, w_ih, w_hh, b_ih, b_hh, h, _gemm(dt), _CONSTS[dt], pre, gh)
    slots = (input, *weights, hx)
    need = _need(slots)
    if need is not None:
        t_pre = _record("FusedRnnCellBackward0", slots, need, pre, _rnn_backward, {})
    else:
        t_pre = Tensor._make(pre)
    return call(_RELU if relu else _TANH, t_pre)


# ----------------------------------------------------------------------------- backward

def _grad(g, shape, dt):
    if g is None:
        return np.zeros(shape, dt)
    return np.ascontiguousarray(g._data, dtype=dt)


def _saved(node, name, empty):
    """A saved array, C-contiguous; ``empty`` when it was not saved (not needed)."""
    s = node.ctx._saved.get(name)
    if s is None:
        return empty
    return np.ascontiguousarray(s.array(node))


def _weights_and_inputs(node, dgi, dgh):
    """The GEMMs and bias sums after the gate gradients: the gradient of each slot but cx."""
    needs = node.ctx.needs_input_grad
    dt = dgi.dtype
    batch, n_g = dgi.shape
    empty, empty1 = np.empty((0, 0), dt), np.empty(0, dt)  # for what is not needed
    x, h = _saved(node, "input", empty), _saved(node, "hx", empty)
    w_ih, w_hh = _saved(node, "weight_ih", empty), _saved(node, "weight_hh", empty)
    slots = node.ctx.attrs["slots"]
    n_in, hid = slots[0]._data.shape[1], slots[5]._data.shape[1]
    dx = np.empty((batch, n_in), dt) if needs[0] else empty
    dw_ih = np.empty((n_g, n_in), dt) if needs[1] else empty
    dw_hh = np.empty((n_g, hid), dt) if needs[2] else empty
    db_ih = np.empty(n_g, dt) if needs[3] else empty1
    db_hh = np.empty(n_g, dt) if needs[4] else empty1
    dh = np.empty((batch, hid), dt) if needs[5] else empty
    K.input_grads(dgi, dgh, x, h, w_ih, w_hh, _gemm(dt), _CONSTS[dt], tuple(needs[:6]), n_in,
                  hid, get_num_threads(), dx, dh, dw_ih, dw_hh, db_ih, db_hh)
    make = Tensor._make
    return [make(a) if need else None
            for a, need in zip((dx, dw_ih, dw_hh, db_ih, db_hh, dh), needs)]


def _lstm_backward(node, g_og, g_tc, g_kept, g_added):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (g_og, g_tc, g_kept, g_added))
    attrs = node.ctx.attrs
    acts, tc = attrs["acts"], attrs["tc"]
    dt = acts.dtype
    shape = tc.shape
    # cx unsaved: no gate needs a gradient, the gate gradients are not used
    cx = _saved(node, "cx", np.zeros(shape, dt))
    dg = np.empty(acts.shape, dt)
    dcx = np.empty(shape, dt)
    K.lstm_backward(acts, cx, tc, _grad(g_og, shape, dt), _grad(g_tc, shape, dt),
                    _grad(g_kept, shape, dt), _grad(g_added, shape, dt), _CONSTS[dt], dg, dcx)
    grads = _weights_and_inputs(node, dg, dg)
    return (*grads, Tensor._make(dcx) if node.ctx.needs_input_grad[6] else None)


def _gru_backward(node, g_n, g_z):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (g_n, g_z))
    attrs = node.ctx.attrs
    acts, gh = attrs["acts"], attrs["gh"]
    dt = acts.dtype
    shape = (acts.shape[0], acts.shape[1] // 3)
    dgi, dgh = np.empty(acts.shape, dt), np.empty(acts.shape, dt)
    K.gru_backward(acts, gh, _grad(g_n, shape, dt), _grad(g_z, shape, dt), _CONSTS[dt], dgi,
                   dgh)
    return tuple(_weights_and_inputs(node, dgi, dgh))


def _rnn_backward(node, g_pre):
    if grad_mode.is_grad_enabled():
        return _differentiable_backward(node, (g_pre,))
    dg = np.ascontiguousarray(g_pre._data)
    return tuple(_weights_and_inputs(node, dg, dg))


# ----------------------------------------------------------------------------- create_graph

def _lstm_parts(x, hidden, params):
    """The fused LSTM node's outputs, per-op (``rnn_stack.lstm_cell`` up to its last ops)."""
    hx, cx = hidden
    gates = params.linear_hh(hx) + params.linear_ih(x)
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    kept = forgetgate.sigmoid() * cx
    added = ingate.sigmoid() * cellgate.tanh()
    return outgate.sigmoid(), (kept + added).tanh(), kept, added


def _gru_parts(x, hx, params):
    """The fused GRU node's outputs, per-op (``rnn_stack.gru_cell`` up to its last ops)."""
    i_r, i_z, i_n = params.linear_ih(x).chunk(3, 1)
    h_r, h_z, h_n = params.linear_hh(hx).chunk(3, 1)
    reset_gate = (h_r + i_r).sigmoid()
    input_gate = (h_z + i_z).sigmoid()
    new_gate = (i_n + h_n * reset_gate).tanh()
    return new_gate, input_gate


def _rnn_parts(x, hx, params):
    return (params.linear_hh(hx) + params.linear_ih(x),)


_PARTS = {"FusedLstmCellBackward0": _lstm_parts, "FusedGruCellBackward0": _gru_parts,
          "FusedRnnCellBackward0": _rnn_parts}


def _differentiable_backward(node, gs):
    """Under ``create_graph``: the node's part of the cell rebuilt per-op from aliases of the
    saved inputs, differentiated by a nested ``autograd.grad`` that records its own graph."""
    from ...autograd import engine
    from ...ops.shape_views import _alias
    saved = node.ctx._saved
    needs = node.ctx.needs_input_grad
    # the saved slots through their version check, the others as they are (PyTorch's graph
    # does not save them either)
    inputs = [node.saved(n) if n in saved else t for n, t in zip(_SLOTS, node.ctx.attrs["slots"])]
    seen = [_alias(t) if need else t for t, need in zip(inputs, needs)]
    x, w_ih, w_hh, b_ih, b_hh, hx, *cx = seen
    params = rnn_stack.CellParams(w_ih, w_hh, b_ih, b_hh)
    engine._same_pass[0] += 1
    try:
        with grad_mode.enable_grad():
            outs = _PARTS[node.name()](x, (hx, cx[0]) if cx else hx, params)
            pairs = [(o, g) for o, g in zip(outs, gs) if g is not None]
            diff = [t for t, need in zip(seen, needs) if need]
            grads = iter(engine.grad([o for o, _ in pairs], diff, [g for _, g in pairs],
                                     retain_graph=True, create_graph=True, allow_unused=True))
    finally:
        engine._same_pass[0] -= 1
    return tuple(next(grads) if need else None for need in needs)
