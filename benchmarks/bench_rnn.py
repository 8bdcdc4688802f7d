"""One training step of a 2-layer LSTM, GRU or tanh RNN (input 32, hidden 64, sequence 50,
batch 16): forward, a mean-square loss, backward, SGD update; jitgrad vs PyTorch eager, float32
and float64.

PyTorch's float32 LSTM on the CPU runs oneDNN's fused RNN, one node per layer, and so does
jitgrad's with MKL (``nn/modules/lstm_fused.py``); PyTorch runs its float64 LSTM and its GRU/RNN
op by op, jitgrad runs each layer-direction as one compiled forward and one compiled backward
(``lstm_fused.py`` in float64, ``rnn_fused.py``). Run as a script for a side-by-side table
(interleaved rounds, medians of forward, backward and the whole step, one thread)::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_rnn.py [--per-op]

``--per-op`` routes jitgrad to the per-op layers (``rnn_stack.py``), the path before the fused
kernels, for a before/after comparison.

``--cells``: instead, a hand-written 50-step loop over ``nn.LSTMCell``/``GRUCell``/``RNNCell``
(same sizes, the steps' outputs stacked into the loss), per-step forward and backward times of
jitgrad's fused cells (``nn/modules/rnn_cells_fused.py``), of its per-op cells and of PyTorch,
interleaved in one process (``CellLoop`` is the asv form)::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_rnn.py --cells
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


def _model_and_input(impl, dtype_name, seed, cls):
    lib = lib_for(impl)
    lib.manual_seed(seed)
    dt = getattr(lib, dtype_name)
    model = getattr(lib.nn, cls)(INPUT, HIDDEN, num_layers=LAYERS, dtype=dt)
    return lib, model, lib.randn(SEQ, BATCH, INPUT, dtype=dt)


def make_step(impl, dtype_name, seed=0, cls="LSTM"):
    """A zero-argument callable running one training step of an ``nn.<cls>`` ("LSTM"/"GRU"/
    "RNN")."""
    lib, model, x = _model_and_input(impl, dtype_name, seed, cls)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        out, _ = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def make_phases(impl, dtype_name, seed=0, cls="LSTM"):
    """(forward, backward) callables: ``forward()`` builds the loss, ``backward(loss)``
    differentiates it (parameter gradients zeroed first)."""
    lib, model, x = _model_and_input(impl, dtype_name, seed, cls)
    params = list(model.parameters())

    def forward():
        out, _ = model(x)
        return out.pow(2).mean()

    def backward(loss):
        for p in params:
            p.grad = None
        loss.backward()
    return forward, backward


class LSTMTrainingStep:
    params = [["jitgrad", "torch"], ["float32", "float64"]]
    param_names = ["impl", "dtype"]
    timeout = 300
    cls = "LSTM"

    def setup(self, impl, dtype):
        self.step = make_step(impl, dtype, cls=self.cls)
        self.step()  # compiles (jitgrad) / warms up
        self.forward, self.backward = make_phases(impl, dtype, cls=self.cls)
        self.backward(self.forward())

    def time_step(self, impl, dtype):
        self.step()

    def time_forward(self, impl, dtype):
        self.forward()


class GRUTrainingStep(LSTMTrainingStep):
    cls = "GRU"


class RNNTrainingStep(LSTMTrainingStep):
    cls = "RNN"


def make_cell_phases(impl, dtype_name, seed=0, cls="LSTMCell"):
    """(forward, backward) of a SEQ-step loop over an ``nn.<cls>`` cell (batch BATCH, input
    INPUT, hidden HIDDEN): ``forward()`` runs the loop and builds the loss from the stacked
    outputs (each step's h), ``backward(loss)`` differentiates it."""
    lib = lib_for(impl)
    lib.manual_seed(seed)
    dt = getattr(lib, dtype_name)
    cell = getattr(lib.nn, cls)(INPUT, HIDDEN, dtype=dt)
    steps = lib.randn(SEQ, BATCH, INPUT, dtype=dt).unbind(0)
    params = list(cell.parameters())
    lstm = cls == "LSTMCell"

    def forward():
        h = lib.zeros(BATCH, HIDDEN, dtype=dt)
        hidden = (h, h) if lstm else h
        outs = []
        for x in steps:
            hidden = cell(x, hidden)
            outs.append(hidden[0] if lstm else hidden)
        return lib.stack(outs).pow(2).mean()

    def backward(loss):
        for p in params:
            p.grad = None
        loss.backward()
    return forward, backward


class CellLoop:
    params = [["jitgrad", "torch"], ["float32", "float64"], ["LSTMCell", "GRUCell", "RNNCell"]]
    param_names = ["impl", "dtype", "cell"]
    timeout = 300

    def setup(self, impl, dtype, cell):
        self.forward, self.backward = make_cell_phases(impl, dtype, cls=cell)
        self.backward(self.forward())  # compiles (jitgrad) / warms up

    def time_forward_backward(self, impl, dtype, cell):
        self.backward(self.forward())

    def time_forward(self, impl, dtype, cell):
        self.forward()


def _per_op_cells(fn):
    """``fn`` run with jitgrad's cells routed to the per-op path (the state before
    ``rnn_cells_fused.py``); what it records keeps its nodes, so only forwards need it."""
    from jitgrad.nn.modules import rnn_cells_fused

    def run(*args):
        real = rnn_cells_fused.usable
        rnn_cells_fused.usable = lambda *a: False
        try:
            return fn(*args)
        finally:
            rnn_cells_fused.usable = real
    return run


def cells_side_by_side(cases, rounds=9):
    """Interleaved rounds of jitgrad (fused cells), jitgrad (per-op cells) and PyTorch; per
    case the medians (microseconds per time step) of forward and backward."""
    import torch

    import jitgrad
    torch.set_num_threads(1)
    jitgrad.set_num_threads(1)
    rows = []
    for cls, dtype in cases:
        runs = {}
        for name, impl in (("fused", "jitgrad"), ("per-op", "jitgrad"), ("torch", "torch")):
            fwd, bwd = make_cell_phases(impl, dtype, cls=cls)
            if name == "per-op":
                fwd = _per_op_cells(fwd)
            for _ in range(2):
                bwd(fwd())
            runs[name] = (fwd, bwd, {"forward": [], "backward": []})
        for _ in range(rounds):
            for fwd, bwd, times in runs.values():
                t0 = time.perf_counter()
                loss = fwd()
                t1 = time.perf_counter()
                bwd(loss)
                t2 = time.perf_counter()
                times["forward"].append(t1 - t0)
                times["backward"].append(t2 - t1)
        rows.append((cls, dtype, {name: {k: _median(v) * 1e6 / SEQ for k, v in r[2].items()}
                                  for name, r in runs.items()}))
    return rows


def _per_op():
    """Route jitgrad's recurrent layers to the per-op path (the state before the fused
    float64 LSTM / GRU / RNN kernels; float32 LSTMs keep their oneDNN-like layer)."""
    from jitgrad.nn.modules import lstm_fused, rnn_fused
    real = lstm_fused.usable
    lstm_fused.usable = lambda input, *a: input.dtype.name == "float32" and real(input, *a)
    rnn_fused.usable = lambda *a: False


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def side_by_side(cases, rounds=7, reps=3):
    """Interleaved rounds of jitgrad and PyTorch; medians (ms) of forward, backward, step."""
    import torch

    import jitgrad
    torch.set_num_threads(1)
    jitgrad.set_num_threads(1)  # Numba's kernels and MKL's GEMMs
    rows = []
    for cls, dtype in cases:
        runs = {}
        for impl in ("jitgrad", "torch"):
            step = make_step(impl, dtype, cls=cls)
            fwd, bwd = make_phases(impl, dtype, cls=cls)
            for _ in range(2):
                step()
                bwd(fwd())
            runs[impl] = (step, fwd, bwd, {"forward": [], "backward": [], "step": []})
        for _ in range(rounds):
            for impl in ("jitgrad", "torch"):
                step, fwd, bwd, times = runs[impl]
                f = b = 0.0
                for _ in range(reps):
                    t0 = time.perf_counter()
                    loss = fwd()
                    t1 = time.perf_counter()
                    bwd(loss)
                    t2 = time.perf_counter()
                    f, b = f + t1 - t0, b + t2 - t1
                times["forward"].append(f / reps)
                times["backward"].append(b / reps)
                times["step"].append(_timed(step, reps))
        rows.append((cls, dtype, {impl: {k: _median(v) * 1e3 for k, v in runs[impl][3].items()}
                                  for impl in runs}))
    return rows


def _timed(step, n=3):
    t = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t) / n


