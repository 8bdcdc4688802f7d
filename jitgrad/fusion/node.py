"""The fused node: runs a planned group as one kernel, and the engine's ``plan_hook`` body.

``apply_plan(task)`` plans the pass and puts one ``FusedBackward`` per group in
``task.substitute`` (keyed by the group's head). The engine then runs it in place of the head:
its ``next_functions``/``_input_meta`` are the edges leaving the group, so the engine sends its
gradients on (and sums them to each input's shape in ``_fit``); the group's inner nodes never
run. ``release()`` frees the saved tensors of every member.

At run time ``gather`` turns the group into a signature (see ``codegen.py``) plus the arrays and
scalars to pass. The signature is the key of the compiled kernel, so building the spec and
rendering happen once per distinct group shape, not per pass.
"""
from __future__ import annotations

import sys

import numpy as np

from ..autograd.accumulate_grad import _copy_version, _dense_bytes, _leaf_layout_copy
from ..autograd.engine import _COUNTS_KNOWN
from ..autograd.node import AccumulateGrad, Node, SavedTensor
from ..backends import cpu
from ..tensor import Tensor
from . import debug, stats
from .codegen import build_spec
from .planner import plan

__all__ = ["FusedBackward", "apply_plan", "gather", "compiled"]


def apply_plan(task) -> None:
    groups = plan(task)
    stats.plans += 1
    if "fusion" in debug:
        _print_plan(task, groups)
    deps = task.deps
    accumulate, needed = task.accumulate, task.needed
    for g in groups:
        for (child, _), c in zip(g.edges, g.counts):
            if c > 1:  # several member slots feed it; the fused node sends one summed gradient
                deps[child] -= c - 1
        # the AccumulateGrads only this group feeds, which accumulate (handoff.py; autograd.grad
        # captures the gradient itself)
        eager = tuple(accumulate and c.__class__ is AccumulateGrad and deps[c] == 1
                      and (needed is None or c in needed) for c, _ in g.edges)
        task.substitute[g.head] = FusedBackward(g, eager)


def _print_plan(task, groups) -> None:
    n_ew = sum(1 for n in task.order if hasattr(n, "op") and hasattr(n, "needs"))
    print(f"[jitgrad fusion] plan: {len(task.order)} nodes, {n_ew} elementwise, "
          f"{len(groups)} fused group(s)", file=sys.stderr)
    for i, g in enumerate(groups):
        print(f"[jitgrad fusion]   group {i}: {g.describe()}", file=sys.stderr)


_op_info_cache = {}


def _op_info(op):
    """(slot of each input name, names saved as bool, the VJP body's params with their slot and
    bool flag) of an op: static, so computed once per op rather than per member per pass."""
    info = _op_info_cache.get(op.name)
    if info is None:
        slots = {name: i for i, name in enumerate(op.inputs)}
        bools = frozenset(k for k, v in op.aux.items() if v == "bool")
        params = tuple((p, slots.get(p), p in bools) for p in op.f.params)
        info = _op_info_cache[op.name] = (slots, bools, params)
    return info


def _scalarizable(data, n) -> bool:
    # a saved size-1 (or fully broadcast) operand of a larger group travels as a scalar
    # (host arrays only: reading a device value would be a transfer)
    return n > 1 and data.__class__ is np.ndarray and (data.size == 1 or not any(data.strides))


