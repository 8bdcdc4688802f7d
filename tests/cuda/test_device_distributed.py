"""CUDA tensors in jitgrad.distributed, staged through host memory (what a non-CUDA-aware MPI
needs): ``mpiexec -n 2`` runs the ``cuda_tensors_staged_through_the_host`` case with the same
CUDA backend as this process (GPU, or the simulator in ``NUMBA_ENABLE_CUDASIM=1`` runs).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_distributed.py
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DIST_TESTS = Path(__file__).resolve().parents[1] / "distributed"


def _mpirun():
    spec = importlib.util.spec_from_file_location("mpirun", DIST_TESTS / "mpirun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collectives_and_ddp_on_cuda_tensors(device):
    pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install -e "
                        "'.[distributed]'")
    code, out, err, _ = _mpirun().run(
        2, [DIST_TESTS / "mpi_cases.py", "cuda_tensors_staged_through_the_host"], 540,
        {"JITGRAD_MPI_CUDA_AWARE": "0"})
    assert code is not None, "mpiexec hung (killed)"
    assert code == 0 and out.count("PASS cuda_tensors_staged_through_the_host") == 2, \
        (out[-2000:], err[-4000:])
