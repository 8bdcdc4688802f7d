"""Run code under jitgrad and under PyTorch and compare what came out: the one harness of the
parity tests. Pick the entry by what a test compares:

* ``assert_parity(fn, *arrays)`` (``outcome``/``assert_same_outcome``): ``fn(lib, *tensors)``
  where each NumPy array becomes ``lib.tensor(array)`` (floating arrays require grad with
  ``grad=True``): the same error (type name and message), or the same values, dtypes, shapes,
  ``grad_fn`` names, warnings and, with ``grad``, gradients of ``sum(out * w)`` (fixed weights).
* ``compare(fn, arrays)`` / ``raises_like(fn, *arrays)``: the arrays become float64 / int64 /
  bool / uint8 tensors (or ``dtype``); values (NaN-aware), dtypes, shapes and grad_fn names of
  every (nested) output, with ``grad`` the gradients of a random weighted sum; or the same
  exception type (and message).
* ``agree(fn)``: ``fn(lib)``'s result in a library-neutral form (tensors as dtype,
  shape and exact values; containers by type) or its error's type and first line, compared
  exactly (bit-exact samplers, data loading, save/load).
* ``check_snippet(code, describe)``: a snippet whose last line is an expression, run with
  ``torch`` bound to either library; the described result (or error) and the warnings compared.
* ``check_observations(fn)``: a scenario ``fn(lib, record)`` that records labelled observations
  (values, dtype, grad_fn name, ``_version``, requires_grad/is_leaf, shape, gradients) or stops
  at an error; compared with a 1e-6 relative tolerance on floats.
* ``assert_grad_parity(fn, *arrays)``: ``fn(lib)(*tensors)``'s value, dtype, shape, grad_fn name
  (or error), then gradients of a random cotangent with create_graph, float64 central
  differences of jitgrad's forward, and double backward (linalg, einsum); ``random_array`` makes
  its inputs.

PyTorch's own CPU errors are builtin types (RuntimeError, IndexError, ...), so types are compared
by name.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest

import jitgrad

try:
    import torch
except ImportError:  # pragma: no cover - the parity tests skip without PyTorch
    torch = None


__all__ = ["Outcome", "outcome", "assert_parity", "assert_same_outcome", "torch",
           "compare",
           "raises_like", "typed_tensors", "neutral_form", "neutral_run", "agree",
           "tensor_description", "snippet_outcome", "check_snippet", "observe",
           "same_observations", "check_observations", "random_array", "grad_fn_name",
           "assert_grad_parity"]


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


# ------------------------------------------------- compare / raises_like (typed tensors, nested)

def typed_tensors(T, arrays, dtype=None, grad=False):
    out = []
    for a in arrays:
        a = np.asarray(a)
        dt = dtype or {"f": "float64", "b": "bool", "u": "uint8", "i": "int64"}[a.dtype.kind]
        t = T.tensor(a, dtype=getattr(T, dt))
        if grad and t.dtype.is_floating_point:
            t.requires_grad_(True)
        out.append(t)
    return out


def _flat(r):
    if isinstance(r, (tuple, list)):
        out = []
        for x in r:
            out.extend(_flat(x))
        return out
    return [r]


def _assert_same_results(rj, rt, rtol=1e-6, atol=1e-6, names=True):
    """Values, dtypes, shapes (and grad_fn names) of jitgrad's result ``rj`` and torch's ``rt``."""
    fj, ft = _flat(rj), _flat(rt)
    assert len(fj) == len(ft)
    for a, b in zip(fj, ft):
        if not isinstance(b, torch.Tensor):
            assert a == b
            continue
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
        np.testing.assert_allclose(a.detach().cpu().numpy().astype(np.float64),
                                   b.detach().numpy().astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True)
        if names:
            na = None if a.grad_fn is None else type(a.grad_fn).__name__
            nb = None if b.grad_fn is None else b.grad_fn.name()
            assert na == nb, (na, nb)


def compare(fn, arrays, dtype=None, grad=False, rtol=1e-6, atol=1e-6, seed=0):
    """``fn(T, *tensors)`` under both libraries; with ``grad``, also the gradients of a random
    weighted sum of the (floating) outputs."""
    tj = typed_tensors(jitgrad, arrays, dtype, grad)
    tt = typed_tensors(torch, arrays, dtype, grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rj, rt = fn(jitgrad, *tj), fn(torch, *tt)
    _assert_same_results(rj, rt, rtol, atol)
    if grad:
        rng = np.random.default_rng(seed)
        outs = [(a, b) for a, b in zip(_flat(rj), _flat(rt))
                if isinstance(b, torch.Tensor) and b.requires_grad]
        if not outs:
            return rj, rt
        w = [rng.standard_normal(tuple(b.shape)) for _, b in outs]
        lj = sum((a * jitgrad.tensor(x, dtype=a.dtype)).sum() for (a, _), x in zip(outs, w))
        lt = sum((b * torch.tensor(x, dtype=b.dtype)).sum() for (_, b), x in zip(outs, w))
        lj.backward()
        lt.backward()
        for a, b in zip(tj, tt):
            if b.requires_grad:
                assert (a.grad is None) == (b.grad is None)
                if b.grad is not None:
                    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol * 10,
                                               atol=atol * 10, equal_nan=True)
    return rj, rt


def raises_like(fn, *arrays, dtype=None, match_message=True):
    """``fn`` raises the same exception type (and message) under both libraries."""
    tj, tt = typed_tensors(jitgrad, arrays, dtype), typed_tensors(torch, arrays, dtype)
    with pytest.raises(Exception) as et:
        fn(torch, *tt)
    with pytest.raises(type(et.value)) as ej:
        fn(jitgrad, *tj)
    if match_message:
        assert str(ej.value) == str(et.value)


# ------------------------------------------------ agree (exact, library-neutral)

def neutral_form(x):
    """A library-neutral form: tensors -> (dtype, shape, values), containers by type name, NumPy
    scalars and arrays with their dtype, NaN as a string."""
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        return ("T", str(x.dtype), tuple(x.shape), x.detach().numpy().tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: neutral_form(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [neutral_form(v) for v in x])
    if isinstance(x, np.generic):
        return ("G", str(x.dtype), x.item())
    if isinstance(x, np.ndarray):
        return ("A", str(x.dtype), x.tolist())
    if isinstance(x, float) and x != x:
        return "nan"
    return x


def neutral_run(lib, fn):
    """``fn(lib)`` in neutral form, or the error's type and first line."""
    try:
        return ("ok", neutral_form(fn(lib)))
    except Exception as e:  # noqa: BLE001 - the error type and first line must match
        return ("err", type(e).__name__, str(e).split("\n")[0])


