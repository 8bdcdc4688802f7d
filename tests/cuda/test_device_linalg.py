"""inv/det/slogdet/solve/cholesky/solve_triangular (and their ``_ex`` info) on CUDA tensors: the
device LU/Cholesky/triangular kernels (``cuda_kernels.linalg``) against the CPU path (LAPACK),
forward and gradients, singular inputs, PyTorch's errors read back from a device info.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_linalg.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(5)


def well(*shape):
    n = shape[-1]
    return RNG.standard_normal(shape) * 0.5 + n * np.eye(n)


def spd(*shape):
    b = RNG.standard_normal(shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


A3, A23, B32, B3, B232 = well(3, 3), well(2, 3, 3), RNG.standard_normal((3, 2)), \
    RNG.standard_normal(3), RNG.standard_normal((2, 3, 2))
SPD = spd(2, 3, 3)
# a pivot is needed at the first step (|a10| > |a00|)
PIVOT = np.array([[0.1, 2.0, 1.0], [3.0, 1.0, -1.0], [1.0, -2.0, 4.0]])

CASES = {
    "inv": (lambda a: jg.linalg.inv(a), [A23]),
    "inv_pivot": (lambda a: jg.linalg.inv(a), [PIVOT]),
    "det": (lambda a: jg.linalg.det(a), [A23]),
    "det_pivot": (lambda a: a.det(), [PIVOT]),
    "slogdet": (lambda a: jg.linalg.slogdet(-a).logabsdet, [A23]),
    "logdet": (lambda a: jg.logdet(a), [SPD]),
    "solve": (lambda a, b: jg.linalg.solve(a, b), [A3, B32]),
    "solve_vector": (lambda a, b: jg.linalg.solve(a, b), [PIVOT, B3]),
    "solve_broadcast": (lambda a, b: jg.linalg.solve(a, b), [A3, B232]),
    "solve_right": (lambda a, b: jg.linalg.solve(a, b, left=False), [A23, B232.swapaxes(1, 2)]),
    "cholesky": (lambda a: jg.linalg.cholesky(a), [SPD]),
    "cholesky_upper": (lambda a: jg.linalg.cholesky(a, upper=True), [SPD]),
    "trsm_upper": (lambda a, b: jg.linalg.solve_triangular(a, b, upper=True), [A3, B32]),
    "trsm_lower_right_unit": (
        lambda a, b: jg.linalg.solve_triangular(a, b, upper=False, left=False,
                                                unitriangular=True), [A23, B232.swapaxes(1, 2)]),
    "matrix_power": (lambda a: jg.linalg.matrix_power(a, -2), [A23]),
    "matrix_power_0": (lambda a: jg.linalg.matrix_power(a, 0) * a, [A23]),
    "cross": (lambda a, b: jg.linalg.cross(a, b, dim=1), [A23, A3[None]]),
    "vander": (lambda a: jg.linalg.vander(a[0], N=4), [A23]),
    "diagonal": (lambda a: jg.linalg.diagonal(a, offset=1), [A23]),
}
PARAMS = [pytest.param(n, jg.float64, id=f"{n}-f64") for n in sorted(CASES)] + [
    pytest.param(n, jg.float32, id=f"{n}-f32") for n in ("inv", "det", "solve", "cholesky",
                                                         "trsm_upper")]


def _run(fn, arrays, dev, dtype):
    xs = [jg.tensor(a, device=dev, dtype=dtype, requires_grad=True) for a in arrays]
    y = fn(*xs)
    w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
    (y * w).sum().backward()
    return y.detach().cpu().numpy(), [x.grad.cpu().numpy() for x in xs], y


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_forward_and_backward_match_cpu(device, name, dtype):
    fn, arrays = CASES[name]
    yc, gc, tc = _run(fn, arrays, "cpu", dtype)
    yd, gd, td = _run(fn, arrays, "cuda", dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is jg.float32 else dict(rtol=1e-10, atol=1e-10)
    assert td.is_cuda and yd.dtype == yc.dtype and yd.shape == yc.shape
    assert type(td.grad_fn).__name__ == type(tc.grad_fn).__name__
    np.testing.assert_allclose(yd, yc, **tol)
    for a, b in zip(gd, gc):
        np.testing.assert_allclose(a, b, **tol)


def _singular():
    return np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])


def test_info_and_errors(device):
    stack = np.stack([np.eye(3), _singular(), np.zeros((3, 3))])
    not_pd = np.stack([np.eye(3), np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]), -np.eye(3)])
    for fn, arr in ((lambda a: jg.linalg.inv_ex(a).info, stack),
                    (lambda a: jg.linalg.solve_ex(a, a[0]).info, stack),
                    (lambda a: jg.linalg.cholesky_ex(a).info, not_pd),
                    (lambda a: jg.linalg.cholesky_ex(a, upper=True).info, not_pd),
                    (lambda a: jg.linalg.slogdet(a).sign, stack),
                    (lambda a: jg.linalg.slogdet(a).logabsdet, stack),
                    (lambda a: jg.linalg.det(a), stack)):
        c, d = fn(jg.tensor(arr)), fn(jg.tensor(arr, device="cuda"))
        assert d.is_cuda and d.dtype is c.dtype and d.shape == c.shape
        np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())
    for fn, arr in ((jg.linalg.inv, stack), (jg.linalg.cholesky, not_pd),
                    (lambda a: jg.linalg.solve(a, a[0]), stack)):
        with pytest.raises(RuntimeError) as ec:
            fn(jg.tensor(arr))
        with pytest.raises(jg.linalg.LinAlgError) as ed:
            fn(jg.tensor(arr, device="cuda"))
        assert str(ed.value) == str(ec.value)


def test_device_mismatch_is_refused(device):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        jg.linalg.solve(jg.tensor(A3, device="cuda"), jg.tensor(B32))


@pytest.mark.parametrize("call", [
    lambda a: jg.linalg.qr(a), lambda a: jg.linalg.eigh(a), lambda a: jg.linalg.eigvalsh(a),
    lambda a: jg.linalg.svd(a), lambda a: jg.linalg.svdvals(a), lambda a: jg.linalg.pinv(a),
    lambda a: jg.linalg.matrix_rank(a), lambda a: jg.linalg.lstsq(a, a)])
def test_decompositions_are_staged_through_the_host(device, call):
    """No device QR/eigh/SVD kernel: staged through the host (tests/cuda/
    test_host_staged_ops.py), the CPU path's values on the device."""
    a = A3 + np.swapaxes(A3, -1, -2)
    got, want = call(jg.tensor(a, device="cuda")), call(jg.tensor(a))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.device.type == "cuda"
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
