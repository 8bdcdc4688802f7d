"""Parity sweep (session 16), run under jitgrad and PyTorch and compared whole: the result's
dtype, shape, values, ``stride()``, ``storage_offset()``, grad_fn name and requires_grad, or
the error's type and first line (``tests/_parity.check_snippet``). Each case differed before its
fix: advanced indexing's result strides (ATen's TensorIterator order, ``ops/index_layout``),
keys with several Ellipsis, the "invalid combination of arguments" TypeErrors of the
comparisons, clamp and masked_fill (method forms leave ``self`` out), comparisons with complex
numbers, index_put_'s shape and argument errors, the parser's words for missing arguments."""
from __future__ import annotations

import random

import numpy as np
import pytest

from tests._parity import agree, check_snippet, describe_with_layout, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _check(code):
    check_snippet("x = torch.arange(24.).reshape(2, 3, 4)\n"
                  "m = torch.arange(6.).reshape(2, 3)\n"
                  "i = torch.tensor([0, 1])\n" + code, describe_with_layout)


ADVANCED_LAYOUTS = [
    # NumPy puts the index dims first in memory; ATen orders the output by its operands
    "x[..., i]", "x[None, i]", "m[:, torch.tensor([[0, 1]])]", "x[0, :, i]",
    "x[:, torch.tensor([0]), i]", "x[:, :, torch.tensor([[0, 1], [2, 3]])]",
    "x[:, torch.tensor([[0], [2]]).t()]", "x.permute(2, 0, 1)[:, i]",
    "x.transpose(0, 2)[..., i]", "x[1:, i][..., None]",
    "x[:, torch.tensor([True, False, True])]", "x[..., torch.tensor([True, False, True, True])]",
    "m[:, torch.tensor([[0, 2], [1, 0]]).t()]", "x[:, None, i]",
    "x.requires_grad_()[..., i]",
]


@pytest.mark.parametrize("code", ADVANCED_LAYOUTS)
def test_advanced_indexing_result_strides(code):
    _check(code)


ELLIPSES = [
    "x[..., ...]", "x[..., 0, ...]", "x[0, ..., ...]", "x[..., None, ...]", "x[..., 1:, ...]",
    "x[..., i, ...]", "x[..., ..., i]",
    "x[..., 0, ...] = 7.\nx",
]


@pytest.mark.parametrize("code", ELLIPSES)
def test_several_ellipses(code):
    # PyTorch reads each Ellipsis as skipping the unnamed dims (NumPy refuses a second one)
    _check(code)


COMPARISON_ARGS = [
    "m.eq(None)", "torch.eq(m, None)", "m.eq([0, 1, 2])", "torch.eq(m, 'a')", "m.ne(None)",
    "m.lt(other=None)", "torch.eq(m, other=None)", "torch.eq(other=None, input=m)", "m.eq()",
    "m.eq(1, 2)", "torch.greater(m, None)", "m.less('a')", "torch.not_equal(m, [1])",
    # complex numbers: eq/ne compare (no real equals 1j), the ordered ones have no kernel
    "m.lt(1 + 1j)", "torch.lt(m, 1j)", "m.eq(1 + 1j)", "m.ne(1j)", "m.eq(2 + 0j)",
    "m.ge(1j)", "m.int().lt(1j)", "m.double().gt(1j)", "m.bool().eq(1j)",
]


@pytest.mark.parametrize("code", COMPARISON_ARGS)
def test_comparison_arguments(code):
    _check(code)


CLAMP_ARGS = [
    "m.clamp(min='a')", "torch.clamp(m, min='a')", "m.clamp(m, 0.5)", "m.clamp(0, m)",
    "m.clamp_(m, 0.5)", "m.clamp_(min='a')", "m.clamp(max=[1])", "m.clamp(None, 'a')",
    "torch.clamp(m, 'a', 'b')", "m.clamp_min('a')", "m.clamp_max(None)", "torch.clamp_min(m, None)",
    "m.clip(min='a')", "torch.clip(m, m, 0.5)", "torch.clamp(m, min='a', max='b')",
    "m.clamp(min='a', max='b')", "torch.clamp(m, m, max=0.5)", "m.clamp(1, 2, 3)",
    "m.clamp_max(m, 1)", "m.clamp(min=0, max=m)",
]


@pytest.mark.parametrize("code", CLAMP_ARGS)
def test_clamp_arguments(code):
    _check(code)


MASKED_FILL_ARGS = [
    "m.masked_fill(m > 2, 'a')", "m.masked_fill(m > 2, None)", "torch.masked_fill(m, m > 2, [1])",
    "m.masked_fill_(m > 2, 'a')", "m.masked_fill([True, False, True], 1)",
    "torch.masked_fill(m, m > 2, value=None)", "m.masked_fill(mask=m > 2, value=None)",
    "m.masked_fill(m > 2)", "m.masked_fill(m > 2, 1, 2)",
    # a complex value: its real part when the imaginary part is 0, else no conversion
    "m.masked_fill(m > 2, 1 + 0j)", "m.masked_fill(m > 2, 1j)", "m.int().masked_fill(m > 2, 1j)",
    "m.double().masked_fill(m > 2, 1j)",
]


