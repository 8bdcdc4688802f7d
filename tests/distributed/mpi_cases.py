"""Checks that run inside ``mpiexec -n N python tests/distributed/mpi_cases.py CASE...``.

Every rank runs each named case, then prints ``PASS <case> rank <r>/<n>``; a failing check
raises, and jitgrad.distributed's exit guard aborts the whole job (test_distributed_mpi.py
launches these and reads the output). References are NumPy (collectives) or a single process
training on the global batch inside the same rank (DDP).
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import jitgrad as torch  # noqa: E402
import jitgrad.distributed as dist  # noqa: E402
import jitgrad.nn as nn  # noqa: E402

CASES = {}
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def rank_world():
    return dist.get_rank(), dist.get_world_size()


def data(rank, dtype, shape, salt=0):
    """Rank ``rank``'s input: small integer values (exact in every dtype, no overflow in a
    product of 3) for integers, bools and float16; random normals for float32/float64."""
    rng = np.random.default_rng(1000 * rank + 17 * DTYPES.index(dtype) + salt)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("float32", "float64"):
        return rng.standard_normal(shape).astype(dtype)
    lo = 0 if dtype == "uint8" else -3
    return rng.integers(lo, 4, shape).astype(dtype)


def check(actual, expected, what, dtype):
    actual = np.asarray(actual)
    if dtype in ("float32", "float64"):
        tol = 1e-6 if dtype == "float32" else 1e-13
        ok = np.allclose(actual, expected, rtol=tol, atol=tol)
    else:
        ok = actual.dtype == np.dtype(dtype) and np.array_equal(actual, expected)
    if not ok:
        raise AssertionError(f"{what} [{dtype}]: got {actual!r}, expected {expected!r}")


NP_REDUCE = {"SUM": np.sum, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max}


def reference(op, stack, dtype):
    if dtype == "bool":
        fn = {"SUM": np.any, "MAX": np.any, "BOR": np.any, "PRODUCT": np.all, "MIN": np.all,
              "BAND": np.all, "BXOR": lambda a, axis: np.logical_xor.reduce(a, axis=axis)}[op]
        return fn(stack, axis=0)
    if op == "AVG":
        return stack.astype(np.float64).mean(0).astype(dtype)
    if op in ("BAND", "BOR", "BXOR"):
        fn = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op]
        return fn.reduce(stack, axis=0)
    return NP_REDUCE[op](stack, axis=0).astype(dtype)


def ops_for(dtype):
    if dtype == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    if dtype.startswith("float"):
        return ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]


@case
def all_reduce_every_dtype():
    r, w = rank_world()
    for dtype in DTYPES:
        for op in ops_for(dtype):
            shape = (3, 5)
            stack = np.stack([data(k, dtype, shape) for k in range(w)])
            t = torch.from_numpy(data(r, dtype, shape).copy())
            version = t._version
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            check(t.numpy(), reference(op, stack, dtype), f"all_reduce {op}", dtype)
            assert t._version > version, "all_reduce must count as an in-place write"
            # the same through async_op and a non-contiguous view (staged, written back)
            base = torch.from_numpy(np.ascontiguousarray(data(r, dtype, shape).T))
            view = base.t()
            work = dist.all_reduce(view, op=getattr(dist.ReduceOp, op), async_op=True)
            assert work.wait() is True and work.is_completed()
            check(base.t().numpy(), reference(op, stack, dtype), f"async strided {op}", dtype)
    # 0-d and empty tensors
    z = torch.tensor(float(r + 1))
    dist.all_reduce(z)
    assert z.item() == w * (w + 1) / 2, z
    e = torch.zeros(0, 4)
    dist.all_reduce(e)
    assert tuple(e.shape) == (0, 4)


@case
def all_reduce_refusals():
    for dtype, op in (("int64", "AVG"), ("float32", "BAND"), ("bool", "AVG")):
        t = torch.from_numpy(data(0, dtype, (2,)))
        try:
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        except RuntimeError:
            continue
        raise AssertionError(f"all_reduce {op} on {dtype} should raise")
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"


@case
def broadcast_gather_scatter():
    r, w = rank_world()
    for dtype in DTYPES:
        for src in range(w):
            t = torch.from_numpy(data(r, dtype, (4, 3), salt=1))
            dist.broadcast(t, src=src)
            check(t.numpy(), data(src, dtype, (4, 3), salt=1), f"broadcast from {src}", dtype)
        mine = torch.from_numpy(data(r, dtype, (2, 3), salt=2))
        outs = [torch.from_numpy(np.zeros((2, 3), dtype)) for _ in range(w)]
        dist.all_gather(outs, mine)
        for k in range(w):
            check(outs[k].numpy(), data(k, dtype, (2, 3), salt=2), f"all_gather[{k}]", dtype)
        big = torch.from_numpy(np.zeros((w * 2, 3), dtype))
        dist.all_gather_into_tensor(big, mine)
        check(big.numpy(), np.concatenate([data(k, dtype, (2, 3), salt=2) for k in range(w)]),
              "all_gather_into_tensor", dtype)
        op = "SUM" if dtype != "bool" else "BOR"
        inputs = [torch.from_numpy(data(r, dtype, (3,), salt=10 + j)) for j in range(w)]
        out = torch.from_numpy(np.zeros(3, dtype))
        dist.reduce_scatter(out, inputs, op=getattr(dist.ReduceOp, op))
        stack = np.stack([data(k, dtype, (3,), salt=10 + r) for k in range(w)])
        check(out.numpy(), reference(op, stack, dtype), "reduce_scatter", dtype)
        flat = torch.from_numpy(np.concatenate([data(r, dtype, (3,), salt=10 + j)
                                                for j in range(w)]))
        out2 = torch.from_numpy(np.zeros(3, dtype))
        dist.reduce_scatter_tensor(out2, flat, op=getattr(dist.ReduceOp, op))
        check(out2.numpy(), reference(op, stack, dtype), "reduce_scatter_tensor", dtype)


@case
def send_recv_ring():
    r, w = rank_world()
    for dtype in DTYPES:
        nxt, prev = (r + 1) % w, (r - 1) % w
        buf = torch.from_numpy(np.zeros((2, 2), dtype))
        if r % 2 == 0:
            dist.send(torch.from_numpy(data(r, dtype, (2, 2), salt=3)), nxt)
            src = dist.recv(buf, prev)
        else:
            src = dist.recv(buf)  # any source
            dist.send(torch.from_numpy(data(r, dtype, (2, 2), salt=3)), nxt)
        assert src == prev, (src, prev)
        check(buf.numpy(), data(prev, dtype, (2, 2), salt=3), "recv", dtype)
    got = torch.zeros(3)
    reqs = [dist.isend(torch.full((3,), float(r)), (r + 1) % w),
            dist.irecv(got, (r - 1) % w)]
    for q in reqs:
        q.wait()
    assert got.tolist() == [float((r - 1) % w)] * 3
    dist.barrier()


# ------------------------------------------------------------------------------------ DDP

def mlp(seed, dtype=None):
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(),
                      nn.Linear(32, 5))
    return m.to(dtype) if dtype is not None else m


def global_batches(steps, batch, seed=5):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 10)).astype(np.float32), rng.integers(0, 5, batch))
            for _ in range(steps)]


def flat_params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def same_on_every_rank(x: np.ndarray, what):
    r, w = rank_world()
    mine = torch.from_numpy(np.ascontiguousarray(x))
    outs = [torch.zeros_like(mine) for _ in range(w)]
    dist.all_gather(outs, mine)
    for k in range(w):
        if not np.array_equal(outs[k].numpy(), x):
            raise AssertionError(f"{what}: rank {k} differs from rank {r}")


@case
def ddp_matches_one_process_on_the_global_batch():
    r, w = rank_world()
    steps, per_rank = 6, 4
    batches = global_batches(steps, per_rank * w)
    # every rank starts from a different init: the wrapper must broadcast rank 0's
    model = mlp(seed=100 + r)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.004)
    assert len(ddp._buckets) > 1, "the test needs several buckets"
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
    single = mlp(seed=100)  # rank 0's init
    opt1 = torch.optim.AdamW(single.parameters(), lr=1e-2)
    for X, y in batches:
        xb, yb = torch.from_numpy(X), torch.from_numpy(y)
        mine = slice(r * per_rank, (r + 1) * per_rank)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(xb[mine]), yb[mine]).backward()
        opt.step()
        opt1.zero_grad()
        nn.functional.cross_entropy(single(xb), yb).backward()
        opt1.step()
    p, p1 = flat_params(model), flat_params(single)
    same_on_every_rank(p, "DDP parameters")
    err = np.abs(p - p1).max()
    assert np.allclose(p, p1, rtol=1e-5, atol=1e-5), f"DDP vs one process: max |diff| {err}"
    # and the gradients of the last step: the global batch's
    g = np.concatenate([q.grad.numpy().ravel() for q in model.parameters()])
    g1 = np.concatenate([q.grad.numpy().ravel() for q in single.parameters()])
    assert np.allclose(g, g1, rtol=1e-5, atol=1e-6), np.abs(g - g1).max()


@case
def ddp_float64_with_sampler_and_loader():
    """The example's pattern: DistributedSampler + DataLoader, float64, SGD with momentum."""
    from jitgrad.utils.data import DataLoader, DistributedSampler, TensorDataset
    r, w = rank_world()
    rng = np.random.default_rng(3)
    n = 6 * w * 3
    X = torch.from_numpy(rng.standard_normal((n, 10)))
    y = torch.from_numpy(rng.integers(0, 5, n))
    ds = TensorDataset(X, y)
    ddp = nn.parallel.DistributedDataParallel(mlp(7, torch.float64))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    single = mlp(7, torch.float64)
    opt1 = torch.optim.SGD(single.parameters(), lr=0.05, momentum=0.9)
    per_rank = 6
    for epoch in range(2):
        sampler = DistributedSampler(ds, shuffle=True, seed=11)
        sampler.set_epoch(epoch)
        loader = DataLoader(ds, batch_size=per_rank, sampler=sampler)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(11 + epoch)).tolist()
        for step, (xb, yb) in enumerate(loader):
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(xb), yb).backward()
            opt.step()
            # the global batch of this step: rank k's sampler indices step*6 .. step*6+5
            idx = [order[(step * per_rank + j) * w + k] for k in range(w)
                   for j in range(per_rank)]
            opt1.zero_grad()
            nn.functional.cross_entropy(single(X[idx]), y[idx]).backward()
            opt1.step()
    p, p1 = flat_params(ddp.module), flat_params(single)
    same_on_every_rank(p, "DDP parameters")
    assert np.allclose(p, p1, rtol=1e-11, atol=1e-12), np.abs(p - p1).max()


