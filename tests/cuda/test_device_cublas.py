"""The cuBLAS matmul path (``backends/cuda_cublas.py``) on a real GPU with CuPy: matmul/mm/bmm/
addmm/linear forward and backward against the CPU path, for float32/float64/float16, with
transposed, sliced and broadcast operands, and a check that cuBLAS actually ran.

Needs hardware (cuBLAS does not run under the simulator) and CuPy (``pip install -e '.[cuda]'``)::

    python -m pytest tests/cuda/test_device_cublas.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(12)


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


def r(*shape):
    return RNG.standard_normal(shape)


# name -> (fn on tensors, input arrays); fns slice/transpose/expand on the device so the
# operands reach cuBLAS with those layouts
CASES = {
    "mm": (lambda a, b: jg.mm(a, b), [r(5, 7), r(7, 3)]),
    "mm_1x1": (lambda a, b: jg.mm(a, b), [r(1, 1), r(1, 1)]),
    "mm_k0": (lambda a, b: jg.mm(a, b), [r(3, 0), r(0, 4)]),
    "mm_row_vector": (lambda a, b: a @ b, [r(1, 6), r(6, 5)]),
    "mm_col_out": (lambda a, b: a @ b, [r(6, 4), r(4, 1)]),
    "mm_transposed_a": (lambda a, b: a.t() @ b, [r(7, 5), r(7, 3)]),
    "mm_transposed_b": (lambda a, b: a @ b.t(), [r(5, 7), r(3, 7)]),
    "mm_both_transposed": (lambda a, b: a.t() @ b.t(), [r(7, 5), r(3, 7)]),
    "mm_sliced": (lambda a, b: a[1:4, 2:8] @ b[:, 1:5], [r(6, 9), r(6, 6)]),
    "mm_step_sliced": (lambda a, b: a[::2, ::2] @ b, [r(8, 10), r(5, 3)]),
    "matmul_vector": (lambda a, b: jg.matmul(a, b), [r(4, 6), r(6)]),
    "matmul_vector_left": (lambda a, b: jg.matmul(a, b), [r(6), r(2, 6, 3)]),
    "bmm": (lambda a, b: jg.bmm(a, b), [r(3, 4, 5), r(3, 5, 2)]),
    "bmm_transposed": (lambda a, b: jg.bmm(a.transpose(1, 2), b), [r(3, 5, 4), r(3, 5, 2)]),
    "bmm_sliced_batch": (lambda a, b: jg.bmm(a[::2], b[1:]), [r(4, 3, 5), r(3, 5, 2)]),
    "matmul_broadcast_batch": (lambda a, b: a @ b, [r(2, 1, 3, 4), r(5, 4, 6)]),
    "matmul_broadcast_2d": (lambda a, b: a @ b, [r(3, 4), r(2, 3, 4, 6)]),
    "matmul_expanded": (lambda a, b: a.expand(3, 4, 5) @ b, [r(4, 5), r(3, 5, 2)]),
    "addmm": (lambda c, a, b: jg.addmm(c, a, b, beta=0.5, alpha=2.0), [r(4, 3), r(4, 6), r(6, 3)]),
    "addmm_bias_row": (lambda c, a, b: jg.addmm(c, a, b), [r(3), r(4, 6), r(6, 3)]),
    "linear": (lambda x, w, b: jg.nn.functional.linear(x, w, b), [r(2, 5, 8), r(6, 8), r(6)]),
    "linear_no_bias": (lambda x, w: jg.nn.functional.linear(x, w), [r(5, 8), r(6, 8)]),
    "mm_large": (lambda a, b: a @ b, [r(130, 257), r(257, 70)]),
}
DTYPES = {"f64": jg.float64, "f32": jg.float32, "f16": jg.float16}
# relative to the result's norm: float64 and float32 differ from the CPU only in summation order;
# float16 rounds each operand and the result once
RTOL = {"f64": 1e-12, "f32": 1e-5, "f16": 2e-3}


def _run(fn, arrays, dev, dtype):
    xs = [jg.tensor(a, device=dev, dtype=dtype, requires_grad=True) for a in arrays]
    y = fn(*xs)
    w = (jg.arange(y.numel(), dtype=jg.float64, device=dev).reshape(y.shape) % 7 - 3) / 4
    (y * w.to(dtype)).sum().backward()
    grads = [x.grad.cpu().double().numpy() for x in xs]
    return y.detach().cpu().double().numpy(), grads, y


def _close(got, want, rtol, what):
    scale = max(np.linalg.norm(want), 1e-30)
    err = np.linalg.norm(got - want)
    assert err <= rtol * scale, f"{what}: relative error {err / scale:.3g} > {rtol:g}"


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(cublas, name, dt):
    fn, arrays = CASES[name]
    dtype = DTYPES[dt]
    yc, gc, tc = _run(fn, arrays, "cpu", dtype)
    before = cublas.stats.calls
    yd, gd, td = _run(fn, arrays, "cuda", dtype)
    assert td.is_cuda and td.dtype is tc.dtype and yd.shape == yc.shape
    assert type(td.grad_fn).__name__ == type(tc.grad_fn).__name__
    _close(yd, yc, RTOL[dt], f"{name} forward")
    for i, (a, b) in enumerate(zip(gd, gc)):
        assert a.shape == b.shape
        _close(a, b, RTOL[dt], f"{name} grad {i}")
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
    _close(on, want.numpy(), 1e-12, "cuBLAS")
    _close(off, want.numpy(), 1e-12, "tiled")


def test_copied_operand_is_counted(cublas):
    """A layout cuBLAS cannot read in place (no unit stride) is copied first, not misread."""
    a = r(8, 10)
    before = cublas.stats.copies
    got = jg.tensor(a, device="cuda")[::2, ::2] @ jg.tensor(a, device="cuda")[::2, ::2].t()
    assert cublas.stats.copies > before
    want = a[::2, ::2] @ a[::2, ::2].T
    _close(got.cpu().numpy(), want, 1e-12, "copied operand")
