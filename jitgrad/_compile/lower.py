"""Whole-step lowering: a recorded training step replayed on arrays, with no graph.

The ordinary replay (``compiled.Program``) calls each recorded op again: every call makes
Tensors and graph nodes, and ``loss.backward()`` walks them with the engine. For the common
training step — dense layers and ReLU, cross-entropy, ``loss.backward()``, optimizer calls —
none of that is needed: the recording already says which arrays flow where. ``plan`` turns
such a recording into a ``LoweredStep`` of *lowered ops* (``lower_ops.py``: each op's forward
and VJP over arrays, on buffers allocated once per recording); ``loss.backward()`` walks them
in reverse and hands each leaf its gradient through the engine's own ``accumulate_into_leaf``
(hooks, accumulation and ``.grad`` adoption as in eager mode); steps without tensors
(``opt.zero_grad()``, ``opt.step()``, ``scheduler.step()``) are called as recorded; steps on
tensors that need no gradient (``x.view(-1, 784)`` of the batch) replay as calls.

When plain SGD steps right after the backward, a weight's update is folded into its gradient
GEMM and its ``.grad`` is computed when read (``pending.py``). With MKL and one float dtype the
forward and backward run as one compiled call (``lower_program.py``); otherwise op by op.

Each lowered op makes the same BLAS calls and runs the same kernels as its eager
implementation, so a lowered step gives eager's results bit for bit, except a folded update
(one rounding where eager has two); ``tests/test_compile_lowered.py`` checks both executors.
What the rules do not cover makes ``plan`` return None: the step replays the ordinary way.

Guards beyond ``compiled.py``'s: a parameter's array keeps its shape, dtype and requires_grad;
targets are class indices the fast loss path accepts (in range, none ignored); anomaly mode is
off. Otherwise the call replays the ordinary way (which raises eager's errors), decided before
anything runs.
"""
from __future__ import annotations

import threading

import numpy as np

from ..autograd import anomaly_mode as _anomaly
from ..autograd import engine, grad_mode
from ..optim.optimizer import _to_scalar
from ..tensor import Tensor
from . import pending
from .capture import CallStep, ElementwiseStep, Ref, walk_refs
from .lower_ops import CrossEntropy, Dense, Relu

FALLBACK = object()


# ----------------------------------------------------------------------------- matching

def _linear(step, keep, externals):
    """``(x, weight, bias)`` of an nn.Linear call or F.linear with a bias (its weight and
    bias tensors that existed before the call: parameters), else None."""
    from ..nn import functional as F
    from ..nn.modules.linear import Linear
    from ..nn.modules.module import Module
    if not isinstance(step, CallStep):
        return None
    a, kw = step.args, step.kwargs
    if step.fn is Module.__call__ and a and type(a[0]) is Linear and len(a) == 2 and not kw:
        return a[1], a[0].weight, a[0].bias
    if step.fn is F.linear and not kw and len(a) == 3:
        w, b = a[1], a[2]
        if isinstance(w, Ref) and isinstance(b, Ref) and w.i in externals and b.i in externals:
            return a[0], keep[w.i], keep[b.i]
    return None


def _cross_entropy(step):
    """``(logits, target, ignore_index)`` of a mean cross_entropy without weights or label
    smoothing (nn.CrossEntropyLoss or F.cross_entropy), else None."""
    from ..nn import functional as F
    from ..nn.modules.loss import CrossEntropyLoss
    from ..nn.modules.module import Module
    if not isinstance(step, CallStep):
        return None
    a, kw = step.args, step.kwargs
    if step.fn is Module.__call__ and a and type(a[0]) is CrossEntropyLoss and len(a) == 3 \
            and not kw:
        m = a[0]
        if m.weight is None and m.label_smoothing == 0.0 and m.reduction == "mean":
            return a[1], a[2], m.ignore_index
        return None
    if step.fn is F.cross_entropy and len(a) == 2:
        defaults = {"weight": None, "size_average": None, "reduce": None, "reduction": "mean",
                    "label_smoothing": 0.0}
        if any(kw.get(k, v) != v for k, v in defaults.items()) or \
                set(kw) - set(defaults) - {"ignore_index"}:
            return None
        return a[0], a[1], kw.get("ignore_index", -100)
    return None


