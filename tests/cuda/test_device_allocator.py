"""The caching device allocator (jitgrad/backends/cuda_alloc.py) under CUDA tensors: exact
memory_allocated with tensor lifetimes, reuse of freed blocks without a driver call, peaks,
empty_cache, the out-of-memory path, the statistics API against PyTorch's, and training loops
whose device memory does not grow (issue 15's leak checks).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_allocator.py

Driver calls are counted (and failures injected) by wrapping the allocator's driver adapter,
the one seam between the pool and numba-cuda. The size classes the tests expect are computed
here from PyTorch's constants (512-byte rounding up to 1 MiB, 2 MiB above), not read off the
allocator.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20


def expected_block(nbytes):
    if nbytes <= MiB:
        return max(512, (nbytes + 511) // 512 * 512)
    return (nbytes + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class CountingDriver:
    """Wraps the allocator's driver adapter: counts calls, fails the next ``fail`` mallocs."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = {"malloc": 0, "free": 0, "flush": 0, "synchronize": 0}
        self.fail = 0
        self.info = "inner"  # or what memory_info() answers: None or (free, total)

    def malloc(self, size):
        self.calls["malloc"] += 1
        if self.fail:
            self.fail -= 1
            from jitgrad.backends.cuda_alloc import DriverOutOfMemory
            raise DriverOutOfMemory("injected")
        return self.inner.malloc(size)

    def free(self, handle):
        self.calls["free"] += 1
        self.inner.free(handle)

    def flush(self):
        self.calls["flush"] += 1
        self.inner.flush()

    def synchronize(self):
        self.calls["synchronize"] += 1
        self.inner.synchronize()

    def memory_info(self):
        return self.inner.memory_info() if self.info == "inner" else self.info

    def __getattr__(self, name):  # lease, empty_array, stream_ordered
        return getattr(self.inner, name)


@pytest.fixture
def alloc(device, monkeypatch):
    """The process's allocator with a counting driver, its cache emptied first."""
    gc.collect()
    a = device.allocator()
    a.empty_cache()
    drv = CountingDriver(a.driver)
    monkeypatch.setattr(a, "driver", drv)
    a.drv = drv
    yield a
    gc.collect()


def allocated():
    return jg.cuda.memory_allocated()


def test_memory_allocated_follows_tensor_lifetimes(alloc):
    """A tensor adds its block's size; views share it; the block goes when the last view
    goes, in any order."""
    base = allocated()
    x = jg.empty(1000, device="cuda")  # 4000 bytes -> one 4096-byte block
    assert allocated() - base == expected_block(4000) == 4096
    assert jg.cuda.memory_stats()["requested_bytes.all.current"] >= 4000
    views = [x[10:20], x.view(10, 100), x.view(10, 100).t(), x.unsqueeze(0).expand(3, 1000),
             x[::2], x.detach(), x.reshape(20, 50)[3]]
    assert allocated() - base == 4096
    del x
    gc.collect()
    assert allocated() - base == 4096  # the views keep the storage
    while views:
        views.pop(0)
        assert allocated() - base == (4096 if views else 0)
    n = alloc.drv.calls["malloc"]
    nothing = jg.empty(0, 3, device="cuda")  # zero bytes take no block (PyTorch: nullptr)
    assert allocated() == base and alloc.drv.calls["malloc"] == n and nothing.shape == (0, 3)
    big = jg.empty(3 * MiB // 8 + 5, dtype=jg.float64, device="cuda")  # 3 MiB + 40 bytes
    assert allocated() - base == expected_block(3 * MiB + 40) == 4 * MiB
    del big
    assert allocated() == base


def test_results_of_ops_and_graphs_are_freed(alloc):
    """Forward results, saved tensors and gradients are released when the graph and tensors
    go: back to the starting point exactly."""
    base = allocated()
    a = jg.randn(8, 6, device="cuda", requires_grad=True)
    after_a = allocated()
    assert after_a - base == expected_block(8 * 6 * 4)
    loss = ((a * 2).sin() @ a.t()).sum()
    assert allocated() > after_a  # intermediates saved for backward
    loss.backward()
    del loss
    assert allocated() - base == 2 * expected_block(8 * 6 * 4)  # a and a.grad
    a.grad = None
    assert allocated() == after_a
    del a
    assert allocated() == base


def test_freed_block_is_reused_without_a_driver_call(alloc):
    x = jg.empty(1000, device="cuda")
    del x
    n = alloc.drv.calls["malloc"]
    y = jg.ones(900, device="cuda")  # 3600 bytes: the same 4096-byte class
    assert alloc.drv.calls["malloc"] == n
    np.testing.assert_array_equal(y.cpu().numpy(), np.ones(900, np.float32))
    z = jg.ones(2000, device="cuda")  # another class: the driver
    assert alloc.drv.calls["malloc"] == n + 1
    w = jg.ones(1000, device="cuda")  # same class as y, but y is alive: a new block
    assert alloc.drv.calls["malloc"] == n + 2
    assert y._data.buf is not w._data.buf
    del z, w
    u = jg.arange(1000.0, device="cuda")  # an upload reuses a cached block too
    assert alloc.drv.calls["malloc"] == n + 2
    np.testing.assert_array_equal(u.cpu().numpy(), np.arange(1000.0, dtype=np.float32))


def test_reused_block_holds_correct_results(alloc):
    """Results written into recycled blocks are right (a recycled block's old bytes never show
    through), over a few rounds of the same computation."""
    rng = np.random.default_rng(0)
    for _ in range(3):
        a, b = rng.standard_normal((2, 7, 5)).astype(np.float32)
        x, y = jg.tensor(a, device="cuda"), jg.tensor(b, device="cuda")
        np.testing.assert_allclose((x * y + x).exp().sum(0).cpu().numpy(),
                                   np.exp(a * b + a).sum(0), rtol=1e-5)


def test_peaks_and_reset(alloc):
    jg.cuda.reset_peak_memory_stats()
    base = allocated()
    assert jg.cuda.max_memory_allocated() == base
    big = jg.empty(1 << 20, device="cuda")  # 4 MiB
    small = jg.empty(10, device="cuda")
    peak = base + 4 * MiB + 512
    assert jg.cuda.max_memory_allocated() == peak
    del big
    assert allocated() == base + 512
    assert jg.cuda.max_memory_allocated() == peak  # peaks stay
    reserved = jg.cuda.memory_reserved()
    assert reserved >= base + 4 * MiB + 512  # the freed block is cached
    assert jg.cuda.max_memory_reserved() >= reserved
    jg.cuda.reset_peak_memory_stats()
    assert jg.cuda.max_memory_allocated() == allocated() == base + 512
    assert jg.cuda.max_memory_reserved() == jg.cuda.memory_reserved() == reserved
    stats = jg.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] == stats["allocated_bytes.all.current"]
    del small


