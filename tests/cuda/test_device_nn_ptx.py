"""PTX of the kernels added for optimizers and device RNG (main run, no simulator): the SGD and
Adam update kernels (optim/_cuda_kernels.py) and every Philox sampler (_cuda_rng_kernels.py),
for sm_80 and sm_90, float32 and float64; float32 kernels without ``.f64`` and with the fused
multiply-adds the CPU kernels use.

    python -m pytest tests/cuda/test_device_nn_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
DTYPES = (np.float32, np.float64)


def _sig(args):
    from numba import typeof
    return tuple(typeof(a) for a in args)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("which", ["sgd", "adam", "adam_capturable"])
def test_optimizer_kernels_ptx(ptx_backend, compile_ptx, which, dt):
    from jitgrad.optim import _cuda_kernels as K
    a, s, flag = np.zeros(1, dt), dt(1), True
    if which == "sgd":
        pyfunc, args = K.sgd_pyfunc, (a, a, a) + (s,) * 4 + (flag,) * 5
    elif which == "adam":
        pyfunc, args = K.adam_pyfunc, (a,) * 5 + (s,) * 8 + (flag,) * 4
    else:  # capturable: the step count (float32, like PyTorch's) read on the device
        pyfunc = K.adam_capturable_pyfunc
        args = (a,) * 5 + (np.zeros(1, np.float32),) + (s,) * 9 + (flag,) * 4
    for cc in CCS:
        ptx = compile_ptx(pyfunc, _sig(args), cc)
        assert ".entry" in ptx
        suffix = "f32" if dt == np.float32 else "f64"
        assert f"fma.rn.{suffix}" in ptx  # cuda.fma: the CPU kernels' llvm.fma
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)


# bernoulli_tensor and multinomial (device-side checks): test_device_random_tensors_ptx.py
FLOAT_KINDS = (("uniform", 3, 0), ("normal", 2, 0), ("bernoulli", 2, 0),
               ("exponential", 1, 0))
SAMPLERS = [(k, ns, na, dt, dt) for k, ns, na in FLOAT_KINDS for dt in DTYPES] + \
    [("randint", 2, 0, np.float32, od) for od in (np.int64, np.int32, np.float32)]


@pytest.mark.parametrize("kind,n_scalars,n_arrays,dt,od", SAMPLERS,
                         ids=[f"{k}-{np.dtype(d).name}-{np.dtype(o).name}"
                              for k, _, _, d, o in SAMPLERS])
@pytest.mark.parametrize("graph_safe", [False, True], ids=["scalars", "graph-safe"])
def test_rng_kernels_ptx(ptx_backend, compile_ptx, kind, n_scalars, n_arrays, dt, od,
                         graph_safe):
    from jitgrad._cuda_rng_kernels import make_graph_safe_kernel, make_kernel
    pyfunc, _ = (make_graph_safe_kernel if graph_safe else make_kernel)(kind, dt, od)
    u = np.uint64(1)
    scalars = (np.int64(0), u) if kind == "randint" else (dt(1),) * n_scalars
    # the graph-safe wrapper reads (seed, offset) from a device array, plus its own offset
    counters = (np.zeros(4, np.uint64), u) if graph_safe else (u, u, u, u)
    args = (np.int64(1),) + counters + scalars + (np.zeros(1, dt),) * n_arrays + \
        (np.zeros(1, od),)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, _sig(args), cc)
        assert ".entry" in ptx
        if np.dtype(dt) == np.float32 and np.dtype(od) != np.float64:
            # uint64 Philox arithmetic and float32 conversions only; normal calls cosf, whose
            # libdevice huge-argument reduction is the one allowed .f64 (unreachable: |arg|<2pi)
            assert not ptx_backend.f64_instructions(ptx, allow_trig_reduction=kind == "normal")