def _is_backward(step):
    if not isinstance(step, CallStep) or step.fn is not Tensor.backward:
        return False
    a, kw = step.args, step.kwargs
    if len(a) != 1 or not isinstance(a[0], Ref):
        return False
    return all(kw.get(k) in (None, False) for k in kw) and \
        set(kw) <= {"gradient", "retain_graph", "create_graph", "inputs"}


def _has_ref(obj):
    return next(walk_refs(obj), None) is not None


# ----------------------------------------------------------------------------- planning

def plan(rec, keep):
    """A ``LoweredStep`` for recording ``rec`` (``keep``: its tensors by value index), or None
    when some step has no lowering (the ordinary replay then runs it)."""
    if any(getattr(t._data, "__class__", None) is not np.ndarray for t in keep):
        return None  # CUDA steps: the graph-capture replay is issue 16's GPU half
    items, ops, produced = [], {}, {}
    saw_backward = False
    for s in rec.steps:
        if not s.grad_enabled:
            return None
        lin = _linear(s, keep, rec.externals)
        ce = _cross_entropy(s) if lin is None else None
        if lin is not None:
            x, w, b = lin
            if not isinstance(x, Ref) or not isinstance(s.outs, Ref) or b is None or \
                    keep[x.i]._data.ndim != 2 or w._data.ndim != 2 or \
                    b._data.shape != (w._data.shape[0],) or \
                    w._grad_fn is not None or b._grad_fn is not None:
                return None
            out = keep[s.outs.i]
            if not (out._data.dtype == w._data.dtype == b._data.dtype == keep[x.i]._data.dtype):
                return None
            op = Dense(x.i, s.outs.i, w, b, out._data.shape, keep[x.i]._data.shape)
        elif ce is not None:
            logits, target, ig = ce
            if not (isinstance(logits, Ref) and isinstance(target, Ref)):
                return None
            if target.i not in rec.arg_refs and target.i not in rec.externals:
                return None  # checked before the step runs: must be an input
            lt, out = keep[logits.i], keep[s.outs.i]
            if lt._data.ndim != 2 or lt._data.dtype not in (np.float32, np.float64) or \
                    out._grad_fn is None:
                return None
            op = CrossEntropy(logits.i, target.i, s.outs.i, ig, type(out._grad_fn).__name__,
                              (lt._data.shape, lt._data.dtype))
        elif isinstance(s, ElementwiseStep) and s.op.name == "relu" and not s.aux and \
                isinstance(s.operands[0], Ref) and s.operands[0].i in ops:
            op = Relu(s.operands[0].i, s.out, s.shape, keep[s.out]._data.dtype)
        elif _is_backward(s):
            if saw_backward or s.args[0].i not in ops:
                return None
            saw_backward = True
            items.append(("backward", s.args[0].i))
            continue
        elif isinstance(s, CallStep) and not _has_ref((s.args, s.kwargs)):
            items.append(("call", s))  # opt.zero_grad(), opt.step(), scheduler.step()
            continue
        elif _no_grad_step(s, keep, ops):
            items.append(("replay", s))
            continue
        else:
            return None
        ops[op.out] = op
        produced[op.out] = op
        items.append(("op", op))
    if not saw_backward:
        return None
    return _finish(rec, keep, items, ops)