def _print_cells():
    cases = [(c, d) for d in ("float32", "float64") for c in ("LSTMCell", "GRUCell", "RNNCell")]
    print(f"{'cell':8s} {'dtype':8s} {'phase':9s} {'fused us':>9s} {'per-op us':>9s} "
          f"{'torch us':>9s} {'fused/torch':>11s} {'per-op/torch':>12s}")
    for cls, dtype, t in cells_side_by_side(cases):
        for phase in ("forward", "backward"):
            f, p, r = t["fused"][phase], t["per-op"][phase], t["torch"][phase]
            print(f"{cls:8s} {dtype:8s} {phase:9s} {f:9.1f} {p:9.1f} {r:9.1f} {f / r:11.2f} "
                  f"{p / r:12.2f}")


if __name__ == "__main__" and "--cells" in sys.argv:
    _print_cells()
elif __name__ == "__main__":
    if "--per-op" in sys.argv:
        _per_op()
    CASES = [("LSTM", "float32"), ("LSTM", "float64"), ("GRU", "float32"), ("GRU", "float64"),
             ("RNN", "float32"), ("RNN", "float64")]
    print(f"{'model':5s} {'dtype':8s} {'phase':9s} {'jitgrad ms':>10s} {'torch ms':>9s} "
          f"{'ratio':>6s}")
    for cls, dtype, t in side_by_side(CASES):
        for phase in ("forward", "backward", "step"):
            j, p = t["jitgrad"][phase], t["torch"][phase]
            print(f"{cls:5s} {dtype:8s} {phase:9s} {j:10.2f} {p:9.2f} {j / p:6.2f}")
