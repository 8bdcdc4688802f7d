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
"""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..autograd.node import Node, SavedTensor, node_class
from ..backends import cpu
from ..codegen.loops import LoopSpec, Stmt
from ..ops.elementwise_call import _cpu_out, _device_flat, _device_out, _flat, _scalar
from ..ops.registry import OPS
from ..tensor import Tensor
from .capture import Ref

_ADD = None


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

    def __init__(self, steps, escapes, requires_grad):
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
        spec = LoopSpec(tuple(f"v{i}" for i in self.inputs),
                        tuple(f"c{k}" for k in range(len(self.consts))), tuple(self._stmts),
                        tuple((f"o{i}", f"v{i}") for i in self.escapes))
        self.forward_spec = spec
        self.forward = self.target.backend.module_for(("compiled-group", _key(spec)),
                                                      lambda: spec)
        self._backward = {}

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

    def backward_module(self, present):
        """The VJP kernel for the escaping outputs whose incoming gradient is ``present``."""
        mod = self._backward.get(present)
        if mod is None:
            spec = self._backward_spec(present)
            mod = self.target.backend.module_for(("compiled-group-vjp", _key(spec)),
                                                 lambda: spec)
            self._backward[present] = (mod, spec)
        return self._backward[present]

    def _backward_spec(self, present):
        global _ADD
        if _ADD is None:
            _ADD = OPS["add"].f
        stmts = list(self._stmts)
        grad = {}  # value index -> kernel name of its gradient so far
        arrays = [f"v{i}" for i in self.inputs]
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
        outs = [tg.empty(shape, dt) for _ in self.escapes]
        n = outs[0].size if outs else 0
        if n:
            tg.backend.launch(self.forward, n, [tg.flat(t._data, shape, dt) for t in ins]
                              + self.consts + [tg.out(o) for o in outs])
        tensors = [Tensor._make(o) for o in outs]
        for i, t in zip(self.escapes, tensors):
            values[i] = t
        if self.grad_outputs and grad_mode.is_grad_enabled():
            node = CompiledFunctionBackward(
                [values[i]._edge() or (None, 0) for i in self.grad_inputs],
                [(tuple(values[i]._data.shape), values[i].dtype) for i in self.grad_inputs])
            node.group = self
            node.saved = [SavedTensor(t) for t in ins]
            for k, i in enumerate(self.grad_outputs):
                t = values[i]
                t._grad_fn = node
                t._output_nr = k
                t._requires_grad = True

    def _run_eagerly(self, values):
        for s in self.steps:
            s.run(values)

    def eager(self, saved):
        """The group's escaping values recomputed with eager ops (for create_graph)."""
        values = dict(zip(self.inputs, saved))
        self._run_eagerly(values)
        return [values[i] for i in self.grad_outputs]


class FusedGroupNode(Node):
    __slots__ = ("group", "saved")

    def apply(self, grads):
        group = self.group
        if grad_mode.is_grad_enabled():
            return self._apply_tensors(grads)
        present = tuple(g is not None for g in grads)
        if not any(present):
            return [None] * len(group.grad_inputs)
        mod, spec = group.backward_module(present)
        shape, dt, tg = group.shape, group.np_dtype, group.target
        arrays = [tg.flat(s.array(self), shape, dt) for s in self.saved]
        arrays += [tg.flat(g._data, shape, dt) for g in grads if g is not None]
        outs = [tg.empty(shape, dt) for _ in spec.outputs]
        n = int(np.prod(shape))
        if n and outs:
            tg.backend.launch(mod, n, arrays + group.consts + [tg.out(o) for o in outs])
        done = dict(zip((name for name, _ in spec.outputs), outs))
        return [Tensor._make(done[f"d{i}"]) if f"d{i}" in done else None
                for i in group.grad_inputs]

    def _apply_tensors(self, grads):
        from ..autograd import engine
        group = self.group
        saved = [s.tensor(self) for s in self.saved]
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


def _refs(step):
    for v in list(step.operands) + list(step.aux.values()):
        if isinstance(v, Ref):
            yield v


def _key(spec):
    """A hashable, content-complete key for a LoopSpec (its rendered structure)."""
    return (spec.arrays, spec.scalars, spec.outputs,
            tuple((s.target, s.fn.symbol, s.args) for s in spec.stmts))
