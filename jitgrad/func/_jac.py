# ruff: noqa: E501 - PyTorch's messages, kept verbatim on one line each
"""``torch.func.jacrev``, ``jacfwd``, ``hessian``, ``jvp`` and ``linearize``.

jitgrad's ops have no forward (JVP) rules, so the forward-mode transforms are computed in reverse
mode (``autograd.forward_ad`` computes its tangents with the same trick, lazily):

* ``jvp`` uses the double-vjp trick (as ``autograd.functional.jvp`` does): with ``g(u) = J^T u``
  the vjp at a placeholder cotangent ``u``, ``J t`` is the vjp of ``g`` w.r.t. ``u`` with
  cotangent ``t``. This needs the function to be twice differentiable in reverse mode, which
  every jitgrad op is; the values equal PyTorch's to rounding.
* ``jacfwd`` is ``jacrev`` (one vjp per output element) under jvp's argument checks, and
  ``hessian`` (PyTorch: ``jacfwd(jacrev(f))``) is therefore ``jacrev(jacrev(f))``.

``jacrev`` runs one backward pass per output element (PyTorch vmaps over them); ``chunk_size``
is checked as there and otherwise changes nothing.
"""
from __future__ import annotations

import functools

from .._size import Size
from ..autograd.grad_mode import enable_grad
from ..ops.basic import zeros_like
from ..ops.shape_join import stack
from ..tensor import Tensor
from ._grad import _autograd_grad, _Level, _slice_argnums, _vjp_core, _vjp_with_argnums
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["jacrev", "jacfwd", "hessian", "jvp", "linearize"]

_JVP = "jvp(f, primals, tangents)"


def _error_if_complex(func_name, args, is_input):
    for idx, arg in enumerate(tree_flatten(args)[0]):
        if isinstance(arg, Tensor) and arg.is_complex():
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{func_name}: Expected all {kind} to be real but received complex tensor at flattened input idx: {idx}")


def _jacobian(func, args, argnums, has_aux, name):
    _error_if_complex(name, args, is_input=True)
    vjp_out = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
    output, vjp_fn = vjp_out[0], vjp_out[1]
    flat_output, output_spec = tree_flatten(output)
    _error_if_complex(name, flat_output, is_input=False)
    numels = [o.numel() for o in flat_output]
    flat_primals, primals_spec = tree_flatten(_slice_argnums(args, argnums))
    # row k of the stacked Jacobian: the vjp with the k-th standard basis vector
    rows = []
    for i, n in enumerate(numels):
        for j in range(n):
            basis = [zeros_like(o) for o in flat_output]
            basis[i].view(-1)[j] = 1
            rows.append(tree_flatten(vjp_fn(tree_unflatten(basis, output_spec)))[0])
    per_input = []
    for k, primal in enumerate(flat_primals):
        if rows:
            full = stack([r[k] for r in rows])
        else:
            full = primal.new_zeros((0,) + tuple(primal.shape))
        pieces, start = [], 0
        for out, n in zip(flat_output, numels):
            pieces.append(full[start:start + n].view(tuple(out.shape) + tuple(primal.shape)))
            start += n
        per_input.append(pieces)
    per_output = [tree_unflatten([per_input[k][i] for k in range(len(flat_primals))], primals_spec)
                  for i in range(len(flat_output))]
    if isinstance(argnums, int):
        per_output = [p[0] for p in per_output]
    result = tree_unflatten(per_output, output_spec)
    return (result, vjp_out[2]) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``torch.func.jacrev``: the Jacobian of ``func`` w.r.t. the arguments ``argnums``; for
    each output ``out`` and differentiated input ``inp`` a tensor of shape
    ``out.shape + inp.shape`` (nested as the outputs, then as the inputs)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        return _jacobian(func, args, argnums, has_aux, "jacrev")
    return wrapper_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``torch.func.jacfwd``, computed in reverse mode (jitgrad has no per-op forward rules): the
    values are PyTorch's to rounding, the cost that of ``jacrev`` (one backward pass per output
    element)."""
    @functools.wraps(func)
    def wrapper_fn(*args):
        from ._vmap import _check_randomness_arg
        _check_randomness_arg(randomness)  # PyTorch checks it when vmapping, at the call
        for p in tree_flatten(_slice_argnums(args, argnums))[0]:
            if isinstance(p, Tensor):  # PyTorch's make_dual of each primal with a basis tangent
                _check_make_dual(p, None)
        return _jacobian(func, args, argnums, has_aux, "jacfwd")
    return wrapper_fn


def hessian(func, argnums=0):
    """``torch.func.hessian``: PyTorch's ``jacfwd(jacrev(func))``, here ``jacrev(jacrev(func))``
    (the same values to rounding)."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- jvp and linearize: the double-vjp trick ----------------------------------------------------

