# ruff: noqa: E501 - PyTorch's messages, kept verbatim on one line each
"""``torch.func.grad``, ``grad_and_value`` and ``vjp`` on jitgrad's reverse-mode autograd.

functorch runs each transform at its own *level*: the inputs are wrapped afresh, the gradient is
taken at that level, and what comes out is connected to an enclosing graph only where it
depends on something tracked there (an outer transform's input, a tensor the caller made with
``requires_grad=True``). ``_Level`` gives the same observable semantics with one autograd graph:

* a differentiated input becomes a fresh leaf (``detach().requires_grad_()``), or, when it is
  already tracked outside (and grad mode was on at entry), a ``view_as`` of it, so the outer
  graph reaches through it: this is what makes ``grad(grad(f))`` work;
* the gradient is taken with ``create_graph=True`` only when the function's output reaches a
  tracked tensor that is not one of this level's fresh leaves (else there is nothing outside to
  differentiate, and no graph is kept);
* every result (gradient, value, aux) is walked back through its graph: a result that reaches
  no outer tensor is detached, as functorch's unwrapping would leave it untracked.

Credit: the argument checks and messages follow PyTorch's ``torch/_functorch/eager_transforms.py``
(https://github.com/pytorch/pytorch), BSD 3-Clause license.
"""
from __future__ import annotations

import functools

from ..autograd.engine import grad as _autograd_grad_fn
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.node import AccumulateGrad
from ..ops.basic import zeros_like
from ..tensor import Tensor
from ._pytree import tree_flatten, tree_map, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp"]


# -- argnums (PyTorch's helpers, same messages) -------------------------------------------------

def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        i = _validate_and_wrap_argnum(argnums, len(args))
        return (args[i],) if as_tuple else args[i]
    argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _replace_args(args, new, argnums):
    """``args`` with the differentiated positions (``argnums``) replaced by ``new``."""
    if isinstance(argnums, int):
        i = _validate_and_wrap_argnum(argnums, len(args))
        return tuple(new if j == i else a for j, a in enumerate(args))
    pos = {_validate_and_wrap_argnum(a, len(args)): k for k, a in enumerate(argnums)}
    return tuple(new[pos[j]] if j in pos else a for j, a in enumerate(args))


# -- levels -------------------------------------------------------------------------------------

class _LevelState:
    """Whether a level is still running; its fresh leaves carry it (no reference back to the
    level, so no cycle). A leaf of an exited level is no longer differentiated by anyone, so
    an enclosing level meeting it in a graph ignores it."""

    __slots__ = ("active",)

    def __init__(self):
        self.active = True


class _Level:
    """One transform's view of the autograd graph (see the module docstring)."""

    def __init__(self):
        self.outer_enabled = is_grad_enabled()
        self.state = _LevelState()
        self._inner = {}  # id -> the fresh leaves (kept alive so the ids stay unique)
        # nodes known not to reach an outer tensor, by id (held, so that no id is reused)
        self._no_outer = {}

    def leaf(self, x):
        """A fresh leaf of this level holding ``x``'s values."""
        y = x.detach().requires_grad_()
        y._func_level = self.state
        self._inner[id(y)] = y
        return y

    def exit(self):
        self.state.active = False

    def _is_outer(self, leaf) -> bool:
        if id(leaf) in self._inner:
            return False
        state = getattr(leaf, "_func_level", None)
        return state is None or state.active

    def differentiable(self, x):
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if self.outer_enabled and x.requires_grad:
            with enable_grad():
                return x.view_as(x)  # differentiable here, and still connected outside
        return self.leaf(x)

    def reaches_outer(self, tensors) -> bool:
        """Whether any of ``tensors`` depends, through the graph, on a tracked tensor other
        than this level's fresh leaves."""
        if not self.outer_enabled:
            return False
        for t in tensors:
            if not isinstance(t, Tensor) or not t.requires_grad:
                continue
            if t.grad_fn is None:
                if self._is_outer(t):
                    return True
                continue
            if self._walk(t.grad_fn):
                return True
        return False

    def _walk(self, root) -> bool:
        seen, stack = [], [root]
        visited = set()
        while stack:
            node = stack.pop()
            key = id(node)
            if key in visited or key in self._no_outer:
                continue
            visited.add(key)
            seen.append(node)
            if isinstance(node, AccumulateGrad):
                if self._is_outer(node.variable):
                    return True
                continue
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    stack.append(nxt)
        self._no_outer.update((id(n), n) for n in seen)
        return False

    def unwrap(self, tree):
        """Detach each tensor of ``tree`` that is not connected to an outer graph."""
        def one(t):
            if isinstance(t, Tensor) and t.requires_grad and not self.reaches_outer((t,)):
                return t.detach()
            return t
        return tree_map(one, tree)


def _unwrap_aux(level, aux):
    def check(x):
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        return x
    return level.unwrap(tree_map(check, aux))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """PyTorch's functorch ``_autograd_grad``: zeros for inputs the outputs do not reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(zeros_like(i) for i in inputs)
    outs, gos = zip(*pairs)
    res = _autograd_grad_fn(outs, tuple(inputs), gos, retain_graph=retain_graph,
                            create_graph=create_graph, allow_unused=True)
    return tuple(zeros_like(i) if g is None else g for g, i in zip(res, inputs))


# -- grad / grad_and_value ----------------------------------------------------------------------

def _grad_and_value(func, argnums, has_aux, args, kwargs):
    level = _Level()
    try:
        return _grad_and_value_at(level, func, argnums, has_aux, args, kwargs)
    finally:
        level.exit()


def _grad_and_value_at(level, func, argnums, has_aux, args, kwargs):
    with enable_grad():
        diff = _slice_argnums(args, argnums, as_tuple=False)
        diff = tree_map(level.differentiable, diff)
        args = _replace_args(args, diff, argnums)
        output = func(*args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is True")
            output, aux = output
        if not isinstance(output, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        flat_diff, spec = tree_flatten(diff)
        create = level.reaches_outer((output,))
        flat_grads = _autograd_grad((output,), flat_diff, create_graph=create)
        grads = level.unwrap(tree_unflatten(list(flat_grads), spec))
        output = level.unwrap(output)
        if has_aux:
            aux = _unwrap_aux(level, aux)
    return grads, ((output, aux) if has_aux else output)


def grad_and_value(func, argnums=0, has_aux=False):
    """``torch.func.grad_and_value``: a function returning ``(gradient, value)`` (with
    ``has_aux``: ``(gradient, (value, aux))``)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``torch.func.grad``: the gradient of the scalar ``func`` w.r.t. the arguments
    ``argnums`` (an int or a tuple of ints; each argument a tensor or a pytree of tensors).
    ``grad(grad(f))`` and ``vmap(grad(f))`` compose (see the module docstring for how the
    results attach to enclosing graphs)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


# -- vjp ----------------------------------------------------------------------------------------

def _check_outputs(flat_out, api):
    if (len(flat_out) == 1 and flat_out[0] is None) or len(flat_out) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat_out})")
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _vjp_core(level, func, primals, argnums, has_aux, api="vjp(f, *primals)"):
    """The forward of a vjp at ``level``: (flat outputs, their spec, the differentiated inputs
    and their spec, the unwrapped output, aux); ``api`` names the caller in the messages."""
    with enable_grad():
        if argnums is None:
            diff = tree_map(level.differentiable, primals)
            args = diff
        else:
            diff = tree_map(level.differentiable, _slice_argnums(primals, argnums, as_tuple=False))
            args = _replace_args(primals, diff, argnums)
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            out, aux = out
            aux = _unwrap_aux(level, aux)
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, api)
        for o in flat_out:
            if api.startswith("vjp") and not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor with dtype {o.dtype}")
        flat_diff, diff_spec = tree_flatten(diff)
    return flat_out, out_spec, flat_diff, diff_spec, level.unwrap(out), aux


def _make_vjp_fn(level, flat_out, out_spec, flat_diff, diff_spec):
    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {treespec_pprint(cot_spec)}, "
                f"primal output: {treespec_pprint(out_spec)}")
        # a graph is kept only when something outside could differentiate the result
        create = create_graph and (level.reaches_outer(flat_out) or any(
            isinstance(c, Tensor) and c.requires_grad for c in flat_cot))
        with enable_grad():
            res = _autograd_grad(flat_out, flat_diff, tuple(flat_cot), create_graph=create,
                                 retain_graph=retain_graph)
        res = tree_unflatten(list(res), diff_spec)
        return level.unwrap(res) if create else tree_map(
            lambda t: t.detach() if isinstance(t, Tensor) else t, res)
    return vjp_fn


def vjp(func, *primals, has_aux=False):
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)`` (with ``has_aux``: ``(output, vjp_fn,
    aux)``); ``vjp_fn(cotangents)`` gives the vector-Jacobian products w.r.t. every primal and
    can be called any number of times."""
    return _vjp_with_argnums(func, *primals, argnums=None, has_aux=has_aux)


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False, level=None):
    level = _Level() if level is None else level
    try:
        flat_out, out_spec, flat_diff, diff_spec, out, aux = _vjp_core(level, func, primals, argnums, has_aux)
    finally:
        level.exit()
    fn = _make_vjp_fn(level, flat_out, out_spec, flat_diff, diff_spec)
    return (out, fn, aux) if has_aux else (out, fn)
