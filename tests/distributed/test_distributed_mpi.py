"""Multi-process checks: ``mpiexec -n 2`` and ``-n 3`` run tests/distributed/mpi_cases.py.

Each launch is a subprocess with a hard timeout; the cases print ``PASS <case> rank r/n`` and a
failing rank aborts the job (non-zero exit, its traceback in the output). Skips only when mpi4py
is not installed (``pip install -e ".[distributed]"``).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import mpirun
import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install -e '.[distributed]'")

ROOT = mpirun.ROOT
CASES = Path(__file__).with_name("mpi_cases.py")

NORMAL = ["all_reduce_every_dtype", "all_reduce_refusals", "broadcast_gather_scatter",
          "send_recv_ring", "ddp_matches_one_process_on_the_global_batch",
          "ddp_float64_with_sampler_and_loader", "ddp_first_bucket_starts_before_backward_ends",
          "ddp_no_sync_accumulates", "ddp_find_unused_parameters"]


def launch(n, cases, timeout=600, env_extra=None):
    code, out, err, seconds = mpirun.run(n, [CASES, *cases], timeout, env_extra)
    if code is None:
        pytest.fail(f"mpiexec -n {n} {' '.join(cases)} hung for {timeout} s (killed):\n"
                    f"{out[-2000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess([], code, out, err), seconds


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
    # the others, waiting in all_reduce, got its notice and say why they stop
    assert re.search(rf"jitgrad.distributed.DistBackendError: \[rank \d\] all_reduce \(operation "
                     rf"#1 of this process group\) cannot complete: rank {n - 1} failed with "
                     rf"ValueError: deliberate failure on rank {n - 1}", out), out[-3000:]
    assert seconds < 60, seconds  # the job ends at once; nobody waits for a timeout


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
    code, out, err, _ = mpirun.run(2, [ROOT / "examples" / "train_mlp.py", "--distributed",
                                       "--epochs", "3", "--out", tmp_path], 420,
                                   {"MPLBACKEND": "Agg"})
    assert code is not None, "the distributed example hung"
    r = subprocess.CompletedProcess([], code, out, err)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert "2 processes x 32 samples per batch" in lines[0]
    assert [ln.split()[1] for ln in lines if ln.startswith("epoch")] == ["1/3", "2/3", "3/3"]
    assert len([ln for ln in r.stderr.splitlines() if ln.startswith("epoch")]) == 3  # rank 0
    assert float(lines[-1].split(":")[1]) > 0.85, lines[-1]
    assert (tmp_path / "curves.png").exists() and (tmp_path / "checkpoint.pt").exists()
