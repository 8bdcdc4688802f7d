"""``gradcheck`` / ``gradgradcheck``: compare backward against central finite differences.

Use float64 inputs. The analytic VJP is taken for a random upstream gradient ``v`` and compared
with ``(f(x + eps e_i) - f(x - eps e_i)) . v / 2 eps`` for every input element.
"""
from __future__ import annotations

import numpy as np

from . import grad_mode
from .engine import grad as autograd_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    pass


def _outputs(fn, inputs):
    out = fn(*inputs)
    return (out,) if not isinstance(out, (tuple, list)) else tuple(out)


def _snapshot(outs):
    from ..tensor import Tensor
    return [o._data.astype(np.float64) if isinstance(o, Tensor) and o.is_floating_point()
            else None for o in outs]


def _numeric_vjp(fn, inputs, idx, vs, eps):
    x = inputs[idx]
    if not x._data.flags.c_contiguous:
        raise GradcheckError(f"input {idx} must be contiguous for gradcheck")
    flat = x._data.reshape(-1)  # a view: perturb in place, restore after
    grad = np.zeros(flat.size, dtype=np.float64)
    with grad_mode.no_grad():
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = _snapshot(_outputs(fn, inputs))  # outputs may be views of the input
            flat[k] = orig - eps
            minus = _snapshot(_outputs(fn, inputs))
            flat[k] = orig
            total = 0.0
            for p, m, v in zip(plus, minus, vs):
                if p is not None:
                    total += float(np.sum((p - m) * v))
            grad[k] = total / (2 * eps)
    return grad.reshape(x._data.shape)


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, raise_exception=True):
    """True when fn's backward matches finite differences for every input requiring grad."""
    from ..tensor import Tensor
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    diff_outs = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    vs = [rng.standard_normal(o._data.shape) for o in outs]
    targets = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not targets:
        raise GradcheckError("gradcheck expects at least one input tensor to require gradient")
    for i in targets:
        if inputs[i].dtype.name != "float64":
            raise GradcheckError(f"input {i} is {inputs[i].dtype}: gradcheck needs float64")
    grad_outputs = [Tensor._make(v.astype(o._data.dtype)) for o, v in zip(outs, vs)
                    if isinstance(o, Tensor) and o.requires_grad]
    if diff_outs:
        analytic = autograd_grad(diff_outs, [inputs[i] for i in targets], grad_outputs,
                                 allow_unused=True, materialize_grads=True)
    else:
        analytic = [None] * len(targets)
    vs_used = [v for o, v in zip(outs, vs) if isinstance(o, Tensor)]
    for i, a in zip(targets, analytic):
        numeric = _numeric_vjp(fn, inputs, i, vs_used, eps)
        a = np.zeros_like(numeric) if a is None else a._data
        if a.shape != numeric.shape:
            raise GradcheckError(f"gradient for input {i} has shape {a.shape}, expected "
                                 f"{numeric.shape}")
        if not np.allclose(a, numeric, atol=atol, rtol=rtol):
            worst = np.unravel_index(np.argmax(np.abs(a - numeric)), numeric.shape)
            msg = (f"Jacobian mismatch for input {i}: analytic {a[worst]!r} vs numerical "
                   f"{numeric[worst]!r} at index {tuple(int(w) for w in worst)}\n"
                   f"analytic:\n{a}\nnumerical:\n{numeric}")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, seed=1):
    """gradcheck of the first derivative (computed with create_graph=True)."""
    from ..tensor import Tensor
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    vs = [Tensor._make(rng.standard_normal(o._data.shape)) for o in outs if o.requires_grad]
    targets = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivative(*xs):
        # gradcheck evaluates this under no_grad for its finite differences: the first
        # derivative itself always needs a graph
        with grad_mode.enable_grad():
            o = [t for t in _outputs(fn, xs) if t.requires_grad]
            return autograd_grad(o, [xs[i] for i in targets], vs, create_graph=True,
                                 allow_unused=True, materialize_grads=True)

    return gradcheck(first_derivative, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed)
