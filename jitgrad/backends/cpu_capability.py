"""Which of ATen's CPU builds PyTorch runs on this host: ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``.

PyTorch compiles its vectorized kernels three times (default, AVX2, AVX-512) and picks one per
process (``aten/src/ATen/native/DispatchStub.cpp``, ``compute_cpu_capability``): AVX512 where the
CPU has AVX-512 VL, BW and DQ and FMA3, else AVX2 where it has AVX2 and FMA3, else the default
build. The environment variable ``ATEN_CPU_CAPABILITY`` (exactly ``default``, ``avx2`` or
``avx512``) overrides the choice, unchecked against the CPU (PyTorch then reports, and tries to
run, that build); another value is ignored. The builds differ in vector width (64 vs 32
bytes), so in how a row is split into lanes and tails, and in which SLEEF/oneDNN branch runs:
the same op rounds some elements differently. jitgrad's CPU kernels that reproduce ATen's
bits read ``CAPABILITY`` to follow the same build; ``torch.backends.cpu.get_cpu_capability()``
gives the same answer on the same host.

The CPU's features come from LLVM (``llvmlite.binding.get_host_cpu_features``), which is what
Numba compiles for. The lane counts the kernels follow are plain loop bounds, so a capability
above the host's (set through the variable) still runs, as that build's arithmetic.
"""
from __future__ import annotations

import os

__all__ = ["CAPABILITY", "vector_bytes", "host_capability"]

def _features() -> dict:
    try:
        import llvmlite.binding as llvm
        return dict(llvm.get_host_cpu_features())
    except Exception:  # features unknown (not x86, LLVM without the query): the portable build
        return {}


def host_capability(features: dict | None = None, env: str | None = None) -> str:
    """PyTorch's ``compute_cpu_capability`` for these CPU ``features`` and ``ATEN_CPU_CAPABILITY``
    value (both read from this host when not given)."""
    f = _features() if features is None else features
    env = os.environ.get("ATEN_CPU_CAPABILITY", "") if env is None else env
    if all(f.get(k, False) for k in ("avx512vl", "avx512bw", "avx512dq", "fma")):
        best = "AVX512"
    elif f.get("avx2", False) and f.get("fma", False):
        best = "AVX2"
    else:
        best = "DEFAULT"
    if env in ("default", "avx2", "avx512"):  # strcmp in ATen: case and spaces matter
        return env.upper()
    return best


CAPABILITY = host_capability()


def vector_bytes(capability: str = CAPABILITY) -> int:
    """``sizeof(Vectorized<T>)`` in that build: 64 on AVX-512, 32 on AVX2 (and the default
    build, whose Vectorized is two 16-byte halves: 32 bytes)."""
    return 64 if capability == "AVX512" else 32
