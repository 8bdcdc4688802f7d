"""linspace as ATen computes it, bit for bit: start/end converted to the dtype, the step in it
(double for integer dtypes), each value one fused multiply-add from the nearer end; integer
dtypes truncate and check start/end with PyTorch's overflow error."""
import numpy as np
import pytest
import torch

import jitgrad

CASES = [(0, 1, 7), (0, 1, 100), (-3.3, 7.1, 1000), (0.1, 0.9, 33), (1e-3, 5e3, 257), (-1, 1, 5),
         (2, -2, 11), (0, 10, 5000), (0, 1, 70000), (-5.5, 1e6, 100001), (3, 3, 4), (0, 1, 2),
         (1e-40, 1e-38, 9), (0.5, 10.7, 5), (-7.9, 3.2, 13), (0, 1, 1), (0, 1, 0),
         (float("inf"), 1, 3), (0, float("nan"), 3), (-1, 300, 7), (250, -3, 6)]


def _run(lib, a, b, n, dt):
    try:
        return lib.linspace(a, b, n, dtype=getattr(lib, dt)).numpy()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "int16", "int8",
                                "uint8"])
@pytest.mark.parametrize("a,b,n", CASES)
def test_linspace_bits_as_pytorch(a, b, n, dt):
    want, got = _run(torch, a, b, n, dt), _run(jitgrad, a, b, n, dt)
    if isinstance(want, tuple):
        assert got == want
        return
    assert isinstance(got, np.ndarray), got
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN equal to NaN, values bit for bit otherwise
    real = ~np.isnan(want.astype(np.float64))
    assert np.array_equal(np.signbit(got)[real], np.signbit(want)[real])  # -0.0 too


LOG_CASES = [(0, 1, 7, 10), (0, 3, 100, 10), (-3.3, 7.1, 1000, 2), (0.1, 0.9, 33, np.e),
             (-2, 2, 11, 10), (0, 10, 50, 3), (0, 1, 1, 10), (2.5, 1, 1, 2), (0, 1, 0, 10),
             (-1, 1, 5, 0.5), (0, 40, 9, 10), (5, -5, 3, -2), (1, 2, 3, 0),
             (-7.7, 300, 10001, 1.01), (-3, 100, 21, 1.5)]


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64", "int32", "int16",
                                "int8", "uint8"])
@pytest.mark.parametrize("a,b,n,base", LOG_CASES)
def test_logspace_bits_as_pytorch(a, b, n, base, dt):
    """pow(base, exponent) in double per value, the exponent unfused, start/end in the dtype
    (uint8's -2 wraps to 254, then C++ subtracts as int)."""
    def run(lib):
        try:
            return lib.logspace(a, b, n, base=base, dtype=getattr(lib, dt)).numpy()
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return (type(e).__name__, str(e))
    want, got = run(torch), run(jitgrad)
    if isinstance(want, tuple):
        assert got == want
        return
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype, got
    np.testing.assert_array_equal(got, want)


ARANGE_CASES = [(0, 1, 0.1), (0, 10, 0.3), (-3.3, 7.1, 0.01), (1e-3, 5, 1e-3), (0, 1, 1 / 3),
                (10, 0, -0.7), (0.5, 100.5), (5,), (-1000.5, 3e5, 1.1)]


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
@pytest.mark.parametrize("args", ARANGE_CASES)
def test_arange_bits_as_pytorch(args, dt):
    """ATen's vectorized arange: per 256-bit vector a base start + step * i rounded to the
    dtype, lanes base + j * step fused in the accumulate type, a scalar tail; the last case is
    long enough for parallel_for's chunks (both libraries on the same thread count)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(jitgrad.get_num_threads())
    try:
        want = torch.arange(*args, dtype=getattr(torch, dt)).numpy()
    finally:
        torch.set_num_threads(threads)
    got = jitgrad.arange(*args, dtype=getattr(jitgrad, dt)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_range_float16_length_in_float(dt):
    """torch.range counts its elements in the accumulate type (float for float16)."""
    want = torch.range(-3.3, 7.1, 0.01, dtype=getattr(torch, dt)).numpy()
    got = jitgrad.range(-3.3, 7.1, 0.01, dtype=getattr(jitgrad, dt)).numpy()
    np.testing.assert_array_equal(got, want)
