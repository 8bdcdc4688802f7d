"""A run of recorded elementwise steps as one forward kernel and one backward node.

The forward is one LoopSpec: the group's statements in recording order, reading the group's
inputs (tensors made before it: arguments, parameters, earlier steps' results) and writing only
the values used after the group. Intermediates live in registers and are never stored.

The backward node (``CompiledFunctionBackward``, the name ``torch.compile`` gives its nodes)
runs one LoopSpec too: it recomputes the forward statements from the saved inputs and then
walks them in reverse, each declaration's VJP (the registry's own ``d<input>`` functions)
adding into the gradient of its operands. So a chain of N elementwise ops costs one kernel
forward and one backward, whatever N. With ``create_graph=True`` the node recomputes the group
with eager ops on its saved inputs and differentiates that (gradients of any order).

On the CPU, eager computes ``exp``, ``tanh``, ``sqrt``, ... with MKL VML (``backends/vml.py``),
whose bits our scalar functions miss by an ulp now and then. So a group splits its forward at
each such step: the statements between them run as kernels (*segments*), the step itself as
the same VML call eager makes, and the values crossing a boundary are stored. The backward
kernel reads those VML results (saved with the inputs) instead of recomputing them, as eager's
fused backward does: a compiled program gives eager's bits.
"""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..autograd.node import Node, SavedTensor, node_class
from ..backends import cpu, vml
from ..codegen.loops import LoopSpec, Stmt
from ..ops.elementwise_call import (
    _cpu_out,
    _device_flat,
    _device_out,
    _flat,
    _inverse,
    _permuted,
    _scalar,
)
from ..ops.registry import OPS
from ..tensor import Tensor
from . import split_kernels
from .capture import Ref

_ADD = None
_ONE_CALL = True  # a VML-split forward as one compiled call (False: segment by segment)


class _Target:
    """Where a group runs: the backend that renders and launches LoopSpecs, and how operands
    are flattened and outputs made there (the same pattern as ElementwiseNode's VJP launch)."""

    def __init__(self, cuda):
        if cuda:
            from .._cuda_array import CudaArray
            from ..backends import cuda as backend
            self.backend, self.flat, self.empty, self.out = (backend, _device_flat,
                                                             CudaArray.empty, _device_out)
        else:
            self.backend, self.flat, self.empty, self.out = cpu, _flat, cpu.empty, _cpu_out


