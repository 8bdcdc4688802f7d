"""The backward engine: graph discovery, ready-queue execution, backward() and grad().

No recursion anywhere (a 100,000-node chain backprops fine) and no Numba here: nodes launch their
own kernels. The engine is the one place where gradients are summed back to each input's shape
and cast to its dtype (``_fit``), so no VJP has to think about broadcasting.

Execution order is PyTorch's: among ready nodes, the most recently created runs first, and
AccumulateGrad nodes run as soon as they are ready. ``plan_hook`` lets the fusion planner rewrite
the part of the graph about to run before anything is launched.

Around it: ``backward_args`` (checks on backward()/grad() arguments), ``engine_hooks`` (the
hooks a pass calls and the checks on their results), ``accumulate_grad`` (what a leaf's
AccumulateGrad does: adopt or copy, then add).
"""
from __future__ import annotations

import heapq
import itertools
import sys

import numpy as np

from . import anomaly_mode as _anomaly
from . import grad_mode
from .accumulate_grad import _dense_bytes, _user_ids, _user_storage, accumulate_into_leaf
from .backward_args import _as_tuple, _input_edge, _inputs_tuple, _make_grads, _root_edges
from .engine_hooks import (
    _leaf_hooks,
    _node_post_hooks,
    _node_pre_hooks,
    _owned_copy,
    _tensor_pre_hooks,
)
from .node import AccumulateGrad

__all__ = ["backward", "grad", "accumulate_into_leaf"]

# Set by jitgrad.fusion: plan_hook(task) may map a group's head node to a fused node in
# task.substitute. The fused node's next_functions/_input_meta are the edges leaving the group;
# its release() frees the saved tensors of every node it absorbed.
plan_hook = None


class GraphTask:
    """One backward pass: discovered nodes, dependency counts, buffers, captures."""

    __slots__ = ("deps", "children", "order", "buffers", "capture", "needed", "create_graph",
                 "accumulate", "executed", "substitute")

    def __init__(self, create_graph, accumulate):
        self.deps = {}
        self.children = {}
        self.order = []  # discovery order
        self.buffers = {}
        self.capture = None  # {(node, nr): index}
        self.needed = None  # set of nodes on a path to a captured edge, or None for all
        self.create_graph = create_graph
        self.accumulate = accumulate
        self.executed = []
        self.substitute = {}  # group head -> fused node computing the whole group (fusion)


def _discover(task: GraphTask, roots) -> None:
    deps, children = task.deps, task.children
    stack = []
    for node in roots:
        if node not in children:
            children[node] = None
            stack.append(node)
            deps.setdefault(node, 0)
    while stack:
        node = stack.pop()
        task.order.append(node)
        kids = []
        for edge in node.next_functions:
            if edge is None:
                continue
            child = edge[0]
            if child is None:
                continue
            kids.append(child)
            deps[child] = deps.get(child, 0) + 1
            if child not in children:
                children[child] = None
                stack.append(child)
        children[node] = kids


def _mark_needed(task: GraphTask, targets) -> None:
    """Nodes from which a target is reachable (reverse topological sweep, no recursion)."""
    deps = dict(task.deps)
    for n in task.order:
        deps.setdefault(n, 0)
    ready = [n for n in task.order if deps[n] == 0]
    topo = []
    while ready:
        n = ready.pop()
        topo.append(n)
        for c in task.children[n]:
            deps[c] -= 1
            if deps[c] == 0:
                ready.append(c)
    # autograd.grad: a node runs only if a target lies strictly below it (a target's own node is
    # where its gradient is captured; PyTorch does not execute it). backward(inputs=...): the
    # targets' nodes run too (PyTorch fires their hooks; a leaf's AccumulateGrad accumulates).
    needed = set(targets) if task.accumulate else set()
    for n in reversed(topo):
        if any(c in targets or c in needed for c in task.children[n]):
            needed.add(n)
    task.needed = needed


