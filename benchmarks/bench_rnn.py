"""One training step of a 2-layer LSTM or GRU (input 32, hidden 64, sequence 50, batch 16):
forward, a mean-square loss, backward, SGD update; jitgrad vs PyTorch eager, float32 and float64.

PyTorch's float32 LSTM on the CPU runs oneDNN's fused RNN, one node per layer, and so does
jitgrad's with MKL (``nn/modules/lstm_fused.py``); their float64 LSTM and GRU (both dtypes) run
the plain per-op path (``nn/modules/rnn_stack.py``, with the gate arithmetic of a step fused by
``ops/elementwise_rnn.py``: two ops for the LSTM, one for the GRU).
Run as a script for one line per model and library::

    OMP_NUM_THREADS=1 python benchmarks/bench_rnn.py
"""
from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks._common import lib_for
else:
    from ._common import lib_for

INPUT, HIDDEN, LAYERS, SEQ, BATCH = 32, 64, 2, 50, 16


def make_step(impl, dtype_name, seed=0, cls="LSTM"):
    """A zero-argument callable running one training step of an ``nn.<cls>`` ("LSTM"/"GRU")."""
    lib = lib_for(impl)
    lib.manual_seed(seed)
    dt = getattr(lib, dtype_name)
    model = getattr(lib.nn, cls)(INPUT, HIDDEN, num_layers=LAYERS, dtype=dt)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.randn(SEQ, BATCH, INPUT, dtype=dt)

    def step():
        opt.zero_grad()
        out, _ = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def _timed(step, n=3):
    t = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t) / n


class LSTMTrainingStep:
    params = [["jitgrad", "torch"], ["float32", "float64"]]
    param_names = ["impl", "dtype"]
    timeout = 300
    cls = "LSTM"

    def setup(self, impl, dtype):
        self.step = make_step(impl, dtype, cls=self.cls)
        self.step()  # compiles (jitgrad) / warms up

    def time_step(self, impl, dtype):
        self.step()


class GRUTrainingStep(LSTMTrainingStep):
    cls = "GRU"


if __name__ == "__main__":
    for cls in ("LSTM", "GRU"):
        for impl in ("jitgrad", "torch"):
            for dtype in ("float32", "float64"):
                step = make_step(impl, dtype, cls=cls)
                for _ in range(3):
                    step()
                best = min(_timed(step) for _ in range(5))
                print(f"{cls:4s} {impl:8s} {dtype}: {best * 1e3:.1f} ms")