@case
def ddp_first_bucket_starts_before_backward_ends():
    r, w = rank_world()
    events = []
    model = mlp(0)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    assert len(ddp._buckets) >= 3, len(ddp._buckets)

    def logging_allreduce(state, bucket):
        events.append(("all_reduce started", bucket.index()))
        buf = bucket.buffer()
        buf.div_(w)
        return dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, logging_allreduce)
    x = torch.from_numpy(np.random.default_rng(r).standard_normal((4, 10)).astype(np.float32))
    x.requires_grad_(True)
    x.register_hook(lambda g: events.append(("input gradient", None)))
    nn.functional.cross_entropy(ddp(x), torch.tensor([0, 1, 2, 3])).backward()
    events.append(("backward returned", None))
    names = [e[0] for e in events]
    first = names.index("all_reduce started")
    assert events[first][1] == 0, events
    # the last layer's bucket went out while the earlier layers' backward still had to run
    assert first < names.index("input gradient") < names.index("backward returned"), events
    assert [e[1] for e in events if e[0] == "all_reduce started"] == \
        list(range(len(ddp._buckets))), events
    same_on_every_rank(np.concatenate([p.grad.numpy().ravel() for p in model.parameters()]),
                       "gradients after a comm hook")
    # the built-in path (no hook) starts bucket 0 at the same point
    plain = nn.parallel.DistributedDataParallel(mlp(0), bucket_cap_mb=0.0001)
    started = []
    x2 = x.detach().requires_grad_(True)
    x2.register_hook(lambda g: started.append([b.future is not None for b in plain._buckets]))
    nn.functional.cross_entropy(plain(x2), torch.tensor([0, 1, 2, 3])).backward()
    assert started and started[0][0] and not all(started[0]), started