def _fit(g, meta):
    """Sum a gradient back to its input's shape and cast it to the input's dtype."""
    shape, dtype = meta
    data = g._data
    if data.shape != shape:
        g = sum_to(g, shape)
    if data.dtype != dtype.np:
        g = g.to(dtype)
    return g


def sum_to(g, shape):
    shape = tuple(shape)
    gs = tuple(g.shape)
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"gradient of shape {list(gs)} cannot be summed to shape "
                           f"{list(shape)}")
    dims = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
    if dims and len(dims) == lead and not g.requires_grad:
        # only leading dims to drop (e.g. a bias): one reduction; with create_graph, ATen's
        # sum_to (keepdim, then a view: ViewBackward0 on the gradient's graph) below
        return g.sum(dims)
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead:
        g = g.reshape(shape)
    if tuple(g.shape) != shape:
        raise RuntimeError(f"gradient of shape {list(gs)} does not broadcast to the input's "
                           f"shape {list(shape)}")
    return g


def _unshare(grads):
    """A node may hand one array to two slots under two Tensors (a custom Function returning
    ``(g, g.view_as(g))``): each such slot gets its own copy. The *same* Tensor in two slots
    (AddBackward0 passing ``grad`` to both operands, a Function returning ``(g, g)``) is shared
    as PyTorch shares it: the reference counts AccumulateGrad and ``_add_in_place`` read see
    both holders, so neither steals it nor writes into it."""
    seen = {}
    for i, g in enumerate(grads):
        if g is not None:
            key = id(g._data)
            first = seen.get(key)
            if first is None:
                seen[key] = g
            elif first is not g:
                grads[i] = _owned_copy(g)


def _add(a, b):
    return b if a is None else a + b


_rc = sys.getrefcount
_HOST_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# the reference counts below are CPython 3.11's (the tests check them); 3.14 borrows
# references on the stack, so a count could read low and hide an alias: out of place there
_COUNTS_KNOWN = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


def _add_in_place(prev, g) -> bool:
    """``prev += g`` straight in NumPy when nothing else can see ``prev``'s array (the bits of
    ``prev + g``: one IEEE add per element, in the same order), as PyTorch's InputBuffer adds in
    place when it holds the only reference. References to the Tensor ``prev``: the buffer dict,
    the caller's local, this parameter, getrefcount's argument (a hook or capture that kept it
    makes more); to its array: ``prev._data``, the local ``d``, getrefcount's argument (a view
    of it, or another tensor on it, makes more). Only arrays that own their memory (no views of
    something else, nothing pooled) of float32/float64 and equal shapes; else False (the caller
    adds out of place)."""
    if not _COUNTS_KNOWN:
        return False
    d = prev._data
    gd = g._data
    if (d.__class__ is not np.ndarray or gd.__class__ is not np.ndarray or d.base is not None
            or d.shape != gd.shape or d.dtype != gd.dtype or d.dtype not in _HOST_FLOATS
            or _rc(prev) != 4 or _rc(d) != 3 or not d.flags.writeable):
        return False
    np.add(d, gd, out=d)
    prev._vc.value += 1
    return True


def _sum_version(prev, g) -> int:
    """The version of ``prev + g`` computed out of place, as PyTorch's InputBuffer::accumulate
    would have left it: ``prev.add_(g)`` (one bump) when the buffer holds the only reference to
    a dense ``prev`` (jitgrad may still add out of place there: a view, a pooled array, a
    dtype it does not add in place), else a new tensor (version 0): ``prev`` handed to two
    slots (``x + x``), kept by a hook, or expanded (``sum()``'s gradient). References to
    ``prev``: the buffer dict, the caller's local, this parameter, getrefcount's argument; to
    its array: ``prev._data`` and getrefcount's argument."""
    if not _COUNTS_KNOWN:
        return prev._vc.value + 1
    if prev is g or _rc(prev) != 4:
        return 0
    d = prev._data
    if d.__class__ is np.ndarray and (_rc(d) != 3 or not _dense_bytes(d)):
        return 0
    return prev._vc.value + 1


