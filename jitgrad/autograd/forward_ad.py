# ruff: noqa: E501 - PyTorch's messages, kept verbatim on one line each
"""``torch.autograd.forward_ad``: dual tensors, with tangents computed lazily in reverse mode.

jitgrad's ops declare VJPs only, so there is no per-op forward rule to run eagerly. Instead a
dual tensor records where its tangent enters the ordinary autograd graph, and ``unpack_dual``
computes the tangent of whatever tensor it is given with the double-vjp trick that
``func.jvp`` and ``autograd.functional.jvp`` use (``J t`` is the vjp, with cotangent ``t``, of
``u -> J^T u``, the vjp at a placeholder ``u``):

* ``make_dual(x, t)`` creates a hidden *seed* leaf holding ``x``'s values and returns a tensor
  sharing ``x``'s storage whose node (``_MakeDualBackward``) has two edges: to ``x``'s own graph
  (so reverse mode through the dual reaches ``x`` as in PyTorch) and to the seed. The seed is
  where a tangent pass collects ``J^T u``.
* ``unpack_dual(y)`` walks ``y``'s graph for the seeds of the live level. None reached: the
  tangent is None. Otherwise ``J^T u`` is taken with respect to those seeds (create_graph), then
  its vjp in ``u`` with the seeds' tangents as cotangents. During that first pass a module flag
  (``_TANGENT_PASS``) makes ``_MakeDualBackward`` send its gradient to the seed only, and
  ``_UnpackPrimalBackward`` (the node of ``unpack_dual(...).primal``) send none at all: a primal
  carries no tangent but stays reverse-differentiable. In user backward passes it is the other
  way round (the gradient goes to ``x``, never to the seed).
* The tangent stays differentiable in reverse mode (its graph is kept when ``y`` reaches a tensor
  the caller tracks, or a tangent requires grad), so reverse-over-forward works.

Because the graph is the one reverse mode records, everything it records carries tangents:
elementwise chains, views, in-place ops on duals or on views of plain tensors (their
CopySlices-style nodes), autograd.Function backwards that are themselves differentiable.
What is NOT supported (with PyTorch's behaviour for comparison):

* Ops run with grad mode off (``no_grad``, ``inference_mode``, ``set_grad_enabled(False)``)
  record nothing, so their outputs have no tangent (``unpack_dual`` gives None; PyTorch
  propagates tangents there). ``make_dual`` under grad mode off raises NotImplementedError.
* A tangent pass runs the recorded backward twice, so it fails where reverse mode would: a
  saved tensor modified in place afterwards (``y = d.exp(); y.mul_(2)``), a Function marked
  ``once_differentiable``, an op without a double backward, a Function whose backward computes
  outside the graph (NumPy, no_grad). ``unpack_dual`` raises NotImplementedError there (PyTorch
  computes these tangents eagerly, from a Function's ``jvp``). Only a backward cut off on every
  path is detected: one that is differentiable along some paths and not others gives the
  tangent of the differentiable paths alone.
* Dual tensors (and results computed from them) report ``requires_grad=True`` and carry a
  grad_fn even when the primal does not require grad (PyTorch: False), so ``.numpy()`` on them
  needs ``.detach()`` first and ``backward()`` through them does not raise. The tangent of a
  view is a new tensor, not a view of the base's tangent, and in-place ops on a dual do not
  write into the tangent tensor given to ``make_dual`` (PyTorch updates it in place); the
  tangent returned for an unmodified dual is the given tensor itself, as in PyTorch. A tangent
  of another floating dtype than its primal is cast to the primal's dtype for the passes (the
  tangents of results have the primals' dtypes; PyTorch's follow type promotion).
* A dual of a tensor that requires grad does not share its storage (PyTorch: a view of it,
  whose in-place ops rebase the tensor's history; here they would change its values behind
  its graph). Duals of other tensors share their storage, as in PyTorch.
* Only one level at a time (PyTorch: the same, "Nested forward mode AD is not supported").
  ``func.grad/vjp/jacrev/vmap`` of duals carry tangents as PyTorch's do; ``func.jvp`` inside a
  dual level works here (PyTorch refuses it as nested forward AD).
"""
from __future__ import annotations

from typing import NamedTuple