@pytest.mark.parametrize("code", MASKED_FILL_ARGS)
def test_masked_fill_arguments(code):
    _check(code)


INDEX_PUT = [
    "m.index_put_((torch.tensor([0]),), torch.tensor([2., 3.]))",
    "m.index_put((torch.tensor([0]),), torch.tensor([2., 3., 4., 5.]))",
    "torch.index_put(m, (torch.tensor([0]),), torch.ones(2))",
    "m.index_put_((torch.tensor([True, False]),), torch.ones(2))",
    "m.index_put_(torch.tensor([0]), torch.tensor(2.))",
    "m.index_put(torch.tensor([0]), torch.tensor(2.))",
    "m.index_put_((0,), torch.tensor(2.))",
    "m.index_put_((torch.tensor([0]),), 2.)", "m.index_put_((torch.tensor([0]),), values=2.)",
    "m.index_put_((torch.tensor([0]), None), torch.tensor(1.))",
    "m.index_put_((torch.tensor([0]),), torch.tensor(1.), 1)",
    "torch.index_put(m, (torch.tensor([0]),), torch.tensor(1.), accumulate=1)",
    "m.index_put_((torch.tensor([0]),))", "m.index_put_()",
    "m.index_put_((torch.tensor([0]),), torch.tensor(1.), True, 1)",
    # x[idx] = v runs index_put_: its shape error
    "m[torch.tensor([0])] = torch.ones(4)\nm",
    "m[torch.tensor([True, False])] = torch.ones(2, 2)\nm",
    "m[torch.tensor([0])] = torch.ones(1, 1, 4)\nm",
    # x[key] = v with a basic key is copy_: expand's error for a value of more dims
    "m[0, 0] = torch.ones(2)\nm", "m[0, 0] = torch.ones(1, 2, dtype=torch.float64)\nm",
    "m[:1, 0] = torch.ones(2, 1)\nm",
]


@pytest.mark.parametrize("code", INDEX_PUT)
def test_index_put_errors(code):
    _check(code)


MISSING_ARGS = [
    "m.roll()", "torch.roll(m)", "m.roll(dims=0)", "m.unsqueeze()", "torch.unsqueeze(m)",
    "m.transpose()", "m.transpose(0)", "torch.transpose(m)", "m.swapaxes(0)", "m.chunk()",
    "torch.chunk(m)", "m.select(0)", "torch.select(m, 0)", "m.index_select(0)",
    "torch.index_select(m, 0)", "torch.cat()", "torch.stack()", "m.masked_select()", "m.take()",
    "m.split()", "torch.split(m)",
]


@pytest.mark.parametrize("code", MISSING_ARGS)
def test_missing_argument_wording(code):
    _check(code)


def _random_keys(seed, n):
    """Keys mixing index tensors (some transposed), masks, ints, slices, None and Ellipsis, on
    tensors permuted or not: ``n`` (shape, permutation, key) triples."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        nd = rng.randint(1, 4)
        shape = [rng.randint(2, 4) for _ in range(nd)]
        perm = list(range(nd))
        rng.shuffle(perm)
        view = [shape[p] for p in perm]
        ishape = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        key = []
        for d in range(nd):
            if rng.random() < 0.1:
                key.append(("none", None))  # (a new dim: names no dim of the tensor)
            r = rng.random()
            if r < 0.4:
                arr = [rng.randrange(view[d]) for _ in range(int(np.prod(ishape)))]
                key.append(("idx", np.array(arr).reshape(ishape), rng.random() < 0.3))
            elif r < 0.5 and d == nd - 1:
                mask = [rng.random() < 0.6 for _ in range(view[d])]
                mask[rng.randrange(view[d])] = True
                key.append(("mask", mask))
            elif r < 0.6:
                key.append(("int", rng.randrange(view[d])))
            else:
                key.append(("slice", slice(rng.choice([None, 1]), None, rng.choice([1, 2]))))
        if any(k[0] in ("idx", "mask") for k in key):
            out.append((shape, perm, key))
    return out


def _key(L, key):
    parts = []
    for kind, v, *rest in key:
        if kind == "idx":
            parts.append(L.tensor(v.T.copy()).t() if rest[0] and v.ndim == 2 else L.tensor(v))
        elif kind == "mask":
            parts.append(L.tensor(v))
        else:
            parts.append(v)
    return tuple(parts)


@pytest.mark.parametrize("seed", range(4))
def test_random_advanced_keys_layout(seed):
    # the result's strides (and values) of many key shapes, views and index layouts
    for shape, perm, key in _random_keys(seed, 60):
        def run(L, shape=shape, perm=perm, key=key):
            base = L.arange(float(np.prod(shape))).reshape(shape).permute(*perm)
            y = base[_key(L, key)]
            return tuple(y.shape), tuple(y.stride()), y.numpy().tolist()
        agree(run)

