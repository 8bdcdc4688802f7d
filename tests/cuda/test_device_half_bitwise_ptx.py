"""float32/float64 -> float16 bits on the device (``backends/cuda_kernels/half.py``) and the
integer bitwise and the sort kernels (``bitwise.py``, ``sort.py``). The cast: the same
functions the kernel calls, compiled by ``numba.njit`` on the CPU, against NumPy's ``astype`` on
edge cases and random bit patterns; and the kernels compile to PTX with integer instructions
only (so no hardware rounding or NaN canonicalization can enter)."""
from __future__ import annotations

import numpy as np
import pytest


def _edge_f64():
    v = [0.0, -0.0, 1.0, -2.75, 0.1, 2.7, 65504.0, 65519.99, 65520.0, 1e-7, 5.96e-8, 2.98e-8,
         2.9802322387695312e-08, 6.1e-5, 6.103515625e-05, 1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -11,
         1 + 3 * 2 ** -11, 1e300, -1e300, 1e-300, np.inf, -np.inf]
    bits = np.array(v, np.float64).view(np.uint64)
    nans = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                     0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF], np.uint64)
    return np.concatenate([bits, nans])


@pytest.fixture(scope="module")
def conv(cuda_state):
    if not cuda_state[0]:
        pytest.skip("numba-cuda is not installed")
    if cuda_state[1]:
        pytest.skip("compiles with numba.njit and to PTX: the main (non-simulator) run")
    import numba

    from jitgrad.backends.cuda_kernels import half
    d2h = numba.njit(half.double_bits_to_half_bits)
    f2h = numba.njit(half.float_bits_to_half_bits)

    @numba.njit
    def run64(bits):
        out = np.empty(bits.size, np.uint16)
        for i in range(bits.size):
            out[i] = d2h(bits[i])
        return out

    @numba.njit
    def run32(bits):
        out = np.empty(bits.size, np.uint16)
        for i in range(bits.size):
            out[i] = f2h(bits[i])
        return out

    return run32, run64


def test_double_to_half_bits_match_numpy(conv):
    rng = np.random.default_rng(0)
    edge = _edge_f64()
    rand = rng.integers(0, 2 ** 64, 400_000, dtype=np.uint64, endpoint=False)
    # and values near float16's range, where the rounding happens
    near = (rng.standard_normal(400_000) * np.exp2(rng.integers(-26, 17, 400_000))).view(
        np.uint64)
    for bits in (edge, rand, near):
        with np.errstate(all="ignore"):
            want = bits.view(np.float64).astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(conv[1](bits), want)


def test_float_to_half_bits_match_numpy(conv):
    rng = np.random.default_rng(1)
    rand = rng.integers(0, 2 ** 32, 1_000_000, dtype=np.uint32)
    near = (rng.standard_normal(400_000) * np.exp2(rng.integers(-26, 17, 400_000))).astype(
        np.float32).view(np.uint32)
    with np.errstate(all="ignore"):
        edge = _edge_f64().view(np.float64).astype(np.float32).view(np.uint32)
    for bits in (edge, rand, near):
        with np.errstate(all="ignore"):
            want = bits.view(np.float32).astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(conv[0](bits), want)


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_half_cast_kernel_is_integer_only_ptx(compile_ptx, ptx_backend, src):
    from jitgrad.backends.cuda_kernels import half
    pyfunc, _ = half._kernel(np.dtype(src))
    ubits = np.zeros(1, np.uint64 if src == np.float64 else np.uint32)
    sig = ptx_backend.signature_of((ubits, 0, (1,), (1,), 1, np.zeros(1, np.uint16)))
    ptx = compile_ptx(pyfunc, sig, (8, 0))
    assert not any(t in ptx for t in (".f16", ".f32", ".f64")), "float instructions in the cast"


@pytest.mark.parametrize("op", ["and", "or", "xor", "invert"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_bitwise_kernels_compile(compile_ptx, ptx_backend, op, dtype):
    from jitgrad.backends.cuda_kernels import bitwise
    pyfunc, _ = bitwise._kernel(op)
    x = np.zeros(1, dtype)
    arr = (x, 0, (1,))
    args = arr + ((1,), 1, x) if op == "invert" else arr + arr + ((1,), 1, x)
    for cc in ((8, 0), (9, 0)):
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        assert not ptx_backend.f64_instructions(ptx)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_sort_kernels_compile(compile_ptx, ptx_backend, dtype, descending):
    """The rank-sort kernel (cuda_kernels/sort.py) for the dtypes sort reaches (float16 goes
    through float32); float32 stays float32."""
    from jitgrad.backends.cuda_kernels import sort
    pyfunc, _ = sort.make_rank_sort_kernel(np.dtype(dtype), descending)
    x = np.zeros(1, dtype)
    args = (x, 0, (1,), (1,), 1, 1, 1, x, np.zeros(1, np.int64))
    for cc in ((8, 0), (9, 0)):
        ptx = compile_ptx(pyfunc, ptx_backend.signature_of(args), cc)
        if dtype == np.float32:
            assert not ptx_backend.f64_instructions(ptx)
