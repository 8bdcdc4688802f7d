"""tests/cuda: the CUDA backend, checked without a GPU in two independent ways.

* **PTX** tests (``test_cuda_ptx.py``) compile every kernel with ``numba.cuda.compile_ptx`` for sm_80
  and sm_90. They need numba-cuda and the ``nvidia-cuda-nvrtc`` / ``nvidia-nvvm`` wheels, no
  device, and the *real* numba.cuda target: they run in the main ``python -m pytest`` process
  and skip (with the reason) under the simulator.
* **Device** tests (the ``device`` fixture) launch kernels and compare with the CPU kernels /
  NumPy. They need a GPU or the CUDA simulator, which numba.cuda only honours when
  ``NUMBA_ENABLE_CUDASIM=1`` is in the environment *before numba.cuda is first imported*: run
  them in their own process::

      NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda

  Without a GPU and without that variable they skip with a reason (so the main run skips them).
  On a machine with a GPU, ``python -m pytest tests/cuda`` runs them on the hardware.

The simulator is deliberately *not* switched on here automatically: the main pytest process
shares this conftest with the CPU suite and runs the PTX tests, which the simulator would
disable (its ``numba.cuda`` cannot compile). Nothing here imports numba.cuda at collection
time; fixtures import it on first use, after the environment was read.
"""
from __future__ import annotations

import collections
import os
import sys
import time

import pytest

SIM_REQUESTED = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
RUN_HINT = "NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda"

# What the run compiled and how long the device tests took (printed in the summary).
PTX_COUNT: collections.Counter = collections.Counter()
DEVICE_TIME = {"seconds": 0.0, "tests": 0}


def _numba_cuda_state():
    """(installed, simulator active, real GPU), importing numba.cuda if it is installed."""
    from jitgrad.backends import cuda as backend
    if not backend.installed():
        return False, False, False
    if "numba.cuda" in sys.modules:
        from jitgrad.backends.cuda_env import SIMULATOR
        if SIMULATOR != SIM_REQUESTED:
            pytest.exit("numba.cuda was imported before NUMBA_ENABLE_CUDASIM took effect; run "
                        f"the simulator suite in its own process: {RUN_HINT}", returncode=4)
    return True, backend.simulator_active(), backend.has_gpu()


@pytest.fixture(scope="session")
def cuda_state():
    state = _numba_cuda_state()
    if state[1]:
        # the simulator's device arrays answer like a GPU's (flags a dict, no NumPy API), so
        # code that only works on the simulator fails here too (tests/cuda/hardware_like.py)
        from hardware_like import install
        install()
    return state


@pytest.fixture
def device(cuda_state, request):
    """The array-level CUDA backend, for tests that launch kernels (GPU or simulator)."""
    installed, sim, gpu = cuda_state
    if not installed:
        pytest.skip("numba-cuda is not installed (pip install -e '.[cuda-test]')")
    if not (sim or gpu):
        pytest.skip(f"no CUDA GPU and the simulator is off: run {RUN_HINT}")
    from jitgrad.backends import cuda as backend
    t0 = time.perf_counter()
    yield backend
    DEVICE_TIME["seconds"] += time.perf_counter() - t0
    DEVICE_TIME["tests"] += 1
    # a bad index a kernel flagged and nobody synchronized on: the test's own bug (or a false
    # alarm of the device-side checks), not the next test's
    bounds = sys.modules.get("jitgrad.backends.cuda_kernels.bounds")
    err = bounds.pending() if bounds is not None else None
    if err is not None:
        bounds.flag()[:] = 0
        pytest.fail(f"a device-side index error was left pending: {type(err).__name__}: {err}")


def _nvvm_available() -> bool:
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
        return True
    except Exception:  # noqa: BLE001 - any failure to load NVVM means "cannot compile"
        return False


@pytest.fixture(scope="session")
def ptx_backend(cuda_state):
    installed, sim, _ = cuda_state
    if not installed:
        pytest.skip("numba-cuda is not installed (pip install -e '.[cuda-test]')")
    if sim:
        pytest.skip("the CUDA simulator is active: PTX is compiled in the main (non-simulator) "
                    "run, python -m pytest tests/cuda without NUMBA_ENABLE_CUDASIM")
    if not _nvvm_available():
        pytest.skip("NVVM not found: pip install nvidia-cuda-nvrtc nvidia-nvvm")
    from jitgrad.backends import cuda as backend
    return backend


@pytest.fixture(scope="session")
def compile_ptx(ptx_backend):
    """``compile_ptx(pyfunc, sig, cc) -> ptx``, counted per target for the summary."""
    def run(pyfunc, sig, cc):
        ptx = ptx_backend.compile_ptx(pyfunc, sig, cc=cc)
        PTX_COUNT[f"sm_{cc[0]}{cc[1]}"] += 1
        assert f".target sm_{cc[0]}{cc[1]}" in ptx
        return ptx
    return run


def pytest_terminal_summary(terminalreporter):
    if PTX_COUNT:
        per = ", ".join(f"{k}: {v}" for k, v in sorted(PTX_COUNT.items()))
        terminalreporter.write_line(f"jitgrad cuda: kernels compiled to PTX: {per} "
                                    f"(total {sum(PTX_COUNT.values())})")
    if DEVICE_TIME["tests"]:
        terminalreporter.write_line(
            f"jitgrad cuda: {DEVICE_TIME['tests']} device tests "
            f"({'simulator' if SIM_REQUESTED else 'GPU'}) in {DEVICE_TIME['seconds']:.1f} s")