def _capture_map(capture):
    """{node: [(output_nr, index), ...]} from a task's {(node, output_nr): [index, ...]}."""
    by_node = {}
    for (node, nr), idxs in capture.items():
        lst = by_node.setdefault(node, [])
        for i in idxs:
            lst.append((nr, i))
    return by_node


def _execute(task: GraphTask, root_edges, root_grads):
    buffers = task.buffers
    roots = []
    for (node, nr), g in zip(root_edges, root_grads):
        buf = buffers.setdefault(node, {})
        buf[nr] = _add(buf.get(nr), g)
        roots.append(node)
    _discover(task, roots)
    if task.capture is not None:
        _mark_needed(task, {node for node, _ in task.capture})
    if plan_hook is not None and not task.create_graph and not _anomaly.enabled:
        plan_hook(task)  # (anomaly mode checks every node's own output: no fusion)

    deps = task.deps
    heap = []
    # ties (AccumulateGrad nodes share one sequence number) pop in the order they became
    # ready, as PyTorch's ready queue gives them for the two operands of one node
    tick = itertools.count()
    for node in set(roots):
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node._seq, next(tick), node))
    captured = {}
    needed = task.needed
    # autograd.grad only: backward(inputs=...) stores non-leaf gradients through retain_grad
    cap_nodes = _capture_map(task.capture) if task.capture and not task.accumulate else None
    substitute = task.substitute
    create_graph = task.create_graph
    skip_leaves = not task.accumulate
    anomaly = _anomaly.check_nan
    executed = task.executed
    pop = heapq.heappop
    push = heapq.heappush
    while heap:
        node = pop(heap)[2]
        buf = buffers.pop(node, None)
        if buf is None:
            buf = {}
        if cap_nodes is not None:
            cap = cap_nodes.get(node)
            if skip_leaves and node.__class__ is AccumulateGrad and node.variable._hooks:
                # a leaf's tensor hooks are its AccumulateGrad's pre-hooks: they run when the
                # leaf is reached, also in autograd.grad (which then returns what they give)
                _leaf_hooks(node.variable, buf, create_graph)
            if cap is not None and node in needed:
                # PyTorch captures a gradient at a node it will run before the node's hooks
                for nr, idx in cap:
                    captured[idx] = buf.get(nr)
                cap = None
        if node._pre_hooks:
            _tensor_pre_hooks(node, buf, create_graph)
        if node._retained:
            for nr, ref in node._retained.items():
                t = ref()
                if t is not None and nr in buf:
                    g = buf[nr]
                    if create_graph:  # PyTorch's retain_grad hook: clone, then grad + new
                        t._grad = g.clone() if t._grad is None else t._grad + g
                    else:
                        t._grad = (g.detach().clone() if t._grad is None
                                   else t._grad + g.detach())
        if cap_nodes is not None and cap is not None:
            for nr, idx in cap:
                captured[idx] = buf.get(nr)
        if needed is not None and node not in needed:
            continue
        if skip_leaves and isinstance(node, AccumulateGrad):
            continue
        # A fused node (see jitgrad.fusion) stands in for the head of its group: it computes the
        # gradients of every edge leaving the group, so the group's inner nodes never run.
        run = substitute.get(node, node) if substitute else node
        n_out = getattr(node, "_n_outputs", 1)
        if n_out == 1 and len(buf) <= 1 and (not buf or 0 in buf):
            grads_out = [buf.get(0)]  # the common case, without the general slot scan
            live = grads_out[0] is not None
        else:
            grads_out = [buf.get(i) for i in range(max(n_out, max(buf, default=-1) + 1))]
            live = any(g is not None for g in grads_out)
        if node._pre_hooks and None in node._pre_hooks:
            grads_out = _node_pre_hooks(node, grads_out)
            live = any(g is not None for g in grads_out)
        if live:
            try:
                grads_in = run.apply(grads_out)
            except Exception:
                if _anomaly.enabled:
                    _anomaly.report(node)
                raise
            if anomaly:
                _anomaly.check_outputs(node, grads_in)
        else:
            # No gradient arrived (a backward returned None for this path): like PyTorch's
            # undefined gradients, nothing flows on, and a leaf's .grad stays as it was (its
            # hooks still see None).
            if node.__class__ is AccumulateGrad:
                node.apply_undefined()
            grads_in = [None] * len(run.next_functions)
        if node._hooks:
            grads_in = _node_post_hooks(node, grads_in, grads_out)
        # PyTorch's call_function drops the node's inputs before its outputs are routed, and
        # routing moves each output out of the list: the reference counts read downstream
        # (stealing a leaf's gradient, adding into a buffer in place) must see neither
        buf = grads_out = None
        grads_in = list(grads_in)
        n_in = len(grads_in)
        if n_in > 1 and not create_graph:
            _unshare(grads_in)
        executed.append(run)
        metas = run._input_meta
        for slot, edge in enumerate(run.next_functions):
            if edge is None:
                continue
            child, nr = edge
            if child is None:
                continue
            g = None
            if slot < n_in:
                g = grads_in[slot]
                grads_in[slot] = None
            if g is not None:
                meta = metas[slot]
                if meta is not None:
                    g = _fit(g, meta)
                cbuf = buffers.get(child)
                if cbuf is None:
                    buffers[child] = {nr: g}
                else:
                    prev = cbuf.get(nr)
                    if prev is None:
                        cbuf[nr] = g
                    elif not create_graph and _add_in_place(prev, g):
                        pass  # prev (still in cbuf) now holds the sum, its version bumped
                    else:
                        s = prev + g
                        if not create_graph:
                            # PyTorch adds into the buffered gradient in place when nothing
                            # else holds it (the sum carries that bump), else out of place
                            s._vc.value = _sum_version(prev, g)
                        cbuf[nr] = s
                        s = None
                    prev = None
            g = None  # (no reference left behind for the next node's counts)
            left = deps[child] - 1
            deps[child] = left
            if left == 0:
                push(heap, (-child._seq, next(tick), child))
    return captured

