"""jitgrad.backends.cpu_capability names the ATen build PyTorch runs here (the kernels that
reproduce ATen's bits follow it)."""
import os
import subprocess
import sys

import pytest

from jitgrad.backends.cpu_capability import CAPABILITY, host_capability, vector_bytes

torch = pytest.importorskip("torch")

_AVX512 = {"avx512vl": True, "avx512bw": True, "avx512dq": True, "avx512f": True, "fma": True,
           "avx2": True}


def test_matches_pytorch_on_this_host():
    assert CAPABILITY == torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("env", ["default", "avx2", "avx512", "AVX512", "sse"])
def test_environment_variable_matches_pytorch(env):
    code = ("import torch, jitgrad.backends.cpu_capability as c;"
            "print(c.CAPABILITY, torch.backends.cpu.get_cpu_capability())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, ATEN_CPU_CAPABILITY=env)).stdout.split()
    assert out[0] == out[1]


@pytest.mark.parametrize("features, env, expected", [
    (_AVX512, "", "AVX512"),
    (_AVX512, "avx2", "AVX2"),
    (_AVX512, "default", "DEFAULT"),
    (dict(_AVX512, avx512dq=False), "", "AVX2"),   # AVX-512F without DQ: ATen's AVX2 build
    ({"avx2": True, "fma": True}, "", "AVX2"),
    ({"avx2": True, "fma": True}, "avx512", "AVX512"),  # ATen does not check the variable
    ({"avx2": True, "fma": True}, "AVX512", "AVX2"),    # ... but matches it exactly
    ({"avx2": True}, "", "DEFAULT"),                  # AVX2 without FMA3
    ({}, "", "DEFAULT"),
])
def test_rule(features, env, expected):
    assert host_capability(features, env) == expected


def test_vector_width():
    assert (vector_bytes("AVX512"), vector_bytes("AVX2"), vector_bytes("DEFAULT")) == (64, 32, 32)


def test_cached_kernels_are_keyed_by_the_capability():
    # lane counts frozen into a cached kernel follow the capability, and ATEN_CPU_CAPABILITY
    # changes it on the same host (same CPU features, Numba's own key): the stamp must differ
    code = "from jitgrad.codegen import kcache; print(kcache.package_fingerprint())"
    stamps = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=dict(os.environ, ATEN_CPU_CAPABILITY=env)
                             ).stdout.strip() for env in ("avx2", "avx512", "avx2")}
    assert len(stamps) == 2
