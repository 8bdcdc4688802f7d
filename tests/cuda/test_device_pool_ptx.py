"""PTX of the pooling kernels (backends/cuda_kernels/pool.py; main run, no simulator): the
window-max kernel for every dtype a max pool launches and the resampling kernel for float32 and
float64, for sm_80 and sm_90; float32 kernels without ``.f64`` instructions.

    python -m pytest tests/cuda/test_device_pool_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
I64 = np.int64


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int32, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_window_max_ptx(ptx_backend, compile_ptx, dt):
    from jitgrad.backends.cuda_kernels import pool
    pyfunc, _ = pool.make_window_max_kernel(dt)
    win = (np.zeros(1, I64), np.zeros(1, I64), I64(1))
    args = (np.zeros(1, dt), np.dtype(dt).type(0)) + win * 3 + (I64(1),) * 7 + \
        (np.zeros(1, dt), np.zeros(1, I64))
    for cc in CCS:
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        assert ".entry" in ptx
        if dt != np.float64:
            assert not ptx_backend.f64_instructions(ptx)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_resample_ptx(ptx_backend, compile_ptx, dt):
    from jitgrad.backends.cuda_kernels import pool
    pyfunc, _ = pool.make_resample_kernel(dt)
    taps = (np.zeros(1, I64), np.zeros(1, dt), np.zeros(1, dt), I64(1))
    args = (np.zeros(1, dt), dt(0)) + taps * 3 + (I64(1),) * 7 + (np.zeros(1, dt),)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        assert ".entry" in ptx
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)
