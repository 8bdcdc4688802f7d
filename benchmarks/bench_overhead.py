"""Framework overhead and compile time.

* ``ScalarGraph100``: forward + backward of a 100-op graph on 0-d tensors (per-node cost).
* ``SmallOpOverhead``: 100 calls of one eager op (sum, view, x[0], cat, a+b) on 16 elements.
* ``FirstTrainingStep``: the first training step of a small MLP (Linear, ReLU, cross-entropy,
  backward, SGD) in a fresh process, with an empty kernel cache (cold: compiles) and with a
  populated one (warm: loads machine code from disk); both ``JITGRAD_CACHE_DIR`` and
  ``NUMBA_CACHE_DIR`` point into the cache folder under test. Reported in seconds (``track_``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

from ._common import IMPLS, arrays, lib_for

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scalar_chain(x, n_ops=100):
    for _ in range(n_ops // 4):
        x = x * 1.01
        x = x + 0.5
        x = x.tanh() if hasattr(x, "tanh") else np.tanh(x)
        x = x - 0.25
    return x


def scalar_step(x):
    """Forward + backward of the 100-op chain: the function ``jitgrad.compile`` replays."""
    y = scalar_chain(x)
    y.backward()
    return y


class ScalarGraph100:
    """``compiled``: the same forward + backward under ``jitgrad.compile`` (issue 16's target:
    at most 0.25x PyTorch eager)."""

    params = [IMPLS + ["compiled"]]
    param_names = ["impl"]
    timeout = 120

    def setup(self, impl):
        self.lib = lib_for("jitgrad" if impl == "compiled" else impl)
        if self.lib is not None:
            self.x = self.lib.tensor(0.3, requires_grad=True)
        if impl == "compiled":
            self.compiled = self.lib.compile(scalar_step)
            self.time_forward_backward(impl)  # records; the call below compiles the kernels
        self.time_forward_backward(impl)

    def time_forward_backward(self, impl):
        if impl == "compiled":
            self.x.grad = None
            return self.compiled(self.x)
        if self.lib is None:
            # NumPy: the forward on 0-d arrays plus the hand-written chain rule
            x = np.float64(0.3)
            ys = []
            for _ in range(25):
                x = np.tanh((x * 1.01) + 0.5)
                ys.append(x)
                x = x - 0.25
            g = np.float64(1.0)
            for y in reversed(ys):
                g = g * (1 - y * y) * 1.01
            return g
        self.x.grad = None
        scalar_chain(self.x).backward()


class SmallOpOverhead:
    """One eager op on a 16-element float32 tensor (framework cost, not arithmetic): the
    non-elementwise ops whose per-call Python overhead ``side_by_side_overhead`` reports."""

    params = [["jitgrad", "torch"], ["sum", "view", "x[0]", "cat", "a+b"], [False, True]]
    param_names = ["impl", "op", "requires_grad"]

    def setup(self, impl, op, requires_grad):
        lib = lib_for(impl)
        a_np, b_np = arrays(16, 16)
        a = lib.tensor(a_np, requires_grad=requires_grad)
        b = lib.tensor(b_np, requires_grad=requires_grad)
        self.fn = {"sum": lambda: a.sum(), "view": lambda: a.view(-1, 1), "x[0]": lambda: a[0],
                   "cat": lambda: lib.cat([a, b]), "a+b": lambda: a + b}[op]
        self.fn()

    def time_op(self, impl, op, requires_grad):
        fn = self.fn
        for _ in range(100):
            fn()


_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    t0 = time.perf_counter()
    import {lib} as torch
    t1 = time.perf_counter()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(16, 64)
    y = torch.randint(0, 10, (16,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    t2 = time.perf_counter()
    print(t2 - t1, t1 - t0)
""")


def first_step_seconds(lib, cache_dir):
    env = dict(os.environ)
    env["JITGRAD_CACHE_DIR"] = cache_dir
    # Numba's own cache (the optimizer and RNG kernels, cache=True) goes there too, so that
    # "cold" compiles everything jitgrad needs for the step
    env["NUMBA_CACHE_DIR"] = os.path.join(cache_dir, "numba")
    out = subprocess.run([sys.executable, "-c", _CHILD.format(root=_ROOT, lib=lib)],
                         capture_output=True, text=True, env=env, timeout=600, check=True)
    return float(out.stdout.split()[0])


class FirstTrainingStep:
    """Seconds for the first training step in a fresh process (import excluded)."""

    unit = "seconds"
    timeout = 600

    def setup_cache(self):
        # asv runs this once, in a scratch directory kept for the benchmarks that use it
        warm = os.path.abspath("jitgrad-cache-warm")
        os.makedirs(warm, exist_ok=True)
        first_step_seconds("jitgrad", warm)  # populate the kernel cache
        return warm

    def track_jitgrad_cold_cache(self, warm_dir):
        d = tempfile.mkdtemp(prefix="jitgrad-bench-cold-")
        try:
            return first_step_seconds("jitgrad", d)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def track_jitgrad_warm_cache(self, warm_dir):
        return first_step_seconds("jitgrad", warm_dir)

    def track_torch(self, warm_dir):
        lib_for("torch")
        return first_step_seconds("torch", warm_dir)
