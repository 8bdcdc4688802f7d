"""PTX of the convolution kernels (im2col, col2im) for sm_80 and sm_90, float32 and float64,
float32 kernels free of ``.f64`` instructions (main run, no simulator).

    python -m pytest tests/cuda/test_device_conv_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("which", ["im2col", "col2im"])
def test_conv_kernels_ptx(ptx_backend, compile_ptx, which, dt):
    from numba import typeof

    from jitgrad.backends.cuda_kernels import conv as K
    make = K.make_im2col_kernel if which == "im2col" else K.make_col2im_kernel
    pyfunc, _ = make(dt)
    a, n = np.zeros(1, dt), np.int64(1)
    geo = (np.int64(1),) * 18
    sig = tuple(typeof(v) for v in (a, n, n, geo, a))
    for cc in CCS:
        ptx = compile_ptx(pyfunc, sig, cc)
        assert ".entry" in ptx
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)