def _release(task: GraphTask) -> None:
    for node in task.executed:
        node.release()


# The passes running now, innermost last: (graph task id, checkpoint valid, the GraphTask, for
# should_compute). A pass given ``inputs`` (autograd.grad, backward(inputs=...)) makes reentrant
# checkpointing invalid inside it, as PyTorch's CheckpointValidGuard does (utils.checkpoint
# reads both).
_running = []
_task_ids = itertools.count()
# > 0 while a composite node differentiates its hidden graph (ops.composite): that nested pass
# is part of the running one and keeps its id (one checkpoint recomputation per pass)
_same_pass = [0]


def current_graph_task_id() -> int:
    """PyTorch's ``torch._C._current_graph_task_id()``: the running pass's id, or -1."""
    return _running[-1][0] if _running else -1


def should_compute(edge) -> bool:
    """PyTorch's ``should_compute_output`` for a node's ``next_functions`` entry: whether the
    running pass wants a gradient along it (``autograd.grad`` skips edges that lead to no
    requested input; ops whose derivative for one input is not implemented only raise then)."""
    node, nr = edge
    if node is None:
        return False
    task = _running[-1][2] if _running else None
    if task is None or task.needed is None:
        return True
    return node in task.needed or (task.capture is not None and (node, nr) in task.capture)


def is_checkpoint_valid() -> bool:
    """PyTorch's ``torch.autograd._is_checkpoint_valid()``."""
    return _running[-1][1] if _running else True


