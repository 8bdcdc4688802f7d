"""The gamma-family ops on CUDA tensors: no device sampler or gradient kernel yet, so
``_standard_gamma``, ``_sample_dirichlet``, ``_standard_gamma_grad`` and ``_dirichlet_grad``
(and Gamma/Beta/Dirichlet.rsample, built on them) raise NotImplementedError naming the
function instead of computing on the host. Their densities (log_prob/entropy, elementwise ops)
work on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_gamma.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

D = jg.distributions


@pytest.mark.parametrize("name,call", [
    ("_standard_gamma", lambda a: jg._standard_gamma(a)),
    ("_sample_dirichlet", lambda a: jg._sample_dirichlet(a)),
    ("_standard_gamma_grad", lambda a: jg._standard_gamma_grad(a, a)),
    ("_dirichlet_grad", lambda a: jg._dirichlet_grad(a * 0.1, a, a * 3)),
    ("_standard_gamma", lambda a: D.Gamma(a, 1.0).rsample()),
    ("_sample_dirichlet", lambda a: D.Beta(a, a).rsample()),
])
def test_gamma_ops_refuse_cuda_tensors(device, name, call):
    a = jg.tensor([0.5, 2.0, 3.0], device="cuda")
    with pytest.raises(NotImplementedError, match=name):
        call(a)


def test_gamma_log_prob_on_the_device(device):
    c, r, v = (np.array([0.5, 2.0, 3.0]), np.array([1.0, 0.5, 2.0]), np.array([0.3, 1.0, 4.0]))
    cpu = D.Gamma(jg.tensor(c), jg.tensor(r)).log_prob(jg.tensor(v))
    dev = D.Gamma(jg.tensor(c, device="cuda"), jg.tensor(r, device="cuda")).log_prob(
        jg.tensor(v, device="cuda"))
    assert dev.device.type == "cuda"
    np.testing.assert_allclose(dev.cpu().numpy(), cpu.numpy(), rtol=1e-12)
