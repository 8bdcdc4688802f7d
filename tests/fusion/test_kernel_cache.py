"""The kernel cache across processes: miss then hit, damaged entries, racing writers, switches."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from jitgrad.codegen import kcache

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import json, os, sys, time, warnings
    warnings.simplefilter("always")
    import numpy as np
    import jitgrad
    from jitgrad.autograd import profile
    start_at = float(os.environ.get("START_AT", "0"))
    import numba  # noqa: F401 - pay the import before the barrier
    while time.time() < start_at:
        time.sleep(0.001)
    x = jitgrad.tensor(np.linspace(-1, 1, 33), requires_grad=True)
    a = jitgrad.tensor(np.linspace(0.5, 2, 33), requires_grad=True)
    y = jitgrad.tanh(jitgrad.sin(x) * a + 1.25) * jitgrad.exp(a * 0.125)
    t0 = time.perf_counter()
    with profile() as p:
        y.backward(jitgrad.ones(33, dtype=jitgrad.float64))
    dt = time.perf_counter() - t0
    print(json.dumps({"p": p.as_dict(), "gx": x.grad.numpy().tolist(),
                      "ga": a.grad.numpy().tolist(), "seconds": dt}))
""")


def run_child(cache_dir, *, extra_env=None, start_at=None):
    env = dict(os.environ, PYTHONPATH=REPO, JITGRAD_CACHE_DIR=str(cache_dir))
    env.pop("JITGRAD_DISABLE_DISK_CACHE", None)
    env.pop("JITGRAD_FUSION", None)
    if start_at is not None:
        env["START_AT"] = repr(start_at)
    env.update(extra_env or {})
    return subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def child(cache_dir, **kw):
    return result(run_child(cache_dir, **kw))


def test_miss_in_first_process_hit_in_second(tmp_path):
    first, _ = child(tmp_path)
    assert first["p"]["fused_groups"] == 1
    assert first["p"]["cache_misses"] == 1 and first["p"]["cache_hits"] == 0
    assert glob.glob(str(tmp_path / "jg_*.py"))
    second, err = child(tmp_path)
    assert second["p"]["cache_misses"] == 0 and second["p"]["cache_hits"] == 1
    assert second["gx"] == first["gx"] and second["ga"] == first["ga"]
    assert "RuntimeWarning" not in err


def _damage(paths, how):
    assert paths
    for p in paths:
        if how == "truncate":
            with open(p, "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(data[: len(data) // 3])
        else:
            with open(p, "wb") as f:
                f.write(b"\x80\x04garbage that is not a pickle\x00\xff" * 3)


@pytest.mark.parametrize("what", ["py", "nbi", "nbc"])
@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_damaged_entry_is_deleted_and_rebuilt(tmp_path, what, how):
    first, _ = child(tmp_path)
    pattern = {"py": "jg_*.py", "nbi": "__pycache__/jg_*.nbi", "nbc": "__pycache__/jg_*.nbc"}
    _damage(glob.glob(str(tmp_path / pattern[what])), how)
    second, err = child(tmp_path)
    assert "RuntimeWarning" in err and "jitgrad: kernel cache entry" in err
    assert second["gx"] == first["gx"] and second["ga"] == first["ga"]
    assert second["p"]["corrupt_entries"] >= 1 or what == "py"
    # the rebuilt entries are good: a third process loads everything without a warning
    third, err3 = child(tmp_path)
    assert "RuntimeWarning" not in err3
    assert third["p"]["cache_misses"] == 0 and third["p"]["cache_hits"] == 1
    assert third["gx"] == first["gx"]


def test_two_processes_racing_both_succeed(tmp_path):
    start_at = time.time() + 4.0
    procs = [run_child(tmp_path, start_at=start_at) for _ in range(2)]
    (r1, e1), (r2, e2) = [result(p) for p in procs]
    assert r1["gx"] == r2["gx"] and r1["ga"] == r2["ga"]
    assert "Traceback" not in e1 + e2
    third, err = child(tmp_path)
    assert third["p"]["cache_misses"] == 0
    assert third["gx"] == r1["gx"]
    assert "RuntimeWarning" not in err


def test_disable_disk_cache(tmp_path):
    cache = tmp_path / "cache"
    r, _ = child(cache, extra_env={"JITGRAD_DISABLE_DISK_CACHE": "1"})
    assert r["p"]["fused_groups"] == 1 and r["p"]["cache_misses"] == 1
    assert not cache.exists() or not any(cache.iterdir())


def test_default_cache_dir_under_user_cache(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO, XDG_CACHE_HOME=str(tmp_path))
    env.pop("JITGRAD_CACHE_DIR", None)
    env.pop("JITGRAD_DISABLE_DISK_CACHE", None)
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(tmp_path / "jitgrad" / "jg_*.py"))


def test_warm_process_is_faster_to_first_backward(tmp_path):
    cold, _ = child(tmp_path)
    warm, _ = child(tmp_path)
    assert warm["p"]["compile_seconds"] < cold["p"]["compile_seconds"]


def test_key_covers_source_target_and_abi(monkeypatch):
    k = kcache.key_of("x = 1\n", "cpu")
    assert k == kcache.key_of("x = 1\n", "cpu")
    assert k != kcache.key_of("x = 2\n", "cpu")
    assert k != kcache.key_of("x = 1\n", "cuda")
    monkeypatch.setattr(kcache, "ABI", kcache.ABI + 1)
    assert k != kcache.key_of("x = 1\n", "cpu")
