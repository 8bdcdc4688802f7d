# ruff: noqa: E501 - PyTorch's messages, kept verbatim on one line each
"""``torch.func.vmap`` as a loop: NOT batched.

jitgrad has no batching rules (no BatchedTensor), so ``vmap(func)`` calls ``func`` once per
index of the mapped dimension, on the inputs' slices (``select(in_dim, i)``), and stacks the
results along ``out_dims``. The values are those of PyTorch's batched run (each sample sees
exactly the unbatched shapes it would see there), composition with ``grad``/``vjp``/``jacrev``
and nesting work, but the cost is ``batch_size`` Python calls, not one batched kernel.

Argument checks and their messages are PyTorch's. Where a loop cannot tell what a batched run
knows, the rules are:

* ``out_dims=None`` for an output: PyTorch refuses it when the output is batched (depends on a
  mapped input); here the per-sample results are compared, and differing values raise PyTorch's
  error, equal ones return the first sample's (an output that depends on the mapped input but
  happens to be equal across the batch is returned, where PyTorch would raise).
* ``randomness``: a change of the default generator's state during a call is a random draw.
  'error' raises PyTorch's error; 'same' rewinds the generator before each sample, so every
  sample draws what one unbatched call draws (PyTorch's values); 'different' lets each sample
  draw in turn (different per sample, as required, but not PyTorch's batched stream).

Credit: the checks follow PyTorch's ``torch/_functorch/vmap.py`` (https://github.com/pytorch/pytorch),
BSD 3-Clause license.
"""
from __future__ import annotations

import functools

from ..ops.shape_join import stack
from ..tensor import Tensor
from ._pytree import LEAF, broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _check_randomness_arg(randomness):
    if randomness not in ["error", "different", "same"]:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _process_inputs(func, in_dims, args):
    """(batch size, flat in_dims, flat args, args' spec), with PyTorch's checks."""
    name = _get_name(func)
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_prefix(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but "
            f"inputs has structure {args_spec}.")
    for arg, in_dim in zip(flat_args, flat_in_dims):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but in_dim must be either an integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
    sizes = [arg.size(d) for arg, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _check_out_dims(func, out_dims):
    if isinstance(out_dims, int):
        return
    for d in tree_flatten(out_dims)[0]:
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python collection of ints representing where in the outputs the vmapped dimension should appear.")


def _flat_out_dims(func, out_dims, output, output_spec):
    def incompatible():
        raise ValueError(
            f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            f"compatible with the structure of `outputs`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but outputs has structure {output_spec}.")
    if output_spec == LEAF and isinstance(output, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    flat = broadcast_prefix(out_dims, output_spec)
    if flat is None:
        incompatible()
    return flat


class _Randomness:
    """Watches (and for 'same', rewinds) the default generator around each sample's call."""

    def __init__(self, randomness):
        from ..random import default_generator
        self.mode = randomness
        self.gen = default_generator()
        self.start = self.gen.get_state()

    def before(self):
        if self.mode == "same":
            self.gen.set_state(self.start)
        elif self.mode == "error":
            self.start = self.gen.get_state()

    def after(self):
        if self.mode == "error" and (self.gen.get_state() != self.start).any():
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _same_value(a, b):
    if a is b:
        return True
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an incomparable object is a different value
        return False


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(func, out_dims)
    batch_size, flat_in_dims, flat_args, args_spec = _process_inputs(func, in_dims, args)
    rng = _Randomness(randomness)
    if batch_size == 0:
        return _empty_batch(func, flat_in_dims, flat_args, args_spec, out_dims, kwargs, rng)
    per_sample = []
    for i in range(batch_size):
        sliced = [a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_in_dims)]
        rng.before()
        out = func(*tree_unflatten(sliced, args_spec), **kwargs)
        rng.after()
        per_sample.append(tree_flatten(out) + (out,))
    _, output_spec, first = per_sample[0]
    flat_out_dims = _flat_out_dims(func, out_dims, first, output_spec)
    name = _get_name(func)
    results = []
    for k, out_dim in enumerate(flat_out_dims):
        values = [leaves[k] for leaves, _, _ in per_sample]
        if out_dim is None:
            if not all(_same_value(values[0], v) for v in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            results.append(values[0])
            continue
        for v in values:
            if not isinstance(v, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. Did you mean to set out_dims= to None for output?")
        results.append(stack(values, dim=out_dim))
    return tree_unflatten(results, output_spec)


def _empty_batch(func, flat_in_dims, flat_args, args_spec, out_dims, kwargs, rng):
    """A batch of size 0: ``func`` runs once on zero-filled samples to learn the output's
    shapes, and each output gets an empty batch dimension."""
    sample = [a if d is None else a.new_zeros(tuple(a.shape[:d % a.dim()]) + tuple(a.shape[d % a.dim() + 1:]))
              for a, d in zip(flat_args, flat_in_dims)]
    rng.before()
    out = func(*tree_unflatten(sample, args_spec), **kwargs)
    rng.after()
    flat_out, output_spec = tree_flatten(out)
    results = []
    for v, out_dim in zip(flat_out, _flat_out_dims(func, out_dims, out, output_spec)):
        if out_dim is None:
            results.append(v)
            continue
        if not isinstance(v, Tensor):
            raise ValueError(f"vmap({_get_name(func)}, ...): `{_get_name(func)}` must only return Tensors, got type {type(v)}. Did you mean to set out_dims= to None for output?")
        results.append(v.detach().new_zeros((0,) + tuple(v.shape)).movedim(0, out_dim))
    return tree_unflatten(results, output_spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``torch.func.vmap``, computed by a loop over the mapped dimension (jitgrad has no
    batching rules; see the module docstring): ``func`` runs once per sample on unbatched
    slices and the results are stacked at ``out_dims``. Same values, shapes and errors as
    PyTorch; ``chunk_size`` is checked and otherwise changes nothing."""
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped
