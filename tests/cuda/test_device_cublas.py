"""The cuBLAS matmul path (``backends/cuda_cublas.py``) on a real GPU with CuPy: matmul/mm/bmm/
addmm/linear forward and backward against the CPU path, for float32/float64/float16, with
transposed, sliced and broadcast operands, and a check that cuBLAS actually ran.

Needs hardware (cuBLAS does not run under the simulator) and CuPy (``pip install -e '.[cuda]'``)::

    python -m pytest tests/cuda/test_device_cublas.py
"""
from __future__ import annotations

import numpy as np
import pytest
from cublas_cases import CASES, DTYPES, RTOL, close, r, run

import jitgrad as jg


@pytest.fixture
def cublas(device):
    from jitgrad.backends import cuda_cublas
    if device.simulator_active():
        pytest.skip("the CUDA simulator is active: cuBLAS needs a real GPU")
    if not cuda_cublas.usable(np.float32):
        try:
            import cupy  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - any import failure: no cuBLAS path
            pytest.skip(f"CuPy is not importable ({type(exc).__name__}): "
                        "pip install -e '.[cuda]' for the cuBLAS matmul")
        pytest.skip("the cuBLAS path is switched off (JITGRAD_CUBLAS=0) or CuPy has no device")
    return cuda_cublas


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(cublas, name, dt):
    fn, arrays = CASES[name]
    dtype = DTYPES[dt]
    yc, gc, tc = run(fn, arrays, "cpu", dtype)
    before = cublas.stats.calls
    yd, gd, td = run(fn, arrays, "cuda", dtype)
    assert td.is_cuda and td.dtype is tc.dtype
    assert type(td.grad_fn).__name__ == type(tc.grad_fn).__name__
    close(yd, yc, RTOL[dt], f"{name} forward")
    for i, (a, b) in enumerate(zip(gd, gc)):
        close(a, b, RTOL[dt], f"{name} grad {i}")
    if yd.size and all(np.size(a) for a in arrays):
        assert cublas.stats.calls > before, "the product did not go through cuBLAS"


def test_tiled_fallback_when_switched_off(cublas, monkeypatch):
    """``usable`` False (as under JITGRAD_CUBLAS=0): the tiled kernel gives the same numbers."""
    a, b = r(9, 17), r(17, 5)
    want = jg.tensor(a) @ jg.tensor(b)
    on = (jg.tensor(a, device="cuda") @ jg.tensor(b, device="cuda")).cpu().numpy()
    monkeypatch.setattr(cublas, "_usable", False)
    before = cublas.stats.calls
    off = (jg.tensor(a, device="cuda") @ jg.tensor(b, device="cuda")).cpu().numpy()
    assert cublas.stats.calls == before
    close(on, want.numpy(), 1e-12, "cuBLAS")
    close(off, want.numpy(), 1e-12, "tiled")


def test_copied_operand_is_counted(cublas):
    """A layout cuBLAS cannot read in place (no unit stride) is copied first, not misread."""
    a = r(8, 10)
    before = cublas.stats.copies
    got = jg.tensor(a, device="cuda")[::2, ::2] @ jg.tensor(a, device="cuda")[::2, ::2].t()
    assert cublas.stats.copies > before
    want = a[::2, ::2] @ a[::2, ::2].T
    close(got.cpu().numpy(), want, 1e-12, "copied operand")