def gather(group, n, cnp):
    """(signature members, arrays, scalars) for the group's current saved state.

    Checks every saved tensor (freed graph / in-place modification raise PyTorch's errors).
    ``arrays`` holds (ndarray, dtype) to flatten; ``scalars`` holds typed scalar values.
    """
    members = group.members
    routes = group.routes
    ids = {}  # (id(ndarray), is_bool) -> ("a", k) | ("s", k)
    ids_get = ids.get
    first_saver = {}  # desc -> lowest _seq of a member that saved it
    arrays, scalars = [], []
    member_out = [None] * len(members)
    bool_np = np.dtype(np.bool_)
    infos = [_op_info(m.op) for m in members]
    ndarray = np.ndarray
    # (runs per backward pass for every group: lookups hoisted, _scalarizable inlined)
    j = -1
    for m in members:
        j += 1
        if m._released:  # (a second backward without retain_graph)
            from ..ops.elementwise_call import raise_if_wrapped_number_freed
            raise_if_wrapped_number_freed(m)
        slots, bools, _ = infos[j]
        r = routes[j]
        seq = m._seq
        for name, s in m.saved.items():
            if s.__class__ is not SavedTensor:
                continue
            data = s.data
            if data is None or s._freed or s._vc.value != s._version:
                data = s.array(m)  # raises PyTorch's error (freed / modified); unpacks hooks
            is_bool = name in bools
            key = (id(data), is_bool)
            desc = ids_get(key)
            if desc is None:
                # a saved size-1 (or fully broadcast) operand of a larger group travels as a
                # scalar (host arrays only: reading a device value would be a transfer)
                if n > 1 and data.__class__ is ndarray and (data.size == 1
                                                             or not any(data.strides)):
                    v = data.reshape(-1)[0] if data.size else data.ravel()[0]
                    desc = ("s", len(scalars))
                    scalars.append(np.bool_(v) if is_bool else cnp.type(v))
                else:
                    desc = ("a", len(arrays))
                    arrays.append((data, bool_np if is_bool else cnp))
                ids[key] = desc
                first_saver[desc] = seq
            elif seq < first_saver[desc]:
                first_saver[desc] = seq
            if desc[0] != "a":
                continue
            if name == "out":
                owner = j
            else:
                slot = slots.get(name)
                rr = r[slot] if slot is not None else None
                # a saved input that is a member's result (saved before any in-place change)
                owner = rr[1] if rr is not None and rr[0] == "m" and s._version == 0 else None
            if owner is not None and member_out[owner] is None:
                member_out[owner] = desc[1]

    sig_members = []
    j = -1
    for m in members:
        j += 1
        params = infos[j][2]
        r = routes[j]
        saved = m.saved
        operands = []
        for p, slot, is_bool in params:
            s = saved.get(p)
            rr = r[slot] if slot is not None else None
            if s is not None:
                if s.__class__ is SavedTensor:
                    desc = ids[(id(s.data), is_bool)]
                    if rr is not None and rr[0] == "m" and s._version == 0:
                        desc = rr
                else:
                    desc = ("s", len(scalars))
                    scalars.append(s)
            elif rr is not None and rr[0] == "m":
                # recompute from a member's result only if the tensor the next op consumed
                # still held it: the node proves it by keeping its result's version counter
                # (``out_vc``) at 0; otherwise saved arrays are read instead
                vc = getattr(members[rr[1]], "out_vc", None)
                desc = rr if vc is not None and vc.value == 0 else None
            elif slot is not None:
                # an unsaved leaf: usable if a node created before this one saved the very same
                # array and its version still matches (so the leaf did not change in between)
                child = m.next_functions[slot][0]
                desc = None
                if child.__class__ is AccumulateGrad:
                    d = ids_get((id(child.variable._data), False))
                    if d is not None and first_saver[d] < m._seq:
                        desc = d
            else:
                desc = None
            operands.append(desc)
        sig_members.append((m.op.name, r, tuple(operands), member_out[j]))
    return tuple(sig_members), arrays, scalars


class Compiled:
    __slots__ = ("spec", "module", "dmodule")

    def __init__(self, spec, module):
        self.spec = spec
        self.module = module
        self.dmodule = None  # the same LoopSpec rendered for CUDA, on first device use


compiled: dict = {}  # signature -> Compiled


def _compile(sig, device=False) -> Compiled:
    spec = build_spec(sig)
    if "fusion" in debug:
        print(f"[jitgrad fusion] new kernel for {len(sig[1])} nodes: reads "
              f"{len(spec.loop.arrays)} array(s), writes {len(spec.loop.outputs)}; results read "
              f"from saved arrays: {list(spec.loads)}, recomputed: {list(spec.recomputes)}",
              file=sys.stderr)
    module = None
    if spec.loop.outputs and not device:
        module = cpu.module_for(("fused", sig), lambda: spec.loop)
    c = compiled[sig] = Compiled(spec, module)
    return c


