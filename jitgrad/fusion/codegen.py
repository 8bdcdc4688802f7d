"""Codegen for fused groups: a group's signature -> one ``LoopSpec`` (pure: no graph, no Numba).

The input is a *signature*, a hashable description of a group that the fused node builds from
the graph at run time (``node.gather``)::

    (g_kind, members, wanted, eager)
    g_kind   "a": the head's incoming gradient is an array; "s": a broadcast scalar
    members  per member, in topological order (head first):
             (op name, routes, operands, out)
             routes    per input slot: None | ("m", j) gradient to member j | ("e", k) out edge k
             operands  per parameter of the op's forward ``f``: where its value comes from:
                       ("m", j) member j's forward result, ("a", k) saved array k,
                       ("s", k) scalar k, None unknown (not saved by anyone)
             out       index of a saved array holding this member's result, or None
    wanted   per leaving edge: does the pass use that gradient
    eager    per leaving edge: an AccumulateGrad only it feeds (handoff.py; may be left out)

The output is a ``LoopSpec`` whose statements call the registry's scalar functions (the same
declarations the per-op kernels come from): forward ``f`` bodies to recompute intermediates,
``d<input>`` bodies for the VJPs, and ``add.f`` to sum gradients that meet. Any target renders
it (``loops.render_cpu`` today; a CUDA renderer takes the same spec).

Recompute or read? A VJP needs forward values (``out``, inputs). A value that is the result of a
member can be read from the array some node saved, or recomputed from that member's own
operands. We recompute when it moves fewer bytes: the member's forward is cheap (no
transcendental: see ``EXPENSIVE``) and every operand it needs is already available without
reading a new array (a scalar, an array the kernel reads anyway, or another recomputable
member). Otherwise we read the saved array. Transcendentals are never recomputed: here a libm
``tanh``/``exp`` costs far more per element than reading 4-8 bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..backends import vml
from ..codegen.loops import LoopSpec, Stmt
from ..ops.registry import OPS
from .handoff import replay

__all__ = ["FusedSpec", "build_spec", "EXPENSIVE", "is_cheap"]

# Vocabulary calls that make a forward too expensive to recompute instead of reading its result.
EXPENSIVE = frozenset({"exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
                       "sigmoid", "softplus", "erf", "pow_", "asin", "acos", "atan", "fmod"})

_cheap = {}


def is_cheap(op_name: str) -> bool:
    r = _cheap.get(op_name)
    if r is None:
        names = set(OPS[op_name].f.fn.__code__.co_names)
        # an op whose eager forward is MKL VML (backends/vml.py) is read, never recomputed: our
        # kernel's value can differ from VML's in the last bit (abs/trunc are exact either way)
        r = _cheap[op_name] = not (names & EXPENSIVE) and (
            op_name not in vml.ROUTED or op_name in ("abs", "trunc"))
    return r


@dataclass(frozen=True)
class FusedSpec:
    loop: LoopSpec
    array_ks: tuple  # saved-array indices passed after ``g``, in LoopSpec.arrays order
    scalar_ks: tuple  # scalar indices, in LoopSpec.scalars order (after ``g`` if scalar)
    out_edges: tuple  # leaving-edge index of each LoopSpec output
    loads: tuple  # members whose result is read from a saved array (for debugging)
    recomputes: tuple  # members whose result is recomputed in the kernel
    # (handoff.py) per LoopSpec output: the wanted edges that get that one Tensor, and its
    # version (when G is not / is added into in place); edges that get the incoming gradient
    out_groups: tuple = ()
    out_versions: tuple = ()
    handed: tuple = ()
    held: tuple = ()  # edges whose Tensor the fused node keeps referenced (a member would)


def build_spec(sig) -> FusedSpec:
    from ..ops.elementwise_call import _passes_gradient
    g_kind, members, all_wanted = sig[:3]
    eager = sig[3] if len(sig) > 3 else ()
    nm = len(members)
    ops = [OPS[m[0]] for m in members]

    # ---- which Tensor each leaving edge is (handoff.py): the kernel computes one output per
    # distinct tensor (its first wanted edge) and none for edges that get the incoming one
    hand = replay([m[1] for m in members], [_passes_gradient(op) for op in ops],
                  len(all_wanted), eager)
    wanted = [False] * len(all_wanted)
    groups, versions = [], []
    for ks, v in zip(hand.shared, hand.versions):
        ks = tuple(k for k in ks if all_wanted[k])
        if ks:
            wanted[ks[0]] = True
            groups.append(ks)
            versions.append(v)
    handed = tuple(k for k in hand.handed if all_wanted[k])
    held = tuple(k for k in hand.held if all_wanted[k])

    # ---- liveness: which members' gradients reach a wanted leaving edge (children first)
    live = [False] * nm
    for j in range(nm - 1, -1, -1):
        for r in members[j][1]:
            if r is not None and (wanted[r[1]] if r[0] == "e" else live[r[1]]):
                live[j] = True
                break

    def slot_live(r):
        return r is not None and (wanted[r[1]] if r[0] == "e" else live[r[1]])

    # ---- values the live VJPs read
    def operand_map(j):
        op = ops[j]
        d = dict(zip(op.f.params, members[j][2]))
        d["out"] = ("m", j)
        return d

    opmaps = [operand_map(j) for j in range(nm)]
    must_arrays = set()
    need_member = set()
    for j in range(nm):
        if not live[j]:
            continue
        op = ops[j]
        for slot, r in enumerate(members[j][1]):
            if not slot_live(r):
                continue
            for p in op.vjp[op.inputs[slot]].params[1:]:
                desc = opmaps[j][p]
                if desc is None:
                    raise AssertionError(f"fusion: {op.name}.d{op.inputs[slot]} reads {p!r}, "
                                         "which no node saved")
                if desc[0] == "a":
                    must_arrays.add(desc[1])
                elif desc[0] == "m":
                    need_member.add(desc[1])

    # ---- recompute or read each member's result (children first: they come later in order)
    loaded = set(must_arrays)
    how = [None] * nm  # "load" | "recompute" | None (unavailable)
    for j in range(nm - 1, -1, -1):
        out_k = members[j][3]
        if out_k is not None and out_k in loaded:
            how[j] = "load"
            continue
        if is_cheap(ops[j].name) and all(
                d is not None and (d[0] == "s" or (d[0] == "a" and d[1] in loaded)
                                   or (d[0] == "m" and how[d[1]] is not None))
                for d in members[j][2]):
            how[j] = "recompute"
        elif j in need_member:
            if out_k is None:
                raise AssertionError(f"fusion: the result of member {j} ({ops[j].name}) is "
                                     "needed but neither saved nor recomputable")
            loaded.add(out_k)
            how[j] = "load"

    # members actually evaluated: needed ones plus what their recomputation reads
    used = set()
    stack = list(need_member)
    while stack:
        j = stack.pop()
        if j in used:
            continue
        used.add(j)
        if how[j] == "recompute":
            for d in members[j][2]:
                if d[0] == "m":
                    stack.append(d[1])

    def value(desc):
        kind, k = desc
        if kind == "a":
            return f"x{k}"
        if kind == "s":
            return f"s{k}"
        return f"x{members[k][3]}" if how[k] == "load" else f"v{k}"

    stmts = []
    add = OPS["add"].f
    for j in range(nm - 1, -1, -1):
        if j in used and how[j] == "recompute":
            op = ops[j]
            stmts.append(Stmt(f"v{j}", op.f, tuple(value(d) for d in members[j][2])))

    # ---- gradients, head first; contributions meeting at a member or an edge are summed
    into_member = {0: ["g"]}
    into_edge = {}

    def total(parts, name):
        acc = parts[0]
        for i, p in enumerate(parts[1:]):
            t = f"{name}_{i}"
            stmts.append(Stmt(t, add, (acc, p)))
            acc = t
        return acc

    for j in range(nm):
        if not live[j]:
            continue
        gj = total(into_member[j], f"g{j}")
        op = ops[j]
        for slot, r in enumerate(members[j][1]):
            if not slot_live(r):
                continue
            fn = op.vjp[op.inputs[slot]]
            args = tuple(gj if p == "g" else value(opmaps[j][p]) for p in fn.params)
            t = f"d{j}_{slot}"
            stmts.append(Stmt(t, fn, args))
            (into_edge if r[0] == "e" else into_member).setdefault(r[1], []).append(t)

    outputs, out_edges, out_groups, out_versions = [], [], [], []
    for ks, v in sorted(zip(groups, versions)):
        k = ks[0]
        outputs.append((f"r{k}", total(into_edge[k], f"r{k}")))
        out_edges.append(k)
        out_groups.append(ks)
        out_versions.append(v)

    # ---- kernel parameters: only what the statements read
    read = set()
    for s in stmts:
        read.update(s.args)
    read.update(v for _, v in outputs)
    array_ks = tuple(sorted(int(v[1:]) for v in read if v[0] == "x"))
    scalar_ks = tuple(sorted(int(v[1:]) for v in read if v[0] == "s"))
    g_read = "g" in read
    arrays = (("g",) if g_read and g_kind == "a" else ()) + tuple(f"x{k}" for k in array_ks)
    scalars = (("g",) if g_read and g_kind == "s" else ()) + tuple(f"s{k}" for k in scalar_ks)
    loop = LoopSpec(arrays, scalars, tuple(stmts), tuple(outputs))
    return FusedSpec(loop, array_ks, scalar_ks, tuple(out_edges),
                     tuple(j for j in sorted(used) if how[j] == "load"),
                     tuple(j for j in sorted(used) if how[j] == "recompute"),
                     tuple(out_groups), tuple(out_versions), handed, held)
