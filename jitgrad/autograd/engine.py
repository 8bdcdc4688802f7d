"""The backward engine: graph discovery, ready-queue execution, accumulation, hooks.

No recursion anywhere (a 100,000-node chain backprops fine) and no Numba here: nodes launch their
own kernels. The engine is the one place where gradients are summed back to each input's shape
and cast to its dtype (``_fit``), so no VJP has to think about broadcasting.

Execution order is PyTorch's: among ready nodes, the most recently created runs first, and
AccumulateGrad nodes run as soon as they are ready. ``plan_hook`` lets the fusion planner rewrite
the part of the graph about to run before anything is launched.
"""
from __future__ import annotations

import heapq
import threading

import numpy as np

from . import grad_mode
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
    if dims and len(dims) == lead:  # only leading dims to drop (e.g. a bias): one reduction
        return g.sum(dims)
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead:
        g = g.reshape(shape)
    if tuple(g.shape) != shape:
        raise RuntimeError(f"gradient of shape {list(gs)} does not broadcast to the input's "
                           f"shape {list(shape)}")
    return g


def _owned_copy(t):
    from ..tensor import Tensor
    d = t._data
    return Tensor._make(np.array(d, copy=True) if d.__class__ is np.ndarray else d.copy())


def _unshare(grads):
    """A node may hand the same tensor to two slots (a custom Function returning (g, g));
    each edge must get its own array, since leaves adopt gradient arrays without copying."""
    seen = set()
    for i, g in enumerate(grads):
        if g is not None:
            key = id(g._data)
            if key in seen:
                grads[i] = _owned_copy(g)
            seen.add(key)


def _add(a, b):
    return b if a is None else a + b


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
    if plan_hook is not None and not task.create_graph:
        plan_hook(task)

    deps = task.deps
    heap = []
    for node in set(roots):
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node._seq, id(node), node))
    captured = {}
    needed = task.needed
    capture = task.capture
    substitute = task.substitute
    create_graph = task.create_graph
    skip_leaves = not task.accumulate
    executed = task.executed
    pop = heapq.heappop
    push = heapq.heappush
    while heap:
        node = pop(heap)[2]
        buf = buffers.pop(node, None)
        if buf is None:
            buf = {}
        if node._pre_hooks:
            for nr, hooks in node._pre_hooks.items():
                if nr in buf:
                    for h in list(hooks):
                        r = h(buf[nr])
                        if r is not None:
                            # the user may keep what the hook returned: the engine only
                            # passes on arrays it owns
                            buf[nr] = r if create_graph else _owned_copy(r)
        if node._retained:
            for nr, ref in node._retained.items():
                t = ref()
                if t is not None and nr in buf:
                    g = buf[nr]
                    t._grad = g.detach().clone() if t._grad is None else t._grad + g.detach()
        if capture is not None:
            for (cnode, nr), idx in capture.items():
                if cnode is node and nr in buf:
                    captured[idx] = buf[nr]
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
        # No gradient arrived (a backward returned None for this path): like PyTorch's
        # undefined gradients, nothing flows on, and a leaf's .grad stays as it was.
        grads_in = run.apply(grads_out) if live else [None] * len(run.next_functions)
        if node._hooks:
            for h in node._hooks:
                r = h(tuple(grads_in), tuple(grads_out))
                if r is not None:
                    grads_in = list(r)
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
            g = grads_in[slot] if slot < n_in else None
            if g is not None:
                meta = metas[slot]
                if meta is not None:
                    g = _fit(g, meta)
                cbuf = buffers.get(child)
                if cbuf is None:
                    buffers[child] = {nr: g}
                else:
                    prev = cbuf.get(nr)
                    cbuf[nr] = g if prev is None else prev + g
            left = deps[child] - 1
            deps[child] = left
            if left == 0:
                push(heap, (-child._seq, id(child), child))
    return captured


def _release(task: GraphTask) -> None:
    for node in task.executed:
        node.release()


# Storage of the gradients the *user* passed to backward()/grad(): every other gradient array in a
# pass is one the engine made, which a leaf may adopt as its .grad without copying; these must be
# copied if they reach a leaf unchanged (an identity path from the output to the leaf).
_user_storage = threading.local()


def _user_ids(grads):
    ids = set()
    for g in grads:
        d = g._data
        ids.add(id(d))
        base = getattr(d, "base", None)
        if base is not None:
            ids.add(id(base))
    return ids


def _is_users(data) -> bool:
    ids = getattr(_user_storage, "ids", None)
    if not ids:
        return False
    base = getattr(data, "base", None)
    return id(data) in ids or (base is not None and id(base) in ids)


