"""The eager fast paths of ``x.sum()`` / ``torch.sum(x)`` (reduce_sums), ``x.view(ints)``
(shape_views) and ``record``'s one-output path (composite) behave as the general paths do, which
is to say as PyTorch does: values to the bit, grad_fn names, version counters, view bases,
CreationMeta errors, warnings and argument errors, on the inputs the fast paths take and on the
neighbouring ones they hand to the general path."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _parity import check_observations, check_snippet

import jitgrad as jg

torch = pytest.importorskip("torch")


def _describe(v, lib):
    if isinstance(v, lib.Tensor):
        gf = v.grad_fn
        return (v.detach().numpy().tolist(), str(v.dtype).replace("torch.", ""),
                tuple(v.shape), v.stride(), type(gf).__name__ if gf is not None else None)
    return v


def _bits(t):
    return t.detach().numpy().tobytes()


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (16,), (7, 5), (3, 4, 5), (0,), (2, 0)])
@pytest.mark.parametrize("rg", [False, True])
def test_full_sum_bits_and_node(dt, shape, rg):
    a = np.random.default_rng(3).standard_normal(shape).astype(dt) * 1e3
    for call in (lambda T, x: x.sum(), lambda T, x: T.sum(x), lambda T, x: x.sum(dtype=None)):
        x, y = jg.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg)
        got, want = call(jg, x), call(torch, y)
        assert got.dtype == getattr(jg, dt) and got.shape == tuple(want.shape)
        assert _bits(got) == _bits(want)
        assert (type(got.grad_fn).__name__ if got.grad_fn else None) == \
            (type(want.grad_fn).__name__ if want.grad_fn else None)
        assert got.requires_grad == want.requires_grad
        if rg:
            got.backward()
            want.backward()
            assert np.array_equal(x.grad.numpy(), y.grad.numpy())


def test_full_sum_non_contiguous_and_no_grad():
    a = np.random.default_rng(4).standard_normal((6, 9)).astype(np.float32)

    def scenario(T, record):
        x = T.tensor(a, requires_grad=True)
        record("t", x.t().sum())
        record("slice", x[:, ::2].sum())
        with T.no_grad():
            record("no_grad", x.sum())
        s = x.sum()
        s.backward()
        # (the values: a gradient's _version differs from PyTorch's, the engine's matter)
        record("grad", x.grad.numpy().tolist())
    check_observations(scenario)


def test_full_sum_of_inf_and_minus_inf_warns_nothing():
    x = jg.tensor([np.inf, -np.inf, 1.0], dtype=jg.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = x.sum()
    assert np.isnan(s.item())


@pytest.mark.parametrize("code", [
    "torch.ones(3).sum(None)",            # SumBackward1's dim=None, general path
    "torch.ones(3, requires_grad=True).sum(None).grad_fn.name()",
    "torch.ones(3, requires_grad=True).sum(0, False).grad_fn.name()",
    "torch.ones(3, requires_grad=True).sum(dim=0).grad_fn.name()",
    "torch.ones(2, 3).sum(axis=1)",
    "torch.ones(2, 3).sum(1, axis=1)",
    "torch.ones(2, 3).sum(dim=1, axis=1)",
    "torch.ones(3, dtype=torch.int64).sum()",
    "torch.ones(3, dtype=torch.float16).sum()",
    "torch.ones(3).sum(dtype=torch.float64)",
    "torch.ones(3, requires_grad=True).sum(dtype=torch.int64)",
    "torch.ones(3).sum(0, True)",
    "torch.sum(torch.ones(3), 0, out=torch.zeros(()))",
])
def test_sum_calls_beside_the_fast_path(code):
    check_snippet(code, _describe)


@pytest.mark.parametrize("code", [
    "torch.ones(16).view(-1, 1)",
    "torch.ones(16).view((2, 8))",
    "torch.ones(16).view([4, -1])",
    "torch.ones(16).view(torch.ones(2, 8).shape)",
    "torch.ones(1).view(())",
    "torch.ones(()).view(1, 1)",
    "torch.ones(16).view(-1, -1)",
    "torch.ones(16).view(3, -1)",
    "torch.ones(16).view(0, -1)",
    "torch.ones(16).view(5, 3)",
    "torch.ones(16).view(-2, 8)",
    "torch.ones(16).view(np.int64(2), 8)",
    "torch.ones(16).view(torch.float32)",
    "torch.ones(4, 4).t().view(16)",
    "torch.ones(0, 3).view(-1, 0)",
    "torch.ones(0, 3).view(3, 0)",
    "torch.ones(16, requires_grad=True).view(4, 4).grad_fn.name()",
    "torch.ones(16, dtype=torch.int64).view(2, 8)",
])
def test_view_calls(code):
    check_snippet(code, _describe)


@pytest.mark.parametrize("code", [
    "torch.ones(16, requires_grad=True).reshape(4, -1)",
    "torch.ones(16, requires_grad=True).reshape((2, 8)).grad_fn.name()",
    "torch.ones(16, requires_grad=True).reshape([16, 1]).grad_fn.name()",
    "torch.ones(4, 4, requires_grad=True).t().reshape(16).grad_fn.name()",
    "torch.ones(4, 4, requires_grad=True)[:, ::2].reshape(8).grad_fn.name()",
    "torch.ones(4, 4, requires_grad=True).flatten().grad_fn.name()",
    "torch.ones(2, 3, 4).flatten(1)",
    "torch.ones(0, 3).reshape(3, -1)",
    "torch.ones(16).reshape(-1, -1)",
    "torch.ones(16).reshape(5, -1)",
    "torch.ones(16).reshape(2, 8, shape=(2, 8))",
    "torch.ones(16).reshape(shape=(2, 8))",
])
def test_reshape_calls(code):
    check_snippet(code, _describe)


def test_reshape_of_a_view_shares_the_base():
    def scenario(T, record):
        x = T.zeros(2, 8, requires_grad=True)
        y = x * 1
        r = y.reshape(16)
        record("r_base_is_y", r._base is y)
        r[3] = 5.0
        record("y", y)
        record("r", r)
    check_observations(scenario)


def test_view_semantics_of_the_fast_path():
    a = np.arange(16, dtype=np.float32)

    def scenario(T, record):
        x = T.tensor(a, requires_grad=True)
        y = x * 1
        v = y.view(4, 4)
        record("v", v)
        w = v.view(-1)
        record("w", w)
        record("w_base_is_y", w._base is y)
        w.mul_(2)  # through a view of a view: y's history rewritten
        record("y", y)
        record("v_after", v)
        y.sum().backward()
        record("grad", x.grad.numpy().tolist())
        with T.no_grad():
            n = y.view(2, 8)
        record("n", n)
        n2 = n.view(16)
        record("n2", n2)
        n2.add_(1)  # a view made under no_grad, written with grad mode on: PyTorch's error
    check_observations(scenario)


def test_view_of_leaf_inplace_error_and_version():
    def scenario(T, record):
        x = T.ones(8, requires_grad=True)
        v = x.view(2, 4)
        record("v", v)
        record("version", v._version)
        with T.no_grad():
            v.add_(1)
        record("x_version", x._version)
        v.add_(1)  # a view of a leaf requiring grad: PyTorch's error
    check_observations(scenario)
