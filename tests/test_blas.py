"""backends.blas: MKL's GEMM (when installed) must agree with NumPy for every operand layout."""
import os
import subprocess
import sys

import numpy as np
import pytest

from jitgrad.backends import blas

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout_a", ["C", "F", "strided"])
@pytest.mark.parametrize("layout_b", ["C", "F", "strided"])
@pytest.mark.parametrize("shape", [(5, 3, 4), (1, 7, 1), (64, 33, 17)])
def test_matches_numpy(dtype, layout_a, layout_b, shape):
    m, k, n = shape

    def make(r, c, layout):
        a = RNG.standard_normal((r, 2 * c) if layout == "strided" else (r, c)).astype(dtype)
        if layout == "strided":
            return a[:, ::2]
        return np.asfortranarray(a) if layout == "F" else a
    a, b = make(m, k, layout_a), make(k, n, layout_b)
    got = blas.matmul(a, b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=tol,
                               atol=tol * k)
    assert got.dtype == dtype and got.flags.c_contiguous


def test_empty_inner_dimension_gives_zeros():
    out = blas.matmul(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))


def test_other_ranks_and_dtypes_fall_back_to_numpy():
    a = RNG.integers(0, 5, (3, 4))
    b = RNG.integers(0, 5, (4, 2))
    np.testing.assert_array_equal(blas.matmul(a, b), a @ b)
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(blas.matmul(x, x.transpose(0, 2, 1)), x @ x.transpose(0, 2, 1))


def test_env_var_forces_numpy():
    code = "from jitgrad.backends import blas; print(blas.backend())"
    env = dict(os.environ, JITGRAD_BLAS="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "numpy"
