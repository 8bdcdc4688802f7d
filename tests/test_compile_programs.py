"""jitgrad.compile on seeded random programs (the generator of the CUDA random-program test:
chains of elementwise ops with broadcasting, reductions over random dims, softmax, matmul,
split/reshape/transpose views): the replay's value and every input's gradient agree with the
same program run eagerly, and the replay really replayed."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import jitgrad as jg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "cuda"))
from test_device_random_programs import _program  # noqa: E402


def _value_and_grads(fn, inputs, dtype):
    ts = [jg.tensor(a.astype(dtype), requires_grad=True) for a in inputs]
    out = fn(*ts)
    grads = jg.autograd.grad(out, ts, allow_unused=True)
    return out.item(), [None if g is None else g.numpy() for g in grads]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_random_program_replays_like_eager(seed, dtype, rtol):
    run, inputs = _program(seed)
    compiled = jg.compile(run)
    with jg.autograd.profile() as p:
        _value_and_grads(compiled, inputs, dtype)  # records
        got = _value_and_grads(compiled, inputs, dtype)  # replays
    assert (p.compile_captures, p.compile_replays, p.compile_eager_calls) == (1, 1, 0), \
        p.compile_reasons
    want = _value_and_grads(run, inputs, dtype)
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=rtol, err_msg=f"seed {seed}")
    for a, b in zip(got[1], want[1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"seed {seed}")