from ..tensor import Tensor
from .engine import grad as _autograd_grad
from .function import Function, _DelayedError
from .grad_mode import enable_grad, is_grad_enabled

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_current_level = -1
_live = None  # the _DualLevel of _current_level, while one is entered


class _DualLevel:
    """One entered level: its seeds (hidden leaves) with their tangents."""

    __slots__ = ("index", "tangents", "active")

    def __init__(self, index):
        self.index = index
        self.tangents = {}  # id(seed) -> (seed, tangent)
        self.active = True


class _TangentPass:
    """Set while the first vjp of a tangent pass runs: which level's seeds collect gradients."""
    level = None


_TANGENT_PASS = _TangentPass()


class _MakeDual(Function):
    @staticmethod
    def forward(ctx, tensor, seed, level):
        ctx.dual_level = level
        if tensor.requires_grad:
            # PyTorch's dual is a view of tensor, so an in-place op on it rebases tensor's
            # history; this node cannot, so it gets its own storage rather than change
            # tensor's values behind its graph
            return tensor.clone()
        return tensor  # returned as is: a new tensor sharing tensor's storage and version

    @staticmethod
    def backward(ctx, grad):
        if _TANGENT_PASS.level is not None:
            return None, (grad if _TANGENT_PASS.level is ctx.dual_level else None), None
        return grad, None, None


class _UnpackPrimal(Function):
    @staticmethod
    def forward(ctx, tensor):
        return tensor

    @staticmethod
    def backward(ctx, grad):
        return None if _TANGENT_PASS.level is not None else grad


_MAKE_DUAL_NODE = _MakeDual._backward_cls
_UNPACK_NODE = _UnpackPrimal._backward_cls


# -- levels -------------------------------------------------------------------------------------

def enter_dual_level():
    """Enter a new forward grad level (only one may be live); returns its index."""
    global _current_level, _live
    if _live is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    if _current_level != -1:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you did not modify it directly.")
    _live = _DualLevel(0)
    _current_level = 0
    return 0


def exit_dual_level(*, level=None):
    """Exit the live level: every tangent of it is dropped."""
    global _current_level, _live
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is not supported.")
    if level < 0 or _live is None:
        raise RuntimeError("Dual level must be a positive number.")
    _live.active = False
    _live.tangents.clear()
    _live = None
    _current_level = level - 1


class dual_level:
    """Context manager (and decorator) entering a forward AD level and exiting it at the end;
    ``with dual_level() as level`` binds the level's index."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapped


# -- the graph walk -----------------------------------------------------------------------------

def _seeds_reached(tensor, live):
    """The seeds of ``live`` that ``tensor``'s tangent depends on, in graph order: a walk that
    stops at dual nodes (a tangent goes to their seed only) and at unpacked primals."""
    if live is None or not isinstance(tensor, Tensor) or tensor.grad_fn is None:
        return []
    found, seen, stack = {}, set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, _MAKE_DUAL_NODE):
            if node.dual_level is live:
                seed = node.next_functions[1][0].variable
                found[id(seed)] = seed
            continue
        if isinstance(node, _UNPACK_NODE):
            continue
        stack.extend(nxt for nxt, _ in node.next_functions)
    return [s for s in found.values() if id(s) in live.tangents]


def _reaches_tracked(tensors):
    """Whether any of ``tensors`` depends on a tensor tracked by the caller (a leaf requiring
    grad other than the seeds), i.e. whether a tangent must keep its graph."""
    seen = set()
    stack = []
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if not getattr(t, "_fwd_seed", False):
                    return True
            else:
                stack.append(t.grad_fn)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, Tensor):  # AccumulateGrad
            if not getattr(variable, "_fwd_seed", False):
                return True
            continue
        stack.extend(nxt for nxt, _ in node.next_functions)
    return False


def _refuse_delayed_errors(tensors):
    """A once_differentiable backward cuts ``J^T u`` from ``u`` (its result hangs off an error
    node instead), which would read as a zero tangent: raise where the graph holds one."""
    seen, stack = set(), [t.grad_fn for t in tensors]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, _DelayedError):
            raise RuntimeError(node.msg)
        stack.extend(nxt for nxt, _ in node.next_functions)


# -- make_dual / unpack_dual --------------------------------------------------------------------

def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor``'s values (sharing its storage) with ``tangent`` attached at the
    level. Backward-differentiable: reverse mode through it reaches ``tensor``."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if level != _current_level or _live is None:
        raise RuntimeError("Invalid level given to _make_dual")
    if _seeds_reached(tensor, _live):
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {level} is not supported.")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tensor.is_complex() or tangent.is_complex():
        raise NotImplementedError("jitgrad.autograd.forward_ad: complex dual tensors are not supported")
    if not is_grad_enabled():
        raise NotImplementedError(
            "jitgrad.autograd.forward_ad.make_dual: tangents are computed from the reverse-mode "
            "graph, which is not recorded while grad mode is disabled (no_grad / inference_mode); "
            "create and use dual tensors with grad mode enabled")
    seed = tensor.detach().requires_grad_()
    seed._fwd_seed = True
    _live.tangents[id(seed)] = (seed, tangent)
    return _MakeDual.apply(tensor, seed, _live)


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and the tangent (None without one)."""

    primal: Tensor
    tangent: Tensor | None