def agree(fn):
    a, b = neutral_run(torch, fn), neutral_run(jitgrad, fn)
    assert repr(b) == repr(a)


# ------------------------------------------------------- check_snippet (exec'd code snippets)

def tensor_description(v):
    """What a snippet's tensor result is compared by."""
    gf = v.grad_fn
    return ("T", str(v.dtype), tuple(v.shape), v.detach().numpy().tolist(), v.requires_grad,
            None if gf is None else type(gf).__name__, v.is_leaf)


def describe_with_layout(v, lib):
    """A snippet's result compared whole: a tensor's dtype, shape, values, strides, storage
    offset, grad_fn name and requires_grad (nested in tuples/lists), else its repr."""
    if isinstance(v, lib.Tensor):
        gf = v.grad_fn
        return ("T", str(v.dtype), tuple(v.shape), v.detach().numpy().tolist(),
                tuple(v.stride()), v.storage_offset(),
                None if gf is None else type(gf).__name__, v.requires_grad)
    if isinstance(v, (tuple, list)):
        return [describe_with_layout(u, lib) for u in v]
    return repr(v)


def snippet_outcome(lib, code, describe):
    """Run ``code`` with ``torch`` bound to ``lib``: the last line's value as ``describe(value,
    lib)`` (or the error's type and first line) and the warnings raised."""
    ns = {"torch": lib, "np": np}
    *stmts, last = code.strip().split("\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec("\n".join(stmts), ns)
            out = describe(eval(last, ns), lib)
        except Exception as e:  # noqa: BLE001 - the exception is the result compared
            out = ("raises", type(e).__name__, str(e).split("\n")[0])
    warned = sorted({f"{w.category.__name__}: {str(w.message)[:80]}" for w in caught})
    return repr(out).replace("jitgrad", "torch"), warned


def check_snippet(code, describe):
    mine, ref = snippet_outcome(jitgrad, code, describe), snippet_outcome(torch, code, describe)
    assert mine == ref, f"\n{code}\njitgrad: {mine}\ntorch:   {ref}"


# -------------------------------------------------- assert_same_bits (bitwise kernels)

def assert_same_bits(got, want, what):
    """``got`` and ``want`` (float32/float64 arrays) equal bit for bit, any NaN matching any NaN;
    the message names how many differ and the first five."""
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{got.shape} vs torch {want.dtype}{want.shape}"
    view = np.uint32 if got.dtype == np.float32 else np.uint64
    same = (got.view(view) == want.view(view)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{what}: {bad.size} of {got.size} differ, first at {bad[:5]}: " \
                          f"{got.ravel()[bad[:5]]} vs torch {want.ravel()[bad[:5]]}"


# -------------------------------------------------- check_observations (recorded scenarios)

def _observation(T, t):
    if isinstance(t, (list, tuple)) and all(u is None or isinstance(u, T.Tensor) for u in t):
        # gradients: values, dtype and shape
        return [None if u is None else (u.numpy().tolist(), str(u.dtype), list(u.shape))
                for u in t]
    if not isinstance(t, T.Tensor):
        return t
    gf = t.grad_fn
    return (t.detach().numpy().tolist(), str(t.dtype).replace("torch.", ""),
            type(gf).__name__ if gf is not None else None, t._version, t.requires_grad,
            t.is_leaf, list(t.shape))


def observe(T, fn):
    """``fn(T, record)``'s recorded ``(label, observation)`` pairs, then its error if any."""
    obs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(T, lambda label, v: obs.append((label, _observation(T, v))))
        except Exception as e:  # noqa: BLE001 - the error is an observation
            obs.append(("error", type(e).__name__, str(e)))
    return obs


def same_observations(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_observations(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * (1 + abs(b)) or (np.isnan(a) and np.isnan(b))
    return a == b


def check_observations(fn, where=""):
    mine, ref = observe(jitgrad, fn), observe(torch, fn)
    assert same_observations(mine, ref), f"{where}\njitgrad: {mine}\ntorch:   {ref}"


# ------------------------------------ assert_grad_parity (finite differences, double backward)

_RNG = np.random.default_rng(7)  # random_array's and assert_grad_parity's cotangents


def random_array(*shape, dt=np.float64):
    """A test input: small integers, booleans or standard normals of ``dt``."""
    if np.dtype(dt).kind in "iu":
        return _RNG.integers(-4, 5, shape).astype(dt)
    if dt == np.bool_:
        return _RNG.integers(0, 2, shape).astype(bool)
    return _RNG.standard_normal(shape).astype(dt)


def _leaves(lib, arrays, grad=True):
    return [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]


def _run_on_leaves(lib, fn, arrays, grad=True):
    xs = _leaves(lib, arrays, grad)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib)(*xs), xs
    except Exception as e:  # noqa: BLE001 - the parity check compares the exception
        return e, xs


def grad_fn_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _fd_vjp(lib_fn, arrays, v, eps=1e-6):
    """Central differences of sum(f(x) * v) for each float64 input (jitgrad forward only). The
    two outputs are subtracted element by element before weighting: elements the perturbed
    input does not reach cancel exactly, so a large output elsewhere (erfcx(-3) ~ 1.6e4) adds
    no rounding noise of its own to a small derivative."""
    grads = []
    for i, a in enumerate(arrays):
        if a.dtype != np.float64:
            grads.append(None)
            continue
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            vals = []
            for s in (eps, -eps):
                b = [x.copy() for x in arrays]
                b[i][idx] += s
                with jitgrad.no_grad():
                    out = lib_fn(jitgrad)(*[jitgrad.tensor(x) for x in b])
                vals.append(out.numpy())
            g[idx] = float(((vals[0] - vals[1]) * v).sum()) / (2 * eps)
        grads.append(g)
    return grads


def assert_grad_parity(fn, *arrays, name=True, fd=True, double=True):
    """``fn(lib)(*tensors)`` under both libraries: same result or same error (type, first line);
    then the gradients (create_graph) of a random cotangent, float64 central differences and
    double backward."""
    t, tx = _run_on_leaves(torch, fn, arrays)
    j, jx = _run_on_leaves(jitgrad, fn, arrays)
    if isinstance(t, Exception) or isinstance(j, Exception):
        assert type(j) is type(t), (t, j)
        assert str(j).split("\n")[0] == str(t).split("\n")[0]
        return
    assert str(j.dtype) == str(t.dtype)
    assert tuple(j.shape) == tuple(t.shape)
    tol = {torch.float32: 1e-5, torch.float16: 3e-3}.get(t.dtype, 1e-10)
    np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    if name:
        assert grad_fn_name(j) == grad_fn_name(t)
    assert j.requires_grad == t.requires_grad
    if not t.requires_grad:
        return
    v = _RNG.standard_normal(tuple(t.shape))
    tl = [x for x in tx if x.requires_grad]
    jl = [x for x in jx if x.requires_grad]
    gt = torch.autograd.grad(t, tl, torch.tensor(v, dtype=t.dtype), create_graph=True)
    gj = jitgrad.autograd.grad(j, jl, jitgrad.tensor(v, dtype=j.dtype), create_graph=True)
    for a, b in zip(gt, gj):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(force=True), rtol=tol * 10,
                                   atol=tol * 10)
    if fd and t.dtype == torch.float64:
        num = [g for a, g in zip(arrays, _fd_vjp(fn, list(arrays), v)) if a.dtype.kind == "f"]
        for want, got in zip(num, gj):
            if want is not None:
                np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    if double and t.dtype == torch.float64 and all(g.requires_grad for g in gt):
        st = sum((g * g).sum() for g in gt)
        sj = sum((g * g).sum() for g in gj)
        for a, b in zip(torch.autograd.grad(st, tl, allow_unused=True),
                        jitgrad.autograd.grad(sj, jl, allow_unused=True)):
            if a is None or b is None:
                zero = a if b is None else b
                assert zero is None or np.allclose(zero.detach().numpy(force=True), 0)
                continue
            np.testing.assert_allclose(b.numpy(), a.numpy(force=True), rtol=1e-8, atol=1e-8)
