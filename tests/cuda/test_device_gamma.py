"""The gamma-family ops on CUDA tensors: ``_standard_gamma`` and ``_sample_dirichlet`` (and
Gamma/Beta/Dirichlet.rsample, built on them) draw on the device from the CUDA generator
(ATen's sample_gamma over Philox: reproducible under manual_seed, the CPU path's distribution,
not its numbers, and never the CPU generator's stream), checked by moments and a
Kolmogorov-Smirnov test against SciPy's gamma law with fixed seeds; the gradient ops
``_standard_gamma_grad``/``_dirichlet_grad`` are host-staged (test_host_staged_ops.py).
Their densities (log_prob/entropy, elementwise ops) work on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_gamma.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

D = jg.distributions


N = 4000


@pytest.mark.parametrize("dt", [jg.float32, jg.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("alpha", [0.4, 1.0, 3.5])
def test_standard_gamma_draws_gammas_on_the_device(device, dt, alpha):
    from scipy import stats
    jg.manual_seed(11)
    x = jg._standard_gamma(jg.full((N,), alpha, dtype=dt, device="cuda"))
    assert x.device.type == "cuda" and x.dtype is dt
    v = x.cpu().numpy().astype(np.float64)
    assert (v > 0).all()
    # Gamma(alpha, 1): mean = var = alpha; 5 standard errors (var's from the 4th moment)
    assert abs(v.mean() - alpha) < 5 * np.sqrt(alpha / N)
    assert abs(v.var() - alpha) < 5 * alpha * np.sqrt((2 + 6 / alpha) / N)
    assert stats.kstest(v, stats.gamma(alpha).cdf).pvalue > 1e-4


def test_seeded_draws_repeat_and_leave_the_cpu_stream_alone(device):
    a = jg.tensor([0.3, 1.0, 2.0, 7.5] * 8, device="cuda")
    jg.manual_seed(3)
    first = jg._standard_gamma(a).cpu().numpy()
    second = jg._standard_gamma(a).cpu().numpy()
    cpu_after = jg.randn(5).numpy()
    jg.cuda.manual_seed(3)
    again = jg._standard_gamma(a).cpu().numpy()
    np.testing.assert_array_equal(again, first)
    assert not np.array_equal(first, second)  # each call is a new offset
    jg.manual_seed(3)
    np.testing.assert_array_equal(jg.randn(5).numpy(), cpu_after)  # no CPU draws were made


def test_edge_alphas_as_the_cpu_path(device):
    """alpha == 0 and NaN give the dtype's tiny, as ATen's max(tiny, sample)."""
    a = [0.0, float("nan")]
    got = jg._standard_gamma(jg.tensor(a, device="cuda")).cpu().numpy()
    np.testing.assert_array_equal(got, jg._standard_gamma(jg.tensor(a)).numpy())
    with pytest.raises(NotImplementedError) as ec:
        jg._standard_gamma(jg.tensor([1, 2]))
    with pytest.raises(NotImplementedError) as ed:
        jg._standard_gamma(jg.tensor([1, 2], device="cuda"))
    assert str(ed.value) == str(ec.value)


def test_gamma_rsample_gradient_on_the_device(device):
    """StandardGammaBackward0: grad * _standard_gamma_grad(alpha, sample), on the device."""
    a = jg.tensor([0.5, 2.0, 3.0], device="cuda", requires_grad=True)
    x = D.Gamma(a, 1.0).rsample()
    assert x.grad_fn is not None and x.device.type == "cuda"
    x.sum().backward()
    assert a.grad.device.type == "cuda"
    want = jg._standard_gamma_grad(a.detach().cpu(), x.detach().cpu())
    np.testing.assert_allclose(a.grad.cpu().numpy(), want.numpy(), rtol=1e-6)


def test_dirichlet_rows_on_the_device(device):
    """Two long rows (a long row keeps the simulator's row sums few): each entry's marginal is
    Beta(a_i, S - a_i), so S * value has mean a_i and variance a_i (S - a_i) / (S + 1)."""
    alpha = np.tile([0.5, 1.0, 3.0], (2, 1000))
    jg.manual_seed(5)
    a = jg.tensor(alpha, device="cuda", requires_grad=True)
    d = jg._sample_dirichlet(a)
    c = jg._sample_dirichlet(jg.tensor(alpha[:, :3], requires_grad=True))
    assert d.device.type == "cuda" and d.grad_fn.name() == c.grad_fn.name()
    v = d.detach().cpu().numpy()
    np.testing.assert_allclose(v.sum(1), 1.0, rtol=1e-6)
    S = alpha[0].sum()
    for k, ak in enumerate((0.5, 1.0, 3.0)):
        group = v[:, k::3] * S
        assert abs(group.mean() - ak) < 5 * np.sqrt(ak * (S - ak) / (S + 1) / group.size)
    b = D.Beta(jg.tensor([2.0], device="cuda"), jg.tensor([3.0], device="cuda")).rsample()
    assert b.device.type == "cuda" and 0 < b.item() < 1


def test_gamma_log_prob_on_the_device(device):
    c, r, v = (np.array([0.5, 2.0, 3.0]), np.array([1.0, 0.5, 2.0]), np.array([0.3, 1.0, 4.0]))
    cpu = D.Gamma(jg.tensor(c), jg.tensor(r)).log_prob(jg.tensor(v))
    dev = D.Gamma(jg.tensor(c, device="cuda"), jg.tensor(r, device="cuda")).log_prob(
        jg.tensor(v, device="cuda"))
    assert dev.device.type == "cuda"
    np.testing.assert_allclose(dev.cpu().numpy(), cpu.numpy(), rtol=1e-12)
