"""PTX of grid_sample's kernels (nn/functional/_sampling_kernels.py rendered for CUDA by
_sampling_arrays.cuda_module; main run, no simulator): forward and backward for float32 and
float64, for sm_80 and sm_90; float32 kernels without ``.f64`` instructions.

    python -m pytest tests/cuda/test_device_grid_sample_ptx.py
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
I64 = np.int64


def _module():
    from jitgrad.nn.functional._sampling_arrays import cuda_module
    return cuda_module()


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kernel", ["forward", "backward"])
def test_grid_sample_ptx(ptx_backend, compile_ptx, kernel, dt):
    mod = _module()
    a = np.zeros(1, dt)
    sizes = (I64(1),) * 5
    if kernel == "forward":
        pyfunc, args = mod.forward_py, sizes + (a, a, a) + (I64(0),) * 3
    else:
        pyfunc, args = mod.backward_py, sizes + (a, a, a, a, a) + (I64(0),) * 4
    for cc in CCS:
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        assert ".entry" in ptx
        if kernel == "backward":
            assert "atom.global.add" in ptx  # the input gradient's scatter
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kernel", ["forward3d", "backward3d"])
def test_grid_sample_3d_ptx(ptx_backend, compile_ptx, kernel, dt):
    """The 5-D kernels (_sampling3d_kernels.py): one more size argument (depth)."""
    mod = _module()
    a = np.zeros(1, dt)
    sizes = (I64(1),) * 6
    if kernel == "forward3d":
        pyfunc, args = mod.forward3d_py, sizes + (a, a, a) + (I64(0),) * 3
    else:
        pyfunc, args = mod.backward3d_py, sizes + (a, a, a, a, a) + (I64(0),) * 4
    for cc in CCS:
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        assert ".entry" in ptx
        if kernel == "backward3d":
            assert "atom.global.add" in ptx
        if dt == np.float32:
            assert not ptx_backend.f64_instructions(ptx)