class Group:
    """Consecutive fusable ElementwiseSteps of one shape, dtype and grad mode."""

    def __init__(self, steps, escapes, requires_grad, keep=None):
        self.steps = steps
        self.shape = steps[0].shape
        self.np_dtype = steps[0].ct.np
        self.target = _Target(steps[0].on_cuda)
        self.grad_enabled = steps[0].grad_enabled
        produced = {s.out for s in steps}
        self.inputs = []  # value indices read by the group and made before it
        for s in steps:
            for r in _refs(s):
                if r.i not in produced and r.i not in self.inputs:
                    self.inputs.append(r.i)
        self.escapes = [s.out for s in steps if s.out in escapes]
        # the node's outputs: escaping values that require grad; its inputs: those that do
        self.grad_outputs = [i for i in self.escapes if requires_grad.get(i)]
        self.grad_inputs = [i for i in self.inputs if requires_grad.get(i)]
        self.requires_grad = requires_grad
        self.consts = []  # typed scalar operands, in kernel-argument order
        self._names = {}
        self._stmts = self._forward_stmts()
        # value index -> address of the VML routine eager computes that step with (CPU only)
        self.vml = {} if steps[0].on_cuda else {
            s.out: a for s in steps if (a := _vml_address(s, self.np_dtype))}
        self.vml_outs = [s.out for s in steps if s.out in self.vml]  # saved for the backward
        if not self.vml:
            spec = LoopSpec(tuple(f"v{i}" for i in self.inputs),
                            tuple(f"c{k}" for k in range(len(self.consts))),
                            tuple(self._stmts),
                            tuple((f"o{i}", f"v{i}") for i in self.escapes))
            self.forward_spec = spec
            self.forward = self.target.backend.module_for(("compiled-group", _key(spec)),
                                                          lambda: spec)
            self.segments = None
        else:
            self.forward_spec = self.forward = None
            self.segments, stored = self._segments()
            # stored values that escape get arrays of their own (they become tensors); the
            # others are the rows of one work array (one allocation, one saved tensor)
            self.stored_escapes = [i for i in sorted(stored) if i in self.escapes]
            self.work_rows = {i: r for r, i in enumerate(
                i for i in sorted(stored) if i not in self.escapes)}
            self._split = None  # (module, constant arrays, VML addresses), on first use
        self._backward = {}
        # input strides -> the layout eager gives the escaping values for them (``_layout``),
        # seeded with the recorded run's; a layout not seen yet is learnt from an eager run
        self._layouts = {}
        self._c_order = (None, None, self.shape)
        if keep is not None:
            key = tuple(keep[i]._data.strides for i in self.inputs)
            self._layouts[key] = self._layout_of([keep[i]._data for i in self.escapes])

    # ------------------------------------------------------------------ layouts
    def _layout_of(self, arrays):
        """The layout eager gave the escaping values ``arrays``: ``(perm, inv, kshape)`` (the
        kernel runs in ``perm``'s dim order into a C-contiguous buffer of ``kshape``, viewed
        back through ``inv``), or ``EAGER`` when they differ from each other
        or are not dense (one loop cannot write them; eager ops can). C-contiguous is
        ``(None, None, shape)``."""
        if len(self.shape) < 2:
            return self._c_order
        layout = None
        for a in arrays:
            got = _dense_layout(a, self.shape)
            if got is None or (layout is not None and got != layout):
                return EAGER
            layout = got
        return self._c_order if layout is None else layout

    def _layout(self, ins, values):
        """The layout of this run's escaping values (eager's for these inputs' strides), or
        None after computing them with eager ops (a layout seen for the first time)."""
        if len(self.shape) < 2:  # any dense layout of 0 or 1 dims is C-contiguous
            return self._c_order
        key = tuple(t._data.strides for t in ins)
        layout = self._layouts.get(key)
        if layout is None or layout is EAGER:
            self._run_eagerly(values)
            if layout is None and len(self._layouts) < _MAX_LAYOUTS:
                self._layouts[key] = self._layout_of([values[i]._data for i in self.escapes])
            return None
        return layout

    # ------------------------------------------------------------------ kernel sources
    def _operand(self, step, name):
        """The kernel name of ``step``'s operand ``name`` (a value or a typed constant)."""
        op = step.op
        v = step.operands[op.inputs.index(name)] if name in op.inputs else step.aux[name]
        if isinstance(v, Ref):
            return f"v{v.i}"
        key = (id(step), name)
        if key not in self._names:
            kind = op.aux.get(name)
            typed = np.bool_(v) if kind == "bool" else _scalar(v, self.np_dtype, False)
            self._names[key] = f"c{len(self.consts)}"
            self.consts.append(typed)
        return self._names[key]

    def _forward_stmts(self):
        return [Stmt(f"v{s.out}", s.op.f, tuple(self._operand(s, p) for p in s.op.f.params))
                for s in self.steps]

    def _segments(self):
        """The forward split at VML steps: a list of ``("kernel", module, inputs, constants,
        outputs)``
        and ``("vml", address, input, output, fallback module)`` (value indices), and the
        values that must be stored (read across a boundary, or escaping)."""
        items = []  # ("kernel", [(step, stmt)]) | ("vml", step)
        run = []
        for s, st in zip(self.steps, self._stmts):
            if s.out in self.vml:
                if run:
                    items.append(("kernel", run))
                    run = []
                items.append(("vml", s))
            else:
                run.append((s, st))
        if run:
            items.append(("kernel", run))

        def reads(item):
            if item[0] == "vml":
                return [item[1].operands[0].i]
            return [int(a[1:]) for _, st in item[1] for a in st.args if a[0] == "v"]

        later = [set() for _ in items]  # values read by the items after each one
        acc = set(self.escapes)
        for k in range(len(items) - 1, -1, -1):
            later[k] = set(acc)
            acc.update(reads(items[k]))
        segments, stored = [], set()
        self._segment_stmts = []  # per segment: its statements (None for a VML call)
        for k, item in enumerate(items):
            if item[0] == "vml":
                s = item[1]
                stored.add(s.out)
                src = s.operands[0].i
                # VML refuses an operand no compiled signature takes (unaligned): eager then
                # launches the op's own kernel, and so does this
                spec = LoopSpec(("x",), (), (Stmt("y", s.op.f, ("x",)),), (("y", "y"),))
                fallback = self.target.backend.module_for(("compiled-group", _key(spec)),
                                                          lambda spec=spec: spec)
                segments.append(("vml", self.vml[s.out], src, s.out, fallback))
                self._segment_stmts.append(None)
                continue
            made = [s.out for s, _ in item[1]]
            ins = []
            for i in reads(item):
                if i not in made and i not in ins:
                    ins.append(i)
            outs = [i for i in made if i in later[k]]
            stored.update(outs)
            if not outs:
                continue  # nothing it computes is used (a dead value)
            # only the constants this segment reads: each argument costs the dispatcher time
            used = sorted({int(a[1:]) for _, st in item[1] for a in st.args if a[0] == "c"})
            spec = LoopSpec(tuple(f"v{i}" for i in ins), tuple(f"c{c}" for c in used),
                            tuple(st for _, st in item[1]),
                            tuple((f"o{i}", f"v{i}") for i in outs))
            mod = self.target.backend.module_for(("compiled-group", _key(spec)),
                                                 lambda spec=spec: spec)
            segments.append(("kernel", mod, ins, [self.consts[c] for c in used], outs))
            self._segment_stmts.append([st for _, st in item[1]])
        return segments, stored

    def _split_kernel(self):
        """One compiled function running the whole split forward (``_segments``): each
        segment's loop, and between them the VML call (``cblas_calls.vml_apply`` is
        callable from compiled code), so a replay pays one dispatch, as an unsplit group.
        (module, constant arrays, VML address array), built on first use."""
        if self._split is None:
            from ..codegen import kcache
            arrays, refs = split_kernels.pack_constants(self.consts)
            addrs = np.array([seg[1] for seg in self.segments if seg[0] == "vml"], np.int64)
            source = split_kernels.forward_source(self, len(arrays), refs)
            self._split = (kcache.load(source, "cpu"), arrays, addrs)
        return self._split

    def backward_module(self, present):
        """The VJP kernel for the escaping outputs whose incoming gradient is ``present``."""
        mod = self._backward.get(present)
        if mod is None:
            spec = self._backward_spec(present)
            if self.segments is None:
                mod = self.target.backend.module_for(("compiled-group-vjp", _key(spec)),
                                                     lambda: spec)
            else:  # reads the work array whole, constants packed (split_kernels)
                from ..codegen import kcache
                arrays, refs = split_kernels.pack_constants(self.consts)
                mod = kcache.load(split_kernels.backward_source(self, spec, len(arrays), refs),
                                  "cpu")
            self._backward[present] = (mod, spec)
        return self._backward[present]

    def _backward_spec(self, present):
        global _ADD
        if _ADD is None:
            _ADD = OPS["add"].f
        # VML results are read (saved after the inputs), never recomputed
        stmts = [st for s, st in zip(self.steps, self._stmts) if s.out not in self.vml]
        grad = {}  # value index -> kernel name of its gradient so far
        arrays = [f"v{i}" for i in self.inputs] + [f"v{i}" for i in self.vml_outs]
        for i, p in zip(self.grad_outputs, present):
            if p:
                grad[i] = f"go{i}"
                arrays.append(f"go{i}")
        count = 0
        for s in reversed(self.steps):
            g = grad.get(s.out)
            if g is None or not s.op.differentiable:
                continue
            for name, v in zip(s.op.inputs, s.operands):
                if not isinstance(v, Ref) or not self.requires_grad.get(v.i):
                    continue
                fn = s.op.vjp[name]
                args = tuple(g if p == "g" else f"v{s.out}" if p == "out"
                             else self._operand(s, p) for p in fn.params)
                t = f"t{count}"
                count += 1
                stmts.append(Stmt(t, fn, args))
                if v.i in grad:
                    acc = f"t{count}"
                    count += 1
                    stmts.append(Stmt(acc, _ADD, (grad[v.i], t)))
                    t = acc
                grad[v.i] = t
        outputs = tuple((f"d{i}", grad[i]) for i in self.grad_inputs if i in grad)
        return LoopSpec(tuple(arrays), tuple(f"c{k}" for k in range(len(self.consts))),
                        tuple(stmts), outputs)

    # ------------------------------------------------------------------ replay
    def run(self, values):
        """Compute the group's escaping values into ``values`` (and attach the node)."""
        shape, dt, tg = self.shape, self.np_dtype, self.target
        ins = [values[i] for i in self.inputs]
        for t in ins:
            if t._data.shape != shape:
                # an input of another shape than recorded: a data-dependent shape upstream
                # (x[mask], nonzero). The kernel is for the recorded shape; the eager ops are
                # right for any
                return self._run_eagerly(values)
        layout = self._layout(ins, values)
        if layout is None:
            return  # ran eagerly
        perm, inv, kshape = layout
        flat = tg.flat if perm is None else _permuted(tg.flat, perm)
        if self.segments is None:
            outs = [tg.empty(kshape, dt) for _ in self.escapes]
            n = outs[0].size if outs else 0
            if n:
                tg.backend.launch(self.forward, n, [flat(t._data, kshape, dt) for t in ins]
                                  + self.consts + [tg.out(o) for o in outs])
            stored = None
        else:
            stored, work = self._run_segments(ins, flat, kshape)
            outs = [stored[i] for i in self.escapes]
        if inv is not None:  # eager's layout: the buffer viewed in the tensor's dim order
            outs = [o.transpose(inv) for o in outs]
        tensors = [Tensor._make(o) for o in outs]
        for i, t in zip(self.escapes, tensors):
            values[i] = t
        if self.grad_outputs and grad_mode.is_grad_enabled():
            node = CompiledFunctionBackward(
                [values[i]._edge() or (None, 0) for i in self.grad_inputs],
                [(tuple(values[i]._data.shape), values[i].dtype) for i in self.grad_inputs])
            node.group = self
            node.layout = layout
            saved = [SavedTensor(t) for t in ins]
            for k, i in enumerate(self.grad_outputs):
                t = values[i]
                t._grad_fn = node
                t._output_nr = k
                t._requires_grad = True
            if stored is not None:
                # after the inputs: the work array, then each escaping VML result
                # (version-checked: an in-place change raises, as eager's node saving it
                # does; one of this node's own outputs is kept as its array, no cycle)
                saved.append(SavedTensor(Tensor._make(work)))
                escaping = dict(zip(self.escapes, tensors))
                for i in self.vml_outs:
                    t = escaping.get(i)
                    if t is not None:
                        saved.append(SavedTensor(t, is_output=t._grad_fn is node))
            node.saved = saved

    def split_arrays(self, node, saved):
        """The backward kernel's arrays after the inputs (``split_kernels.backward_source``):
        the constant arrays, the work array (2-D) and each escaping VML result, from what
        ``run`` saved after the inputs (``saved``: the work array, then the escaping ones)."""
        dt, (perm, _, kshape) = self.np_dtype, node.layout
        flat = self.target.flat if perm is None else _permuted(self.target.flat, perm)
        consts = self._split_kernel()[1]
        return consts + [saved[0].array(node)] + [flat(s.array(node), kshape, dt)
                                                  for s in saved[1:]]

    def _run_segments(self, ins, flatten, kshape):
        """The forward split at VML steps (see ``_segments``), in the dim order of ``kshape``
        (inputs flattened by ``flatten``): (escaping stored value -> its array of ``kshape``,
        the work array holding the other stored values as rows)."""
        dt, tg = self.np_dtype, self.target
        n = 1
        for d in kshape:
            n *= d
        flat = {i: flatten(t._data, kshape, dt) for i, t in zip(self.inputs, ins)}
        stored = {}
        for i in self.stored_escapes:
            o = stored[i] = tg.empty(kshape, dt)
            flat[i] = tg.out(o)
        work = tg.empty((len(self.work_rows), n), dt)
        if not n:
            return stored, work
        launch = tg.backend.launch
        srcs = [flat[i] for i in self.inputs]
        if _ONE_CALL and all(a.flags.aligned for a in srcs):
            # one call for the whole forward (an unaligned operand, which VML's compiled
            # entry does not take, goes segment by segment below); the kernel indexes the
            # work array itself (no row views: ~0.2 us each)
            mod, consts, addrs = self._split_kernel()
            launch(mod, n, srcs + consts + [addrs, work]
                   + [flat[i] for i in self.stored_escapes])
            return stored, work
        for i, r in self.work_rows.items():
            flat[i] = work[r]
        for seg in self.segments:
            if seg[0] == "kernel":
                _, mod, srcs, consts, dsts = seg
                launch(mod, n, [flat[i] for i in srcs] + consts + [flat[i] for i in dsts])
            else:
                _, addr, src, dst, fallback = seg
                if not vml.apply(addr, flat[src], flat[dst]):
                    launch(fallback, n, [flat[src], flat[dst]])
        return stored, work

    def _run_eagerly(self, values):
        for s in self.steps:
            s.run(values)

    def eager(self, saved):
        """The group's escaping values recomputed with eager ops (for create_graph)."""
        values = dict(zip(self.inputs, saved))
        self._run_eagerly(values)
        return [values[i] for i in self.grad_outputs]


