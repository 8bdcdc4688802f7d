"""RMSprop, Adagrad, Adamax, NAdam, RAdam and Adadelta on CUDA parameters: the same tensor-op
update as on the CPU (optim/_single_tensor.py), state on the device, results against the CPU
run; capturable=True keeps the step count (and NAdam's mu_product) on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_optim_more.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(17)
INIT = RNG.standard_normal(5)
GRADS = [RNG.standard_normal(5) for _ in range(3)]
# the device kernels are the CPU's elementwise formulas compiled for the GPU: a GPU may contract
# a multiply-add or round a sqrt differently from NumPy, hence a few ulps rather than equality
TOL = {np.float32: dict(rtol=4e-6, atol=1e-7), np.float64: dict(rtol=1e-13, atol=1e-15)}

CASES = [("RMSprop", dict(momentum=0.9, centered=True, weight_decay=0.1)),
         ("Adagrad", dict(lr_decay=0.1, initial_accumulator_value=0.1)),
         ("Adamax", dict(lr=0.1, maximize=True)),
         ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
         ("RAdam", dict(lr=0.1, betas=(0.9, 0.8))),  # rectified from step 2 (rho_inf = 9)
         ("Adadelta", dict(weight_decay=0.1)),
         ("RMSprop", dict(capturable=True)),
         ("Adamax", dict(lr=0.1, capturable=True)),
         ("NAdam", dict(lr=0.1, capturable=True)),
         ("RAdam", dict(lr=0.1, betas=(0.9, 0.8), capturable=True))]


def _run(dev, name, kw, dt):
    p = jg.nn.Parameter(jg.tensor(INIT.astype(dt), device=dev))
    opt = getattr(jg.optim, name)([p], **kw)
    for g in GRADS:
        p.grad = jg.tensor(g.astype(dt), device=dev)
        opt.step()
    return p, opt.state[p]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[n + "-" + ",".join(k) for n, k in CASES])
def test_matches_cpu(device, name, kw, dt):
    cpu_kw = {k: v for k, v in kw.items() if k != "capturable"}  # CPU refuses capturable
    pc, sc = _run("cpu", name, cpu_kw, dt)
    pd, sd = _run("cuda", name, kw, dt)
    assert pd.is_cuda
    # capturable bias corrections are PyTorch's tensor arithmetic on the float32 step
    # (beta ** step in float32; NAdam's 1 - mu_product cancels digits besides), so they agree
    # with the host's float64 scalars to a few float32 ulps of the bias correction only; the
    # capturable formulas themselves are checked against PyTorch's in tests/optim
    tol = dict(rtol=2e-5, atol=1e-6) if kw.get("capturable") else TOL[dt]
    np.testing.assert_allclose(pd.detach().cpu().numpy(), pc.detach().numpy(), **tol)
    assert sorted(sd) == sorted(sc)
    for k, v in sc.items():
        if v.dim() == 0:  # step / mu_product: on the device only when capturable
            assert sd[k].is_cuda == bool(kw.get("capturable")), k
            np.testing.assert_allclose(float(sd[k].cpu()), float(v), rtol=1e-6)
        else:
            assert sd[k].is_cuda and sd[k].dtype == pd.dtype, k
            np.testing.assert_allclose(sd[k].cpu().numpy(), v.numpy(), **tol)
