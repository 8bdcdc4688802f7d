"""The hardware check in one go: ``python -m jitgrad.utils.gpu_check --out DIR``.

On a machine with an NVIDIA GPU (issue 11) it

1. records the versions that matter (driver, GPU name and compute capability, Python, NumPy,
   numba, numba-cuda, PyTorch) in ``DIR/versions.json`` and prints them;
2. runs the whole ``tests/cuda`` suite on the GPU (``pytest -n auto`` when pytest-xdist is
   installed; the PTX tests run too, the ``gpu``-marked ones are included) — log in
   ``DIR/tests_cuda.log``, JUnit XML in ``DIR/tests_cuda.xml``;
3. trains ``examples/train_mlp.py`` with ``--device cuda`` and with ``--device cpu`` (same seed)
   and compares the final test accuracies — logs in ``DIR/example_{cuda,cpu}.log``;
4. writes ``DIR/summary.txt`` (the pytest summary line, both accuracies, pass/fail per step)
   and exits non-zero when a step failed.

Run it from a source checkout (it needs ``tests/`` and ``examples/``); ``tools/gpu_check.sh`` is
the same with ``--out "${OUT:-gpu_check_out}"``. Without a GPU it stops after step 1 with a clear
message (``--allow-no-gpu`` runs the rest anyway: the simulator's or PTX runs are CI's job).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["versions", "main"]

ROOT = Path(__file__).resolve().parents[2]


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001 - not installed
        return None


def versions() -> dict:
    """Versions and device facts (no kernel is compiled)."""
    import numpy as np
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "numpy": np.__version__, "numba": _dist_version("numba"),
            "numba-cuda": _dist_version("numba-cuda"), "torch": _dist_version("torch"),
            "cuda-bindings": _dist_version("cuda-bindings"),
            "numpy_has_row_stack": "row_stack" in np.__dict__,
            "NUMBA_ENABLE_CUDASIM": os.environ.get("NUMBA_ENABLE_CUDASIM", "")}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=60)
        info["nvidia-smi"] = out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        info["nvidia-smi"] = f"unavailable ({e.__class__.__name__})"
    from ..backends import cuda as B
    info["gpu"] = None
    if B.installed() and B.has_gpu():
        cu = B._cuda()
        dev = cu.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        info["gpu"] = {"name": name, "compute_capability": list(dev.compute_capability),
                       "count": len(cu.gpus)}
        try:
            from numba.cuda.cudadrv import driver
            info["cuda_driver_api"] = ".".join(str(v) for v in driver.driver.get_version())
        except Exception as e:  # noqa: BLE001
            info["cuda_driver_api"] = f"unknown ({e})"
    return info


def _run(cmd, log: Path, timeout: int, env=None) -> tuple:
    t0 = time.perf_counter()
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.perf_counter() - t0


def _tail_match(log: Path, pattern: str):
    hits = re.findall(pattern, log.read_text(errors="replace"), flags=re.M)
    return hits[-1] if hits else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="gpu_check_out", help="folder for logs and the summary")
    p.add_argument("--workers", default="auto", help="pytest-xdist workers (-n), or 0 for none")
    p.add_argument("--tests", default="tests/cuda", help="what pytest runs")
    p.add_argument("--epochs", type=int, default=20, help="train_mlp.py epochs")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per step")
    p.add_argument("--skip-tests", action="store_true")
    p.add_argument("--skip-example", action="store_true")
    p.add_argument("--allow-no-gpu", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}

    info = versions()
    (out / "versions.json").write_text(json.dumps(info, indent=2) + "\n")
    lines = ["versions: " + json.dumps(info)]
    print(lines[0], flush=True)
    if info["gpu"] is None and not args.allow_no_gpu:
        msg = ("no CUDA GPU found (numba-cuda installed: "
               f"{info['numba-cuda'] is not None}); nothing to check on hardware")
        print(msg)
        (out / "summary.txt").write_text("\n".join(lines + [msg]) + "\n")
        return 2
    ok = True

    if not args.skip_tests:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", args.tests,
               f"--junitxml={out / 'tests_cuda.xml'}"]
        if args.workers not in ("0", "") and importlib.util.find_spec("xdist") is not None:
            cmd += ["-n", args.workers]
        rc, dt = _run(cmd, out / "tests_cuda.log", args.timeout, env)
        summary = _tail_match(out / "tests_cuda.log", r"^=*\s*(\d+ (?:passed|failed).*?)\s*=*$")
        lines.append(f"tests: rc={rc} in {dt:.0f} s: {summary}")
        ok &= rc == 0

    if not args.skip_example:
        acc = {}
        for dev in ("cuda", "cpu"):
            log = out / f"example_{dev}.log"
            rc, dt = _run([sys.executable, "examples/train_mlp.py", "--device", dev,
                           "--no-progress", "--epochs", str(args.epochs),
                           "--out", str(out / f"example_{dev}")], log, args.timeout, env)
            a = _tail_match(log, r"^test accuracy: ([0-9.]+)")
            acc[dev] = float(a) if a is not None else None
            lines.append(f"example --device {dev}: rc={rc} in {dt:.0f} s, test accuracy {a}")
            ok &= rc == 0 and a is not None
        if None not in acc.values():
            # float32 training: the two devices sum in different orders; allow one test image
            same = abs(acc["cuda"] - acc["cpu"]) <= 0.01
            lines.append(f"example accuracy cuda vs cpu: {acc['cuda']:.3f} vs {acc['cpu']:.3f} "
                         f"({'ok' if same else 'DIFFERENT'})")
            ok &= same

    lines.append("gpu_check: " + ("PASSED" if ok else "FAILED"))
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[1:]), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
