"""The reductions' arguments as PyTorch's parser takes them (``reduce_args.reduction_entry``),
run under jitgrad and PyTorch and compared whole (``tests/_parity.check_snippet``): ``keepdim``
is a strict bool also when given by its NumPy name ``keepdims=`` (which used to be renamed
after the check, so ``x.sum(0, keepdims=1)`` was ``keepdim=True``), and also without a dim where
PyTorch's overload has a default dim (``x.amax(keepdim=1)``); ``logsumexp`` over an empty dim
list is ATen's RuntimeError (a reduction over every dim whose maxima are added back unsqueezed)
unless the input is 0-d or empty or ``keepdim=True``."""
from __future__ import annotations

import pytest

from tests._parity import check_snippet, tensor_description, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _describe(v, lib):
    if isinstance(v, lib.Tensor):
        return tensor_description(v)
    if isinstance(v, (tuple, list)):
        return [_describe(u, lib) for u in v]
    return repr(v)


def _check(code):
    check_snippet("x = torch.arange(12.).reshape(3, 4)\n" + code, _describe)


KEEPDIMS_ALIAS = [
    "x.sum(0, keepdims=1)", "torch.sum(x, 0, keepdims=1)", "x.sum(axis=0, keepdims=1)",
    "x.mean(0, keepdims=1)", "x.prod(0, keepdims=1)", "torch.prod(x, 0, keepdims=1)",
    "torch.logsumexp(x, 0, keepdims=1)", "x.max(0, keepdims=1)", "x.median(0, keepdims=1)",
    "torch.median(x, 0, keepdims=1)", "x.nanmedian(0, keepdims=None)", "x.nansum(0, keepdims=1)",
    "x.argmin(0, keepdims=1)", "x.amax(0, keepdims=1)", "torch.amin(x, dim=1, keepdims=1.0)",
]


@pytest.mark.parametrize("code", KEEPDIMS_ALIAS)
def test_keepdims_alias_is_a_strict_bool(code):
    _check(code)


KEEPDIM_WITHOUT_DIM = [
    # a default dim: the keepdim keyword is checked on its own
    "x.amax(keepdim=1)", "torch.amax(x, keepdim=None)", "x.amin(keepdims=1)",
    "x.argmax(keepdim=1)", "x.argmin(keepdim=1)", "x.nansum(keepdim=1)",
    "torch.nansum(x, keepdim=1)", "torch.argmax(x, keepdims=1)",
    # no default dim: the missing dim (or no overload) is the error, as before
    "x.median(keepdim=1)", "x.logsumexp(keepdim=1)", "x.sum(keepdims=1)", "x.sum(keepdim=1)",
    # the bools themselves, and both names at once
    "x.amax(keepdims=True)", "torch.argmax(x, keepdim=True)", "x.sum(axis=1, keepdims=True)",
    "x.nansum(keepdims=False)", "x.sum(0, keepdim=True, keepdims=1)",
]


@pytest.mark.parametrize("code", KEEPDIM_WITHOUT_DIM)
def test_keepdim_keyword_without_dim(code):
    _check(code)


LOGSUMEXP_NO_DIMS = [
    "torch.logsumexp(x, ())", "torch.logsumexp(x, [])", "x.logsumexp(())",
    "torch.logsumexp(x, dim=())", "torch.logsumexp(torch.ones(3), [])",
    "torch.logsumexp(torch.ones(1, 1), ())", "torch.logsumexp(torch.arange(3), ())",
    "torch.logsumexp(x.requires_grad_(), ())",
    # these reduce every dim as sum's empty list does
    "torch.logsumexp(x, (), keepdim=True)", "torch.logsumexp(torch.tensor(2.), ())",
    "torch.logsumexp(torch.ones(2, 0), ())", "torch.logsumexp(torch.ones(0), ())",
    "torch.logsumexp(torch.ones(2, 0), (), keepdim=True)",
]


@pytest.mark.parametrize("code", LOGSUMEXP_NO_DIMS)
def test_logsumexp_over_an_empty_dim_list(code):
    _check(code)