def _run(task, edges, grads):
    """_execute with the user's gradient storage remembered for leaf adoption."""
    prev = getattr(_user_storage, "ids", None)
    _user_storage.ids = _user_ids(grads)
    try:
        # PyTorch never warns about IEEE exceptions (inf - inf in a gradient is just NaN); the
        # NumPy parts of backward functions would, so silence them for the whole pass
        with np.errstate(all="ignore"):
            return _execute(task, edges, grads)
    finally:
        _user_storage.ids = prev


def _make_root_grads(tensors, grad_tensors, who="grad_output"):
    from ..ops.basic import full_like
    from ..tensor import Tensor
    edges, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected a Tensor at position {i}, got {type(t).__name__}")
        edge = t._edge()
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = full_like(t, 1)
        else:
            if not isinstance(g, Tensor):
                from ..ops.basic import tensor as make_tensor
                g = make_tensor(g, dtype=t.dtype)
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"Mismatch in shape: {who}[{i}] has a shape of {g.shape} and "
                                   f"output[{i}] has a shape of {t.shape}.")
            if g._data.__class__ is not t._data.__class__:
                raise RuntimeError(f"invalid gradient at index {i} - expected device "
                                   f"{t.device} but got {g.device}")
            if g.dtype is not t.dtype:
                if not g.is_floating_point():
                    raise RuntimeError(f"Mismatch in dtype: {who}[{i}] has a dtype of "
                                       f"{g.dtype} and output[{i}] has a dtype of {t.dtype}.")
                g = g.to(t.dtype)
        edges.append(edge)
        grads.append(g)
    return edges, grads


def _as_list(x):
    from ..tensor import Tensor
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors) or [None] * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_list(inputs)
    edges, grads = _make_root_grads(tensors, grad_tensors, "grad_output")
    task = GraphTask(create_graph, accumulate=True)
    nonleaf = []
    if inputs is not None:
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        task.capture = {}
        for i, t in enumerate(inputs):
            edge = t._edge()
            if edge is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            task.capture[edge] = i
            if t._grad_fn is not None:
                nonleaf.append((i, t))
    with grad_mode.set_grad_enabled(create_graph):
        captured = _run(task, edges, grads)
        for i, t in nonleaf:
            g = captured.get(i)
            if g is not None and not t._retains_grad:  # retain_grad() has already stored it
                t._grad = g.detach().clone() if t._grad is None else t._grad + g
    if not retain_graph:
        _release(task)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    from ..ops.basic import zeros_like
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grad_outputs)} entries for {len(outputs)} "
                           "outputs")
    edges, grads = _make_root_grads(outputs, grad_outputs, "grad_outputs")
    task = GraphTask(create_graph, accumulate=False)
    task.capture = {}
    for i, t in enumerate(inputs):
        edge = t._edge()
        if edge is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        task.capture[edge] = i
    with grad_mode.set_grad_enabled(create_graph):
        captured = _run(task, edges, grads)
    if not retain_graph:
        _release(task)
    result = []
    for i, t in enumerate(inputs):
        g = captured.get(i)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = zeros_like(t)
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def accumulate_into_leaf(variable, g) -> None:
    owned = not _is_users(g._data)  # the engine's own arrays may be adopted without a copy
    if variable._hooks:
        for h in list(variable._hooks):
            r = h(g)
            if r is not None:
                g, owned = r, False  # a hook may hand back a tensor the user keeps
    if variable._grad is None:
        if grad_mode.is_grad_enabled():  # create_graph: keep the gradient's own graph
            variable._grad = g
        else:
            from ..tensor import Tensor
            data = g._data
            whole = data.base is None or (data.base.nbytes == data.nbytes
                                          and getattr(data.base, "flags", data.flags).owndata)
            if not owned or not data.flags.c_contiguous or not whole:
                # copy a user's tensor, and lay out views (a transposed weight gradient, a
                # slice of a shared buffer) as a compact array of the leaf's shape
                data = np.array(data, order="C", copy=True) if data.__class__ is np.ndarray \
                    else data.copy()
            variable._grad = Tensor._make(data, False)
    elif grad_mode.is_grad_enabled():
        variable._grad = variable._grad + g
    else:
        from ..ops.basic import accumulate_
        accumulate_(variable._grad, g)


# Backward fusion installs ``plan_hook`` when imported (cheap: no Numba until a pass is fused).
from .. import fusion as _fusion  # noqa: E402,F401
