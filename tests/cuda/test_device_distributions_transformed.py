"""TransformedDistribution and families on transforms with CUDA tensors: log_prob, cdf, entropy
and their gradients equal the CPU's; rsample (Philox on the device, so other numbers than the
CPU's) has the device, dtype and shape, and its transforms are the CPU's applied to the same
base draw.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_distributions_transformed.py
"""
from __future__ import annotations

import numpy as np

import jitgrad as jg

D = jg.distributions
LOC = np.array([0.3, -1.2, 0.5])
SCALE = np.array([0.7, 1.5, 0.2])
VALUE = np.array([0.2, 0.65, 0.9])


def _h(t):
    return t.detach().cpu().numpy()


def _run(device):
    loc = jg.tensor(LOC, device=device, requires_grad=True)
    scale = jg.tensor(SCALE, device=device, requires_grad=True)
    t = D.transforms
    td = D.TransformedDistribution(D.Normal(loc, scale),
                                   [t.AffineTransform(0.5, -2.0), t.SigmoidTransform()])
    lognormal, gumbel = D.LogNormal(loc, scale), D.Gumbel(loc, scale)
    v = jg.tensor(VALUE, device=device)
    outs = [td.log_prob(v), td.cdf(v), lognormal.log_prob(v), lognormal.entropy(),
            gumbel.log_prob(v), D.Kumaraswamy(scale, scale + 1).log_prob(v),
            D.kl_divergence(gumbel, D.Gumbel(loc * 0, scale + 1))]
    sum(o.sum() for o in outs).backward()
    return [_h(o) for o in outs] + [_h(loc.grad), _h(scale.grad)], outs[0].device


def test_log_prob_cdf_entropy_kl_and_gradients(device):
    cuda, dev = _run("cuda")
    cpu, _ = _run("cpu")
    assert dev.type == "cuda"
    for a, b in zip(cuda, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_rsample_is_the_transformed_base_draw(device):
    loc = jg.tensor(LOC, device="cuda", requires_grad=True)
    scale = jg.tensor(SCALE, device="cuda")
    d = D.LogNormal(loc, scale)
    jg.manual_seed(0)
    x = d.rsample((4,))
    jg.manual_seed(0)
    base = d.base_dist.rsample((4,))
    assert x.device.type == "cuda" and x.dtype == jg.float64 and tuple(x.shape) == (4, 3)
    np.testing.assert_allclose(_h(x), np.exp(_h(base)), rtol=1e-14)
    x.sum().backward()
    np.testing.assert_allclose(_h(loc.grad), _h(x).sum(0), rtol=1e-12)
    lp = d.log_prob(x)
    np.testing.assert_allclose(_h(lp), _h(D.LogNormal(loc.detach().cpu(), scale.cpu()).log_prob(
        x.detach().cpu())), rtol=1e-12)
