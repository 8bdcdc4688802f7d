"""All-reduce bandwidth: ``jitgrad.distributed.all_reduce`` vs mpi4py's own ``Allreduce`` on the
same buffers (the tensor's storage), synchronous and ``async_op=True`` + ``wait()`` (the
worker-thread path DDP uses), 1-256 MB of float32, run under MPI (asv runs one process,
so this is a script)::

    mpiexec -n 2 python benchmarks/dist_allreduce.py [--reps 20] [--sizes 1,4,16,64,256]

The two are interleaved rep by rep (a barrier before each op) and the median time is reported,
with the algorithm bandwidth (bytes / time) and the bus bandwidth (x 2(n-1)/n, what each link
carries in a ring all-reduce). Target: jitgrad within 10% of mpi4py.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--sizes", default="1,4,16,64,256", help="MB, comma-separated")
    args = p.parse_args(argv)

    import jitgrad as torch
    import jitgrad.distributed as dist
    dist.init_process_group("mpi")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"all-reduce (SUM, float32), {world} processes, median of {args.reps}; "
              f"{MPI.Get_library_version().splitlines()[0].strip()}")
        print(f"{'MB':>5} {'mpi4py ms':>10} {'jitgrad ms':>11} {'ratio':>6} {'async ms':>9} "
              f"{'ratio':>6} {'mpi4py GB/s':>12} {'jitgrad GB/s':>13} {'bus GB/s':>9}")
    for mb in (float(s) for s in args.sizes.split(",")):
        n = int(mb * 1024 * 1024) // 4
        t = torch.zeros(n)  # zeros: the sums stay finite over any number of reps
        arr = t.numpy()  # the same storage, for mpi4py
        times = {"mpi4py": [], "jitgrad": [], "async": []}
        impls = list(times)
        for rep in range(args.reps + 2):
            for impl in impls[rep % 3:] + impls[:rep % 3]:  # rotate who goes first
                comm.Barrier()
                t0 = time.perf_counter()
                if impl == "mpi4py":
                    comm.Allreduce(MPI.IN_PLACE, arr, op=MPI.SUM)
                elif impl == "jitgrad":
                    dist.all_reduce(t)
                else:
                    dist.all_reduce(t, async_op=True).wait()
                dt = time.perf_counter() - t0
                if rep >= 2:  # two warm-up reps
                    times[impl].append(dt)
        # the slowest rank decides an all-reduce's time
        med = {k: comm.allreduce(float(np.median(v)), op=MPI.MAX) for k, v in times.items()}
        if rank == 0:
            nbytes = n * 4
            bw = {k: nbytes / v / 1e9 for k, v in med.items()}
            bus = bw["jitgrad"] * 2 * (world - 1) / world
            print(f"{mb:>5g} {med['mpi4py'] * 1e3:>10.3f} {med['jitgrad'] * 1e3:>11.3f} "
                  f"{med['jitgrad'] / med['mpi4py']:>6.3f} {med['async'] * 1e3:>9.3f} "
                  f"{med['async'] / med['mpi4py']:>6.3f} {bw['mpi4py']:>12.2f} "
                  f"{bw['jitgrad']:>13.2f} {bus:>9.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
