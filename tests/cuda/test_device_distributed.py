"""CUDA tensors in jitgrad.distributed, staged through host memory (what a non-CUDA-aware MPI
needs): ``mpiexec -n 2`` runs the ``cuda_tensors_staged_through_the_host`` case with the same
CUDA backend as this process (GPU, or the simulator in ``NUMBA_ENABLE_CUDASIM=1`` runs).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_distributed.py
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_collectives_and_ddp_on_cuda_tensors(device):
    pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install -e "
                        "'.[distributed]'")
    here = Path(sys.executable).parent / "mpiexec"
    launcher = str(here) if here.exists() else shutil.which("mpiexec")
    assert launcher, "mpi4py is installed but no mpiexec was found"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               JITGRAD_MPI_CUDA_AWARE="0", NUMBA_NUM_THREADS="1")
    r = subprocess.run([launcher, "-n", "2", sys.executable,
                        str(ROOT / "tests" / "distributed" / "mpi_cases.py"),
                        "cuda_tensors_staged_through_the_host"], capture_output=True, text=True,
                       timeout=540, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL)
    passed = r.stdout.count("PASS cuda_tensors_staged_through_the_host")
    assert r.returncode == 0 and passed == 2, (r.stdout[-2000:], r.stderr[-4000:])
