"""The matrix products both cuBLAS test files run (tests/cuda/test_device_cublas.py on a GPU,
test_device_cublas_emulated.py under the simulator): each case slices, transposes or expands
on the device so that its operands reach cuBLAS with those layouts; ``run`` does forward and a
weighted backward, ``close`` compares relative to the norm."""
from __future__ import annotations

import numpy as np

import jitgrad as jg

RNG = np.random.default_rng(12)


def r(*shape):
    return RNG.standard_normal(shape)


# name -> (fn on tensors, input arrays)
CASES = {
    "mm": (lambda a, b: jg.mm(a, b), [r(5, 7), r(7, 3)]),
    "mm_1x1": (lambda a, b: jg.mm(a, b), [r(1, 1), r(1, 1)]),
    "mm_k0": (lambda a, b: jg.mm(a, b), [r(3, 0), r(0, 4)]),
    "mm_row_vector": (lambda a, b: a @ b, [r(1, 6), r(6, 5)]),
    "mm_col_out": (lambda a, b: a @ b, [r(6, 4), r(4, 1)]),
    "row_times_matrix": (lambda a, b: a[2:3] @ b, [r(4, 6), r(6, 5)]),
    "matrix_times_col": (lambda a, b: a @ b[:, 1:2], [r(4, 6), r(6, 5)]),
    "mm_transposed_a": (lambda a, b: a.t() @ b, [r(7, 5), r(7, 3)]),
    "mm_transposed_b": (lambda a, b: a @ b.t(), [r(5, 7), r(3, 7)]),
    "mm_both_transposed": (lambda a, b: a.t() @ b.t(), [r(7, 5), r(3, 7)]),
    "mm_sliced": (lambda a, b: a[1:4, 2:8] @ b[:, 1:5], [r(6, 9), r(6, 6)]),
    "mm_step_sliced": (lambda a, b: a[::2, ::2] @ b, [r(8, 10), r(5, 3)]),
    "matmul_vector": (lambda a, b: jg.matmul(a, b), [r(4, 6), r(6)]),
    "matmul_vector_left": (lambda a, b: jg.matmul(a, b), [r(6), r(2, 6, 3)]),
    "bmm": (lambda a, b: jg.bmm(a, b), [r(3, 4, 5), r(3, 5, 2)]),
    "bmm_transposed": (lambda a, b: jg.bmm(a.transpose(1, 2), b), [r(3, 5, 4), r(3, 5, 2)]),
    "bmm_transposed_sliced": (lambda a, b: jg.bmm(a.transpose(1, 2), b[1:]),
                              [r(3, 5, 4), r(4, 5, 2)]),
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


def run(fn, arrays, dev, dtype):
    """(result, grads of every input, the result tensor), both as float64 host arrays."""
    xs = [jg.tensor(a, device=dev, dtype=dtype, requires_grad=True) for a in arrays]
    y = fn(*xs)
    w = (jg.arange(y.numel(), dtype=jg.float64, device=dev).reshape(y.shape) % 7 - 3) / 4
    (y * w.to(dtype)).sum().backward()
    grads = [x.grad.cpu().double().numpy() for x in xs]
    return y.detach().cpu().double().numpy(), grads, y


def close(got, want, rtol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(np.linalg.norm(want), 1e-30)
    err = np.linalg.norm(got - want)
    assert err <= rtol * scale, f"{what}: relative error {err / scale:.3g} > {rtol:g}"
