"""bmm's fast path for plain host stacks, the compiled strided MKL call of stacks, and the one
compiled GEMM argument choice (read-only and unaligned operands included, addbmm's per-matrix
calls): PyTorch's bits and errors, compared with PyTorch run in the same test."""
import numpy as np
import pytest

import jitgrad
from jitgrad.backends import blas
from tests._parity import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

RNG = np.random.default_rng(14)


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def _unaligned(a):
    """A copy of ``a`` at an address that is not a multiple of its item size."""
    buf = np.zeros(a.nbytes + 1, np.uint8)[1:]
    out = np.frombuffer(buf, a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


VIEWS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2),
    "batch-step": lambda t: t.repeat(2, 1, 1)[::2],
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 4, 4), (32, 16, 16), (3, 9, 50)],
                         ids=["atens-loop", "mkl", "mkl-wide"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_bmm_bits_and_grads(dtype, shape, view):
    a = RNG.standard_normal(shape).astype(dtype)
    b = RNG.standard_normal(shape[:1] + shape[2:] + shape[1:2]).astype(dtype)
    res = []
    for lib in (torch, jitgrad):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = VIEWS[view](x).bmm(VIEWS[view](y))
        out.backward(lib.ones_like(out))
        res.append([out.detach().numpy(), x.grad.numpy(), y.grad.numpy()])
    for got, want in zip(res[1], res[0]):
        _same_bits(got, want)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and words are what is compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", [
    ((2, 3, 4), (2, 5, 6)), ((2, 3, 4), (3, 4, 6)), ((3, 4), (2, 4, 6)), ((2, 3, 4), (4, 6)),
])
def test_bmm_errors_unchanged(case):
    sa, sb = case
    a, b = np.zeros(sa, np.float32), np.zeros(sb, np.float32)
    want = _error(lambda: torch.tensor(a).bmm(torch.tensor(b)))
    got = _error(lambda: jitgrad.tensor(a).bmm(jitgrad.tensor(b)))
    assert want is not None and got == want


def test_bmm_dtype_and_argument_errors_unchanged():
    a32, a64 = np.zeros((2, 3, 4), np.float32), np.zeros((2, 4, 5), np.float64)
    for lib in (torch, jitgrad):
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            lib.bmm(lib.tensor(a32), lib.tensor(a64))
        with pytest.raises(TypeError, match=r"argument 'mat2' \(position 2\) must be Tensor"):
            lib.bmm(lib.tensor(a32), a64)


@pytest.mark.skipif(blas.backend() != "mkl", reason="MKL is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_read_only_and_unaligned_operands_take_atens_gemm(dtype):
    """Operands the compiled call once refused (a ctypes route took them): read-only ones give
    mm's bits; unaligned ones (which PyTorch never has: MKL's kernels for a misaligned address
    sum in another order, measured the same on the ctypes route) PyTorch's numbers."""
    a = RNG.standard_normal((37, 29)).astype(dtype)
    b = RNG.standard_normal((29, 41)).astype(dtype)
    ro = a.copy()
    ro.flags.writeable = False
    bt = b.T.copy()
    want = (torch.tensor(a) @ torch.tensor(b)).numpy()
    want_bt = (torch.tensor(bt) @ torch.tensor(a).T).numpy()  # a transposed right operand
    _same_bits(blas.matmul(ro, b), want)
    _same_bits(blas.matmul(bt, ro.T), want_bt)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for x in (_unaligned(a), _unaligned(a.T.copy()).T):
        np.testing.assert_allclose(blas.matmul(x, b), want, **tol)
        np.testing.assert_allclose(blas.matmul(bt, x.T), want_bt, **tol)
    want_t = (torch.tensor(a).T @ torch.tensor(a)).numpy()
    _same_bits(blas.matmul(ro.T, ro), want_t)
    np.testing.assert_allclose(blas.matmul(_unaligned(a).T, ro), want_t, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transpose", [False, True])
def test_addbmm_bits(dtype, transpose):
    """addbmm's one GEMM plan per stack, the operands in place (transposed or not)."""
    x = RNG.standard_normal((5, 6, 7)).astype(dtype)
    y = RNG.standard_normal((5, 7, 8)).astype(dtype)
    c = RNG.standard_normal((6, 8)).astype(dtype)
    res = []
    for lib in (torch, jitgrad):
        tx, ty = lib.tensor(x), lib.tensor(y)
        if transpose:
            tx = tx.transpose(1, 2).contiguous().transpose(1, 2)
        res.append(lib.addbmm(lib.tensor(c), tx, ty, beta=0.5, alpha=2.0).numpy())
    _same_bits(res[1], res[0])
