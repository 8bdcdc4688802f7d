"""PTX of the device solvers (``cuda_kernels.linalg``: LU, LU solve, determinants, Cholesky,
triangular solve) for sm_80 and sm_90, float32 and float64, with the argument types the ops
launch them with (main run, no simulator). Float32 kernels must have no ``.f64`` line."""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))


def _args(name, dt):
    f, i32, z = np.zeros(1, dt), np.zeros(1, np.int32), dt.type(0)
    n = np.int64(1)
    return {
        "lu": (f, n, n, i32, i32, z),
        "lu_solve": (f, i32, n, f, n, n, True, z, z),
        "det": (f, i32, n, n, f, f, f, z, z),
        "cholesky": (f, n, n, i32, z),
        "trsm": (f, n, f, n, n, True, False),
    }[name]


CASES = [(name, np.dtype(dt)) for name in ("lu", "lu_solve", "det", "cholesky", "trsm")
         for dt in (np.float32, np.float64)]


@pytest.mark.parametrize("name,dt", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_linalg_kernel_ptx(ptx_backend, compile_ptx, name, dt):
    from jitgrad.backends.cuda_kernels import linalg
    sig = ptx_backend.signature_of(_args(name, dt))
    for cc in CCS:
        ptx = compile_ptx(linalg._PY[name], sig, cc)
        assert ".entry" in ptx
        if dt == np.float32:
            bad = ptx_backend.f64_instructions(ptx)
            assert not bad, f"{name} on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"