def _no_grad_step(s, keep, ops):
    """A step on tensors that need no gradient (reshaping the batch): replayed as a call."""
    if isinstance(s, ElementwiseStep):
        refs = [v for v in list(s.operands) + list(s.aux.values()) if isinstance(v, Ref)]
        outs = [s.out]
    else:
        refs = list(walk_refs((s.args, s.kwargs)))
        outs = [r.i for r in walk_refs(s.outs)]
    return all(r.i not in ops and not keep[r.i]._requires_grad for r in refs) and \
        all(not keep[i]._requires_grad for i in outs)


def _finish(rec, keep, items, ops):
    """Uses of each lowered value; which inputs need gradients; relu in place; the result."""
    uses = {}
    for kind, it in items:
        if kind == "op":
            for i in it.inputs:
                uses[i] = uses.get(i, 0) + 1
        elif kind == "replay":
            for r in walk_refs((it.args, it.kwargs) if isinstance(it, CallStep) else it.operands):
                if r.i in ops:
                    return None
    results = list(walk_refs(rec.result))
    losses = [it for kind, it in items if kind == "backward"]
    for r in results:
        if r.i in ops and not (r.i in losses and isinstance(ops[r.i], CrossEntropy)):
            return None  # only the loss leaves the lowered region
    for i, n in uses.items():
        if i in ops and n > 1:
            return None  # a value read twice: its gradients would need summing (not yet)
    leaves = set()  # inputs (arguments) that are leaves needing a gradient
    for op in ops.values():
        if isinstance(op, Dense):
            x = op.inputs[0]
            if x in ops:
                op.need_x = True
            elif keep[x]._requires_grad:
                if keep[x]._grad_fn is not None:
                    return None  # the gradient would flow on into an eager graph
                op.need_x = True
                leaves.add(x)
        elif isinstance(op, Relu):
            src = ops[op.inputs[0]]
            op.in_place = isinstance(src, Dense) and uses.get(op.inputs[0]) == 1
        elif isinstance(op, CrossEntropy):
            if keep[op.inputs[1]]._requires_grad:
                return None
    loss = losses[0]
    if not isinstance(ops[loss], CrossEntropy):
        return None
    sgd = _sgd_after_backward(items)
    users = {}
    for op in ops.values():
        if isinstance(op, Dense):
            users[id(op.weight)] = users.get(id(op.weight), 0) + 1
    for op in ops.values():
        if isinstance(op, Dense):
            if sgd is None or users[id(op.weight)] > 1:
                continue  # never folds (a tied weight's gradients add up first)
            op.foldable = True
            op.copies_input = op.inputs[0] not in ops
    return LoweredStep(items, ops, loss, leaves, rec.result, sgd)


_ONE_CALL = object()  # LoweredStep.program before its first run
ONE_CALL = True  # False: lowered ops run one Python call each (the tests run both ways)


def _one_call(items, ops):
    """Can the forward and backward run as one compiled call? One float dtype, MKL's CBLAS,
    and nothing but lowered ops, replays and ``zero_grad()`` calls from the first op to the
    backward (the forward then runs at the backward's place)."""
    from .lower_program import _gemm
    if not ONE_CALL:
        return False
    dtypes = {op.meta[1] for op in ops if isinstance(op, CrossEntropy)} | \
        {op.weight._data.dtype for op in ops if isinstance(op, Dense)}
    if len(dtypes) != 1 or _gemm(next(iter(dtypes))) is None:
        return False
    started = False
    for kind, it in items:
        if kind == "backward":
            return True
        if kind == "op":
            started = True
        elif started and kind == "call" and it.name != "zero_grad":
            return False
    return False


def _zero_grad_follows_forward(items, opt):
    """Does ``opt.zero_grad()`` (set_to_none) come after the first lowered op with nothing but
    lowered ops before it (``loss = f(x); opt.zero_grad(); loss.backward()``)? Then the last
    run's pending gradients may be dropped when this run starts: nothing can read them
    before the zero_grad() that drops them."""
    if opt is None:
        return False
    started = False
    for kind, it in items:
        if kind == "op":
            started = True
            continue
        if not started:
            continue
        if kind != "call" or it.name != "zero_grad" or not it.args or it.args[0] is not opt:
            return False
        to_none = it.kwargs.get("set_to_none", it.args[1] if len(it.args) > 1 else True)
        return to_none is True
    return False