def test_empty_cache_releases_unused_blocks_only(alloc):
    keep = jg.arange(300.0, device="cuda")
    drop = jg.ones(5000, device="cuda")
    del drop
    held = jg.cuda.memory_reserved()
    cached_bytes = held - allocated()
    assert cached_bytes >= expected_block(20000)
    frees = alloc.drv.calls["free"]
    jg.cuda.empty_cache()
    assert jg.cuda.memory_reserved() == allocated() == held - cached_bytes
    assert alloc.drv.calls["free"] > frees and alloc.drv.calls["flush"] >= 1
    assert alloc.cached_blocks() == 0
    np.testing.assert_array_equal(keep.cpu().numpy(), np.arange(300.0, dtype=np.float32))
    n = alloc.drv.calls["malloc"]
    jg.ones(5000, device="cuda")  # nothing cached any more: the driver again
    assert alloc.drv.calls["malloc"] == n + 1


def test_out_of_memory_empties_the_cache_and_retries_once(alloc):
    jg.ones(5000, device="cuda")  # freed at once: one cached block
    assert alloc.cached_blocks() >= 1
    stats = jg.cuda.memory_stats()
    alloc.drv.fail = 1
    x = jg.ones(3000, device="cuda")  # another class: driver fails, cache emptied, retry
    after = jg.cuda.memory_stats()
    assert after["num_alloc_retries"] == stats["num_alloc_retries"] + 1
    assert after["num_ooms"] == stats["num_ooms"]
    assert alloc.cached_blocks() == 0
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones(3000, np.float32))


