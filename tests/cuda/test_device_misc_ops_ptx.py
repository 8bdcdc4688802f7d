"""PTX for the scan kernels issue 13's ops added (main run, no simulator), sm_80 and sm_90:
running max/min (cummax/cummin: float32/float64 values, int64 indices, int32/uint8/bool inputs)
and the running log-sum-exp (logcumsumexp: float32/float64), block-per-row and thread-per-row.
Float32 kernels must have no ``.f64`` line. (The elementwise additions, asinh/acosh/atanh,
atan2, erfc, erfinv and the shifts, are compiled by test_cuda_ptx.py with every registry op.)
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
F32 = np.dtype(np.float32)

CASES = [(kind, op, np.dtype(dt)) for kind in ("block", "thread")
         for op, dts in (("max", (np.float32, np.float64, np.int64, np.int32, np.uint8,
                                  np.bool_)),
                         ("min", (np.float32, np.float64, np.int64)),
                         ("logaddexp", (np.float32, np.float64)))
         for dt in dts]


@pytest.mark.parametrize("kind,op,dt", CASES, ids=[f"{k}-{o}-{d}" for k, o, d in CASES])
def test_running_scan_ptx(ptx_backend, compile_ptx, kind, op, dt):
    from jitgrad.backends.cuda_kernels import scan
    from jitgrad.backends.cuda_kernels.common import BLOCK
    if kind == "block":
        pyfunc, _ = scan.make_scan_kernel(op, dt, BLOCK, False)
    else:
        pyfunc, _ = scan.make_seq_scan_kernel(op, dt, False)
    for nk, nr in ((1, 1), (2, 1)):
        kt, rt = (1,) * nk, (1,) * nr
        args = (np.zeros(1, dt), 0, kt, kt, rt, rt, np.zeros(1, dt), 0, kt, rt, 1, 1)
        sig = ptx_backend.signature_of(args)
        for cc in CCS:
            ptx = compile_ptx(pyfunc, sig, cc)
            assert ".entry" in ptx
            if dt == F32:
                bad = ptx_backend.f64_instructions(ptx)
                assert not bad, f"{kind}-{op} float32 on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"