def _sgd_after_backward(items):
    """The optimizer of an ``SGD.step()`` call right after ``loss.backward()`` (nothing in
    between may read a gradient), or None."""
    from ..optim.sgd import SGD
    kinds = [k for k, _ in items]
    k = kinds.index("backward") + 1
    if k >= len(items) or items[k][0] != "call":
        return None
    call = items[k][1]
    if call.name != "SGD.step" or len(call.args) != 1 or call.kwargs or \
            type(call.args[0]) is not SGD:
        return None
    return call.args[0]


# ----------------------------------------------------------------------------- replay

class LoweredStep:
    def __init__(self, items, ops, loss, leaves, result, sgd):
        self.items, self.ops, self.loss, self.leaves = items, ops, loss, leaves
        self.result = result
        # the backward order: reverse of the forward ops that lead to the loss
        order, need = [], {loss}
        for kind, it in reversed(items):
            if kind == "op" and it.out in need:
                order.append(it)
                need.update(i for i in it.inputs if i in ops)
        self.backward_ops = order
        self.forward_ops = [it for kind, it in items if kind == "op"]
        # forward and backward as one compiled call (lower_program.py) where it can run
        self.program = _ONE_CALL if _one_call(items, self.forward_ops) else None
        self.sgd = sgd  # the plain SGD whose step follows the backward (may fold), or None
        self.dense = [op for op in order if isinstance(op, Dense) and op.foldable]
        self.lock = threading.Lock()
        self.pending = []  # (weight, PendingGrad) of the last run (pending.py)
        self.folded = []  # weights whose update the last backward folded
        for op in self.dense:
            op.pending = self.pending
        self.drops_early = _zero_grad_follows_forward(items, sgd)

    def describe(self):
        names = []
        for kind, it in self.items:
            names.append(type(it).__name__ if kind == "op" else
                         kind if kind == "backward" else it.name)
        fold = f" (SGD folded into {len(self.dense)} weight GEMMs)" if self.dense else ""
        return "lowered: " + ", ".join(names) + fold

    def run(self, values):
        """Replay on ``values`` (Tensors of the arguments and externals, by value index);
        FALLBACK when a guard does not hold (nothing has run then): anomaly mode on (the engine
        checks every node's output), another thread inside this step (the buffers are this
        step's own), an op's check."""
        if _anomaly.enabled or not self.lock.acquire(blocking=False):
            return FALLBACK
        try:
            for op in self.forward_ops:
                if not op.check(values):
                    return FALLBACK
            return self._run(values)
        finally:
            self.lock.release()

    def _run(self, values):
        arr = {}
        for i, t in enumerate(values):
            if t is not None:
                arr[i] = t._data
        loss_tensor = None
        settled = False
        one_call = self.program is not None
        for kind, it in self.items:
            if kind == "op":
                if not settled:  # the buffers change from here on
                    pending.settle(self.pending, self.drops_early)
                    settled = True
                if not one_call:
                    it.forward(arr)
            elif kind == "backward":
                grad_mode._set(False)  # as the engine runs a backward without create_graph
                try:
                    if one_call:
                        self._forward_backward(arr, values)
                    else:
                        self._backward(arr, values)
                finally:
                    grad_mode._set(True)
                loss_tensor = self.ops[self.loss].result(arr[self.loss])
            elif kind == "call" and self.folded and it.args and it.args[0] is self.sgd:
                self._step(it)
            else:
                _replay_call(it, values, arr)
        values[self.loss] = loss_tensor
        from .compiled import _fill
        return _fill(self.result, values)

    def _forward_backward(self, arr, values):
        """The forward and backward in one compiled call (``lower_program.py``)."""
        self._plan_fold()
        if self.program is _ONE_CALL:  # built on the first run
            from .lower_program import ArrayProgram
            self.program = ArrayProgram(self, self.ops[self.loss].meta[1])
        losses, leaves = self.program.run(arr, values)
        arr.update(losses)
        for t, g in leaves:
            engine.accumulate_into_leaf(t, Tensor._make(g))

    def _backward(self, arr, values):
        self._plan_fold()
        loss = arr[self.loss]
        grads = {self.loss: np.ones(loss.shape, loss.dtype)}
        leaves = []
        for op in self.backward_ops:
            g = grads.pop(op.out)
            gin, op_leaves = op.backward(arr, g)
            leaves.extend(op_leaves)
            for i, gi in zip(op.inputs, gin):
                if gi is None:
                    continue
                if i in self.ops:
                    grads[i] = gi
                elif i in self.leaves:
                    leaves.append((values[i], gi))
        for t, g in leaves:
            engine.accumulate_into_leaf(t, Tensor._make(g))

    def _plan_fold(self):
        """Which parameters' SGD update this run makes itself: plain SGD (no momentum, weight
        decay or step hooks) steps right after the backward, and the parameter has no gradient
        yet (so eager would set, not add), no hooks and a contiguous array. A weight's update
        goes into its gradient GEMM (``op.fold``: the GEMM's alpha); a bias's, in the one-call
        program, into the same ``sgd_step`` kernel the optimizer runs (``op.bias_lr``).
        ``_step`` runs the optimizer for whatever else has a gradient."""
        self.folded = []
        for op in self.dense:
            op.fold = op.bias_lr = None
        opt = self.sgd
        if opt is None or opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks:
            return
        lrs = {}
        for group in opt.param_groups:
            if group["momentum"] != 0 or _to_scalar(group["weight_decay"]) != 0:
                return
            lr = float(_to_scalar(group["lr"]))
            for p in group["params"]:
                lrs[id(p)] = (lr, bool(group["maximize"]))
        program = self.program is not None
        for op in self.dense:
            w, b = op.weight, op.bias
            lr = lrs.get(id(w))
            if lr is not None and _updatable(w):
                op.fold = lr[0] if lr[1] else -lr[0]
                self.folded.append(w)
            lr = lrs.get(id(b))
            if program and lr is not None and _updatable(b):
                op.bias_lr = lr
                self.folded.append(b)

    def _step(self, call):
        """``opt.step()`` for a step whose updates were (partly) made already: the optimizer
        updates whatever else has a gradient (biases in the ops-one-by-one path, parameters
        outside the lowered layers); the parameters done already only get their version bump,
        as the optimizer gives every parameter it updates."""
        done = self.folded
        ids = {id(p) for p in done}
        opt = call.args[0]
        rest = any(p._grad is not None and id(p) not in ids
                   for group in opt.param_groups for p in group["params"])
        grads = [p._grad for p in done]
        for p in done:
            p._grad = None
        try:
            if rest:
                call.fn(*call.args, **call.kwargs)
            else:
                opt._opt_called = True  # what the step's wrapper notes for LR schedulers
        finally:
            for p, g in zip(done, grads):
                p._grad = g
                p._vc.value += 1
            self.folded = []


def _updatable(p):
    return p._requires_grad and p._grad is None and not p._hooks and \
        "_post_accumulate_grad_hooks" not in p.__dict__ and p._data.flags.c_contiguous


def _replay_call(s, values, arr):
    from .compiled import _assign, _fill
    if isinstance(s, ElementwiseStep):
        s.run(values)
        arr[s.out] = values[s.out]._data
        return
    out = s.fn(*_fill(s.args, values), **_fill(s.kwargs, values))
    if s.outs is not None:
        _assign(s.outs, out, values)
        for r in walk_refs(s.outs):
            arr[r.i] = values[r.i]._data
