"""Shared helpers for the fusion tests: run a graph fused and unfused, generate op chains."""
from __future__ import annotations

import contextlib
import random

import numpy as np

import jitgrad
from jitgrad.autograd import is_fusion_enabled, profile, set_fusion_enabled
from jitgrad.ops.elementwise_call import call
from jitgrad.ops.registry import OPS

# (ternary ops — lerp_tensor, addcmul, addcdiv — join groups in test_planner, not in chains)
DIFF_OPS = sorted(n for n, op in OPS.items() if op.differentiable and len(op.inputs) <= 2)
UNARY = [n for n in DIFF_OPS if len(OPS[n].inputs) == 1]
BINARY = [n for n in DIFF_OPS if len(OPS[n].inputs) == 2]

# operands that must be positive for the op to be finite (inputs by name)
POSITIVE = {"log": "a", "log1p": "a", "sqrt": "a", "rsqrt": "a", "pow": "a", "reciprocal": "a",
            "div": "b", "pow_tensor": "a", "log2": "a", "log10": "a", "pow_sqrt": "a",
            "xlogy": "b", "rxlogy": "a",
            # unary ops: "a" is their one operand whatever its name (poles at 0, -1, ...;
            # log1p needs > -1)
            "polygamma": "a", "special_rxlog1py": "a"}
# ops whose input must stay small (overflow / poles)
BOUNDED = {"exp", "expm1", "tan", "rpow", "pow_tensor", "square", "reciprocal", "sinh", "cosh",
           "exp2"}
AUX = {
    "rsub": {"other": 0.7},
    "add_alpha": {"alpha": 0.3},
    "sub_alpha": {"alpha": -1.7},
    "pow": {"exponent": 2.5},
    "rpow": {"base": 1.7},
    "leaky_relu": {"negative_slope": 0.1},
    "softplus": {"beta": 1.5, "threshold": 1.0},
    "clamp": {"lo": -0.4, "hi": 0.6},
    "fmod_scalar": {"other": 0.7},
    "remainder_scalar": {"other": -0.7},
    "round_decimals": {"ten_pow": 10.0, "neg": False},
    "logit": {"lo": 0.2, "hi": 0.8},
    "xlogy_scalar": {"other": 1.7},
    "rxlogy": {"base": 1.3},
    "copysign_scalar": {"other": -0.7},
    "lerp": {"weight": 0.3},
    "addcmul": {"value": 0.5},
    "addcdiv": {"value": 0.5},
    "nan_to_num": {"nan": 0.0, "posinf": 10.0, "neginf": -10.0},
    "polygamma": {"order": 1.0},
    "special_rxlog1py": {"base": 1.3},
    "special_xlog1py_scalar": {"other": 0.7},
}


@contextlib.contextmanager
def fusion(enabled: bool):
    old = is_fusion_enabled()
    set_fusion_enabled(enabled)
    try:
        yield
    finally:
        set_fusion_enabled(old)


def tol(dtype):
    return (1e-9, 1e-11) if dtype == "float64" else (2e-4, 2e-5)


def assert_close(a, b, dtype, what=""):
    rtol, atol = tol(dtype)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale, err_msg=what)


def run_both(build, seed=0, dtype="float64", grad_out="random", check_fused=True, **kw):
    """Build with fresh leaves twice (fused, unfused); return (fused grads, unfused grads, p).

    ``build(leaf, rng)`` returns (output tensor, list of tensors whose .grad to compare).
    """
    results = []
    prof = None
    for enabled in (True, False):
        rng = np.random.default_rng(seed)

        def leaf(shape, requires_grad=True, low=-1.5, high=1.5, rng=rng):
            data = rng.uniform(low, high, size=shape).astype(dtype)
            return jitgrad.tensor(data, requires_grad=requires_grad)

        with fusion(enabled):
            out, watched = build(leaf, rng)
            if grad_out == "random":
                g = jitgrad.tensor(rng.uniform(-1, 1, size=tuple(out.shape)).astype(dtype))
            elif grad_out == "ones":
                g = jitgrad.ones(tuple(out.shape), dtype=out.dtype)
            else:
                g = None
            with profile() as p:
                out.backward(g, **kw)
            results.append([None if t.grad is None else t.grad.numpy().copy() for t in watched])
            if enabled:
                prof = p
    fused, unfused = results
    for i, (a, b) in enumerate(zip(fused, unfused)):
        assert (a is None) == (b is None), f"gradient {i}: fused {a} vs unfused {b}"
        if a is not None:
            assert a.dtype == b.dtype
            assert_close(a, b, dtype, f"gradient {i}")
    if check_fused:
        assert prof.fused_groups >= 1, "expected at least one fused group"
    return fused, unfused, prof


def apply_op(name, y, other, aux_over=None):
    """Apply registry op ``name`` with ``y`` as its first input (``other`` second, if binary)."""
    op = OPS[name]
    aux = dict(AUX.get(name, {}))
    if aux_over:
        aux.update(aux_over)
    if name == "where":
        return call(op, y, other, cond=aux["cond"])
    if len(op.inputs) == 1:
        return call(op, y, **aux)
    return call(op, y, other, **aux)


def positive(y):
    return jitgrad.sigmoid(y) + 0.5


def bounded(y):
    return jitgrad.tanh(y) * 1.2


class ChainBuilder:
    """A random chain of registry ops (seeded) with fan-out, leaves, scalars and constants."""

    def __init__(self, seed, length=6, shape=(3, 5), ops=None):
        self.seed = seed
        self.length = length
        self.shape = shape
        self.ops = ops or DIFF_OPS

    def __call__(self, leaf, rng):
        r = random.Random(self.seed)  # the same choices on every run
        shape = self.shape
        x = leaf(shape)
        watched = [x]
        y = jitgrad.sin(x) * 1.1 + 0.1
        values = [y]
        cond = jitgrad.tensor(rng.uniform(size=shape) > 0.5)
        for _ in range(self.length):
            name = r.choice(self.ops)
            op = OPS[name]
            if name in BOUNDED:
                y = bounded(y)
            pos = POSITIVE.get(name)
            if pos == "a":
                y = positive(y)
            other = None
            if len(op.inputs) == 2:
                kind = r.choice(["leaf", "bleaf", "const", "scalar", "self", "prev", "x"])
                if kind == "leaf":
                    other = leaf(shape)
                    watched.append(other)
                elif kind == "bleaf":
                    other = leaf(shape[-1:])
                    watched.append(other)
                elif kind == "const":
                    other = leaf(shape, requires_grad=False)
                elif kind == "scalar":
                    other = r.choice([0.5, -1.25, 2.0])
                elif kind == "self":
                    other = y
                elif kind == "prev":
                    other = r.choice(values)
                else:
                    other = x
                if pos == "b":
                    other = positive(other) if not isinstance(other, float) else abs(other) + 0.5
                if name in ("pow_tensor",) and not isinstance(other, float):
                    other = bounded(other)
                if name == "where" and isinstance(other, float):
                    other = jitgrad.full(shape, other, dtype=y.dtype)
            y = apply_op(name, y, other, {"cond": cond} if name == "where" else None)
            if r.random() < 0.3:
                values.append(y)
            if r.random() < 0.2:  # fan-out inside the chain: y meets an earlier value again
                y = y + r.choice(values) * 0.5
        return y, watched
