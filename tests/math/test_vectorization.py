"""Loops calling jitgrad.math functions vectorize: LLVM IR has vector float types, the
functions are fully inlined (no calls left), and float32 loops contain no double."""
import re

import numpy as np
import pytest
from numba import njit

import jitgrad.math as jm

VEC = {np.float32: re.compile(r"<(4|8|16) x float>"), np.float64: re.compile(r"<(2|4|8) x double>")}
PACKED_ASM = re.compile(r"\b(v?(mul|add|sub|fmadd\w*|fnmadd\w*)p[sd])\s.*%(xmm|ymm|zmm)")


def _loop(name):
    fn = jm.CPU_NAMESPACE[name]

    @njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return loop


def _compiled(name, dtype):
    loop = _loop(name)
    x = np.linspace(0.1, 2, 64).astype(dtype)
    loop(x, np.empty_like(x))
    sig = loop.signatures[0]
    return loop.inspect_llvm(sig), loop.inspect_asm(sig)


def _kernel_ir(ir):
    """Only the loop function itself (not the CPython wrapper)."""
    fns = re.split(r"\ndefine ", ir)

    def fname(f):
        m = re.search(r"@([\w.$]+)\(", f.split("\n", 1)[0])
        return m.group(1) if m else ""
    body = [f for f in fns if "loop" in fname(f) and not fname(f).startswith(("_ZN7cpython", "cfunc"))]
    assert body, "loop function not found in IR"
    return body[0]


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_float32_loop_vectorizes_without_double(name):
    ir, asm = _compiled(name, np.float32)
    k = _kernel_ir(ir)
    assert VEC[np.float32].search(k), f"{name}: no vector float ops in the loop IR"
    assert "double" not in k, f"{name}: float64 arithmetic in a float32 loop"
    assert PACKED_ASM.search(asm), f"{name}: no packed SIMD arithmetic in the assembly"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", jm.FUNCTIONS)
def test_every_function_vectorizes_and_inlines(name, dtype):
    ir, asm = _compiled(name, dtype)
    k = _kernel_ir(ir)
    assert VEC[dtype].search(k), f"{name}/{dtype.__name__}: loop not vectorized"
    calls = set(re.findall(r"call [^@]*@([\w.$]+)", k))
    # only LLVM intrinsics; sin/cos/tan call libm for |x| > TRIG_MAX: in the vector body
    # through the masked vector variant, in the scalar remainder loop directly
    ok = [c.startswith("llvm.") or c.startswith("jitgrad_libm_") for c in calls]
    assert all(ok), f"{name}: calls left in the loop: {calls}"
    if name in ("sin", "cos", "tan"):
        assert any(re.fullmatch(r"jitgrad_libm_\w+_v\d+", c) for c in calls), calls
    if dtype == np.float32:
        assert "double" not in k, f"{name}: float64 arithmetic in a float32 loop"


def test_libm_calls_would_not_vectorize():
    """The problem this module solves: math.tanh in a loop stays a scalar libm call."""
    import math

    @njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = math.tanh(x[i])
    x = np.ones(16, np.float32)
    loop(x, np.empty_like(x))
    k = _kernel_ir(loop.inspect_llvm(loop.signatures[0]))
    assert not VEC[np.float32].search(k) or "tanhf" in k


def test_cached_kernel_reloads_in_a_new_process(tmp_path):
    """cache=True kernels (how jitgrad's generated kernels are compiled) work, including the
    masked-vector libm fallback of sin, and parallel=True loops."""
    import subprocess
    import sys
    (tmp_path / "kmod_math.py").write_text(
        "from numba import njit, prange\n"
        "from jitgrad.math import sin, exp, tanh\n"
        "@njit(cache=True)\n"
        "def k(x, out):\n"
        "    for i in range(x.size):\n"
        "        out[i] = sin(x[i]) + exp(-abs(x[i])) * tanh(x[i])\n"
        "@njit(cache=True, parallel=True)\n"
        "def kp(x, out):\n"
        "    for i in prange(x.size):\n"
        "        out[i] = sin(x[i]) + exp(-abs(x[i])) * tanh(x[i])\n")
    script = (
        "import numpy as np, kmod_math as m\n"
        "x = np.concatenate([np.linspace(-5, 5, 1001), [1e5, -3e7, 1e30]]).astype(np.float32)\n"
        "xd = x.astype(np.float64)\n"
        "ref = np.sin(xd) + np.exp(-np.abs(xd)) * np.tanh(xd)\n"
        "for f in (m.k, m.kp):\n"
        "    out = np.empty_like(x); f(x, out)\n"
        "    assert np.max(np.abs(out - ref) / np.maximum(1, np.abs(ref))) < 1e-6\n"
        "    print(f.__name__, sum(f.stats.cache_hits.values()))\n")
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        outs.append(p.stdout.split())
    assert outs[0] == ["k", "0", "kp", "0"] and outs[1] == ["k", "1", "kp", "1"], outs
