"""``nn.utils.clip_grad_norm_`` / ``clip_grad_value_`` against PyTorch (values, returned norm,
inf / p norms, no clipping below the threshold, the non-finite error)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
GRADS = [RNG.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), (2, 2, 2))]


def _params(lib, grads):
    ps = []
    for g in grads:
        p = lib.zeros(g.shape, requires_grad=True)
        p.grad = lib.tensor(g)
        ps.append(p)
    return ps


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0),
                                                (0.3, math.inf), (2.0, 3.0)])
def test_clip_grad_norm_matches_pytorch(max_norm, norm_type):
    pj, pt = _params(jg, GRADS), _params(torch, GRADS)
    nj = jg.nn.utils.clip_grad_norm_(pj, max_norm, norm_type)
    nt = torch.nn.utils.clip_grad_norm_(pt, max_norm, norm_type)
    assert nj.shape == () and str(nj.dtype) == str(nt.dtype)
    np.testing.assert_allclose(nj.item(), nt.item(), rtol=1e-6)
    for a, b in zip(pj, pt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_nonfinite_error_and_value():
    g = [np.array([1.0, np.inf], np.float32)]
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        jg.nn.utils.clip_grad_norm_(_params(jg, g), 1.0, error_if_nonfinite=True)
    pj, pt = _params(jg, GRADS), _params(torch, GRADS)
    jg.nn.utils.clip_grad_value_(pj, 0.4)
    torch.nn.utils.clip_grad_value_(pt, 0.4)
    for a, b in zip(pj, pt):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
