"""PTX for the kernels added for indexing on CUDA tensors (main run, no simulator):
``cuda_kernels.advanced`` (index linearization, advanced take/put/accumulate, nonzero
count/scan/positions/unravel) and ``index.make_scatter_kernel``, for sm_80 and sm_90; float32
kernels must not contain ``.f64``."""
from __future__ import annotations

import numpy as np
import pytest

CCS = ((8, 0), (9, 0))
FLOATS = (np.float32, np.float64)


def _compile_all(ptx_backend, compile_ptx, pyfunc, args, no_f64):
    sig = ptx_backend.signature_of(args)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, sig, cc)
        assert ".entry" in ptx
        if no_f64:
            assert not ptx_backend.f64_instructions(ptx), ptx_backend.f64_instructions(ptx)
        if "atom" in pyfunc.__name__ or pyfunc.__name__.endswith("_add"):
            assert "atom" in ptx or "red." in ptx  # the accumulate really is atomic


def _adv():
    from jitgrad.backends.cuda_kernels import advanced
    return advanced


@pytest.mark.parametrize("idt", (np.int64, np.int32))
def test_linear_ptx(ptx_backend, compile_ptx, idt):
    lin, idx = np.zeros(1, np.int64), np.zeros(1, idt)
    for nb in (1, 2):
        t = (1,) * nb
        _compile_all(ptx_backend, compile_ptx, _adv().make_linear_kernel()[0],
                     (lin, idx, 0, t, t, 1, 1, 1, 1, lin, (0, 0, 0)), no_f64=True)


@pytest.mark.parametrize("dt", FLOATS + (np.int64, np.bool_))
def test_take_ptx(ptx_backend, compile_ptx, dt):
    x, lin = np.zeros(1, dt), np.zeros(1, np.int64)
    for no, na in ((1, 1), (3, 2)):
        o, a = (1,) * no, (1,) * na
        _compile_all(ptx_backend, compile_ptx, _adv().make_take_kernel(dt)[0],
                     (x, 0, o, o, lin, o, a, a, 1, x), no_f64=dt != np.float64)


@pytest.mark.parametrize("dt,acc", [(d, a) for d in FLOATS for a in (False, True)] +
                         [(np.int64, False), (np.bool_, False)])
def test_put_ptx(ptx_backend, compile_ptx, dt, acc):
    x, lin = np.zeros(1, dt), np.zeros(1, np.int64)
    for no, na in ((1, 1), (3, 2)):
        o, a = (1,) * no, (1,) * na
        for src in (x, np.zeros(1, np.float64)):  # same dtype, and a casting write
            _compile_all(ptx_backend, compile_ptx, _adv().make_put_kernel(dt, acc)[0],
                         (x, 0, o, o, lin, o, a, a, src, 0, o, 1),
                         no_f64=dt != np.float64 and src.dtype == x.dtype)


@pytest.mark.parametrize("dt", FLOATS + (np.bool_, np.int64))
def test_nonzero_ptx(ptx_backend, compile_ptx, dt):
    A = _adv()
    x, cnt = np.zeros(1, dt), np.zeros(1, np.int64)
    for nd in (1, 3):
        t = (1,) * nd
        _compile_all(ptx_backend, compile_ptx, A.make_count_kernel()[0],
                     (x, 0, t, t, 1, 1, 1, cnt), no_f64=dt != np.float64)
        _compile_all(ptx_backend, compile_ptx, A.make_positions_kernel()[0],
                     (x, 0, t, t, 1, 1, 1, cnt, cnt), no_f64=dt != np.float64)


def test_scan_and_unravel_ptx(ptx_backend, compile_ptx):
    A = _adv()
    cnt = np.zeros(1, np.int64)
    _compile_all(ptx_backend, compile_ptx, A.make_scan_kernel()[0], (cnt, 1, cnt), no_f64=True)
    for nd in (1, 3):
        _compile_all(ptx_backend, compile_ptx, A.make_unravel_kernel()[0],
                     (cnt, (1,) * nd, 1, cnt), no_f64=True)


@pytest.mark.parametrize("dt", FLOATS + (np.bool_,))
def test_scatter_ptx(ptx_backend, compile_ptx, dt):
    from jitgrad.backends.cuda_kernels.index import make_scatter_kernel
    x, idx = np.zeros(1, dt), np.zeros(1, np.int64)
    for nd in (1, 3):
        t = (1,) * nd
        _compile_all(ptx_backend, compile_ptx, make_scatter_kernel(dt)[0],
                     (x, t, 1, idx, 0, t, t, x, 0, t, 0, 1, idx, (0, 0, 0)),
                     no_f64=dt != np.float64)


def test_bounds_check_raises_the_flag_with_an_atomic_cas(ptx_backend, compile_ptx):
    """The device-side index check (cuda_kernels.bounds) compiles into every index kernel: the
    first bad index claims the flag with a compare-and-swap, so reports never interleave."""
    from jitgrad.backends.cuda_kernels.index import make_gather_kernel
    x, idx, flag = np.zeros(1, np.float32), np.zeros(1, np.int64), np.zeros(4, np.int64)
    sig = ptx_backend.signature_of((x, 0, (1,), 1, idx, 0, (1,), (1,), 0, 1, x, flag,
                                    (1, 0, 0)))
    for cc in CCS:
        ptx = compile_ptx(make_gather_kernel(np.float32)[0], sig, cc)
        assert "atom.global.cas.b64" in ptx or "atom.cas.b64" in ptx, ptx[-2000:]
        assert not ptx_backend.f64_instructions(ptx)
