"""jitgrad.distributions on CUDA tensors: Normal and Categorical log_prob, entropy, KL and their
gradients equal the CPU's; samples (Philox on the device, so not the CPU's numbers) have the
right shapes, dtypes, devices and moments, and rsample's gradient is the CPU formula's.
``Normal.sample``, ``Categorical.sample`` and ``Bernoulli.sample`` (``torch.normal(Tensor,
Tensor)``, ``torch.multinomial``, ``torch.bernoulli``) draw on the device too.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_distributions.py
"""
from __future__ import annotations

import numpy as np

import jitgrad as jg

D = jg.distributions
LOC = np.array([[0.3, -1.2, 2.0], [0.0, 0.7, -0.4]])
SCALE = np.array([[1.0, 0.5, 2.0], [0.3, 1.5, 0.8]])
VALUE = np.array([[0.1, -1.0, 3.5], [0.2, 0.0, -1.0]])


def _leaves(device, *arrays):
    return [jg.tensor(a, device=device, requires_grad=True) for a in arrays]


def _h(t):
    return t.detach().cpu().numpy()


def _normal_run(device):
    loc, scale = _leaves(device, LOC, SCALE)
    d = D.Normal(loc, scale)
    q = D.Normal(jg.zeros(3, dtype=jg.float64, device=device), 1.0)
    lp, ent = d.log_prob(jg.tensor(VALUE, device=device)), d.entropy()
    kl = D.kl_divergence(d, q)
    (lp.sum() + 2 * ent.sum() + 3 * kl.sum()).backward()
    return [_h(lp), _h(ent), _h(kl), _h(loc.grad), _h(scale.grad)], lp.device


def test_normal_log_prob_entropy_kl_and_gradients(device):
    cuda, dev = _normal_run("cuda")
    cpu, _ = _normal_run("cpu")
    assert dev.type == "cuda"
    for a, b in zip(cuda, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_normal_rsample_shapes_moments_and_gradient(device):
    loc, scale = _leaves("cuda", np.array([1.0, -2.0]), np.array([0.5, 3.0]))
    d = D.Normal(loc, scale)
    x = d.rsample((2048,))
    assert x.device.type == "cuda" and x.dtype == jg.float64 and tuple(x.shape) == (2048, 2)
    xs = _h(x)
    # 4-sigma bounds on the mean and standard deviation of 2048 draws
    assert (np.abs(xs.mean(0) - [1.0, -2.0]) < 4 * np.array([0.5, 3.0]) / np.sqrt(2048)).all()
    np.testing.assert_allclose(xs.std(0), [0.5, 3.0], rtol=4 / 64)
    x.sum().backward()
    eps = (xs - [1.0, -2.0]) / [0.5, 3.0]  # rsample is loc + eps * scale
    np.testing.assert_allclose(_h(loc.grad), [2048.0, 2048.0])
    np.testing.assert_allclose(_h(scale.grad), eps.sum(0), rtol=1e-9, atol=1e-9)


def _categorical_run(device):
    (logits,) = _leaves(device, LOC)
    d = D.Categorical(logits=logits)
    lp = d.log_prob(jg.tensor([2, 0], device=device))
    ent = d.entropy()
    kl = D.kl_divergence(d, D.Categorical(probs=jg.tensor(SCALE, device=device)))
    (lp.sum() + 2 * ent.sum() + 3 * kl.sum()).backward()
    return [_h(lp), _h(ent), _h(kl), _h(d.probs), _h(logits.grad)]


def test_categorical_log_prob_entropy_kl_and_gradients(device):
    for a, b in zip(_categorical_run("cuda"), _categorical_run("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)



def test_sample_on_the_device(device):
    """Normal/Categorical/Bernoulli.sample draw on the device: the CPU path's shapes, dtypes and
    (no) nodes; means within 5 sigma; Categorical never draws a zero-probability class."""
    from scipy import stats
    n = 2048
    jg.manual_seed(3)
    loc, scale = _leaves("cuda", np.array([1.0, -2.0]), np.array([0.5, 3.0]))
    x = D.Normal(loc, scale).sample((n,))
    ref = D.Normal(*_leaves("cpu", np.array([1.0, -2.0]), np.array([0.5, 3.0]))).sample((n,))
    assert x.device.type == "cuda" and x.dtype == ref.dtype and x.shape == ref.shape
    assert x.grad_fn is None and ref.grad_fn is None and not x.requires_grad
    assert (np.abs(_h(x).mean(0) - [1.0, -2.0]) < 5 * np.array([0.5, 3.0]) / np.sqrt(n)).all()
    probs = np.array([[0.2, 0.0, 0.8], [0.5, 0.3, 0.2]])
    c = D.Categorical(probs=jg.tensor(probs, device="cuda")).sample((n,))
    assert c.device.type == "cuda" and c.dtype == jg.int64 and tuple(c.shape) == (n, 2)
    for k in range(2):
        counts = np.bincount(_h(c)[:, k], minlength=3)
        p = probs[k]
        assert np.all(counts[p == 0] == 0)
        exp = n * p[p > 0]
        assert stats.chi2.sf(((counts[p > 0] - exp) ** 2 / exp).sum(), (p > 0).sum() - 1) > 1e-6
    bp = np.array([0.1, 0.5, 1.0])
    b = D.Bernoulli(probs=jg.tensor(bp, device="cuda")).sample((n,))
    assert b.device.type == "cuda" and b.dtype == jg.float64 and tuple(b.shape) == (n, 3)
    assert np.all(np.abs(_h(b).mean(0) - bp) <= 5 * np.sqrt(bp * (1 - bp) / n))
    jg.manual_seed(3)
    again = D.Normal(loc, scale).sample((n,))
    np.testing.assert_array_equal(_h(again), _h(x))
