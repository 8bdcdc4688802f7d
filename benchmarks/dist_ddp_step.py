"""The MLP training step (bench_mlp's 784-512-512-10, global batch 256, SGD) data-parallel:
``DistributedDataParallel`` on N processes x T threads vs one process, the same global batch.
A script, since asv runs one process::

    mpiexec -n 2 python benchmarks/dist_ddp_step.py --threads 1     # 2 processes x 1 thread
    python benchmarks/dist_ddp_step.py --threads 2                  # 1 process x 2 threads

Under MPI it times two DDP configurations, interleaved: the default buckets (the first bucket's
all-reduce overlaps the rest of the backward) and one bucket holding every gradient (its
all-reduce starts after the whole backward: no overlap). Median step time over ``--reps``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SIZES = (784, 512, 512, 10)
BATCH = 256


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1, help="threads per process (set before "
                   "Numba/MKL load)")
    p.add_argument("--reps", type=int, default=40)
    args = p.parse_args(argv)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import jitgrad as torch
    import jitgrad.distributed as dist
    nn = torch.nn
    distributed = "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ
    rank, world = 0, 1
    if distributed:
        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    per = BATCH // world
    xt, yt = torch.from_numpy(X[rank * per:(rank + 1) * per]), torch.from_numpy(
        y[rank * per:(rank + 1) * per])

    def make(bucket_cap_mb):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(),
                              nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                              nn.Linear(SIZES[2], SIZES[3]))
        net = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb) \
            if distributed else model
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss_fn(net(xt), yt).backward()
            opt.step()
        return step, net

    configs = {"default buckets": make(None)}
    if distributed:
        configs["one bucket (no overlap)"] = make(1000)
        n_buckets = len(configs["default buckets"][1]._buckets)
    times = {k: [] for k in configs}
    names = list(configs)
    for rep in range(args.reps + 3):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            if distributed:
                dist.barrier()
            t0 = time.perf_counter()
            configs[name][0]()
            dt = time.perf_counter() - t0
            if rep >= 3:
                times[name].append(dt)
    med = {k: float(np.median(v)) for k, v in times.items()}
    if distributed:
        from mpi4py import MPI
        med = {k: MPI.COMM_WORLD.allreduce(v, op=MPI.MAX) for k, v in med.items()}
    if rank == 0:
        what = f"{world} processes x {args.threads} thread(s), DDP ({n_buckets} buckets by " \
            "default)" if distributed else f"1 process x {args.threads} thread(s), no DDP"
        print(f"MLP {'-'.join(map(str, SIZES))}, global batch {BATCH}, {what}; median of "
              f"{args.reps}")
        for k, v in med.items():
            print(f"  {k:<26} {v * 1e3:8.2f} ms/step")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
