"""Flags PyTorch's parser takes only as bools, and dims that must be ints: ``x.std(0, 1)``,
``x.all(0, 1)``, ``x.sort(0, 1)``, ``x.topk(1, 0, 1)`` are TypeErrors there (0/1 are not bools)
and ran as if True/False here; ``std(dim=0, unbiased=True, correction=1)`` mixes two overloads.
Each call runs under both libraries: the whole error (the parser's listing of overloads with
its "didn't match" lines) or the result compared; the valid neighbours of each case too, so
the check cannot refuse what PyTorch takes."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

CASES = [
    # std/var and their _mean forms: method and function
    "x.std(0, 1)", "x.var(0, 1, True)", "x.std(0, True, 1)", "x.std(True, True)",
    "x.std(0.5)", "x.std('a')", "x.var(0, unbiased=1)", "x.var(0, keepdim=1)",
    "x.var(correction=1, unbiased=True)", "x.std([0], True, 2)", "x.all(1.5, True)",
    "x.all((0,), 1)", "x.sort(1.5, 1)",
    "torch.std(x, 0, 1)", "torch.var(x, 0, True, 1)", "torch.var_mean(x, 0, 1)",
    "torch.std_mean(x, 0, True, 1)", "torch.std_mean(x, (0, 1), 1)",
    "x.std(True)", "torch.std(x, True)", "x.std(None, True, True)", "x.std([0, 1], False)",
    "x.var(0, correction=1.5)", "x.var(0, correction=None)", "x.std(correction=True)",
    "x.std(dim=(0,), unbiased=False)", "x.std(False)", "x.var(np.int64(1), True)",
    "torch.var_mean(x, 1, True, True)", "x.std(0, np.bool_(True))",
    # all/any
    "x.all(0, 1)", "torch.all(x, 0, 1)", "torch.any(x, 0, 1)", "x.any(1, 0)",
    "x.all(0, True)", "x.any((0, 1), False)", "torch.any(x, 1, True)", "x.all(None)",
    # sort/topk
    "x.sort(0, 1)", "torch.sort(x, 0, 1)", "x.sort(0, True)", "x.sort(stable=True)",
    "x.topk(1, 0, 1)", "torch.topk(x, 1, 0, 1)", "x.topk(1, 0, True, 1)",
    "torch.topk(x, 2, 1, False, True)", "x.topk(2, largest=False)",
    # a dim that is no int: the parser's TypeError (was an IndexError or "tuple indices must
    # be integers" from inside the op)
    "x.softmax(0.5)", "torch.softmax(x, 0.5)", "torch.nn.functional.softmax(x, 0.5)",
    "x.log_softmax(1.0)", "torch.log_softmax(x, 1.0)", "torch.nn.functional.log_softmax(x, 1.)",
    "x.softmax(np.int64(1))", "torch.nn.functional.softmax(x, -1)",
    "x.index_select(0.0, torch.tensor([0]))", "torch.index_select(x, 0.0, torch.tensor([0]))",
    "x.index_select(np.int64(1), torch.tensor([0]))",
    "x.cumsum(0.0)", "torch.cumsum(x, 0.0)", "x.cumsum(np.int32(1))",
]


def _outcome(lib, code):
    x = lib.tensor(np.arange(12.0).reshape(3, 4) ** 1.5 % 5)
    try:
        r = eval(code, {"torch": lib, "x": x, "np": np})
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    r = r if isinstance(r, tuple) else (r,)
    return [(str(t.dtype).replace("jitgrad", "torch"), tuple(t.shape),
             np.round(t.double().numpy(), 10).tolist()) for t in r]


@pytest.mark.parametrize("code", CASES)
def test_flag_types_as_pytorch(code):
    mine, ref = _outcome(jitgrad, code), _outcome(torch, code)
    assert mine == ref, f"\n{code}\njitgrad: {mine}\ntorch:   {ref}"
