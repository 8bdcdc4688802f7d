"""jitgrad.distributed in one process: import cost, errors before init, PyTorch's names and
messages, a singleton world (a script started without mpiexec), DistributedSampler's order."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.distributed as dist

ROOT = Path(__file__).resolve().parents[2]


def run_python(code, env_extra=None, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("RANK", "WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL)


def test_importing_jitgrad_never_imports_mpi():
    r = run_python("import sys, jitgrad, jitgrad.distributed, jitgrad.nn.parallel, "
                   "jitgrad.utils.data; jitgrad.nn.parallel.DistributedDataParallel; "
                   "print('mpi4py' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_errors_before_init_match_pytorch():
    torch_dist = pytest.importorskip("torch.distributed")
    assert not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError) as ours:
            fn()
        with pytest.raises(ValueError) as theirs:
            getattr(torch_dist, fn.__name__)()
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="only the 'mpi' backend"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_reduce_op_names_match_pytorch():
    torch_dist = pytest.importorskip("torch.distributed")
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert repr(getattr(dist.ReduceOp, name)) == repr(getattr(torch_dist.ReduceOp, name))


@pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")
def test_singleton_world_without_a_launcher():
    code = """
import numpy as np, jitgrad as torch, jitgrad.distributed as dist, jitgrad.nn as nn
from datetime import timedelta
dist.init_process_group(backend="mpi", init_method="env://", timeout=timedelta(seconds=60))
assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (0, 1, True)
assert dist.get_backend() == "mpi"
assert dist.group.WORLD is not None and dist.get_world_size(dist.group.WORLD) == 1
try:
    dist.init_process_group("mpi")
except ValueError as e:
    assert str(e) == "trying to initialize the default process group twice!", e
else:
    raise AssertionError("second init")
t = torch.arange(6.).reshape(2, 3)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert t.tolist() == [[0., 1., 2.], [3., 4., 5.]]
torch.manual_seed(0)
m = nn.Linear(3, 2)
ddp = nn.parallel.DistributedDataParallel(m)
torch.manual_seed(0)
ref = nn.Linear(3, 2)
x = torch.randn(4, 3)
ddp(x).pow(2).sum().backward()
ref(x).pow(2).sum().backward()
assert np.allclose(m.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)
assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group("mpi")  # again after destroy
dist.destroy_process_group()
print("ok")
"""
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


@pytest.mark.skipif(not dist.is_available(), reason="mpi4py is not installed")
def test_env_variables_that_disagree_with_the_launcher_are_refused():
    r = run_python("import jitgrad.distributed as d; d.init_process_group('mpi', "
                   "init_method='env://')", env_extra={"RANK": "1", "WORLD_SIZE": "2"})
    assert r.returncode != 0
    assert "ValueError: rank=1 (from the arguments or the environment) disagrees with the MPI " \
           "launcher's rank=0" in r.stderr, r.stderr[-2000:]


def test_cpu_buffers_are_the_storage_itself():
    """A contiguous CPU tensor goes to MPI as its own NumPy storage (no copy); a strided view is
    staged in a contiguous copy and written back."""
    from jitgrad.distributed._buffers import Staged
    t = jt.arange(12.0).reshape(3, 4)
    assert Staged(t).buf is t._data
    part = t[1:]  # a contiguous view: still no copy, MPI writes into t's storage
    assert np.shares_memory(Staged(part).buf, t._data)
    view = t.t()
    staged = Staged(view)
    assert staged.buf.flags.c_contiguous and not np.shares_memory(staged.buf, t._data)
    staged.buf[...] = -1
    staged.write_back()
    assert (t.numpy() == -1).all()


# ------------------------------------------------------------------------ DistributedSampler

@pytest.mark.parametrize("n", [1, 7, 10, 12, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_distributed_sampler_matches_pytorch(n, replicas, shuffle, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    from jitgrad.utils.data import DistributedSampler
    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=shuffle,
                                  seed=42, drop_last=drop_last)
        theirs = TorchSampler(data, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=42,
                              drop_last=drop_last)
        assert len(ours) == len(theirs)
        for epoch in (0, 1, 5):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (rank, epoch)
    del torch


def test_distributed_sampler_errors():
    from jitgrad.utils.data import DistributedSampler
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=2)
    # PyTorch's order of checks: the package first, then the default group
    expected = (ValueError, "Default process group has not been initialized") \
        if dist.is_available() else (RuntimeError, "Requires distributed package")
    with pytest.raises(expected[0], match=expected[1]):
        DistributedSampler(list(range(4)))


def test_distributed_sampler_feeds_a_dataloader():
    from jitgrad.utils.data import DataLoader, DistributedSampler, TensorDataset
    ds = TensorDataset(jt.arange(10.0))
    seen = []
    for rank in range(3):
        s = DistributedSampler(ds, num_replicas=3, rank=rank, shuffle=False)
        seen += [v for (b,) in DataLoader(ds, batch_size=2, sampler=s) for v in b.tolist()]
    # every sample once, plus PyTorch's padding (the first indices again) to 12
    assert sorted(seen) == sorted(list(np.arange(10.0)) + [0.0, 1.0])
