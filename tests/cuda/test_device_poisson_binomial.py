"""``torch.poisson`` / ``torch.binomial`` on CUDA tensors draw on the device from the CUDA
generator (ATen's CPU algorithms over Philox: reproducible under manual_seed, the CPU path's
distribution, not its numbers, never the CPU generator's stream), checked by moments with
fixed seeds against the laws' own; the edge values, errors and nodes as the CPU path; the
discrete families' log_prob on the device equals the CPU one.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_poisson_binomial.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

D = jg.distributions
N = 1500


@pytest.mark.parametrize("dt", [jg.float32, jg.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("rate", [0.7, 4.0, 25.0])  # Knuth's branch, then PTRS
def test_poisson_draws_poissons_on_the_device(device, dt, rate):
    jg.manual_seed(5)
    x = jg.poisson(jg.full((N,), rate, dtype=dt, device="cuda"))
    assert x.device.type == "cuda" and x.dtype is dt
    v = x.cpu().numpy().astype(np.float64)
    assert (v >= 0).all() and (v == np.floor(v)).all()
    # mean = var = rate; 5 standard errors (var's from the 4th central moment rate + 3 rate^2)
    assert abs(v.mean() - rate) < 5 * np.sqrt(rate / N)
    assert abs(v.var() - rate) < 5 * np.sqrt((rate + 2 * rate * rate) / N)


@pytest.mark.parametrize("count,prob", [(8.0, 0.3), (60.0, 0.4), (50.0, 0.9), (5.0, 0.8)])
def test_binomial_draws_binomials_on_the_device(device, count, prob):
    jg.manual_seed(6)
    x = jg.binomial(jg.full((N,), count, device="cuda"), jg.full((N,), prob, device="cuda"))
    v = x.cpu().numpy().astype(np.float64)
    assert (v >= 0).all() and (v <= count).all() and (v == np.floor(v)).all()
    mean, var = count * prob, count * prob * (1 - prob)
    assert abs(v.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(v.var() - var) < 5 * var * np.sqrt(2.0 / N) + 5 * np.sqrt(var / N)


def test_seeded_draws_repeat_and_leave_the_cpu_stream_alone(device):
    r = jg.tensor([0.5, 3.0, 12.0, 40.0] * 4, device="cuda")
    c, p = jg.tensor([3.0, 30.0] * 8, device="cuda"), jg.tensor([0.2, 0.7] * 8, device="cuda")
    jg.manual_seed(3)
    first = jg.poisson(r).cpu().numpy(), jg.binomial(c, p).cpu().numpy()
    second = jg.poisson(r).cpu().numpy()
    cpu_after = jg.randn(5).numpy()
    jg.cuda.manual_seed(3)
    again = jg.poisson(r).cpu().numpy(), jg.binomial(c, p).cpu().numpy()
    np.testing.assert_array_equal(again[0], first[0])
    np.testing.assert_array_equal(again[1], first[1])
    assert not np.array_equal(first[0], second)  # each call is a new offset
    jg.manual_seed(3)
    np.testing.assert_array_equal(jg.randn(5).numpy(), cpu_after)  # no CPU draws were made


def test_edges_errors_and_nodes_as_the_cpu_path(device):
    z = jg.poisson(jg.tensor([0.0, 0.0], device="cuda")).cpu().numpy()
    np.testing.assert_array_equal(z, [0.0, 0.0])
    cnt = jg.tensor([0.0, 5.0, 5.0, -3.0, 4.0, 3.0], device="cuda")
    prob = jg.tensor([0.5, 0.0, 1.0, 0.5, 2.0, float("nan")], device="cuda")
    got = jg.binomial(cnt, prob).cpu().numpy()
    np.testing.assert_array_equal(got, jg.binomial(cnt.cpu(), prob.cpu()).numpy())
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        jg.poisson(jg.tensor([1.0, -1.0], device="cuda")).cpu()
    with pytest.raises(NotImplementedError, match="poisson_cuda"):
        jg.poisson(jg.tensor([1, 2], device="cuda"))
    with pytest.raises(RuntimeError, match="same device"):
        jg.binomial(jg.tensor([1.0], device="cuda"), jg.tensor([0.5]))
    x = jg.tensor([1.0, 20.0], device="cuda", requires_grad=True)
    y = jg.poisson(x)
    assert y.grad_fn.name() == "PoissonBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [0.0, 0.0])
    b = jg.binomial(jg.tensor([3.0], device="cuda", requires_grad=True),
                    jg.tensor([0.5], device="cuda"))
    assert b.grad_fn.name() == "torch::autograd::NotImplemented"


def test_discrete_log_prob_on_the_device(device):
    cpu = [D.Poisson(jg.tensor([1.5, 12.0])), D.Binomial(jg.tensor([5.0, 9.0]),
                                                         jg.tensor([0.3, 0.8])),
           D.Geometric(jg.tensor([0.3, 0.6])), D.NegativeBinomial(jg.tensor([2.0, 3.5]),
                                                                  jg.tensor([0.4, 0.1]))]
    value = jg.tensor([2.0, 4.0])
    for d in cpu:
        params = {k: getattr(d, k) for k in type(d).arg_constraints if k in d.__dict__}
        if "total_count" in d.__dict__:
            params["total_count"] = d.total_count
        dev = type(d)(**{k: v.cuda() for k, v in params.items()})
        np.testing.assert_allclose(dev.log_prob(value.cuda()).cpu().numpy(),
                                   d.log_prob(value).numpy(), rtol=1e-6, atol=1e-7)
    assert D.Poisson(jg.tensor([3.0, 30.0], device="cuda")).sample((4,)).device.type == "cuda"
