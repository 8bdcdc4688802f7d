"""The GPU workloads of issue 12's table, built the same way for jitgrad and PyTorch (and CuPy /
raw numba-cuda where the table names them), on device ``cuda``. Shared by the asv suite
(``bench_gpu.py``) and the one-run table (``gpu_table.py``). Importing this module imports
neither jitgrad's CUDA backend nor PyTorch; building a workload without a usable GPU raises
``NotImplementedError`` (asv's skip) with the reason.

A workload is ``fn`` (one run: forward, or forward + backward + optimizer step), ``inner``
(runs per timed sample: a sample is ``inner`` calls between two device synchronizations, so
launch-bound workloads are timed as a stream of calls, as a user's loop runs them), and
``result`` (what to compare across libraries after the first run: the same inputs and initial
weights go to every library).
"""
from __future__ import annotations

import os
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks._common import torch_or_skip
    from benchmarks.bench_fusion import arith, chain, scalar_graph
else:
    from ._common import torch_or_skip
    from .bench_fusion import arith, chain, scalar_graph

DEVICE = "cuda"
M = 1 << 20
cuda = None  # numba.cuda, set by raw_numba_launch


class Workload:
    __slots__ = ("fn", "inner", "result")

    def __init__(self, fn, inner=1, result=None):
        self.fn, self.inner, self.result = fn, inner, result


def gpu_lib(impl):
    """The library for ``impl`` on a real GPU, or NotImplementedError saying why not."""
    if impl == "jitgrad":
        if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
            raise NotImplementedError("NUMBA_ENABLE_CUDASIM is set: the CUDA simulator's "
                                      "timings mean nothing")
        import jitgrad
        from jitgrad.backends import cuda as backend
        if not backend.has_gpu():
            raise NotImplementedError("no CUDA GPU: jitgrad's CUDA backend (numba-cuda) found "
                                      "no usable device")
        return jitgrad
    if impl == "torch":
        torch = torch_or_skip()
        if not torch.cuda.is_available():
            raise NotImplementedError("PyTorch sees no CUDA GPU (a CPU-only build, or no "
                                      "device)")
        return torch
    if impl == "cupy":
        try:
            import cupy
        except ImportError:
            raise NotImplementedError("cupy is not installed") from None
        return cupy
    if impl == "numba":
        gpu_lib("jitgrad")
        from jitgrad.backends.numba_cuda_compat import import_numba_cuda
        return import_numba_cuda()
    raise ValueError(impl)