@case
def ddp_no_sync_accumulates():
    r, w = rank_world()
    rng = np.random.default_rng(9)
    Xs = [torch.from_numpy(rng.standard_normal((w, 3, 10)).astype(np.float32)) for _ in range(2)]
    ys = [torch.from_numpy(rng.integers(0, 5, (w, 3))) for _ in range(2)]
    ddp = nn.parallel.DistributedDataParallel(mlp(1))
    with ddp.no_sync():
        nn.functional.cross_entropy(ddp(Xs[0][r]), ys[0][r]).backward()
    local = np.concatenate([p.grad.numpy().ravel() for p in ddp.parameters()])
    nn.functional.cross_entropy(ddp(Xs[1][r]), ys[1][r]).backward()
    synced = np.concatenate([p.grad.numpy().ravel() for p in ddp.parameters()])
    # references: every rank's two micro-batches on a local replica
    expected_local, expected = None, 0
    for k in range(w):
        rep = mlp(1)
        for i in range(2):
            nn.functional.cross_entropy(rep(Xs[i][k]), ys[i][k]).backward()
            if i == 0 and k == r:
                expected_local = np.concatenate([p.grad.numpy().ravel()
                                                 for p in rep.parameters()])
        expected = expected + np.concatenate([p.grad.numpy().ravel()
                                              for p in rep.parameters()]) / w
    assert np.allclose(local, expected_local, rtol=1e-6, atol=1e-7), "no_sync must not reduce"
    assert np.allclose(synced, expected, rtol=1e-5, atol=1e-6), np.abs(synced - expected).max()


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.trunk = nn.Linear(6, 6)
        self.rank0_only = nn.Linear(6, 6)
        self.never = nn.Linear(6, 6)

    def forward(self, x, use_branch):
        h = self.trunk(x)
        return self.rank0_only(h) if use_branch else h


