"""benchmarks/_mlp_floor.py (bench_mlp's ``floor``) does the same training as the NumPy step:
the lower bound it reports is only meaningful if it computes what the others compute."""
import numpy as np
import pytest

from benchmarks import bench_mlp
from jitgrad.backends import blas


@pytest.mark.skipif(blas.backend() != "mkl", reason="the floor step calls MKL's cblas_sgemm")
def test_floor_step_trains_like_the_numpy_step():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((bench_mlp.BATCH, bench_mlp.SIZES[0])).astype(np.float32)
    y = rng.integers(0, bench_mlp.SIZES[-1], bench_mlp.BATCH)
    Ws, bs = bench_mlp._init_params(rng)
    Ws2, bs2 = [w.copy() for w in Ws], [b.copy() for b in bs]
    W0 = [w.copy() for w in Ws]
    floor = bench_mlp.make_floor_step(X, y, Ws, bs)
    ref = bench_mlp._numpy_step(X, y, Ws2, bs2)
    for _ in range(4):
        np.testing.assert_allclose(floor(), ref(), rtol=2e-5)
    for a, b in zip(Ws + bs, Ws2 + bs2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert all(np.abs(w - w0).max() > 1e-5 for w, w0 in zip(Ws, W0))  # it did train