def _run(task, edges, grads):
    """_execute with the user's gradient storage remembered for leaf adoption."""
    prev = getattr(_user_storage, "ids", None)
    _user_storage.ids = _user_ids(grads)
    tid = _running[-1][0] if _same_pass[0] and _running else next(_task_ids)
    _running.append((tid, task.capture is None and is_checkpoint_valid(), task))
    try:
        # PyTorch never warns about IEEE exceptions (inf - inf in a gradient is just NaN); the
        # NumPy parts of backward functions would, so silence them for the whole pass
        with np.errstate(all="ignore"):
            return _execute(task, edges, grads)
    finally:
        _running.pop()
        _user_storage.ids = prev


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad "
    "when creating the graph to avoid this. If you have to use this function, make sure to "
    "reset the .grad fields of your parameters to None after use to break the cycle and avoid "
    "the leak. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:"
    "1307.)")
_warned_create_graph = False


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    global _warned_create_graph
    if grad_variables is not None:
        import warnings
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
    inputs_t = () if inputs is None else _inputs_tuple(inputs, "backward")
    if inputs is not None and not inputs_t:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _as_tuple(tensors)
    grad_tensors = (None,) * len(tensors) if grad_tensors is None else _as_tuple(grad_tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    edges, grads = _root_edges(tensors, grads)
    task = GraphTask(create_graph, accumulate=True)
    if inputs_t:
        task.capture = {}
        for i, t in enumerate(inputs_t):
            task.capture.setdefault(_input_edge(t, True), []).append(i)
    if create_graph and not _warned_create_graph:
        import warnings
        _warned_create_graph = True
        warnings.warn(_CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    with grad_mode.set_grad_enabled(create_graph):
        _run(task, edges, grads)
    if not retain_graph:
        _release(task)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs_t = _inputs_tuple(inputs, "grad")
    if not inputs_t:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        import warnings
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    grad_outputs = ((None,) * len(outputs) if grad_outputs is None
                    else _as_tuple(grad_outputs))
    grads = _make_grads(outputs, grad_outputs, is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _grad_batched(outputs, inputs_t, grads, retain_graph, create_graph,
                               allow_unused)
    else:
        result = _grad(outputs, inputs_t, grads, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        from ..ops.basic import zeros_like
        result = tuple(r if r is not None else zeros_like(t).requires_grad_(create_graph)
                       for r, t in zip(result, inputs_t))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


def _grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused):
    edges, grads = _root_edges(outputs, grads)
    task = GraphTask(create_graph, accumulate=False)
    task.capture = {}
    for i, t in enumerate(inputs):
        task.capture.setdefault(_input_edge(t, False), []).append(i)
    with grad_mode.set_grad_enabled(create_graph):
        captured = _run(task, edges, grads)
    if not retain_graph:
        _release(task)
    result = []
    for i in range(len(inputs)):
        g = captured.get(i)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _grad_batched(outputs, inputs, grads, retain_graph, create_graph, allow_unused):
    """``is_grads_batched``: one vector-Jacobian product per row of the batched grad_outputs
    (PyTorch vmaps the backward; the values are the same)."""
    from ..ops.shape_join import stack
    from ..tensor import Tensor
    sizes = {g.shape[0] for g in grads if isinstance(g, Tensor)}
    if len(sizes) != 1:
        raise RuntimeError("is_grads_batched=True needs batched grad_outputs of one batch size")
    n = sizes.pop()
    rows = []
    for b in range(n):
        gb = [g[b] if isinstance(g, Tensor) else g for g in grads]
        rows.append(_grad(outputs, inputs, gb, retain_graph or b < n - 1, create_graph,
                          allow_unused))
    result = []
    for i in range(len(inputs)):
        col = [r[i] for r in rows]
        result.append(None if col[0] is None else stack(col))
    return tuple(result)

# Backward fusion installs ``plan_hook`` when imported (cheap: no Numba until a pass is fused).
from .. import fusion as _fusion  # noqa: E402,F401