class FusedGroupNode(Node):
    __slots__ = ("group", "saved", "layout")

    def apply(self, grads):
        group = self.group
        if grad_mode.is_grad_enabled():
            return self._apply_tensors(grads)
        present = tuple(g is not None for g in grads)
        if not any(present):
            return [None] * len(group.grad_inputs)
        mod, spec = group.backward_module(present)
        dt, tg = group.np_dtype, group.target
        # the forward's dim order: saved values and gradients flattened alike, so element k of
        # each is the same element; the input gradients come out in the forward's layout
        perm, inv, kshape = self.layout
        flat = tg.flat if perm is None else _permuted(tg.flat, perm)
        k = len(group.inputs)
        arrays = [flat(s.array(self), kshape, dt) for s in self.saved[:k]]
        if group.segments is None:
            arrays += [flat(g._data, kshape, dt) for g in grads if g is not None]
            arrays += group.consts
        else:  # constants packed, work array whole (split_kernels.backward_source)
            arrays += group.split_arrays(self, self.saved[k:])
            arrays += [flat(g._data, kshape, dt) for g in grads if g is not None]
        outs = [tg.empty(kshape, dt) for _ in spec.outputs]
        n = 1
        for d in kshape:
            n *= d
        if n and outs:
            tg.backend.launch(mod, n, arrays + [tg.out(o) for o in outs])
        if inv is not None:
            outs = [o.transpose(inv) for o in outs]
        done = dict(zip((name for name, _ in spec.outputs), outs))
        return [Tensor._make(done[f"d{i}"]) if f"d{i}" in done else None
                for i in group.grad_inputs]

    def _apply_tensors(self, grads):
        from ..autograd import engine
        group = self.group
        saved = [s.tensor(self) for s in self.saved[:len(group.inputs)]]
        outs = group.eager(saved)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
        wanted = [saved[group.inputs.index(i)] for i in group.grad_inputs]
        got = engine.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                          retain_graph=True, create_graph=True, allow_unused=True)
        return list(got)

    def release(self) -> None:
        super().release()
        for s in self.saved:
            s.free()


