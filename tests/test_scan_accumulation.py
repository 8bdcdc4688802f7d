"""cumsum/cumprod on the CPU accumulate as ATen's cpu_cum_base_kernel does, in acc_type (double
for float32, float for float16, int64 for integers), each running value rounded once into the
output: bit for bit PyTorch's (a float32 running sum kept in float32 drifts 40x further from
the exact sums over 1000 terms)."""
import numpy as np
import pytest
import torch

import jitgrad

X = np.random.default_rng(0).standard_normal((64, 1000))


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
@pytest.mark.parametrize("code", ["a.cumsum(1)", "a.cumsum(0)", "p.cumprod(1)",
                                  "a.cumsum(1, dtype=T.float64)",
                                  "(a * 3).to(T.int32).cumsum(1)", "T.cumsum(a[0], 0)"])
def test_scan_bits_as_pytorch(code, dt):
    got = {}
    for T in (torch, jitgrad):
        a, p = T.tensor(X.astype(dt)), T.tensor((X * 0.01 + 1).astype(dt))
        got[T.__name__] = eval(code, {"T": T, "a": a, "p": p}).numpy()
    want, mine = got["torch"], got["jitgrad"]
    assert mine.dtype == want.dtype
    np.testing.assert_array_equal(mine, want)


def test_float32_cumsum_is_as_accurate_as_pytorchs():
    exact = X.astype(np.float32).astype(np.float64).cumsum(1)
    mine = jitgrad.tensor(X.astype(np.float32)).cumsum(1).numpy().astype(np.float64)
    assert np.abs(mine - exact).max() <= np.abs(np.float32(exact) - exact).max()
