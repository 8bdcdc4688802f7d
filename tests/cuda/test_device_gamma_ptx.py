"""PTX of the device gamma sampler (``_cuda_rng_kernels`` kind ``gamma``: ATen's sample_gamma
over Philox blocks), eager and graph-safe, sm_80 and sm_90, float32 and float64; the float32
kernel keeps to float32 (libdevice's cosf huge-argument reduction excepted, unreachable: the
Box-Muller angle is below 2*pi). Main run, no simulator:

    python -m pytest tests/cuda/test_device_gamma_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))


def _sig(args):
    from numba import typeof
    return tuple(typeof(a) for a in args)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("graph_safe", [False, True], ids=["scalars", "graph-safe"])
def test_gamma_sampler_ptx(ptx_backend, compile_ptx, dt, graph_safe):
    from jitgrad._cuda_rng_kernels import make_graph_safe_kernel, make_kernel
    pyfunc, _ = (make_graph_safe_kernel if graph_safe else make_kernel)("gamma", dt, dt)
    u = np.uint64(1)
    counters = (np.zeros(4, np.uint64), u) if graph_safe else (u, u, u, u)
    args = (np.int64(1),) + counters + (dt(1), np.zeros(1, dt), np.zeros(1, dt))
    for cc in CCS:
        ptx = compile_ptx(pyfunc, _sig(args), cc)
        assert ".entry" in ptx
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx, allow_trig_reduction=True)
