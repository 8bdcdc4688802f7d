"""The CUDA backend's host-side contract: no numba.cuda on ``import jitgrad``, rendering,
cache keys, PTX line filtering, device queries. None of these needs a device."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_import_jitgrad_does_not_import_numba_cuda():
    code = ("import sys, jitgrad, jitgrad.backends.cuda, jitgrad.codegen.cuda\n"
            "import jitgrad.backends.cuda as b\n"
            "b.installed(); b.target() if False else None\n"
            "assert 'numba.cuda' not in sys.modules, 'numba.cuda imported'\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_render_cuda_is_a_grid_stride_kernel():
    from jitgrad.codegen.cuda import render_cuda
    from jitgrad.ops import elementwise  # noqa: F401
    from jitgrad.ops.elementwise_call import _forward_spec, _vjp_spec
    from jitgrad.ops.registry import OPS
    src = render_cuda(_forward_spec(OPS["mul"], ("a", "s")))
    assert "for i in range(cuda.grid(1), n, cuda.gridsize(1)):" in src
    assert "def kernel_py(n, in_a, b, out_out):" in src
    assert "@device_jit\ndef mul__f(a, b):" in src
    assert "kernel = kernel_jit(kernel_py, cache=False)" in src
    # a VJP spec computing both gradients in one kernel
    src = render_cuda(_vjp_spec(OPS["div"], (True, True), {"a": "a", "b": "a", "g": "a",
                                                           "out": "a"}), cache=True)
    assert "d_a = div__da(g, b)" in src and "d_b = div__db(g, a, b)" in src
    assert "out_d_a[i] = d_a" in src and "cache=True" in src
    compile(src, "<cuda kernel>", "exec")


def test_f64_filter_ignores_comments_and_allows_only_libdevice_trig():
    from jitgrad.backends import cuda as backend
    ptx = "\n".join([
        "// .f64 in a comment does not count",
        "\tadd.f32 \t%f3, %f1, %f2; // mentions .f64",
        "\t.reg .f64 \t%fd<3>;",
        "\tcvt.rn.f64.s64 \t%fd1, %rd47;",
        "\tmul.f64 \t%fd2, %fd1, 0d3BF921FB54442D19;",
        "\tcvt.rn.f32.f64 \t%f21, %fd2;",
    ])
    assert len(backend.f64_instructions(ptx)) == 4
    assert backend.f64_instructions(ptx, allow_trig_reduction=True) == []
    other = ptx + "\n\tmul.f64 \t%fd3, %fd1, 0d3FE0000000000000;"
    assert backend.f64_instructions(other, allow_trig_reduction=True) == [
        "mul.f64 \t%fd3, %fd1, 0d3FE0000000000000;"]


def test_cache_target_names_the_architecture(cuda_state):
    installed, sim, gpu = cuda_state
    if not installed:
        pytest.skip("numba-cuda is not installed")
    from jitgrad.backends import cuda as backend
    from jitgrad.codegen import kcache
    t = backend.target()
    if sim:
        assert t == "cudasim"
    else:
        cc = backend.compute_capability()
        assert t == f"cuda-sm{cc[0]}{cc[1]}"
        if not gpu:
            assert cc == backend.DEFAULT_CC
    assert kcache.key_of("x", "cuda-sm80") != kcache.key_of("x", "cuda-sm90")


def test_device_queries_are_consistent(cuda_state):
    installed, sim, gpu = cuda_state
    from jitgrad.backends import cuda as backend
    assert backend.is_available() == (sim or gpu)
    assert (backend.device_count() > 0) == backend.is_available()
    if not backend.is_available():
        with pytest.raises(RuntimeError, match="NVIDIA driver"):
            backend.empty(3, np.float32)


def test_signature_of_matches_launch_argument_types(cuda_state):
    if not cuda_state[0]:
        pytest.skip("numba-cuda is not installed")
    from jitgrad.backends import cuda as backend
    sig = backend.signature_of((np.int64(3), np.zeros(2, np.float32), np.float32(1), (1, 2), 4))
    assert [str(t) for t in sig] == ["int64", "array(float32, 1d, C)", "float32",
                                     "UniTuple(int64 x 2)", "int64"]


@pytest.mark.gpu
def test_real_gpu_compiles_for_its_own_architecture(cuda_state):
    """On hardware: the detected compute capability is the cache target, and a disk-cached
    kernel compiles and runs (the rest of tests/cuda then runs on the GPU as well)."""
    installed, sim, gpu = cuda_state
    if not gpu:
        pytest.skip("needs a real CUDA GPU")
    from jitgrad.backends import cuda as backend
    from jitgrad.ops import elementwise  # noqa: F401
    from jitgrad.ops.elementwise_call import _forward_spec
    from jitgrad.ops.registry import OPS
    cc = backend.compute_capability()
    assert backend.target() == f"cuda-sm{cc[0]}{cc[1]}"
    mod = backend.module_for(("gpu-smoke",), lambda: _forward_spec(OPS["tanh"], ("a",)))
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    out = backend.empty(x.size, np.float32)
    backend.launch(mod, x.size, [backend.to_device(x), out])
    np.testing.assert_allclose(backend.to_host(out), np.tanh(x), rtol=2e-6, atol=1e-7)
