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
from itertools import chain
from operator import attrgetter, itemgetter

from .. import _dtype as D
from ..autograd import saved_hooks as _saved_hooks

__all__ = ["Group", "plan", "plan_fresh", "MAX_GROUP"]

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
    """Groups of two or more nodes for the pass ``task`` (after discovery, before execution).

    A training loop backpropagates through the same graph shape pass after pass, so the plan
    is remembered under a key describing everything ``plan_fresh`` reads (see ``_shape_key``),
    with nodes replaced by their positions in ``task.order``; a hit rebuilds the groups from
    those positions. Passes the key does not cover are planned fresh every time."""
    global _cached_nodes
    keyed = _shape_key(task, max_size)
    if keyed is None:
        return plan_fresh(task, max_size)
    key, pos = keyed
    try:
        cached = _plans.get(key)
    except TypeError:  # a value in the key that does not hash
        return plan_fresh(task, max_size)
    order = task.order
    if cached is None:
        groups = plan_fresh(task, max_size)
        size = len(key[3])
        if size > _MAX_CACHED_NODES:
            return groups  # a key this large would hold more memory than planning costs
        if len(_plans) >= _MAX_PLANS or _cached_nodes + size > _MAX_CACHED_NODES:
            _plans.clear()  # (a loop over ever new shapes: varying lengths, say)
            _cached_nodes = 0
        _cached_nodes += size
        # positions only: the cache keeps no node (nor anything a node keeps) alive
        _plans[key] = tuple(
            (tuple(pos[m] for m in g.members), tuple(g.routes),
             tuple((pos[c], nr) for c, nr in g.edges), tuple(g.metas), tuple(g.counts),
             tuple(g.wanted)) for g in groups)
        return groups
    out = []
    for members, routes, edges, metas, counts, wanted in cached:
        g = Group([order[i] for i in members], list(routes),
                  [(order[i], nr) for i, nr in edges], list(metas), list(counts), list(wanted))
        out.append(g)
    return out


_plans: dict = {}  # shape key -> per group (member positions, routes, edges by position, ...)
_MAX_PLANS = 256
# candidates over all cached keys (each costs some hundred bytes of key)
_MAX_CACHED_NODES = 1 << 17
_cached_nodes = 0
_NEXT = attrgetter("next_functions")
_OBSERVERS = attrgetter("_hooks", "_retained", "_pre_hooks")
_NO_OBSERVERS = (None, None, None)
# what plan_fresh and _route read of a candidate, all hashable values
_CAND_FIELDS = attrgetter("ct", "shape", "_input_meta", "needs")
_CHILD = itemgetter(0)
_NR = itemgetter(1)


def _shape_key(task, max_size):
    """(key, node -> position map): a hashable description of the pass with nodes as positions
    in ``task.order``, or None where the pass is not cached (hooks, retain_grad, captures,
    packed saved tensors; a value that does not hash: ``plan`` finds that out). Two passes
    with equal keys get equal plans from ``plan_fresh``: it covers every candidate's dtype,
    shape, input metas, needs, incoming edge count and root status, and every candidate's
    edges (child position and output number); which positions are candidates (elementwise
    nodes) is part of it too. Nothing else of a node is read by ``plan_fresh``/``_route`` once
    hooks, retain_grad, captures and ``needed`` are ruled out."""
    if task.capture or task.needed is not None:
        return None
    order = task.order
    EW = _elementwise_node_class()
    cands = [n for n in order if isinstance(n, EW)]
    if len(cands) < 2:
        return None
    # once pack hooks were used in this process (checkpointing, saved_tensors_hooks) a node
    # may hold packed tensors, which plan_fresh leaves out: only such passes skip the cache
    if _saved_hooks.used[0] and any(map(_packed, cands)):
        return None
    # (every node starts with None for each; an emptied hook list also sends the pass to
    # plan_fresh, which is safe)
    if list(map(_OBSERVERS, cands)).count(_NO_OBSERVERS) != len(cands):
        return None
    cands.sort(key=_SEQ, reverse=True)
    pos = dict(zip(order, range(len(order))))
    nexts = list(map(_NEXT, cands))
    try:
        edges = list(chain.from_iterable(nexts))
        children = tuple(map(pos.get, map(_CHILD, edges)))
        nrs = tuple(map(_NR, edges))
    except TypeError:  # an edge that is None rather than (None, 0)
        return None
    roots = task.buffers
    key = (max_size, len(order), tuple(map(pos.__getitem__, cands)),
           tuple(map(_CAND_FIELDS, cands)), tuple(map(task.deps.__getitem__, cands)),
           tuple(map(roots.__contains__, cands)), tuple(map(len, nexts)), children, nrs)
    return key, pos


def plan_fresh(task, max_size: int = MAX_GROUP) -> list:
    """``plan`` without the cache."""
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
    # (This loop runs per backward pass over every elementwise node: written for speed, so
    # attribute and method lookups are hoisted, and the per-edge test checks the cheapest
    # conditions first.)
    cands.sort(key=_SEQ, reverse=True)
    seen = {}
    seen_get = seen.get
    groups = []
    f16 = D.float16
    for c in cands:
        # float16 nodes run one by one, each rounding its gradient to float16 as PyTorch's do
        # (and Numba's CPU target cannot type float16 arithmetic in a fused kernel)
        ct = c.ct
        if c._hooks or ct is None or ct is f16 or (needed is not None and c not in needed):
            continue
        info = seen_get(c)
        if (info is not None and info[2] and info[1] == deps[c] and c not in roots
                and c not in captured and not _observed(c)
                and len(info[0].members) < max_size):
            g = info[0]
            g.members.append(c)
        else:
            g = Group([c])
            groups.append(g)
        shape, metas = c.shape, c._input_meta
        slot = -1
        for edge in c.next_functions:
            slot += 1
            if edge is None:
                continue
            child = edge[0]
            if child is None or not isinstance(child, EW):
                continue
            meta = metas[slot]
            ok = (meta is not None and child.ct is ct and child.shape == shape
                  and meta[1] is ct and tuple(meta[0]) == shape)
            info = seen_get(child)
            if info is None:
                seen[child] = [g, 1, ok]
            elif info[0] is g:
                info[1] += 1
                if not ok:
                    info[2] = False
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


_SEQ = attrgetter("_seq")


def _route(g: Group, needed, captured) -> None:
    index = {m: j for j, m in enumerate(g.members)}
    index_get = index.get
    dest = {}
    edges, metas_out, counts, wanted, routes = g.edges, g.metas, g.counts, g.wanted, g.routes
    for m in g.members:
        r = []
        needs = m.needs
        metas = m._input_meta
        slot = -1
        for edge in m.next_functions:
            slot += 1
            child = None if edge is None else edge[0]
            if child is None or not needs[slot]:
                r.append(None)
                continue
            j = index_get(child)
            if j is not None:
                r.append(("m", j))
                continue
            key = (child, edge[1])
            meta = metas[slot]
            k = dest.get(key)
            if k is None or metas_out[k] != meta:
                k = len(edges)
                dest[key] = k
                edges.append(key)
                metas_out.append(meta)
                counts.append(0)
                # a capture target's own node does not run, but its gradient is wanted
                wanted.append(needed is None or child in needed or child in captured)
            counts[k] += 1
            r.append(("e", k))
        routes.append(tuple(r))