CompiledFunctionBackward = node_class("CompiledFunctionBackward", FusedGroupNode)


EAGER = object()  # Group layouts: run the group's steps as eager ops
_MAX_LAYOUTS = 8  # input-stride combinations one group keeps a layout for


def _dense_layout(a, shape):
    """``a``'s layout (strides exactly, size-1 dims included) as ``(perm, inv, kshape)``
    (``perm`` None for C order), or None when no dim order of a dense buffer gives them."""
    st = a.strides
    nd = len(shape)
    perm = tuple(sorted(range(nd), key=lambda d: (-st[d], -shape[d], d)))
    built, step = [0] * nd, a.itemsize
    for d in reversed(perm):
        built[d] = step
        step *= shape[d]
    if tuple(built) != tuple(st):
        return None
    if perm == tuple(range(nd)):
        return None, None, tuple(shape)
    return perm, _inverse(perm), tuple(shape[p] for p in perm)


def _vml_address(step, np_dtype):
    """The VML routine eager's forward calls for ``step`` on host arrays of ``np_dtype`` (the
    condition of ``elementwise_call._vml_routine``: one tensor operand, no scalars or aux), or
    0."""
    if step.op.aux or step.aux or len(step.operands) != 1 or not isinstance(step.operands[0],
                                                                             Ref):
        return 0
    return vml.routine(step.op.name, np_dtype)


def _refs(step):
    for v in list(step.operands) + list(step.aux.values()):
        if isinstance(v, Ref):
            yield v


def _key(spec):
    """A hashable, content-complete key for a LoopSpec (its rendered structure)."""
    return (spec.arrays, spec.scalars, spec.outputs,
            tuple((s.target, s.fn.symbol, s.args) for s in spec.stmts))
