"""TransformedDistribution and families on transforms with CUDA tensors: log_prob, cdf, entropy
and their gradients equal the CPU's; rsample (Philox on the device, so other numbers than the
CPU's) has the device, dtype and shape, and its transforms are the CPU's applied to the same
base draw. Other families' values and gradients equal the CPU's too, their samples stay on the
device in the support (Cauchy's ``cauchy_`` is drawn on the device too).

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


A3, P3, Q3 = np.array([0.3, -1.2, 0.5]), np.array([0.7, 1.5, 0.2]), np.array([2.5, 0.6, 4.0])
R3 = np.array([0.2, 0.65, 0.9])
# family -> (builder over device tensors, parameters, a value in the support)
FAMILIES = {
    "Pareto": (lambda b, c: D.Pareto(b, c), [P3, Q3], np.array([0.9, 2.0, 1.3])),
    "LogisticNormal": (lambda a, b: D.LogisticNormal(a, b), [A3, P3],
                       np.array([0.1, 0.2, 0.3, 0.4])),
    "RelaxedOneHotCategorical": (lambda t, p: D.RelaxedOneHotCategorical(t, logits=p),
                                 [np.array(1.3), A3], np.array([0.3, 0.5, 0.2])),
    "StudentT": (lambda d, a, b: D.StudentT(d, a, b), [Q3, A3, P3], A3),
    "InverseGamma": (lambda c, r: D.InverseGamma(c, r), [Q3, P3], R3),
    "ContinuousBernoulli": (lambda p: D.ContinuousBernoulli(p), [np.array([0.2, 0.4995, 0.9])],
                            R3),
    "VonMises": (lambda a, c: D.VonMises(a, c), [A3, Q3], A3),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), [A3, P3], A3),
}


def _family_run(name, device):
    build, params, value = FAMILIES[name]
    leaves = [jg.tensor(p, device=device, requires_grad=True) for p in params]
    d = build(*leaves)
    outs = [d.log_prob(jg.tensor(value, device=device))]
    for attr in ("mean", "mode", "variance"):
        try:
            outs.append(getattr(d, attr))
        except NotImplementedError:
            pass
    try:
        outs.append(d.entropy())
    except NotImplementedError:
        pass
    sum(o.nan_to_num().sum() for o in outs if o.requires_grad).backward()
    return ([_h(o) for o in outs] + [_h(p.grad) for p in leaves if p.grad is not None],
            outs[0].device)


def test_families_values_and_gradients(device):
    for name in FAMILIES:
        cuda, dev = _family_run(name, "cuda")
        cpu, _ = _family_run(name, "cpu")
        assert dev.type == "cuda" and len(cuda) == len(cpu), name
        for a, b in zip(cuda, cpu):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def test_samples_stay_on_the_device(device):
    for name in FAMILIES:
        build, params, _ = FAMILIES[name]
        d = build(*[jg.tensor(p, device="cuda") for p in params])
        x = d.sample((2,))
        assert x.device.type == "cuda" and x.dtype == jg.float64, name
        assert tuple(x.shape) == (2,) + tuple(d.batch_shape) + tuple(d.event_shape), name
        assert bool(d.support.check(x).all()), name