def test_out_of_memory_error_in_pytorchs_words(alloc):
    assert issubclass(jg.OutOfMemoryError, RuntimeError)
    assert jg.cuda.OutOfMemoryError is jg.OutOfMemoryError
    keep = jg.empty(1000, device="cuda")  # 4096 bytes in use
    live = allocated()
    alloc.drv.fail = 2
    alloc.drv.info = None  # a driver that cannot tell its capacity (the simulator's)
    n_ooms = jg.cuda.memory_stats()["num_ooms"]
    with pytest.raises(jg.OutOfMemoryError) as e:
        jg.zeros(600_000, device="cuda")  # 2.4 MB -> a 4 MiB block
    # PyTorch: "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of
    # ... Of the allocated memory 14.51 GiB is allocated by PyTorch, and 15.90 MiB is reserved
    # by PyTorch but unallocated." Without a capacity that clause is left out.
    assert str(e.value) == (
        "CUDA out of memory. Tried to allocate 4.00 MiB. Of the allocated memory "
        f"{live / 1024:.2f} KiB is allocated by jitgrad, and 0 bytes is reserved by jitgrad "
        "but unallocated.")
    assert jg.cuda.memory_stats()["num_ooms"] == n_ooms + 1
    assert allocated() == live  # nothing leaked by the failed request
    alloc.drv.fail = 2
    alloc.drv.info = (3_600_000, 85_000_000_000)  # what a GPU reports: (free, total)
    with pytest.raises(RuntimeError, match=r"^CUDA out of memory\. Tried to allocate 1024 bytes\. "
                       r"GPU 0 has a total capacity of 79\.16 GiB of which 3\.43 MiB is free\. "
                       r"Of the allocated memory "):
        jg.empty(200, device="cuda")
    del keep


def test_format_size_is_pytorchs():
    from jitgrad.backends.cuda_alloc import format_size
    # format_size in c10/cuda/CUDACachingAllocator.cpp: <= 1024 bytes, <= 1 MiB KiB, ...
    cases = {0: "0 bytes", 1024: "1024 bytes", 1025: "1.00 KiB", MiB: "1024.00 KiB",
             MiB + 1: "1.00 MiB", 20 * MiB: "20.00 MiB", 1 << 30: "1024.00 MiB",
             (1 << 30) + 1: "1.00 GiB", int(14.51 * (1 << 30)): "14.51 GiB"}
    for n, s in cases.items():
        assert format_size(n) == s, n


def test_freed_blocks_wait_for_a_sync_when_streams_are_per_thread(device):
    """With per-thread default streams the pool may not reuse a block before the device
    finished with it: it syncs once on a miss, then reuses every pending block."""
    from jitgrad.backends.cuda_alloc import CachingAllocator
    drv = CountingDriver(device.allocator().driver.inner
                         if isinstance(device.allocator().driver, CountingDriver)
                         else device.allocator().driver)
    pool = CachingAllocator(drv, caching=True, stream_ordered=False)
    a = pool.empty((100,), np.float32)
    b = pool.empty((100,), np.float32)
    del a, b
    stats = pool.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["active_bytes.all.current"] == 1024  # freed, not yet safe to reuse
    c = pool.empty((128,), np.float32)
    assert drv.calls == {"malloc": 2, "free": 0, "flush": 0, "synchronize": 1}
    d = pool.empty((128,), np.float32)
    assert drv.calls["malloc"] == 2 and drv.calls["synchronize"] == 1
    assert pool.memory_stats()["num_sync_all_streams"] == 1
    del c, d


def test_caching_off_returns_blocks_at_once(device):
    from jitgrad.backends.cuda_alloc import CachingAllocator
    inner = device.allocator().driver
    drv = CountingDriver(getattr(inner, "inner", inner))
    pool = CachingAllocator(drv, caching=False)
    a = pool.empty((100,), np.float32)
    assert pool.memory_stats()["reserved_bytes.all.current"] == 512
    del a
    stats = pool.memory_stats()
    assert stats["reserved_bytes.all.current"] == stats["allocated_bytes.all.current"] == 0
    assert drv.calls["free"] == 1
    pool.empty((100,), np.float32)
    assert drv.calls["malloc"] == 2


@pytest.mark.parametrize("env", [{"JITGRAD_CUDA_CACHING_ALLOCATOR": "0"},
                                 {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
                                 {}])
def test_caching_switch_in_the_environment(device, env):
    code = ("import jitgrad as jg\n"
            "x = jg.ones(1000, device='cuda'); del x\n"
            "s = jg.cuda.memory_stats()\n"
            "print(s['reserved_bytes.all.current'], s['num_device_free'])\n")
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("JITGRAD_CUDA_CACHING_ALLOCATOR", "PYTORCH_NO_CUDA_MEMORY_CACHING")}
    full_env.update(env, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, "-c", code], env=full_env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (["4096", "0"] if not env else ["0", "1"])


def test_statistics_api_matches_pytorchs():
    torch = pytest.importorskip("torch")
    names = ("memory_allocated", "max_memory_allocated", "memory_reserved",
             "max_memory_reserved", "empty_cache", "reset_peak_memory_stats", "memory_stats",
             "reset_accumulated_memory_stats")
    import inspect
    for name in names:
        ours, theirs = getattr(jg.cuda, name), getattr(torch.cuda, name)
        assert list(inspect.signature(ours).parameters) == \
            list(inspect.signature(theirs).parameters), name


