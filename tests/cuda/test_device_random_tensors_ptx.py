"""PTX of the tensor-parameter samplers (main run, no simulator): ``bernoulli_tensor`` (the
probabilities checked on the device) and ``multinomial`` (``sampleMultinomialWithReplacement``),
eager and graph-safe, for sm_80 and sm_90, float32 and float64; the float32 kernels without
``.f64`` instructions, and both raising the device-side flag with an atomic compare-and-swap.

    python -m pytest tests/cuda/test_device_random_tensors_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))


def _sig(args):
    from numba import typeof
    return tuple(typeof(a) for a in args)


def _extras(kind, dt, od):
    """The sampler's arguments after the counters, as ``_cuda_random`` passes them."""
    code, flag = np.int64(1), np.zeros(4, np.int64)
    if kind == "bernoulli_tensor":
        return (od(1), code, flag, np.zeros(1, dt))
    return (np.int64(1), np.int64(1), code, code, code, flag, np.zeros(1, dt), np.zeros(1, dt))


CASES = [("bernoulli_tensor", dt, od) for dt in (np.float32, np.float64)
         for od in (np.float32, np.float64, np.int64, np.bool_)] + \
    [("multinomial", dt, np.int64) for dt in (np.float32, np.float64)]


@pytest.mark.parametrize("kind,dt,od", CASES,
                         ids=[f"{k}-{np.dtype(d).name}-{np.dtype(o).name}" for k, d, o in CASES])
@pytest.mark.parametrize("graph_safe", [False, True], ids=["scalars", "graph-safe"])
def test_tensor_sampler_kernels_ptx(ptx_backend, compile_ptx, kind, dt, od, graph_safe):
    from jitgrad._cuda_rng_kernels import make_graph_safe_kernel, make_kernel
    pyfunc, _ = (make_graph_safe_kernel if graph_safe else make_kernel)(kind, dt, od)
    u = np.uint64(1)
    counters = (np.zeros(4, np.uint64), u) if graph_safe else (u, u, u, u)
    args = (np.int64(1),) + counters + _extras(kind, dt, od) + (np.zeros(1, od),)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, _sig(args), cc)
        assert ".entry" in ptx
        assert "atom.global.cas.b64" in ptx or "atom.cas.b64" in ptx  # the flag
        if np.dtype(dt) == np.float32 and np.dtype(od) != np.float64:
            assert not ptx_backend.f64_instructions(ptx)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_exponential_guard_ptx(ptx_backend, compile_ptx, dt):
    """The exponential sampler with PyTorch's CUDA guard (log near 1 -> -eps/2) still compiles
    without float64 in float32."""
    from jitgrad._cuda_rng_kernels import make_kernel
    pyfunc, _ = make_kernel("exponential", dt, dt)
    u = np.uint64(1)
    args = (np.int64(1), u, u, u, u, dt(1), np.zeros(1, dt))
    for cc in CCS:
        ptx = compile_ptx(pyfunc, _sig(args), cc)
        assert ".entry" in ptx
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)
