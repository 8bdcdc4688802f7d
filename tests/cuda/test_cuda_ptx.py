"""Every CUDA kernel jitgrad can produce compiles to PTX for sm_80 and sm_90 (no GPU needed).

The simulator does no type inference; this is the check that catches CUDA typing errors, and the
one that proves float32 kernels stay float32 (no ``.f64`` instruction or register in their PTX).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import cuda_specs as specs  # noqa: E402

CCS = ((8, 0), (9, 0))
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
# the index kernels' bounds-check arguments (cuda_kernels.bounds): the flag array and
# (code, allow negatives, dim)
_FLAG, _CHK = np.zeros(4, np.int64), (np.int64(1), np.int64(0), np.int64(0))

_CASES = specs.all_cases()
_BY_OP = {}
for _c in _CASES:
    _BY_OP.setdefault((_c.op, _c.kind), []).append(_c)


def _example(dtype, kind):
    return np.zeros(1, dtype) if kind == "a" else dtype.type(0)


def _elementwise_signature(backend, case, ct):
    """Kernel argument types for ``case`` computing in ``ct``: ``(n, arrays..., scalars...,
    outputs...)`` exactly as ``backends.cuda.launch`` passes them."""
    spec = case.spec
    args = [np.int64(0)]
    args += [_example(case.arg_dtype(a, ct), "a") for a in spec.arrays]
    args += [_example(case.arg_dtype(s, ct), "s") for s in spec.scalars]
    args += [_example(case.out_dtype(ct), "a") for _ in spec.outputs]
    return backend.signature_of(args)


def _calls_trig(case) -> bool:
    """Does the kernel call sin/cos/tan (whose libdevice float32 versions hold a double-precision
    huge-argument reduction; see ``backends.cuda._TRIG_REDUCTION_F64``)? digamma and polygamma
    call them inside (the reflection formula's tan(pi r), trigamma's sin(pi x)), and so do the
    Airy/Bessel J/Y functions and the Chebyshev polynomials (ops/special_*_scalar.py)."""
    import re
    src = "".join(fn.source for fn in case.spec.functions())
    return re.search(r"\b(sin|cos|tan|digamma|polygamma|airy_ai|bessel_[jy][01]|"
                     r"(shifted_)?chebyshev_[tuvw])\(", src) is not None


# float32 kernels whose double arithmetic is ATen's own: modified_bessel_k0 takes
# std::log(0.5 * x) with a double literal on both devices
_F64_BY_DESIGN = {"special_modified_bessel_k0"}


def _module(backend, case):
    from jitgrad.codegen import kcache
    from jitgrad.codegen.cuda import render_cuda
    return kcache.load(render_cuda(case.spec), "cuda-ptxcheck")


@pytest.mark.parametrize("op,kind", sorted(_BY_OP), ids=[f"{o}-{k}" for o, k in sorted(_BY_OP)])
def test_elementwise_ptx(ptx_backend, compile_ptx, op, kind):
    """Forward kernels for every array/scalar pattern and dtype of the op's rule; VJP kernels
    for every ``needs`` combination, float32 and float64; each for sm_80 and sm_90."""
    seen = set()
    for case in _BY_OP[(op, kind)]:
        mod = _module(ptx_backend, case)
        for ct in case.dtypes():
            sig = _elementwise_signature(ptx_backend, case, ct)
            key = (mod.__name__, sig)
            if key in seen:  # two patterns rendering the same kernel
                continue
            seen.add(key)
            for cc in CCS:
                ptx = compile_ptx(mod.kernel_py, sig, cc)
                if ct == F32 and op not in _F64_BY_DESIGN:
                    bad = ptx_backend.f64_instructions(
                        ptx, allow_trig_reduction=_calls_trig(case))
                    assert not bad, f"{case.id} float32 on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"


# ----------------------------------------------------------------------------- hand-written


def _k(module, factory, *fargs):
    """A kernel factory call, resolved at test time (collection must not import numba.cuda)."""
    return (module, factory, fargs)


def _resolve(ref):
    import importlib
    module, factory, fargs = ref
    mod = importlib.import_module(f"jitgrad.backends.cuda_kernels.{module}")
    from jitgrad.backends.cuda_kernels.common import BLOCK
    fargs = tuple(BLOCK if a == "BLOCK" else a for a in fargs)
    return getattr(mod, factory)(*fargs)[0]


def _hand_written_cases():
    """(name, kernel factory ref, example args, float32?) for every hand-written kernel."""
    out = []
    i64 = np.zeros(1, np.int64)
    for dt in (F32, F64):
        x = np.zeros(1, dt)
        s = dt.type(1)
        for nk, nr in ((1, 1), (2, 1), (1, 2), (3, 2)):
            kt, rt = (1,) * nk, (1,) * nr
            for op in ("sum", "prod", "max", "min"):
                out.append((f"reduce-{op}-{dt}-k{nk}r{nr}",
                            _k("reduce", "make_tree_kernel", op, dt, "BLOCK"),
                            (x, 0, kt, kt, rt, rt, 1, 1, s, x), dt == F32))
            for op in ("max", "min"):
                out.append((f"argreduce-{op}-{dt}-k{nk}r{nr}",
                            _k("reduce", "make_arg_kernel", op, dt, "BLOCK"),
                            (x, 0, kt, kt, rt, rt, 1, 1, x, i64), dt == F32))
        for nb in (1, 2):
            bt = (1,) * nb
            out.append((f"matmul-{dt}-b{nb}", _k("matmul", "make_matmul_kernel", dt, 16),
                        (x, 0, bt, bt, 1, 1, x, 0, bt, 1, 1, x, 1, 1, 1, 1), dt == F32))
        for nl in (1, 3):
            lt = (1,) * nl
            for log in (False, True):
                out.append((f"softmax-{dt}-log{log}-l{nl}",
                            _k("softmax", "make_softmax_kernel", dt, "BLOCK", log),
                            (x, 0, lt, lt, 1, x, lt, 1, 1, 1), dt == F32))
                out.append((f"softmax_backward-{dt}-log{log}-l{nl}",
                            _k("softmax", "make_softmax_backward_kernel", dt, "BLOCK", log),
                            (x, 0, x, 0, lt, lt, 1, lt, 1, x, lt, 1, 1, 1), dt == F32))
        for nd in (1, 2, 4):
            t = (1,) * nd
            out.append((f"gather-{dt}-{nd}d", _k("index", "make_gather_kernel", dt),
                        (x, 0, t, 1, i64, 0, t, t, 0, 1, x, _FLAG, _CHK), dt == F32))
            out.append((f"scatter_add-{dt}-{nd}d", _k("index", "make_scatter_add_kernel", dt),
                        (x, t, 1, i64, 0, t, t, x, 0, t, 0, 1, s, _FLAG, _CHK), dt == F32))
            for op in ("max", "min", "nan"):  # scatter_reduce amax/amin (+ the NaN pass)
                out.append((f"scatter_{op}-{dt}-{nd}d",
                            _k("index", "make_scatter_add_kernel", dt, op),
                            (x, t, 1, i64, 0, t, t, x, 0, t, 0, 1, s, _FLAG, _CHK), dt == F32))
            out.append((f"copy-{dt}-{nd}d", _k("layout", "make_copy_kernel", dt),
                        (x, 0, t, t, 1, x), dt == F32))
        out.append((f"fill-{dt}", _k("layout", "make_fill_kernel", dt), (1, s, x), dt == F32))
    # integer/bool variants the core needs: int64 sums of ints and bools, argmax of ints,
    # integer scatter-add, dtype-casting copies
    x64, xi32, xb = np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros(1, np.bool_)
    xf32, xf64 = np.zeros(1, F32), np.zeros(1, F64)
    i64s = np.int64(1)
    out += [
        ("reduce-sum-int32->int64", _k("reduce", "make_tree_kernel", "sum", np.int64, "BLOCK"),
         (xi32, 0, (1,), (1,), (1,), (1,), 1, 1, i64s, x64), False),
        ("reduce-sum-bool->int64", _k("reduce", "make_tree_kernel", "sum", np.int64, "BLOCK"),
         (xb, 0, (1,), (1,), (1,), (1,), 1, 1, i64s, x64), False),
        ("argreduce-max-int64", _k("reduce", "make_arg_kernel", "max", np.int64, "BLOCK"),
         (x64, 0, (1,), (1,), (1,), (1,), 1, 1, x64, x64), False),
        ("scatter_add-int64", _k("index", "make_scatter_add_kernel", np.int64),
         (x64, (1,), 1, x64, 0, (1,), (1,), x64, 0, (1,), 0, 1, i64s, _FLAG, _CHK), False),
        ("copy-f64->f32", _k("layout", "make_copy_kernel", F32),
         (xf64, 0, (1,), (1,), 1, xf32), False),
        ("copy-int64->f32", _k("layout", "make_copy_kernel", F32),
         (x64, 0, (1,), (1,), 1, xf32), True),
        ("copy-f32->bool", _k("layout", "make_copy_kernel", np.bool_),
         (xf32, 0, (1,), (1,), 1, xb), True),
    ]
    return out


_HAND = _hand_written_cases()


@pytest.mark.parametrize("name,ref,args,f32", _HAND, ids=[c[0] for c in _HAND])
def test_hand_written_kernel_ptx(ptx_backend, compile_ptx, name, ref, args, f32):
    pyfunc = _resolve(ref)
    sig = ptx_backend.signature_of(args)
    for cc in CCS:
        ptx = compile_ptx(pyfunc, sig, cc)
        assert ".entry" in ptx
        if f32:
            bad = ptx_backend.f64_instructions(ptx)
            assert not bad, f"{name} on sm_{cc[0]}{cc[1]} uses f64: {bad[:3]}"


def test_shared_memory_reduction_is_a_tree(ptx_backend, compile_ptx):
    """The reduction really uses shared memory and a barrier (not a host loop)."""
    from jitgrad.backends.cuda_kernels import reduce
    from jitgrad.backends.cuda_kernels.common import BLOCK
    x = np.zeros(1, np.float32)
    ptx = compile_ptx(reduce.make_tree_kernel("sum", F32, BLOCK)[0],
                      ptx_backend.signature_of((x, 0, (1,), (1,), (1,), (1,), 1, 1,
                                                np.float32(1), x)), (8, 0))
    assert ".shared" in ptx and "bar.sync" in ptx


def test_trig_f64_allowance_is_exactly_libdevice_reduction(ptx_backend, compile_ptx):
    """float32 sin's PTX holds libdevice's f64 reduction, and nothing else in f64."""
    import math

    from numba import cuda

    def k(n, x, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = math.sin(x[i])

    x = np.zeros(1, np.float32)
    ptx = compile_ptx(k, ptx_backend.signature_of((np.int64(0), x, x)), (8, 0))
    assert ptx_backend.f64_instructions(ptx)  # the slow path is there...
    assert not ptx_backend.f64_instructions(ptx, allow_trig_reduction=True)  # ...and only it


def test_float32_literal_would_be_caught(ptx_backend, compile_ptx):
    """The .f64 check is not vacuous: a bare Python float literal promotes float32 math."""
    from numba import cuda

    def promoted(n, x, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = x[i] * 0.5 + 1.0

    x = np.zeros(1, np.float32)
    ptx = compile_ptx(promoted, ptx_backend.signature_of((np.int64(0), x, x)), (8, 0))
    assert ptx_backend.f64_instructions(ptx)
    assert ptx_backend.f64_instructions(ptx, allow_trig_reduction=True)
