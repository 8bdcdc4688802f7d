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


# ------------------------------------------------ unsqueeze/squeeze/transpose/permute/expand/flatten

def _describe_view(v, lib):
    if isinstance(v, lib.Tensor):
        return _describe(v, lib) + (v.storage_offset(), v.is_contiguous())
    return v


@pytest.mark.parametrize("code", [
    "torch.ones(16).unsqueeze(0)",
    "torch.ones(16).unsqueeze(-1)",
    "torch.ones(16).unsqueeze(1)",
    "torch.ones(16).unsqueeze(2)",
    "torch.ones(16).unsqueeze(-3)",
    "torch.ones(16).unsqueeze(np.int64(0))",
    "torch.ones(()).unsqueeze(0)",
    "torch.ones(()).unsqueeze(-1)",
    "torch.ones(0, 3).unsqueeze(1)",
    "torch.ones(4, 1, 3).unsqueeze(1)",
    "torch.ones(4, 1, 3)[:, :, 1:].unsqueeze(2)",
    "torch.ones(3, 4, requires_grad=True).t().unsqueeze(0).grad_fn.name()",
    "torch.arange(24.).view(2, 3, 4).permute(2, 0, 1)[1:].unsqueeze(3)",
    "torch.ones(16).squeeze(0)",
    "torch.ones(1, 16).squeeze(0)",
    "torch.ones(1, 16).squeeze(-2)",
    "torch.ones(1, 16).squeeze(2)",
    "torch.ones(()).squeeze(0)",
    "torch.ones(()).squeeze(1)",
    "torch.ones(1, 1, 3, requires_grad=True).squeeze(1).grad_fn.name()",
    "torch.ones(1, 1, 3, requires_grad=True).squeeze().grad_fn.name()",
    "torch.ones(1, 1, 3, requires_grad=True).squeeze((0, 1)).grad_fn.name()",
    "torch.arange(30.).view(5, 1, 3, 1, 2)[::2].permute(4, 1, 3, 0, 2).squeeze(3)",
    "torch.arange(30.).view(5, 1, 3, 1, 2).permute(3, 1, 0, 2, 4).squeeze(0)",
    "torch.arange(30.).view(5, 1, 3, 1, 2).permute(3, 1, 0, 2, 4).squeeze()",
])
def test_unsqueeze_squeeze_calls(code):
    check_snippet(code, _describe_view)


@pytest.mark.parametrize("code", [
    "torch.ones(3, 4).transpose(0, 1)",
    "torch.ones(3, 4).transpose(-1, -2)",
    "torch.ones(3, 4).transpose(1, 1)",
    "torch.ones(3, 4).transpose(0, 2)",
    "torch.ones(3, 4).transpose(-3, 0)",
    "torch.ones(()).transpose(0, -1)",
    "torch.ones(3).transpose(0, 0)",
    "torch.ones(2, 3, 4, requires_grad=True).transpose(0, 2).grad_fn.name()",
    "torch.ones(2, 3, 4).permute(2, 0, 1)",
    "torch.ones(2, 3, 4).permute((2, 0, 1))",
    "torch.ones(2, 3, 4).permute([-1, 0, 1])",
    "torch.ones(2, 3, 4).permute(torch.ones(2, 3, 4).shape)",
    "torch.ones(2, 3, 4).permute(0, 1)",
    "torch.ones(2, 3, 4).permute(0, 1, 1)",
    "torch.ones(2, 3, 4).permute(0, 1, 3)",
    "torch.ones(2, 3, 4).permute(dims=(2, 1, 0))",
    "torch.ones(()).permute(())",
    "torch.ones(()).permute()",
    "torch.ones(2, 3, requires_grad=True).permute(1, 0).grad_fn.name()",
    "torch.ones(2, 3, 4).flatten()",
    "torch.ones(2, 3, 4).flatten(1)",
    "torch.ones(2, 3, 4).flatten(0, 1)",
    "torch.ones(2, 3, 4).flatten(-2, -1)",
    "torch.ones(2, 3, 4).flatten(2, 1)",
    "torch.ones(2, 3, 4).flatten(1, 1)",
    "torch.ones(2, 3, 4).flatten(0, 3)",
    "torch.ones(2, 3, 4).transpose(0, 1).flatten()",
    "torch.ones(()).flatten()",
    "torch.ones(0, 3).flatten()",
    "torch.ones(2, 3, 4, requires_grad=True).flatten(1).grad_fn.name()",
])
def test_transpose_permute_flatten_calls(code):
    check_snippet(code, _describe_view)


@pytest.mark.parametrize("code", [
    "torch.ones(1, 16).expand(3, 16)",
    "torch.ones(1, 16).expand(3, -1)",
    "torch.ones(1, 16).expand((2, 3, 16))",
    "torch.ones(1, 16).expand([1, 1, 16])",
    "torch.ones(1, 16).expand(1, 16)",
    "torch.ones(2, 1, 5).expand(3, 2, 1, 5)",
    "torch.ones(2, 1, 5).expand(1, 2, 3, 5)",
    "torch.ones(2, 1, 5).expand(1, 1, 2, 1, 5)",
    "torch.ones(1, 16).expand(3, 0)",
    "torch.ones(1, 16).expand(3, 15)",
    "torch.ones(1, 16).expand(16)",
    "torch.ones(1, 16).expand(-1, 3, 16)",
    "torch.ones(1, 16).expand(np.int64(3), 16)",
    "torch.ones(1, 16).expand(size=(3, 16))",
    "torch.ones(()).expand(3)",
    "torch.ones(3, requires_grad=True).expand(2, 3).grad_fn.name()",
    "torch.ones(3, 1).t().expand(4, 3)",
])
def test_expand_calls(code):
    check_snippet(code, _describe_view)


