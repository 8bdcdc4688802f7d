"""Where the host time of jitgrad's GPU workloads goes: cProfile over warm runs of rows of
``gpu_table.py`` (the same builders, ``_gpu_workloads.py``), the top functions by own time and
by cumulative time, and the launches per run. Needs an NVIDIA GPU::

    python benchmarks/gpu_profile.py [--only elementwise MLP] [--runs 50] [--out DIR]

Each row's report goes to ``DIR/profile_<n>.txt`` when ``--out`` is given (else stdout only the
summary). Host-side profiles are what matter here: a launch-bound step's time is its Python
work; the device's own time is what ``gpu_table.py`` measures around it.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import _gpu_workloads as W
else:
    from . import _gpu_workloads as W


def profile_row(label, build, kwargs, runs, lines):
    from jitgrad.backends import cuda as B
    w = build("jitgrad", **kwargs)
    for _ in range(3):
        w.fn()
    W.synchronize("jitgrad")
    launches0 = B.stats.launches
    t0 = time.perf_counter()
    for _ in range(runs):
        w.fn()
    W.synchronize("jitgrad")
    per_run = (time.perf_counter() - t0) / runs
    launches = (B.stats.launches - launches0) / runs
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(runs):
        w.fn()
    W.synchronize("jitgrad")
    pr.disable()
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    st.sort_stats("tottime").print_stats(lines)
    st.sort_stats("cumulative").print_stats(lines)
    head = (f"{label}: {per_run * 1e6:.0f} us per run unprofiled, {launches:.1f} launches per "
            f"run ({per_run * 1e6 / max(launches, 1):.1f} us per launch)")
    return head, buf.getvalue()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*",
                   default=["elementwise op", "MLP 784", "one CUDA graph", "scalar ops"])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--lines", type=int, default=35)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    try:
        W.gpu_lib("jitgrad")
    except NotImplementedError as e:
        print(f"gpu_profile.py needs an NVIDIA GPU: {e}", file=sys.stderr)
        return 2
    n = 0
    for label, build, kwargs, impls, _ in W.ROWS:
        if "jitgrad" not in impls or not any(o.lower() in label.lower() for o in args.only):
            continue
        head, text = profile_row(label, build, kwargs, args.runs, args.lines)
        print(head, flush=True)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, f"profile_{n}.txt"), "w") as f:
                f.write(head + "\n\n" + text)
        n += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
