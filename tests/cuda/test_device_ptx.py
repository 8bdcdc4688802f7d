"""PTX for the kernels the device-tensor integration added to the kernel layer (main run, no
simulator): ``layout.copy_into`` (strided destination: basic-indexing backward, cat/stack,
in-place writes into CUDA tensors), for sm_80 and sm_90, float32 kernels without ``.f64``."""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
CASES = [(dt, nd) for dt in (np.float32, np.float64, np.int64, np.bool_) for nd in (1, 2, 4)]


@pytest.mark.parametrize("dt,nd", CASES, ids=[f"{np.dtype(d).name}-{n}d" for d, n in CASES])
def test_copy_into_ptx(ptx_backend, compile_ptx, dt, nd):
    from jitgrad.backends.cuda_kernels.layout import make_copy_into_kernel
    pyfunc, _ = make_copy_into_kernel(dt)
    x = np.zeros(1, dt)
    t = (1,) * nd
    for src in (x, np.zeros(1, np.float64)):  # same dtype, and a casting write
        sig = ptx_backend.signature_of((src, 0, t, x, 0, t, t, 1))
        for cc in CCS:
            ptx = compile_ptx(pyfunc, sig, cc)
            assert ".entry" in ptx
            if dt == np.float32 and src.dtype == np.float32:
                assert not ptx_backend.f64_instructions(ptx)
