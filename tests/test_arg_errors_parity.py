"""Argument errors as PyTorch's parser raises them: ``keepdim=`` without a dim on the
reductions whose dim-less overload has no keepdim (sum/mean/prod/max/min), the size-list
methods given non-ints (view/reshape/expand/permute: varargs vs one sequence, view's two
overloads), expand's negative sizes. Each case runs on both libraries and compares the
exception type and message (or the result's shape where PyTorch accepts the call)."""
from __future__ import annotations

import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")


def _outcome(lib, call):
    x = lib.arange(16.0).reshape(4, 4)
    try:
        r = call(lib, x)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return "ok", tuple(r.shape) if hasattr(r, "shape") else type(r).__name__


def _same(call):
    assert _outcome(jg, call) == _outcome(torch, call)


def _keepdim_call(name, kw, form):
    if form == "method":
        return lambda lib, x: getattr(x, name)(**{kw: True})
    return lambda lib, x: getattr(lib, name)(x, **{kw: True})


KEEPDIM_CALLS = {
    f"{form}:{name}:{kw}": _keepdim_call(name, kw, form)
    for name in ("sum", "mean", "prod", "max", "min", "logsumexp")
    for kw in ("keepdim", "keepdims")
    for form in ("method", "function")
}
KEEPDIM_CALLS.update({
    "sum:keepdim+dtype": lambda lib, x: x.sum(keepdim=True, dtype=lib.float64),
    "sum:keepdim=int": lambda lib, x: x.sum(keepdim=1),
    # the calls beside them that PyTorch accepts
    "sum:dim+keepdims": lambda lib, x: x.sum(0, keepdims=True),
    "sum:dim=None+keepdim": lambda lib, x: x.sum(dim=None, keepdim=True),
    "sum:None,True": lambda lib, x: x.sum(None, True),
    "mean:None,keepdim": lambda lib, x: x.mean(None, keepdim=True),
    "sum:axis+keepdims": lambda lib, x: lib.sum(x, axis=1, keepdims=True),
    "prod:dim+keepdim": lambda lib, x: x.prod(1, keepdim=True),
    "max:dim+keepdims": lambda lib, x: lib.max(x, dim=1, keepdims=True).values,
    "min:dim+keepdim": lambda lib, x: x.min(0, keepdim=True).values,
    "amax:keepdims": lambda lib, x: x.amax(keepdims=True),
    "std:keepdim": lambda lib, x: x.std(keepdim=True),
    "sum:plain": lambda lib, x: x.sum(),
    "mean:plain": lambda lib, x: lib.mean(x),
    "max:plain": lambda lib, x: x.max(),
})


@pytest.mark.parametrize("case", sorted(KEEPDIM_CALLS))
def test_keepdim_without_dim(case):
    _same(KEEPDIM_CALLS[case])


SIZE_LIST_CALLS = {
    "view(2.0, 8)": lambda lib, x: x.view(2.0, 8),
    "view(2, 8.0)": lambda lib, x: x.view(2, 8.0),
    "view((2.0, 8))": lambda lib, x: x.view((2.0, 8)),
    "view((2, 8.0))": lambda lib, x: x.view((2, 8.0)),
    "view([2, 'a'])": lambda lib, x: x.view([2, "a"]),
    "view('a', 8)": lambda lib, x: x.view("a", 8),
    "view(True, 16)": lambda lib, x: x.view(True, 16),
    "view(None, 2)": lambda lib, x: x.view(None, 2),
    "view(2, None)": lambda lib, x: x.view(2, None),
    "reshape(2.0, 8)": lambda lib, x: x.reshape(2.0, 8),
    "reshape(2, 8.0)": lambda lib, x: x.reshape(2, 8.0),
    "reshape((2.0, 8))": lambda lib, x: x.reshape((2.0, 8)),
    "reshape((2, 8.0))": lambda lib, x: x.reshape((2, 8.0)),
    "permute(1.0, 0)": lambda lib, x: x.permute(1.0, 0),
    "permute(1, 0.0)": lambda lib, x: x.permute(1, 0.0),
    "permute((1.0, 0))": lambda lib, x: x.permute((1.0, 0)),
    "permute((1, 0.0))": lambda lib, x: x.permute((1, 0.0)),
    "permute(True, 0)": lambda lib, x: x.permute(True, 0),
    "permute(None)": lambda lib, x: x.permute(None),
    "permute((1, tensor(0.5)))": lambda lib, x: x.permute((1, lib.tensor(0.5))),
    "expand(4.0, 4)": lambda lib, x: x.expand(4.0, 4),
    "expand(4, 4.0)": lambda lib, x: x.expand(4, 4.0),
    "expand((4.0, 4))": lambda lib, x: x.expand((4.0, 4)),
    "expand((4, 4.0))": lambda lib, x: x.expand((4, 4.0)),
    "expand('a')": lambda lib, x: x.expand("a"),
    "expand(None)": lambda lib, x: x.expand(None),
    "expand(4.0)": lambda lib, x: x.expand(4.0),
    "view(2.0)": lambda lib, x: x.view(2.0),
    "view(None)": lambda lib, x: x.view(None),
    "view('a')": lambda lib, x: x.view("a"),
    "view(size=(2.0, 8))": lambda lib, x: x.view(size=(2.0, 8)),
    "permute(dims=(1.0, 0))": lambda lib, x: x.permute(dims=(1.0, 0)),
    "permute(dims=(1, 0.0))": lambda lib, x: x.permute(dims=(1, 0.0)),
    "expand(size=None)": lambda lib, x: x.expand(size=None),
    "expand(size=(4, 4.0))": lambda lib, x: x.expand(size=(4, 4.0)),
    "reshape(shape=(2.0, 8))": lambda lib, x: x.reshape(shape=(2.0, 8)),
    # accepted beside them
    "view(float32)": lambda lib, x: x.view(lib.float32),
    "view(dtype=int32)": lambda lib, x: x.view(dtype=lib.int32),
    "permute(dims=(1, 0))": lambda lib, x: x.permute(dims=(1, 0)),
    "view(2, 8)": lambda lib, x: x.view(2, 8),
    "view([2, 8])": lambda lib, x: x.view([2, 8]),
    "permute(tensor(1), 0)": lambda lib, x: x.permute(lib.tensor(1), 0),
    "expand(2, 4, 4)": lambda lib, x: x.expand(2, 4, 4),
    "reshape(-1)": lambda lib, x: x.reshape(-1),
}


@pytest.mark.parametrize("case", sorted(SIZE_LIST_CALLS))
def test_size_list_type_errors(case):
    _same(SIZE_LIST_CALLS[case])


EXPAND_CASES = [
    ((1, 16), (-2, 16)),
    ((4,), (-2, 4)),
    ((1, 1), (2, -2)),
    ((4, 4), (-3, 4, 4)),
    ((4, 4), (-2, 16)),   # the last dim's mismatch is found first
    ((1,), (-2,)),
    ((), (-2,)),
    ((1, 1), (-1, -2)),
    ((16,), (-1, 16)),    # -1 in a new leading dim: its own message
    ((4, 4), (3, -1, 4)),
    ((1, 4), (0, 4)),
    ((2, 1), (2, -1)),
]


@pytest.mark.parametrize("shape,target", EXPAND_CASES)
def test_expand_negative_sizes(shape, target):
    _same(lambda lib, x: lib.ones(shape).expand(*target))