def _check_make_dual(primal, tangent):
    """The checks PyTorch's ``forward_ad.make_dual`` makes on each (primal, tangent) pair."""
    if not (primal.is_floating_point() or primal.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {primal.dtype}")
    if tangent is None:
        return
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(primal.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(primal.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")


def _check_flat_tensors(flat, argname):
    if len(flat) == 0:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got {type(t)}")


def _linear_map(func, primals, has_aux, strict=False):
    """Run ``func`` at ``primals`` and set up the trick: returns (level, the output's spec, the
    output, aux, the placeholders ``u``, ``g = J^T u``) with ``g`` differentiable in ``u``."""
    level = _Level()
    try:
        return _linear_map_at(level, func, primals, has_aux, strict)
    finally:
        level.exit()


def _linear_map_at(level, func, primals, has_aux, strict):
    flat_out, out_spec, flat_diff, _, out, aux = _vjp_core(level, func, primals, None, has_aux, _JVP)
    if strict and not all(o.requires_grad for o in flat_out):
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is not allowed with strict=True.")
    # integer outputs have no tangent (PyTorch gives zeros): they leave the trick out
    keep = [o.is_floating_point() or o.is_complex() for o in flat_out]
    with enable_grad():
        us = [level.leaf(zeros_like(o)) if k else zeros_like(o) for o, k in zip(flat_out, keep)]
        g = _autograd_grad(tuple(o for o, k in zip(flat_out, keep) if k), flat_diff,
                           tuple(u for u, k in zip(us, keep) if k),
                           create_graph=True, retain_graph=True)
    return level, out_spec, out, aux, us, g


def _push_tangents(level, out_spec, us, g, flat_tangents, retain_graph):
    """``J t`` for the flat tangents, shaped as the output."""
    outer = level.reaches_outer(g) or any(t.requires_grad for t in flat_tangents)
    diff_us = [u for u in us if u.requires_grad]
    res = iter(())
    if diff_us:
        with enable_grad():
            res = iter(_autograd_grad(tuple(g), tuple(diff_us), tuple(flat_tangents),
                                      create_graph=outer, retain_graph=retain_graph))
    res = [next(res) if u.requires_grad else zeros_like(u) for u in us]
    res = level.unwrap(list(res)) if outer else [t.detach() for t in res]
    return tree_unflatten(res, out_spec)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``torch.func.jvp``: ``(func(*primals), J @ tangents)`` (with ``has_aux``: plus aux).
    jitgrad has no per-op forward rules: the product is computed with two reverse passes (the
    double-vjp trick), so ``func`` must be twice differentiable in reverse mode."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{_JVP}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {primals_spec} and tangents with structure {tangents_spec}")
    _check_flat_tensors(flat_primals, "primals")
    _check_flat_tensors(flat_tangents, "tangents")
    for p, t in zip(flat_primals, flat_tangents):
        _check_make_dual(p, t)
    level, out_spec, out, aux, us, g = _linear_map(func, primals, has_aux, strict)
    tangents_out = _push_tangents(level, out_spec, us, g, flat_tangents, retain_graph=False)
    return (out, tangents_out, aux) if has_aux else (out, tangents_out)


def linearize(func, *primals):
    """``torch.func.linearize``: ``(func(*primals), jvp_fn)``; ``jvp_fn(*tangents)`` gives
    ``J @ tangents`` and can be called repeatedly (each call one reverse pass through the
    kept double-vjp graph, rather than PyTorch's traced forward-mode graph)."""
    flat_primals, primals_spec = tree_flatten(primals)
    for p in flat_primals:
        if isinstance(p, Tensor):  # PyTorch traces a jvp with zero tangents: make_dual's check
            _check_make_dual(p, None)
    flat_shapes = [tuple(p.shape) for p in flat_primals]
    flat_dtypes = [p.dtype for p in flat_primals]
    level, out_spec, out, _, us, g = _linear_map(func, primals, False)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(
                f"Expected the tangents {tangents_spec} to have the same argspec as the primals {primals_spec}")
        for idx, t in enumerate(flat_tangents):
            if tuple(t.shape) != flat_shapes[idx]:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape {Size(flat_shapes[idx])} of the corresponding primal.")
            if t.dtype != flat_dtypes[idx]:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype {flat_dtypes[idx]} of the corresponding primal.")
        return _push_tangents(level, out_spec, us, g, flat_tangents, retain_graph=True)
    return out, jvp_fn

