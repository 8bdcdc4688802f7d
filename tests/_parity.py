"""Run one function under jitgrad and under PyTorch and compare what came out.

``outcome(lib, fn, args)`` runs ``fn(lib, *tensors)`` where each NumPy array in ``args`` becomes
``lib.tensor(array)`` (floating arrays require grad when ``grad=True``) and anything else is
passed as is. The result is an :class:`Outcome`: either the error (exception type name and
message) or the output's values, dtype, shape and ``grad_fn`` class name, plus, with ``grad``,
the gradients of ``sum(out * w)`` (fixed weights) for every input that requires grad, and the
warnings raised. ``assert_parity(fn, *args)`` checks that both libraries agree on all of it.

PyTorch's own CPU errors are builtin types (RuntimeError, IndexError, ...), so types are compared
by name. Used by the index parity tests; written to be reused by any parity test.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

import jitgrad

try:
    import torch
except ImportError:  # pragma: no cover - the parity tests skip without PyTorch
    torch = None

__all__ = ["Outcome", "outcome", "assert_parity", "assert_same_outcome", "torch"]


@dataclass
class Outcome:
    error: tuple | None = None          # (exception type name, message)
    values: list = field(default_factory=list)   # NumPy arrays (one per output)
    dtypes: list = field(default_factory=list)
    grad_fns: list = field(default_factory=list)
    grads: list = field(default_factory=list)    # per tensor input: array or None
    warnings: list = field(default_factory=list)

    def describe(self) -> str:
        if self.error:
            return f"{self.error[0]}: {self.error[1]}"
        return f"values={self.values} dtypes={self.dtypes} grad_fns={self.grad_fns}"


def _to_numpy(lib, t):
    t = t.detach()
    if lib is jitgrad:
        return t.cpu().numpy()
    return t.cpu().numpy()


def _convert(lib, a, grad):
    if isinstance(a, np.ndarray):
        t = lib.tensor(a)
        if grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return a


def outcome(lib, fn, args, grad=False) -> Outcome:
    ins = [_convert(lib, a, grad) for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(lib, *ins)
        except Exception as e:  # noqa: BLE001 - the error is the outcome being compared
            return Outcome(error=(type(e).__name__, str(e)))
    res = Outcome(warnings=[str(w.message) for w in caught])
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if isinstance(o, (jitgrad.Tensor,) + ((torch.Tensor,) if torch else ())):
            res.values.append(_to_numpy(lib, o))
            res.dtypes.append(str(o.dtype).replace("torch.", "").replace("jitgrad.", ""))
            res.grad_fns.append(None if o.grad_fn is None else type(o.grad_fn).__name__)
        else:
            res.values.append(o)
    leaves = [t for t in ins if hasattr(t, "requires_grad") and t.requires_grad]
    heads = [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]
    if grad and leaves and heads:
        total = 0
        for o in heads:
            w = lib.arange(o.numel(), dtype=o.dtype).reshape(o.shape) / 7.0 + 0.5
            total = total + (o * w).sum()
        try:
            total.backward()
        except Exception as e:  # noqa: BLE001
            res.error = ("backward " + type(e).__name__, str(e))
            return res
        res.grads = [None if t.grad is None else t.grad.numpy() for t in leaves]
    return res


def assert_same_outcome(got: Outcome, want: Outcome, rtol=1e-6, atol=1e-9, where="",
                        check_warnings=True) -> None:
    ctx = f" [{where}]" if where else ""
    assert (got.error is None) == (want.error is None), \
        f"jitgrad: {got.describe()}\ntorch:   {want.describe()}{ctx}"
    if want.error is not None:
        assert got.error == want.error, f"jitgrad {got.error} != torch {want.error}{ctx}"
        return
    assert got.dtypes == want.dtypes, f"dtypes {got.dtypes} != {want.dtypes}{ctx}"
    assert got.grad_fns == want.grad_fns, f"grad_fn {got.grad_fns} != {want.grad_fns}{ctx}"
    assert len(got.values) == len(want.values)
    for a, b in zip(got.values, want.values):
        if isinstance(b, np.ndarray):
            assert np.shape(a) == np.shape(b), f"shape {np.shape(a)} != {np.shape(b)}{ctx}"
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=where)
        else:
            assert a == b, f"{a!r} != {b!r}{ctx}"
    assert len(got.grads) == len(want.grads), f"grads {got.grads} vs {want.grads}{ctx}"
    for a, b in zip(got.grads, want.grads):
        assert (a is None) == (b is None), f"grad presence {a} vs {b}{ctx}"
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="grad " + where)
    if check_warnings:
        assert got.warnings == want.warnings, f"warnings {got.warnings} != {want.warnings}{ctx}"


def assert_parity(fn, *args, grad=False, rtol=1e-6, atol=1e-9, where="",
                  check_warnings=True) -> Outcome:
    """``fn(lib, *tensors)`` under jitgrad and torch: same error (type + message), or same
    values, dtypes, shapes, grad_fn names (and gradients with ``grad``). Returns jitgrad's."""
    got = outcome(jitgrad, fn, args, grad)
    want = outcome(torch, fn, args, grad)
    assert_same_outcome(got, want, rtol, atol, where, check_warnings)
    return got
