"""PTX for the kernels the CUDA reductions added (main run, no simulator), for sm_80 and sm_90:

* ``scan.make_scan_kernel`` (block per row) and ``scan.make_seq_scan_kernel`` (thread per row):
  cumsum/cumprod, inclusive and exclusive, rows over 1 or 2 dims with 1 or 2 kept dims;
  float32/float64, and the int64 accumulation of int32/int64/bool inputs (cumsum);
* ``reduce.make_tree_kernel`` with the new ``all``/``any`` ops (bool accumulator, any input
  dtype), and the variants the device ops launch that the kernel-layer PTX tests do not cover:
  float sums of a bool input (``norm(p=0)``), int64 products of int/bool inputs (``prod``).

Float32 kernels must have no ``.f64`` line (a bare float literal would promote them).
"""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _scan_cases():
    out = []
    for kind in ("block", "thread"):
        for dt in (F32, F64):
            for op in ("sum", "prod"):
                for exclusive in (False, True):
                    for nk, nr in ((1, 1), (2, 1), (1, 2)):
                        out.append((f"scan-{kind}-{op}-{dt}-excl{exclusive}-k{nk}r{nr}", kind,
                                    op, dt, dt, exclusive, nk, nr))
        for src in (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)):
            out.append((f"scan-{kind}-sum-{src}->int64", kind, "sum", src, np.dtype(np.int64),
                        False, 1, 1))
    return out


SCAN = _scan_cases()


@pytest.mark.parametrize("name,kind,op,src,acc,exclusive,nk,nr", SCAN,
                         ids=[c[0] for c in SCAN])
def test_scan_kernel_ptx(ptx_backend, compile_ptx, name, kind, op, src, acc, exclusive, nk, nr):
    from jitgrad.backends.cuda_kernels import scan
    from jitgrad.backends.cuda_kernels.common import BLOCK
    if kind == "block":
        pyfunc, _ = scan.make_scan_kernel(op, acc, BLOCK, exclusive)
    else:
        pyfunc, _ = scan.make_seq_scan_kernel(op, acc, exclusive)
    kt, rt = (1,) * nk, (1,) * nr
    args = (np.zeros(1, src), 0, kt, kt, rt, rt, np.zeros(1, acc), 0, kt, rt, 1, 1)
    sig = ptx_backend.signature_of(args)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, sig, cc)
        assert ".entry" in ptx
        if kind == "block":  # a real shared-memory scan with barriers
            assert ".shared" in ptx and "bar.sync" in ptx
        if acc == F32:
            bad = ptx_backend.f64_instructions(ptx)
            assert not bad, f"{name} on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"


TREE = [(f"tree-{op}-{src}", op, np.dtype(src), np.dtype(np.bool_))
        for op in ("all", "any") for src in (np.float32, np.float64, np.int64, np.bool_)] + [
    (f"tree-sum-bool->{acc}", "sum", np.dtype(np.bool_), np.dtype(acc))
    for acc in (np.float32, np.float64)] + [
    (f"tree-prod-{src}->int64", "prod", np.dtype(src), np.dtype(np.int64))
    for src in (np.int32, np.int64, np.bool_)]


@pytest.mark.parametrize("name,op,src,acc", TREE, ids=[c[0] for c in TREE])
def test_new_tree_reduction_ptx(ptx_backend, compile_ptx, name, op, src, acc):
    from jitgrad.backends.cuda_kernels.common import BLOCK
    from jitgrad.backends.cuda_kernels.reduce import make_tree_kernel
    pyfunc, _ = make_tree_kernel(op, acc, BLOCK)
    for nk, nr in ((1, 1), (2, 2)):
        kt, rt = (1,) * nk, (1,) * nr
        args = (np.zeros(1, src), 0, kt, kt, rt, rt, 1, 1, acc.type(1), np.zeros(1, acc))
        sig = ptx_backend.signature_of(args)
        for cc in CCS:
            ptx = compile_ptx(pyfunc, sig, cc)
            assert ".entry" in ptx
            if src != F64 and acc != F64:
                bad = ptx_backend.f64_instructions(ptx)
                assert not bad, f"{name} on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"
