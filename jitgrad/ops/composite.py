"""Recording non-elementwise ops: their kernels run first, then ``record`` attaches a node whose
VJP is a Python function written with registered (differentiable) ops, so ``create_graph=True``
works through them too.

A backward function receives ``(node, *grad_outputs)``: ``node.saved(name)`` unpacks a saved
tensor (version-checked), ``node.ctx.attrs`` holds plain values. It returns one gradient (or
None) per input slot; the engine sums them back to each input's shape and dtype.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from .._dtype import _BY_NP
from ..autograd import grad_mode
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.node import Ctx, FunctionNode, node_class
from ..autograd.view_requires_grad import track as track_view
from ..tensor import Tensor
from .host_staged import _state as _staged

_make = Tensor._make
_node_classes: dict = {}  # node name -> its FunctionNode class (node_class, without the key tuple)

__all__ = ["record", "record_composition", "wrap", "ieee_quiet", "regenerate_view",
           "view_rebase_error", "view_replay"]


def ieee_quiet(fn):
    """Run ``fn`` with NumPy's floating-point warnings off: PyTorch returns inf/NaN silently
    (the sum of inf and -inf is NaN, no RuntimeWarning), so ops computed with NumPy must too."""
    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return quiet


def wrap(data, view_of: Tensor | None = None, view_fn=None, multi=False,
         differentiable=True) -> Tensor:
    t = _make(data)
    if view_of is not None:
        vc = t._vc = view_of._vc
        base = view_of._base
        root = t._base = view_of if base is None else base
        t._attr_version = vc.value
        if not differentiable or "_nondiff_view" in view_of.__dict__:
            # view(dtype) and views of it: never require grad, whatever their base does
            differentiable = False
            t.__dict__["_nondiff_view"] = True
        elif data.dtype.kind == "f" and not (_grad_state.enabled and view_of._requires_grad):
            # no grad_fn of its own: its requires_grad is its base's, live (PyTorch)
            track_view(root, t)
        # PyTorch's CreationMeta, propagated from a view's view unless the new one is special
        if not _grad_state.enabled:
            t._creation = "no_grad"
            if differentiable and root._requires_grad:
                # PyTorch: a view's requires_grad is its base's (the root's, not that of the
                # view it was cut from), but without a grad_fn or an accumulator of its own
                # (Tensor._edge gives it no edge)
                t._requires_grad = True
                t._rg_inherited = True
        elif multi:
            t._creation = "multi"
        else:
            t._creation = None if base is None else getattr(view_of, "_creation", None)
        if view_fn is not None:
            t._view_fn = view_fn if base is None else _replay_from_base(view_of, view_fn)
    return t


# ----------------------------------------------------------------------------- views and in-place


def view_rebase_error(view: Tensor, creation: str, indirect: bool) -> RuntimeError:
    """PyTorch's ``handle_view_on_rebase`` message for an in-place write into (``indirect``:
    through the base or a sibling of) a view made by a multi-output op or in no_grad mode."""
    what = "its base or another view of its base has been" if indirect else "is being"
    gf = view._grad_fn
    op = None if gf is None else re.sub(r"Backward\d*$", "", gf.name())
    if creation == "no_grad" or gf is None:
        prefix = (f"Output {view._output_nr} of {op} is a view of a view which was created in"
                  if gf is not None else "A view was created in")
        msg = f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"Output {view._output_nr} of {op} is a view and {what} modified inplace."
    if creation == "multi":
        msg += (" This view is the output of a function that returns multiple views. Such "
                "functions do not allow the output views to be modified inplace. You should "
                "replace the inplace operation by an out-of-place one.")
    else:
        msg += (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                "clarify your code by moving both the view and the inplace either both inside "
                "the no_grad block (if you don't want the inplace to be tracked) or both outside "
                "(if you want the inplace to be tracked).")
    return RuntimeError(msg)


def view_replay(view: Tensor):
    """``base -> view`` as a differentiable function of the base, or None (CUDA views made by
    ops other than indexing). Views made by expand (or any strided view of a host array) are
    replayed by gathering the base's elements they alias: PyTorch's as_strided."""
    key = view.__dict__.get("_view_key")
    if key is not None:
        from .index import getitem
        return lambda b: getitem(b, key)
    if view._view_fn is not None:
        return view._view_fn
    base = view._base
    if view._data.__class__ is not np.ndarray or base._data.__class__ is not np.ndarray:
        return None
    numbers = _aliased_elements(view._data, base._data)
    if numbers is None:
        return None
    from .index import getitem
    from .shape_views import reshape
    idx = Tensor._make(numbers)
    return lambda b: getitem(reshape(b, (-1,)), idx)


def _addresses(a: np.ndarray) -> np.ndarray:
    addr = np.full(a.shape, a.__array_interface__["data"][0], dtype=np.int64)
    for d, (n, st) in enumerate(zip(a.shape, a.strides)):
        addr += (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (a.ndim - d - 1))
    return addr


def _aliased_elements(view: np.ndarray, base: np.ndarray):
    """For each element of ``view``, the C-order number of the ``base`` element at the same
    address (None if some element of ``view`` is not one of ``base``'s)."""
    baddr = _addresses(base).reshape(-1)
    order = np.argsort(baddr, kind="stable")
    sorted_addr = baddr[order]
    vaddr = _addresses(view).reshape(-1)
    pos = np.searchsorted(sorted_addr, vaddr)
    if pos.size and (pos.max() >= sorted_addr.size or
                     (sorted_addr[pos] != vaddr).any()):
        return None
    return order[pos].reshape(view.shape)


def regenerate_view(view: Tensor) -> None:
    """Give ``view`` the grad_fn PyTorch's getter gives a view whose storage was modified in
    place since its grad_fn was set: AsStridedBackward0 from the base's current history."""
    base = view._base
    version = view._vc.value
    if view._grad_fn is None and not base._requires_grad:
        view._attr_version = version
        return
    creation = view._creation
    if creation is not None:
        raise view_rebase_error(view, creation, indirect=True)
    replay = view_replay(view)
    if replay is None:
        raise NotImplementedError(
            "jitgrad cannot replay this view on its base (a CUDA view made by an op other "
            "than indexing) after its base was modified in place; apply the op out of place.")
    with grad_mode.enable_grad():
        fresh = record_composition("AsStridedBackward0", (base,), replay)
    view._grad_fn, view._output_nr = fresh._grad_fn, fresh._output_nr
    view._requires_grad = fresh._grad_fn is not None
    view._attr_version = version


def _replay_from_base(parent: Tensor, fn):
    """``base -> view`` for a view made by ``fn`` from ``parent`` (itself the base, a view made
    by indexing, or a replayable view), or None. In-place writes into the view replay it on the
    base's new value (``index.setitem``), as PyTorch's CopySlices does with as_strided."""
    if parent._base is None:
        return fn
    key = getattr(parent, "_view_key", None)
    if key is not None:
        from .index import getitem
        return lambda b: fn(getitem(b, key))
    before = parent._view_fn
    return None if before is None else (lambda b: fn(before(b)))


def record(node_name: str, inputs, outputs, backward, *, save=(), save_outputs=(),
           view_of=None, attrs=None, view_fn=None):
    """Wrap ``outputs`` (arrays) as Tensors and, if any input requires grad, attach the node.

    ``inputs`` are the node's slots (Tensors, or None/scalars for slots without an edge);
    ``save`` is ``(name, tensor)`` pairs; ``save_outputs`` is ``(name, output_index)`` pairs.
    ``view_of``: the outputs share its storage; ``view_fn`` (one output): Tensor -> the same
    view of another tensor, so in-place writes into the view can be recorded on its base.
    Returns one Tensor, or a tuple when ``outputs`` is a list.
    Inside a host-staged op (``host_staged``) the node takes the staged op's CUDA inputs and
    its outputs are uploaded to the device.
    """
    stack = _staged.__dict__.get("stack")  # active_scope(), without its call
    if stack and stack[-1] is not None and view_of is None:
        inputs, save, outputs = stack[-1].rehome(node_name, inputs, save, outputs)
    if not isinstance(outputs, (list, tuple)):
        # one output (most ops): no lists built
        out = wrap(outputs, view_of, view_fn) if view_of is not None else _make(outputs)
        if _grad_state.enabled:
            for t in inputs:
                if isinstance(t, Tensor) and t._requires_grad:
                    node = _node(node_name, inputs, backward, attrs, save, 1)
                    if out._data.dtype.kind == "f":
                        out._grad_fn = node
                        out._requires_grad = True
                    for name, _ in save_outputs:
                        node.ctx.save(name, out, is_output=True)
                    break
        return out
    outs = [wrap(o, view_of, None, True) for o in outputs]
    if _grad_state.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        node = _node(node_name, inputs, backward, attrs, save, len(outs))
        for i, o in enumerate(outs):
            if o._data.dtype.kind == "f":
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
        for name, idx in save_outputs:
            node.ctx.save(name, outs[idx], is_output=True)
    return tuple(outs)


def _node(node_name, inputs, backward, attrs, save, n_outputs):
    """The FunctionNode ``record`` attaches (some input requires grad, grad mode is on)."""
    ctx = Ctx()
    ctx.attrs = attrs or {}
    cls = _node_classes.get(node_name)
    if cls is None:
        cls = _node_classes[node_name] = node_class(node_name, FunctionNode)
    if len(inputs) == 1:  # (the caller found it requires grad)
        t = inputs[0]
        edge = t._edge()
        d = t._data
        dt = _BY_NP.get(d.dtype)
        ctx.needs_input_grad = (True,)
        for name, s in save:
            ctx.save(name, s)
        return cls((edge,), ((tuple(d.shape), dt if dt is not None else t.dtype),), ctx,
                   backward, n_outputs)
    next_functions, meta, needs = [], [], []
    for t in inputs:
        if isinstance(t, Tensor) and t._requires_grad:
            next_functions.append(t._edge())
            d = t._data
            dt = _BY_NP.get(d.dtype)  # Tensor.dtype, without the property call
            meta.append((tuple(d.shape), dt if dt is not None else t.dtype))
            needs.append(True)
        else:
            next_functions.append((None, 0))
            meta.append(None)
            needs.append(False)
    ctx.needs_input_grad = tuple(needs)
    for name, t in save:
        ctx.save(name, t)
    return cls(next_functions, meta, ctx, backward, n_outputs)


def as_one_node(node_name: str, inputs, compute):
    """``compute(*inputs)`` (a tuple of Tensors, None allowed, computed by differentiable ops)
    shown as the outputs of ONE node ``node_name`` (``record_composition``)."""
    results = {}

    def build(*args):
        results["all"] = compute(*args)
        return tuple(t for t in results["all"] if t is not None)

    outs = iter(record_composition(node_name, inputs, build))
    return tuple(None if t is None else next(outs) for t in results["all"])


class _Composition:
    """The hidden graph behind a node made by ``record_composition``: kept like a saved tensor
    (freed when the node is released, so a second backward raises PyTorch's error)."""

    __slots__ = ("out", "inputs", "build", "slots")

    def __init__(self, out, inputs, build, slots):
        self.out = out
        self.inputs = inputs  # the aliases the composition was built from (those needing grad)
        self.build = build
        self.slots = slots  # the node's inputs, every slot

    def free(self) -> None:
        self.out = self.inputs = self.build = self.slots = None

    def tensor(self, node):  # as SavedTensor.tensor, for grad_fn._saved_tensors
        from ..autograd.node import FREED_MESSAGE
        if self.out is None:
            raise RuntimeError(FREED_MESSAGE)
        return self.out[0]


def _composition_backward(node, *gs):
    from ..autograd import engine
    engine._same_pass[0] += 1
    try:
        return _differentiate_composition(node, gs)
    finally:
        engine._same_pass[0] -= 1


def _differentiate_composition(node, gs):
    from ..autograd import engine
    from ..autograd.node import FREED_MESSAGE
    comp = node.ctx._saved["composition"]
    if comp.out is None:
        raise RuntimeError(FREED_MESSAGE)
    # outputs without a gradient (None) or outside the graph take no part
    pairs = [(o, g) for o, g in zip(comp.out, gs) if g is not None and o.grad_fn is not None]
    if not pairs:
        return tuple(None for _ in node.ctx.needs_input_grad)
    backward_name = node.ctx.attrs.get("backward_name")
    if backward_name and grad_mode.is_grad_enabled():
        # one node over (gradients, inputs): the composition is built again from its own
        # aliases of them, so that node's derivatives are partial ones
        present = [i for i, g in enumerate(gs) if g is not None and comp.out[i].grad_fn is not None]
        k = len(present)

        def vjp(*args):
            outs = comp.build(*args[k:])
            outs = outs if isinstance(outs, tuple) else (outs,)
            diff = [t for t in args[k:] if isinstance(t, Tensor) and t._requires_grad]
            return tuple(engine.grad([outs[i] for i in present], diff, list(args[:k]),
                                     retain_graph=True, create_graph=True, allow_unused=True))

        grads = as_one_node(backward_name, tuple(gs[i] for i in present) + tuple(comp.slots),
                            vjp)
    else:
        grads = engine.grad([o for o, _ in pairs], comp.inputs, [g for _, g in pairs],
                            retain_graph=True, create_graph=grad_mode.is_grad_enabled(),
                            allow_unused=True)
    # each slot has its own alias (``record_composition``): sdpa(q, q, q) gets a partial
    # derivative per slot, which the engine sums over the edges
    grads = iter(grads)
    return tuple(next(grads) if need else None for need in node.ctx.needs_input_grad)


def record_composition(node_name: str, inputs, build, backward_name: str | None = None):
    """``build(*inputs)``, a composition of differentiable ops, presented as ONE node called
    ``node_name`` with an edge per input: the grad_fn PyTorch records for an op that jitgrad
    computes by composition on some device (``nll_loss`` on CUDA is gather/mul/sum inside, but
    its grad_fn is ``NllLossBackward0`` as in PyTorch). The node's backward differentiates the
    hidden composition (a nested ``autograd.grad``), so gradients, ``create_graph`` and double
    backward are exactly the composition's. ``build`` may return a tuple of Tensors: one node
    with several outputs (a double-backward node such as NativeBatchNormBackwardBackward0).
    ``backward_name``: the gradients built with ``create_graph`` are shown as that one node
    (over the output gradients and the inputs) instead of the composition's own nodes."""
    if not grad_mode.is_grad_enabled() or not any(
            isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return build(*inputs)
    # The composition sees an alias of each input: the node's backward must give partial
    # derivatives, and a nested grad() with respect to the inputs themselves would be total
    # (when one input is computed from another, as a double-backward node's incoming gradient
    # from its forward's input, that path would be counted twice). The aliases keep the graph
    # connected to the inputs for create_graph.
    from .shape_views import _alias
    inputs_seen = tuple(_alias(t) if isinstance(t, Tensor) and t._requires_grad else t
                        for t in inputs)
    inner = build(*inputs_seen)
    multi = isinstance(inner, tuple)
    inners = inner if multi else (inner,)
    for t in inners + inputs_seen:
        # the hidden graph's views (the aliases, outputs that are views) keep the history they
        # were built with: a later in-place write to their storage must not replay them on the
        # base's new history, or the nested grad finds no path from outputs to aliases (zeros)
        if isinstance(t, Tensor) and t._base is not None:
            t._attr_version = None
    if all(t.grad_fn is None for t in inners):
        return inner
    out = record(node_name, inputs, [t._data for t in inners] if multi else inner._data,
                 _composition_backward, attrs={"backward_name": backward_name})
    diff = [t for t in inputs_seen if isinstance(t, Tensor) and t._requires_grad]
    node = (out[0] if multi else out)._grad_fn
    node.ctx._saved["composition"] = _Composition(inners, diff, build, tuple(inputs))
    return out