def synchronize(impl) -> None:
    if impl == "jitgrad":
        import jitgrad
        jitgrad.cuda.synchronize()
    elif impl == "torch":
        import torch
        torch.cuda.synchronize()
    elif impl == "cupy":
        import cupy
        cupy.cuda.Device().synchronize()
    elif impl == "numba":
        from jitgrad.backends.numba_cuda_compat import import_numba_cuda
        import_numba_cuda().synchronize()


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t.get())


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _upload(lib, a, requires_grad=False):
    return lib.tensor(a, device=DEVICE, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- workloads


def elementwise(impl, n=M, record=False):
    """``x * y`` on ``n`` float32 elements; ``record``: x requires grad (a node is recorded)."""
    lib = gpu_lib(impl)
    a, b = _arrays(n, n)
    x, y = _upload(lib, a, requires_grad=record), _upload(lib, b)
    out = []

    def fn():
        out[:] = [x * y]

    return Workload(fn, inner=100, result=lambda: _host(out[0]))


def raw_numba_launch(impl="numba", n=M):
    """A numba.cuda dispatcher launch of a grid-stride multiply over ``n`` elements (preallocated
    device arrays): the floor for what a jitgrad op pays in numba's launch path."""
    global cuda  # a global in the kernel body, as numba-cuda (and its simulator) expect
    cuda = gpu_lib("numba")  # numba.cuda through jitgrad's import (its NumPy-2.5 workaround)

    @cuda.jit
    def mul(x, y, out):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = x[i] * y[i]

    from jitgrad.backends.cuda import launch_config
    a, b = _arrays(n, n)
    x, y = cuda.to_device(a), cuda.to_device(b)
    out = cuda.device_array_like(x)
    blocks, threads = launch_config(n)  # jitgrad's geometry for a flat kernel

    def fn():
        mul[blocks, threads](x, y, out)

    return Workload(fn, inner=100, result=lambda: out.copy_to_host())


def chain_step(impl, which="arith", n=16 * M):
    """bench_fusion's 7-op arithmetic (``arith``) or 8-op transcendental (``chain``) chain,
    forward and backward (gradients of both inputs)."""
    lib = gpu_lib(impl)
    body = {"arith": arith, "chain": chain}[which]
    xs, as_, gs = _arrays(n, n, n)
    x, a, g = _upload(lib, xs, True), _upload(lib, as_, True), _upload(lib, gs)

    def fn():
        x.grad = None
        a.grad = None
        body(lib, x, a).backward(g)

    return Workload(fn, inner=3 if n >= 16 * M else 10, result=lambda: _host(x.grad))


def _mlp(lib, sizes, seed=0):
    """nn.Sequential of Linear/ReLU with the same initial weights in every library."""
    nn = lib.nn
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to(DEVICE)
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1])
            p.copy_(_upload(lib, rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    return model


def mlp_step(impl, sizes=(784, 512, 512, 10), batch=256, graph=False):
    """One SGD (momentum 0.9) step: forward, cross_entropy, backward, update. ``graph``: the
    step as one CUDA graph (jitgrad: ``compile(mode="reduce-overhead")``; PyTorch: the whole
    step captured with ``torch.cuda.graph``, its documented whole-network recipe)."""
    lib = gpu_lib(impl)
    model = _mlp(lib, sizes)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(1)
    x = _upload(lib, rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, sizes[-1], batch), device=DEVICE)
    losses = []

    def step(x, y):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = _graphed(lib, impl, step, (x, y)) if graph else (lambda: step(x, y))

    def fn():
        loss = run()
        if not losses:
            losses.append(loss.detach())

    return Workload(fn, inner=10 if graph else 1, result=lambda: _host(losses[0]))


def _graphed(lib, impl, step, args):
    """``step(*args)`` replayed as one CUDA graph: a zero-argument callable returning the
    result."""
    if impl == "jitgrad":
        compiled = lib.compile(step, mode="reduce-overhead")
        for _ in range(3):  # the same three warm-up steps as PyTorch's recipe below, so that
            compiled(*args)  # the first timed call is step 4 for both (the check compares it)
        return lambda: compiled(*args)
    torch = lib
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up on a side stream, as torch.cuda.graph requires
        for _ in range(3):
            step(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    out = []
    with torch.cuda.graph(graph):
        out.append(step(*args))

    def replay():
        graph.replay()
        return out[0]

    return replay


def matmul(impl, m=4096, k=1024, n=4096):
    lib = gpu_lib(impl)
    a, b = _arrays((m, k), (k, n))
    if impl == "cupy":
        x, y = lib.asarray(a), lib.asarray(b)
    else:
        x, y = _upload(lib, a), _upload(lib, b)
    out = []

    def fn():
        out[:] = [x @ y]

    return Workload(fn, inner=5, result=lambda: _host(out[0]))


def scalar_ops(impl, n_ops=100, graph=False):
    """bench_fusion's 100-op graph on a 0-d tensor, forward + backward (launch-bound);
    ``graph``: as one CUDA graph (see ``mlp_step``)."""
    lib = gpu_lib(impl)
    x = _upload(lib, np.float32(0.3), requires_grad=True)
    if not graph:
        def fn():
            x.grad = None
            scalar_graph(lib, x, n_ops).backward()

        return Workload(fn, inner=3, result=lambda: _host(x.grad))

    def step():
        if impl == "torch":  # captured: the backward then allocates .grad in the graph's pool
            x.grad = None
        y = scalar_graph(lib, x, n_ops)
        y.backward()
        return y

    run = _graphed(lib, impl, step, ())

    def fn():
        if impl == "jitgrad":  # a compiled function may not assign .grad (a graph break)
            x.grad = None
        run()

    return Workload(fn, inner=10, result=lambda: _host(x.grad))


#: The table's rows: label, builder, keyword arguments, the libraries of the row (the first is
#: the one the ratio is taken of), relative tolerance of the cross-library check.
ROWS = [
    ("one elementwise op on 1M elements (`x * y`, no graph)", elementwise, {},
     ("jitgrad", "torch"), 1e-6),
    ("same, recording a node", elementwise, {"record": True}, ("jitgrad", "torch"), 1e-6),
    ("raw `numba.cuda` dispatcher launch of a 1M-element kernel, for scale", raw_numba_launch,
     {}, ("numba",), None),
    ("7-op arithmetic chain fwd+bwd, 16M elements", chain_step, {"which": "arith"},
     ("jitgrad", "torch"), 1e-5),
    ("same, 1M elements", chain_step, {"which": "arith", "n": M}, ("jitgrad", "torch"), 1e-5),
    ("8-op transcendental chain fwd+bwd, 16M", chain_step, {"which": "chain"},
     ("jitgrad", "torch"), 1e-4),
    ("MLP 784-512-512-10, batch 256, SGD momentum step", mlp_step, {}, ("jitgrad", "torch"),
     1e-4),
    ("same, the step as one CUDA graph (jitgrad: compile(mode='reduce-overhead'); PyTorch: "
     "torch.cuda.graph)", mlp_step, {"graph": True}, ("jitgrad", "torch"), 1e-4),
    ("MLP 1024-4096-4096-1024, batch 4096 step", mlp_step,
     {"sizes": (1024, 4096, 4096, 1024), "batch": 4096}, ("jitgrad", "torch"), 1e-3),
    ("matmul 4096x1024 @ 1024x4096", matmul, {}, ("jitgrad", "torch", "cupy"), 1e-4),
    ("100 scalar ops fwd+bwd (launch-bound)", scalar_ops, {}, ("jitgrad", "torch"), 1e-5),
    ("same, as one CUDA graph", scalar_ops, {"graph": True}, ("jitgrad", "torch"), 1e-5),
]