def test_statistics_keys_and_device_arguments(alloc):
    x = jg.ones(10, device="cuda")
    stats = jg.cuda.memory_stats()
    assert list(stats) == sorted(stats)
    for stat in ("allocated_bytes", "reserved_bytes", "allocation", "segment", "active",
                 "active_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for metric in ("current", "peak", "allocated", "freed"):
                assert f"{stat}.{pool}.{metric}" in stats
    for counter in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"):
        assert counter in stats
    s = stats
    assert s["allocated_bytes.all.current"] == (s["allocated_bytes.small_pool.current"]
                                                 + s["allocated_bytes.large_pool.current"])
    assert s["allocated_bytes.all.allocated"] - s["allocated_bytes.all.freed"] == \
        s["allocated_bytes.all.current"]
    for dev in (None, 0, "cuda", "cuda:0", jg.device("cuda", 0), jg.device("cuda")):
        assert jg.cuda.memory_allocated(dev) == allocated()
    # PyTorch's torch.cuda._utils._get_device_index / CUDACachingAllocator words
    with pytest.raises(ValueError, match="^Expected a cuda device, but got: cpu$"):
        jg.cuda.memory_allocated("cpu")
    with pytest.raises(ValueError, match="^Expected a cuda device, but got: cpu$"):
        jg.cuda.memory_stats(jg.device("cpu"))
    with pytest.raises(RuntimeError, match=r"^Invalid device argument 1: did you call init\?$"):
        jg.cuda.memory_reserved("cuda:1")
    del x


# ----------------------------------------------------------------------------- leak checks


def _train_mlp_example_steps(steps, measure):
    """The training step of examples/train_mlp.py (its model with dropout, CrossEntropyLoss,
    AdamW, the loss and accuracy read back each step) on cuda, at test size."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_mlp
    finally:
        sys.path.pop(0)
    jg.manual_seed(0)
    model = train_mlp.make_model(12, 8, 4).to("cuda")
    optimizer = jg.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    criterion = jg.nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 12)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    out = []
    for _ in range(steps):
        xb, yb = jg.tensor(X).to("cuda"), jg.tensor(y).to("cuda")
        optimizer.zero_grad()
        logits = model(xb)
        loss = criterion(logits, yb)
        loss.backward()
        optimizer.step()
        loss.item()
        int((logits.argmax(1) == yb).sum().item())
        del xb, yb, logits, loss
        out.append(measure())
    return out


def test_mlp_example_training_does_not_grow_device_memory(alloc):
    """memory_allocated after every step equals the first step's (parameters, gradients,
    AdamW state), and after two warm-up steps no step calls the driver: every block comes
    from the cache (issue 15's leak check, issue 12's "driver only when the pool is empty")."""
    seen = _train_mlp_example_steps(
        6, lambda: (allocated(), alloc.drv.calls["malloc"]))
    assert len({a for a, _ in seen}) == 1, seen
    assert len({m for _, m in seen[2:]}) == 1, seen


def test_double_backward_loop_does_not_grow_device_memory(alloc):
    """A gradient penalty (create_graph=True, backward through the gradient) each step."""
    w = jg.randn(5, 5, device="cuda", requires_grad=True)
    x = jg.randn(4, 5, device="cuda")
    opt = jg.optim.SGD([w], lr=0.01, momentum=0.9)
    seen = []
    for _ in range(4):
        opt.zero_grad()
        out = F.softplus(x @ w).sum()
        (g,) = jg.autograd.grad(out, w, create_graph=True)
        (out + (g * g).sum()).backward()
        opt.step()
        del out, g
        seen.append(allocated())
    assert len(set(seen)) == 1, seen


def test_cnn_training_does_not_grow_device_memory(alloc):
    """examples/train_cnn.py's layer kinds (Conv2d, BatchNorm2d with its running statistics
    updated in place, MaxPool2d, Linear) at test size, AdamW: memory_allocated after every
    step equals the first step's, and warm steps call the driver 0 times."""
    nn = jg.nn
    jg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2 * 2 * 2, 3)).to("cuda")
    opt = jg.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    x = jg.tensor(rng.standard_normal((2, 1, 4, 4)).astype(np.float32), device="cuda")
    y = jg.tensor(np.array([0, 2]), device="cuda")
    seen = []
    for _ in range(4):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        del loss
        seen.append((allocated(), alloc.drv.calls["malloc"]))
    assert len({a for a, _ in seen}) == 1, seen
    assert len({m for _, m in seen[2:]}) == 1, seen
