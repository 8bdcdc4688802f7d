"""Shared by the issue-13 "misc ops" tests: run one expression with ``T`` bound to jitgrad and
to torch, and compare values, dtypes, shapes, grad_fn names and gradients."""
import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def tensors(T, arrays, dtype=None, grad=False):
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


def same(rj, rt, rtol=1e-6, atol=1e-6, names=True):
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
    tj, tt = tensors(jitgrad, arrays, dtype, grad), tensors(torch, arrays, dtype, grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rj, rt = fn(jitgrad, *tj), fn(torch, *tt)
    same(rj, rt, rtol, atol)
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
    tj, tt = tensors(jitgrad, arrays, dtype), tensors(torch, arrays, dtype)
    with pytest.raises(Exception) as et:
        fn(torch, *tt)
    with pytest.raises(type(et.value)) as ej:
        fn(jitgrad, *tj)
    if match_message:
        assert str(ej.value) == str(et.value)