_CUT = ("a backward function on the path returned a gradient that is not differentiable "
        "(computed outside the graph, e.g. through NumPy or under no_grad)")


def _nonzero(t):
    return bool(t.detach().ne(0).any())


def _tangent_of(tensor, seeds):
    live = _live
    gf = tensor.grad_fn
    if isinstance(gf, _MAKE_DUAL_NODE) and len(seeds) == 1:
        return live.tangents[id(seeds[0])][1]  # an unmodified dual: its tangent as is
    tangents = [live.tangents[id(s)][1] for s in seeds]
    tangents = [t if t.dtype == s.dtype else t.to(s.dtype) for s, t in zip(seeds, tangents)]
    keep = _reaches_tracked((tensor,)) or any(t.requires_grad for t in tangents)
    try:
        with enable_grad():
            # J^T u is linear in u, so any u gives the same J t; ones (not zeros) make J^T u
            # nonzero where J is, which shows a backward that cut its result from u
            u = tensor.detach().new_ones(tensor.shape).requires_grad_()
            u._fwd_seed = True
            _TANGENT_PASS.level = live
            try:
                g = _autograd_grad((tensor,), tuple(seeds), (u,), create_graph=True,
                                   retain_graph=True, allow_unused=True)
            finally:
                _TANGENT_PASS.level = None
            pairs = [(gi, t) for gi, t in zip(g, tangents) if gi is not None and gi.requires_grad]
            _refuse_delayed_errors([p[0] for p in pairs])
            if any(gi is not None and not gi.requires_grad and _nonzero(gi) for gi in g):
                raise RuntimeError(_CUT)
            out = None
            if pairs:
                out = _autograd_grad(tuple(p[0] for p in pairs), (u,), tuple(p[1] for p in pairs),
                                     create_graph=keep, retain_graph=keep, allow_unused=True)[0]
                if out is None and any(_nonzero(p[0]) for p in pairs):
                    raise RuntimeError(_CUT)
    except (RuntimeError, NotImplementedError) as e:
        raise NotImplementedError(
            "jitgrad.autograd.forward_ad.unpack_dual: the tangent is computed by differentiating "
            "the recorded reverse-mode graph twice (double-vjp), and that failed here; PyTorch's "
            f"eager forward-mode AD supports this case, jitgrad does not. The error was: {e}") from e
    if out is None:
        out = tensor.detach().new_zeros(tensor.shape)
    return out if keep else out.detach()


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` at the level: the primal is a view of ``tensor``
    without the tangent (still reverse-differentiable), the tangent ``J t`` of the level's
    duals, or None when ``tensor`` does not depend on any."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    seeds = _seeds_reached(tensor, _live)
    if seeds and level != _current_level:
        raise RuntimeError("Invalid level given to _fw_primal")
    if not seeds:
        return UnpackedDualTensor(tensor.view_as(tensor), None)
    tangent = _tangent_of(tensor, seeds)
    if is_grad_enabled() and _reaches_tracked((tensor,)):
        primal = _UnpackPrimal.apply(tensor)
    else:
        primal = tensor.detach()
    return UnpackedDualTensor(primal, tangent)