def _flat(a, shape, dt):
    if a.__class__ is not np.ndarray:
        return a.flat(shape, dt)
    if a.dtype != dt:
        a = a.astype(dt)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a).reshape(-1)


def _layout(gd, g_kind, arrays, spec, shape):
    """``(perm, strides, kernel shape, flatten)``: the gradients' layout as the members' own
    VJP launches give it (ops/elementwise_call.py: TensorIterator's over the incoming gradient
    and the saved operands), the kernel run in its dim order."""
    from ..ops.elementwise_operands import _permuted, arrays_layout
    data = [arrays[k][0] for k in spec.array_ks]
    if g_kind == "a":
        data.insert(0, gd)
    perm, strides = arrays_layout(data, shape, bool(spec.scalar_ks))
    if perm is None:
        return None, None, shape, _flat
    return perm, strides, tuple(shape[p] for p in perm), _permuted(_flat, perm)


def _viewed_back(o, perm, strides, restrided):
    """A gradient buffer computed in ``perm``'s dim order, viewed in the tensor's
    (``restrided``: the host's or the device's, as ``ElementwiseNode._launch_vjp`` takes it)."""
    if perm is None:
        return o
    from ..ops.elementwise_operands import _inverse
    o = o.transpose(_inverse(perm))
    return o if strides is None else restrided(o, strides)


_rc = sys.getrefcount


def _g_sole(g) -> bool:
    """Would the engine add into the incoming gradient in place (``engine._add_in_place`` /
    ``_sum_version``) were it in a member's buffer: nothing outside the pass holds it, and it
    is dense. Read as ``apply`` starts; references then: the engine's buffer dict and
    ``grads`` list, this parameter, getrefcount's argument; to its array: ``g._data``, the
    local ``d``, getrefcount's argument."""
    if not _COUNTS_KNOWN:
        return True  # (the engine then counts every sum as an in-place add)
    if _rc(g) != 4:
        return False
    d = g._data
    return d.__class__ is not np.ndarray or (_rc(d) == 3 and _dense_bytes(d))


def _leaf_copy(t, variable, hold):
    """What the leaf's AccumulateGrad would make of ``t`` held elsewhere: a copy laid out by
    clone_obey_contract, with its version, which the leaf then adopts. A leaf with hooks
    (they must see ``t`` itself) gets ``t``, which the fused node keeps referenced (``hold``)
    so that the leaf copies it; one with a ``.grad`` to add into gets ``t``, and so does one
    of another shape or dtype (the engine sums or casts ``t`` into a new tensor for it)."""
    d, v = t._data, variable._data
    if (variable._grad is not None or not variable._requires_grad or d.shape != v.shape
            or d.dtype != v.dtype):
        return t
    if variable._hooks:
        hold.append(t)
        return t
    c = Tensor._make(_leaf_layout_copy(t, variable), False)
    c._vc.value = _copy_version(variable)
    return c


def _handed_on(spec, g, sole, outs, perm, strides, restrided, edges) -> list:
    """The gradients the fused node sends on its edges: the objects the unfused engine would
    hand on (handoff.py): the incoming Tensor itself, or one Tensor per kernel output, shared
    by the edges that would get one tensor, with that tensor's version."""
    result = [None] * len(edges)
    for o, ks, (v, (from_g, v_sole)) in zip(outs, spec.out_groups, spec.out_versions):
        t = Tensor._make(_viewed_back(o, perm, strides, restrided))
        if sole:
            v = v_sole + (g._vc.value if from_g else 0)
        if v:
            t._vc.value = v
        for k in ks:
            result[k] = t
    for k in spec.handed:
        result[k] = g
    hold = []
    for k in spec.held:
        result[k] = _leaf_copy(result[k], edges[k][0].variable, hold)
    return result, hold