@case
def ddp_find_unused_parameters():
    r, w = rank_world()
    x = torch.from_numpy(np.random.default_rng(r).standard_normal((2, 6)).astype(np.float32))
    ddp = nn.parallel.DistributedDataParallel(Branchy(), find_unused_parameters=True)
    ddp(x, use_branch=(r == 0)).sum().backward()
    m = ddp.module
    assert m.never.weight.grad is None, "a parameter no rank used keeps grad None"
    g = m.rank0_only.weight.grad.numpy()
    same_on_every_rank(g, "the branch used by rank 0 only")
    # its gradient is rank 0's divided by the world size
    ref = Branchy()
    x0 = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32))
    ref(x0, True).sum().backward()
    assert np.allclose(g, ref.rank0_only.weight.grad.numpy() / w, rtol=1e-6, atol=1e-7)
    # without find_unused_parameters, the next forward says what went wrong
    strict = nn.parallel.DistributedDataParallel(Branchy())
    strict(x, use_branch=False).sum().backward()
    try:
        strict(x, use_branch=False)
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
    else:
        raise AssertionError("the unfinished reduction was not reported")


@case
def cuda_tensors_staged_through_the_host():
    """CUDA tensors without a CUDA-aware MPI (JITGRAD_MPI_CUDA_AWARE=0): copied to the host,
    reduced, copied back into the device storage (views included); DDP on a CUDA model."""
    r, w = rank_world()
    for dtype in ("float32", "int64", "bool"):
        op = "SUM" if dtype != "bool" else "BOR"
        stack = np.stack([data(k, dtype, (3, 4)) for k in range(w)])
        t = torch.from_numpy(data(r, dtype, (3, 4))).to("cuda")
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        assert t.is_cuda
        check(t.cpu().numpy(), reference(op, stack, dtype), "cuda all_reduce", dtype)
        base = torch.from_numpy(np.ascontiguousarray(data(r, dtype, (3, 4)).T)).to("cuda")
        dist.all_reduce(base.t(), op=getattr(dist.ReduceOp, op), async_op=True).wait()
        check(base.t().cpu().numpy(), reference(op, stack, dtype), "cuda view", dtype)
        b = torch.from_numpy(data(r, dtype, (5,), salt=1)).to("cuda")
        dist.broadcast(b, src=w - 1)
        check(b.cpu().numpy(), data(w - 1, dtype, (5,), salt=1), "cuda broadcast", dtype)
        outs = [torch.from_numpy(np.zeros(2, dtype)).to("cuda") for _ in range(w)]
        dist.all_gather(outs, torch.from_numpy(data(r, dtype, (2,), salt=2)).to("cuda"))
        for k in range(w):
            check(outs[k].cpu().numpy(), data(k, dtype, (2,), salt=2), "cuda all_gather", dtype)
        inputs = [torch.from_numpy(data(r, dtype, (3,), salt=10 + j)).to("cuda")
                  for j in range(w)]
        out = torch.from_numpy(np.zeros(3, dtype)).to("cuda")
        dist.reduce_scatter(out, inputs, op=getattr(dist.ReduceOp, op))
        stack = np.stack([data(k, dtype, (3,), salt=10 + r) for k in range(w)])
        check(out.cpu().numpy(), reference(op, stack, dtype), "cuda reduce_scatter", dtype)
    t = torch.from_numpy(data(r, "float32", (4,))).to("cuda")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    avg = np.stack([data(k, "float32", (4,)) for k in range(w)]).mean(0)
    assert np.allclose(t.cpu().numpy(), avg, rtol=1e-6, atol=1e-6)
    # DDP on the device: the averaged gradients of a tiny model equal the CPU computation
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    dev_model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to("cuda")
    ddp = nn.parallel.DistributedDataParallel(dev_model)
    xs = np.random.default_rng(1).standard_normal((w, 2, 3)).astype(np.float32)
    ddp(torch.from_numpy(xs[r]).to("cuda")).pow(2).sum().backward()
    cpu_model(torch.from_numpy(xs.reshape(-1, 3))).pow(2).sum().div(w).backward()
    for p_dev, p_cpu in zip(dev_model.parameters(), cpu_model.parameters()):
        assert p_dev.grad.is_cuda
        assert np.allclose(p_dev.grad.cpu().numpy(), p_cpu.grad.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------- failure modes

@case
def fail_raise_on_last_rank():
    r, w = rank_world()
    if r == w - 1:
        raise ValueError(f"deliberate failure on rank {r}")
    dist.all_reduce(torch.ones(3))  # would wait forever for the failed rank


@case
def fail_timeout_when_a_rank_skips_a_collective():
    r, w = rank_world()
    if r == w - 1:
        time.sleep(8)  # alive but never joins: no launcher sees a failure
        return
    dist.all_reduce(torch.ones(3))


def main(names):
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(CASES)}")
    # generous: a cold kernel cache on a busy machine makes ranks arrive far apart
    timeout = float(os.environ.get("JITGRAD_TEST_DIST_TIMEOUT", "300"))
    dist.init_process_group("mpi", timeout=timedelta(seconds=timeout))
    r, w = rank_world()
    for name in names:
        CASES[name]()
        dist.barrier()
        print(f"PASS {name} rank {r}/{w}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
