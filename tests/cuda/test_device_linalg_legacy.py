"""cholesky_solve / cholesky_inverse / triangular_solve on CUDA tensors (the device trsm kernel)
against the CPU path, forward and gradients; torch.qr/svd/pinverse have no device kernel and
say so.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_linalg_legacy.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(13)
F = np.tril(RNG.standard_normal((2, 3, 3))) + 3 * np.eye(3)
B = RNG.standard_normal((2, 3, 2))

CASES = {
    "cholesky_solve": lambda f, b: jg.cholesky_solve(b, f),
    "cholesky_solve_upper": lambda f, b: jg.cholesky_solve(b, f.mT, upper=True),
    "cholesky_inverse": lambda f, b: jg.cholesky_inverse(f) * b.sum(),
    "triangular_solve": lambda f, b: jg.triangular_solve(b, f, upper=False, transpose=True)[0],
}


def _run(fn, dev):
    xs = [jg.tensor(a, device=dev, requires_grad=True) for a in (F, B)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(*xs)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), [x.grad.cpu().numpy() for x in xs], y


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(device, name):
    yc, gc, tc = _run(CASES[name], "cpu")
    yd, gd, td = _run(CASES[name], "cuda")
    assert td.is_cuda and type(td.grad_fn).__name__ == type(tc.grad_fn).__name__
    np.testing.assert_allclose(yd, yc, rtol=1e-10, atol=1e-10)
    for a, b in zip(gd, gc):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_singular_factor_error(device):
    f = F.copy()
    f[1, 2, 2] = 0.0
    with pytest.raises(RuntimeError) as ec:
        jg.cholesky_inverse(jg.tensor(f))
    with pytest.raises(RuntimeError) as ed:
        jg.cholesky_inverse(jg.tensor(f, device="cuda"))
    assert str(ed.value) == str(ec.value)


@pytest.mark.parametrize("call", [lambda a: jg.svd(a), lambda a: jg.pinverse(a)])
def test_decompositions_are_staged_through_the_host(device, call):
    got, want = call(jg.tensor(F[0], device="cuda")), call(jg.tensor(F[0]))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.device.type == "cuda"
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