class FusedBackward(Node):
    """Stands in for a group's head: computes every gradient leaving the group in one kernel."""

    # _held: gradients kept referenced while their hooked leaf runs (``_leaf_copy``)
    __slots__ = ("group", "_sig", "eager", "_held")

    def __init__(self, group, eager=()):
        super().__init__(group.edges, group.metas)
        self.group = group
        self.eager = eager  # per edge: an AccumulateGrad only it feeds (handoff.py)
        self._held = None

    def name(self) -> str:
        return "FusedBackward"

    def __repr__(self):
        return f"<FusedBackward of {self.group.describe()}>"

    def apply(self, grads):
        group = self.group
        n_slots = len(group.edges)
        if not grads or grads[0] is None:
            return [None] * n_slots
        sole = _g_sole(grads[0])  # (before any local holds it)
        g = grads[0]
        head = group.members[0]
        shape = head.shape
        cnp = head.ct.np
        n = 1
        for d in shape:
            n *= d
        members_sig, arrays, scalars = gather(group, n, cnp)
        gd = g._data
        if _scalarizable(gd, n):
            g_kind = "s"
            gval = cnp.type(gd.reshape(-1)[0] if gd.size == 1 else gd.ravel()[0])
        else:
            g_kind = "a"
        sig = (g_kind, members_sig, tuple(group.wanted), self.eager)
        on_device = gd.__class__ is not np.ndarray
        c = compiled.get(sig)
        if c is None:
            c = _compile(sig, on_device)
        spec = c.spec
        perm, strides, kshape, flat = _layout(gd, g_kind, arrays, spec, shape)
        if g_kind == "a":
            gval = flat(gd, kshape, cnp)
        if on_device:
            self._sig = sig
            return self._apply_device(c, n, kshape, cnp, g, sole, gval, arrays, scalars,
                                      n_slots, flat, perm, strides)
        if c.module is None and spec.loop.outputs:
            c.module = cpu.module_for(("fused", sig), lambda: spec.loop)
        stats.fused_groups += 1
        stats.fused_nodes += len(group.members)
        outs = [cpu.empty(kshape, cnp) for _ in spec.out_edges]
        if n:
            args = [gval] if g_kind == "a" and spec.loop.arrays[:1] == ("g",) else []
            for k in spec.array_ks:
                data, dt = arrays[k]
                args.append(flat(data, kshape, dt))
            if g_kind == "s" and spec.loop.scalars[:1] == ("g",):
                args.append(gval)
            for k in spec.scalar_ks:
                args.append(scalars[k])
            for o in outs:
                args.append(o.reshape(-1))
            if outs:
                cpu.launch(c.module, n, args)
        from ..ops.elementwise_operands import _restrided as restrided
        result, self._held = _handed_on(spec, g, sole, outs, perm, strides, restrided,
                                        self.group.edges)
        return result

    def _apply_device(self, c, n, shape, cnp, g, sole, gval, arrays, scalars, n_slots, flat,
                      perm, strides):
        """The fused group on CUDA: the same LoopSpec through ``backends.cuda`` (one launch)."""
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        spec = c.spec
        stats.fused_groups += 1
        stats.fused_nodes += len(self.group.members)
        if spec.out_edges and c.dmodule is None:
            c.dmodule = B.module_for(("fused", self._sig), lambda: spec.loop)
        outs = [CudaArray.empty(shape, cnp) for _ in spec.out_edges]
        if n and outs:
            args = [gval] if spec.loop.arrays[:1] == ("g",) else []
            for k in spec.array_ks:
                data, dt = arrays[k]
                args.append(flat(data, shape, dt))
            for k in spec.scalar_ks:
                args.append(scalars[k])
            for o in outs:
                args.append(o.buf)
            B.launch(c.dmodule, n, args)
        from ..ops.elementwise_operands import _device_restrided as restrided
        result, self._held = _handed_on(spec, g, sole, outs, perm, strides, restrided,
                                        self.group.edges)
        return result

    def release(self) -> None:
        super().release()
        self._held = None
        for m in self.group.members:
            m.release()
