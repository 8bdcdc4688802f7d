"""The fusion planner: which elementwise VJP nodes of a backward pass run as one kernel.

Pure Python over the graph the engine discovered (a ``GraphTask``): nothing is compiled or
launched here, so the planner is tested on hand-built graphs.

A *group* is a connected set of ``ElementwiseNode`` s with one entry, its *head*: the only member
that receives a gradient from outside the group. Every other member is *interior*: all of the
edges bringing it a gradient come from members of the same group, so its gradient never has to
exist as an array; it is a register value inside the fused kernel. Chains, trees and diamonds
(``y*y``, ``y + sin(y)``) whose fan-in stays inside the group qualify. An edge may join two
members only when it carries a gradient of the same shape and compute dtype on both sides (no
broadcast: broadcasting is undone by the engine, outside kernels). A node is never interior
when something must observe its incoming gradient: a tensor hook (``register_hook``),
``retain_grad``, an ``inputs=``/``autograd.grad`` capture, or being a root of the pass; such a
node may still head a group, since the engine runs those observers on the head's buffer before
the group's kernel. A node with post-hooks (``grad_fn.register_hook``) is never fused at all.
Reductions, matmul, views, custom Functions and every other node type end a group.

Gradients flowing out of a group are merged per destination ``(node, output_nr)``: ``x`` in
``x*a + x`` receives one gradient, summed inside the kernel, through one edge of the fused node.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import _dtype as D
from ..autograd import saved_hooks as _saved_hooks

__all__ = ["Group", "plan", "MAX_GROUP"]

# Upper bound on nodes per group: kernel source (and Numba compile time) grows with the group.
MAX_GROUP = 128


@dataclass(eq=False)
class Group:
    """One fused unit. ``members[0]`` is the head; members are in topological order (every
    member comes after all members that send it a gradient)."""

    members: list
    # per member, per input slot: None (no gradient), ("m", j) (to member j) or ("e", k)
    routes: list = field(default_factory=list)
    edges: list = field(default_factory=list)  # leaving edges (node, output_nr), one per target
    metas: list = field(default_factory=list)  # the engine's (shape, dtype) per leaving edge
    counts: list = field(default_factory=list)  # how many member slots feed each leaving edge
    wanted: list = field(default_factory=list)  # False: the pass never uses that gradient

    @property
    def head(self):
        return self.members[0]

    def describe(self) -> str:
        names = " <- ".join(m.name() for m in self.members)
        outs = ", ".join(f"{type(c).__name__}[{nr}]" + ("" if w else " (unused)")
                         for (c, nr), w in zip(self.edges, self.wanted))
        return f"{len(self.members)} nodes: {names}; gradients out to: {outs or '-'}"


def _elementwise_node_class():
    from ..ops.elementwise_call import ElementwiseNode
    return ElementwiseNode


def _observed(node) -> bool:
    """True when something reads the gradient arriving at ``node`` (so it must exist)."""
    if node._retained:
        return True
    ph = node._pre_hooks
    return bool(ph) and any(ph.values())


def plan(task, max_size: int = MAX_GROUP) -> list:
    """Groups of two or more nodes for the pass ``task`` (after discovery, before execution)."""
    EW = _elementwise_node_class()
    cands = [n for n in task.order if isinstance(n, EW)]
    if _saved_hooks.used[0]:
        # a node whose saved tensors went through pack hooks unpacks them itself, one by one,
        # as it runs (the fused kernel reads saved arrays directly)
        cands = [n for n in cands if not _packed(n)]
    if len(cands) < 2:
        return []
    needed = task.needed
    deps = task.deps
    # at plan time the engine's buffers hold exactly the roots' incoming gradients
    roots = task.buffers
    captured = {node for node, _ in task.capture} if task.capture else ()

    # Parents before children (a node is created after the nodes of its inputs). ``seen[c]``
    # tracks the edges into c coming from grouped nodes: [group, count, all edges fusable];
    # c may join that group only if those are all of its incoming edges (deps[c]).
    cands.sort(key=_neg_seq)
    group_of = {}
    seen = {}
    groups = []
    for c in cands:
        # float16 nodes run one by one, each rounding its gradient to float16 as PyTorch's do
        # (and Numba's CPU target cannot type float16 arithmetic in a fused kernel)
        if c._hooks or c.ct is None or c.ct is D.float16 or (
                needed is not None and c not in needed):
            continue
        g = None
        info = seen.get(c)
        if (info is not None and info[2] and info[1] == deps[c] and c not in roots
                and c not in captured and not _observed(c)
                and len(info[0].members) < max_size):
            g = info[0]
            g.members.append(c)
        else:
            g = Group([c])
            groups.append(g)
        group_of[c] = g
        ct, shape, metas = c.ct, c.shape, c._input_meta
        for slot, edge in enumerate(c.next_functions):
            if edge is None:
                continue
            child = edge[0]
            if child is None or not isinstance(child, EW):
                continue
            meta = metas[slot]
            ok = (meta is not None and child.ct == ct and child.shape == shape
                  and tuple(meta[0]) == shape and meta[1] == ct)
            info = seen.get(child)
            if info is None:
                seen[child] = [g, 1, ok]
            elif info[0] is g:
                info[1] += 1
                info[2] = info[2] and ok
            else:
                info[2] = False

    out = []
    for g in groups:
        if len(g.members) >= 2:
            _route(g, needed, captured)
            out.append(g)
    return out


def _packed(node) -> bool:
    return any(getattr(s, "data", 0) is None for s in node.saved.values())


def _neg_seq(n):
    return -n._seq


def _route(g: Group, needed, captured) -> None:
    index = {m: j for j, m in enumerate(g.members)}
    dest = {}
    for m in g.members:
        r = []
        needs = m.needs
        metas = m._input_meta
        for slot, edge in enumerate(m.next_functions):
            child = None if edge is None else edge[0]
            if child is None or not needs[slot]:
                r.append(None)
                continue
            j = index.get(child)
            if j is not None:
                r.append(("m", j))
                continue
            key = (child, edge[1])
            meta = metas[slot]
            k = dest.get(key)
            if k is None or g.metas[k] != meta:
                k = len(g.edges)
                dest[key] = k
                g.edges.append(key)
                g.metas.append(meta)
                g.counts.append(0)
                # a capture target's own node does not run, but its gradient is wanted
                g.wanted.append(needed is None or child in needed or child in captured)
            g.counts[k] += 1
            r.append(("e", k))
        g.routes.append(tuple(r))
