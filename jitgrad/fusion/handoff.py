"""Which Tensor each gradient leaving a fused group is: the objects the unfused engine hands on.

PyTorch's formula for AddBackward0's inputs, SubBackward0's ``self`` (every VJP declared
``return g``) is the incoming gradient itself: the engine passes that one Tensor on, and its
buffers add a later gradient into it in place when nothing else holds it, else out of place
(InputBuffer::accumulate; ``engine._add_in_place``/``_sum_version``). So which leaves' ``.grad``
are one tensor, which are stolen or copied, and their ``_version`` depend on those objects. A
fused group computes its values in registers; ``replay`` reruns the group's share of the unfused
pass on symbolic tensors (members in group order, which is the order they would run: each is
the highest-sequence node whose gradients are all in), so the fused node can hand out the same
objects:

* an edge whose gradient is the group's incoming Tensor, unchanged, gets that Tensor;
* edges that would receive one same Tensor get one kernel output, shared;
* every output carries the version that tensor would have (one bump per in-place add);
* a leaf this group alone feeds (``eager``: its AccumulateGrad runs as soon as its gradient is
  complete, before the next member) copies rather than steals a gradient that a member's buffer
  still holds then (``held``): the fused node hands it that copy, made as AccumulateGrad makes
  it (clone_obey_contract), which it then adopts.

Whether the incoming gradient ``G`` may be added into in place is known only at run time (a
user's ``grad_tensors``, a hook, an expanded ``sum()`` gradient keep it from that), so the
replay runs for both answers. Modelled: the group's members and the buffers of its leaving
edges; not modelled: a node outside the group that would run between two members (an
``AccumulateGrad`` completed early), which could drop a reference earlier than here.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Handoff", "replay"]


@dataclass(frozen=True)
class Handoff:
    handed: tuple  # edges that get the incoming gradient Tensor itself
    held: tuple  # eager edges whose tensor only a member still holds when their leaf runs
    shared: tuple  # per distinct computed tensor: the edges that get it (first: the one computed)
    # per entry of ``shared``: (version when G is not added into, (G's version added?, version
    # when it is)): a tensor that is G added into in place carries G's version plus the adds
    versions: tuple


_G = 0  # the symbolic id of the incoming gradient


def _run(members, passes, g_sole, eager, left):
    """Symbolic tensors: ids with a version and a holder count (buffers and the output slots
    of the node being routed, as the engine's lists hold them). Returns (edge -> tensor id,
    versions, ids modified in place, eager edges whose tensor was held elsewhere)."""
    left = list(left)
    held_at_run = set()
    ver = [0]
    held = [1]  # G: the head's buffer
    changed = set()
    mbuf = {0: _G}
    ebuf = {}

    def new():
        ver.append(0)
        held.append(0)
        return len(ver) - 1

    def put(buf, key, t):
        prev = buf.get(key)
        if prev is None:
            buf[key] = t
            held[t] += 1
        elif prev != t and held[prev] == 1 and (prev != _G or g_sole):
            ver[prev] += 1  # added in place: only this buffer holds it
            changed.add(prev)
        else:  # the same tensor twice (x + x), or held elsewhere: a new sum
            held[prev] -= 1
            s = new()
            held[s] = 1
            buf[key] = s

    for j, (routes, ps) in enumerate(zip(members, passes)):
        x = mbuf.pop(j, None)
        if x is None:
            continue
        held[x] -= 1  # the node consumes its buffer before routing
        vals = []
        for r, p in zip(routes, ps):
            t = None
            if r is not None:
                t = x if p else new()
                held[t] += 1
            vals.append(t)
        done = []
        for r, t in zip(routes, vals):
            if r is not None:
                held[t] -= 1
                put(mbuf if r[0] == "m" else ebuf, r[1], t)
                if r[0] == "e":
                    left[r[1]] -= 1
                    if not left[r[1]] and r[1] < len(eager) and eager[r[1]]:
                        done.append(r[1])
        for k in done:  # those leaves run now, in the order they became ready
            t = ebuf[k]
            in_members = sum(1 for v in mbuf.values() if v == t)
            if in_members and held[t] == in_members + 1:
                # only a member's buffer (no other leaving edge, as the fused node's results
                # are) keeps the leaf from stealing it
                held_at_run.add(k)
            held[t] -= 1
    return ebuf, ver, changed, held_at_run


def replay(routes, passes, n_edges, eager=()) -> Handoff:
    """``routes`` per member (the signature's), ``passes`` per member per input slot: is that
    input's VJP the incoming gradient itself; ``eager`` per edge: its node is an
    AccumulateGrad that only this edge feeds."""
    left = [0] * n_edges
    for rs in routes:
        for r in rs:
            if r is not None and r[0] == "e":
                left[r[1]] += 1
    ebuf, ver, _, held_at_run = _run(routes, passes, False, eager, left)
    ebuf1, ver1, changed1, _ = _run(routes, passes, True, eager, left)
    handed = []
    by_tensor = {}
    for k in range(n_edges):
        t = ebuf.get(k)
        if t is None:
            continue
        if t == _G:
            handed.append(k)
        else:
            by_tensor.setdefault(t, []).append(k)
    shared, versions = [], []
    for t, ks in by_tensor.items():
        t1 = ebuf1.get(ks[0])
        shared.append(tuple(ks))
        versions.append((ver[t], (t1 == _G and _G in changed1, ver1[t1])))
    return Handoff(tuple(handed), tuple(sorted(held_at_run)), tuple(shared), tuple(versions))