def test_expand_is_read_only_and_a_view():
    def scenario(T, record):
        x = T.zeros(1, 4)
        e = x.expand(3, 4)
        record("e_base_is_x", e._base is x)
        x.add_(1)
        record("e", e)
        record("e_version", e._version)
        e.add_(1)  # PyTorch: more than one element refers to one memory location
    check_observations(scenario)


def test_inplace_through_fast_path_views():
    a = np.arange(12, dtype=np.float32)

    def scenario(T, record):
        x = T.tensor(a, requires_grad=True)
        y = x * 1
        u = y.view(3, 4).unsqueeze(1)
        record("u_base_is_y", u._base is y)
        record("u_offset", u.storage_offset())
        t = u.squeeze(1).transpose(0, 1).permute(1, 0).flatten()
        record("t_base_is_y", t._base is y)
        u.mul_(2)
        record("y", y)
        record("t", t)
        y.sum().backward()
        record("grad", x.grad.numpy().tolist())
        with T.no_grad():
            n = y.unsqueeze(0)
        n.add_(1)  # a view made under no_grad, written with grad mode on: PyTorch's error
    check_observations(scenario)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (16,), (7, 5), (3, 4, 5), (0,), (2, 0)])
@pytest.mark.parametrize("rg", [False, True])
def test_full_mean_bits_and_node(dt, shape, rg):
    a = np.random.default_rng(5).standard_normal(shape).astype(dt) * 1e3
    for call in (lambda T, x: x.mean(), lambda T, x: T.mean(x)):
        x, y = jg.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg)
        got, want = call(jg, x), call(torch, y)
        assert got.dtype == getattr(jg, dt) and got.shape == tuple(want.shape)
        assert _bits(got) == _bits(want)
        assert (type(got.grad_fn).__name__ if got.grad_fn else None) == \
            (type(want.grad_fn).__name__ if want.grad_fn else None)
        if rg and a.size:
            got.backward()
            want.backward()
            assert np.array_equal(x.grad.numpy(), y.grad.numpy())


def test_full_mean_of_inf_minus_inf_and_empty_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(jg.tensor([np.inf, -np.inf, 1.0]).mean().item())
        assert np.isnan(jg.ones(0).mean().item())


@pytest.mark.parametrize("code", [
    "torch.ones(3).mean(0)",
    "torch.ones(2, 3, requires_grad=True).mean(1).grad_fn.name()",
    "torch.ones(2, 3, requires_grad=True).mean(dim=None).grad_fn.name()",
    "torch.ones(2, 3).mean(axis=1)",
    "torch.ones(2, 3).mean((), True)",
    "torch.ones(3, dtype=torch.int64).mean()",
    "torch.ones(3, dtype=torch.float16).mean()",
    "torch.ones(3).mean(dtype=torch.float64)",
    "torch.mean(torch.ones(3), 0, out=torch.zeros(()))",
])
def test_mean_calls_beside_the_fast_path(code):
    check_snippet(code, _describe)


def _torch_views(base):
    """Strided views of ``base`` (a PyTorch tensor): permutations, steps, unit dims, integer
    indices, the stride patterns the fast paths must report as ATen does."""
    import itertools
    for perm in itertools.permutations(range(base.ndim)):
        for sl in [(slice(None),), (slice(None, None, 2),), (Ellipsis, slice(0, 1)), (0,),
                   (slice(None), 0), (Ellipsis, 0)]:
            yield perm, sl


def test_unsqueeze_squeeze_expand_strides_sweep():
    a = np.arange(30, dtype=np.float32).reshape(5, 1, 3, 1, 2)
    for perm, sl in _torch_views(torch.from_numpy(a)):
        want_x = torch.from_numpy(a).permute(perm)[sl]
        got_x = jg.tensor(a).permute(perm)[sl]
        for d in range(-want_x.ndim - 1, want_x.ndim + 1):
            w, g = want_x.unsqueeze(d), got_x.unsqueeze(d)
            assert (g.stride(), g.storage_offset()) == (w.stride(), w.storage_offset())
        for d in range(-want_x.ndim, want_x.ndim):
            w, g = want_x.squeeze(d), got_x.squeeze(d)
            assert (g.stride(), g.storage_offset(), tuple(g.shape)) == \
                (w.stride(), w.storage_offset(), tuple(w.shape)), (perm, sl, d)
        # contiguous views take expand's fast path, the others its general path
        for lead in [(), (1,), (2, 1)]:
            for size in [lead + tuple(want_x.shape),
                         lead + tuple(3 if s == 1 else s for s in want_x.shape)]:
                w, g = want_x.expand(size), got_x.expand(size)
                assert (g.stride(), g.storage_offset()) == (w.stride(), w.storage_offset()), \
                    (perm, sl, size)
                assert np.array_equal(g.numpy(), w.numpy())
