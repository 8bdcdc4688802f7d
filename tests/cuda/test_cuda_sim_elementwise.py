"""Every elementwise LoopSpec (forward per array/scalar pattern, VJP per ``needs`` combination)
run on the device (simulator or GPU) and compared with the CPU kernel of the *same* spec.

Sizes are odd (37 elements: more than the simulator's 2 blocks x 16 threads, so the grid-stride
loop wraps) and the float inputs hold a NaN, so NaN propagation is compared too.
"""
from __future__ import annotations

import hashlib
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import cuda_specs as specs  # noqa: E402

# IEEE specials in the simulator's NumPy scalar math warn; the device does not.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

N = 37
F32 = np.dtype(np.float32)

# ops whose tested domain is positive (logs, roots, fractional powers, divisions)
POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "pow", "pow_tensor", "rpow", "div", "reciprocal"}
SCALARS = {"exponent": 2.5, "negative_slope": 0.01, "beta": 1.0, "threshold": 1.5, "lo": -0.5,
           "hi": 0.5, "other": 1.5, "base": 2.0, "a": 0.75, "b": 1.25}
INT_SCALARS = {"exponent": 2, "lo": -1, "hi": 2, "other": 3, "a": 3, "b": 2}

_CASES = specs.all_cases()
_PARAMS = [(c, dt) for c in _CASES for dt in c.dtypes()]


def _values(case, ct, rng):
    """name -> flat array (array operands) or NumPy scalar, for every name the spec reads."""
    op = case.op
    spec = case.spec
    vals = {}
    for name in spec.arrays:
        dt = case.arg_dtype(name, ct)
        if dt.kind == "b":
            v = rng.random(N) < 0.5
        elif dt.kind in "iu":
            v = rng.integers(0, 5, N).astype(dt)
        else:
            if op in POSITIVE or name in ("base", "beta"):
                v = rng.uniform(0.5, 2.0, N)
            elif name in SCALARS and name not in ("a", "b"):
                v = SCALARS[name] + rng.uniform(-0.2, 0.2, N)
            else:
                v = rng.uniform(-2.0, 2.0, N)
            v = v.astype(dt)
            if name in ("a", "g"):
                v[5] = np.nan
        vals[name] = v
    # ties exercise the 0.5-split of maximum/minimum and the == branches
    if "a" in vals and "b" in vals and vals["a"].dtype == vals["b"].dtype:
        vals["b"][::6] = vals["a"][::6]
    for name in spec.scalars:
        dt = case.arg_dtype(name, ct)
        if dt.kind == "b":
            vals[name] = np.bool_(True)
        elif dt.kind in "iu":
            vals[name] = dt.type(INT_SCALARS.get(name, 2))
        else:
            vals[name] = dt.type(SCALARS.get(name, 1.5))
    return vals


def _cpu_run(case, ct, vals):
    from jitgrad.backends import cpu
    key = ("cuda-parity", hashlib.sha1(repr(case.spec).encode()).hexdigest())
    mod = cpu.module_for(key, lambda: case.spec)
    args = case.kernel_args(ct, N, vals)
    cpu.launch(mod, N, args)
    return args[len(case.spec.arrays) + len(case.spec.scalars):]


def _device_run(backend, case, ct, vals):
    mod = backend.module_for(("parity", case.id, repr(case.spec)), lambda: case.spec)
    host = case.kernel_args(ct, N, vals)
    nin = len(case.spec.arrays)
    dev = [backend.to_device(a) for a in host[:nin]]
    dev += host[nin:nin + len(case.spec.scalars)]
    outs = [backend.empty(N, case.out_dtype(ct)) for _ in case.spec.outputs]
    backend.launch(mod, N, dev + outs)
    return [backend.to_host(o) for o in outs]


def _tolerance(dt):
    if dt == F32:
        return {"rtol": 3e-6, "atol": 1e-6}
    if dt.kind == "f":
        return {"rtol": 1e-13, "atol": 1e-14}
    return {"rtol": 0, "atol": 0}


@pytest.mark.parametrize("case,ct", _PARAMS, ids=[f"{c.id}-{dt}" for c, dt in _PARAMS])
def test_elementwise_matches_cpu(device, case, ct):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    vals = _values(case, ct, rng)
    want = _cpu_run(case, ct, vals)
    with np.errstate(all="ignore"):
        got = _device_run(device, case, ct, vals)
    for (name, _), w, g in zip(case.spec.outputs, want, got):
        assert g.dtype == w.dtype, name
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, equal_nan=True, err_msg=f"{case.id} {name}",
                                       **_tolerance(w.dtype))
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{case.id} {name}")
