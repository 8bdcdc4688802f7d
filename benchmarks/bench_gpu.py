"""Issue 12's GPU workloads in the asv suite: jitgrad beside PyTorch on the same CUDA device
(``_gpu_workloads.py`` builds both from the same inputs and initial weights). Skipped without a
GPU (setup raises NotImplementedError: asv's skip), and PyTorch's side without a CUDA build of
PyTorch. The CPU versions of these workloads are ``bench_fusion.py`` (chains, 100 scalar ops),
``bench_mlp.py`` and ``bench_ops.py``.

Each ``time_`` method runs one sample of ``inner`` calls (100 for the single elementwise op, a
few for the chains) and then synchronizes the device, so device work is inside the timing; the
per-call figures of issue 12's table come from ``python benchmarks/gpu_table.py``.
"""
from __future__ import annotations

from . import _gpu_workloads as W

IMPLS = ["jitgrad", "torch"]


class _GPUWorkload:
    params = [["cuda"], IMPLS]
    param_names = ["device", "impl"]
    timeout = 600
    build = None
    kwargs: dict = {}

    def setup(self, device, impl):
        self.impl = impl
        self.work = type(self).build(impl, **self.kwargs)
        for _ in range(3):
            self.work.fn()
        W.synchronize(impl)

    def _sample(self):
        for _ in range(self.work.inner):
            self.work.fn()
        W.synchronize(self.impl)


class ElementwiseMul1Mx100(_GPUWorkload):
    """``x * y`` on 1M float32 elements, 100 calls, no graph."""
    build = staticmethod(W.elementwise)

    def time_mul(self, device, impl):
        self._sample()


class ElementwiseMulRecording1Mx100(_GPUWorkload):
    """The same with ``x.requires_grad``: a node recorded per call."""
    build = staticmethod(W.elementwise)
    kwargs = {"record": True}

    def time_mul(self, device, impl):
        self._sample()


class ArithChain16Mx3(_GPUWorkload):
    build = staticmethod(W.chain_step)
    kwargs = {"which": "arith"}

    def time_forward_backward(self, device, impl):
        self._sample()


class ArithChain1Mx10(_GPUWorkload):
    build = staticmethod(W.chain_step)
    kwargs = {"which": "arith", "n": W.M}

    def time_forward_backward(self, device, impl):
        self._sample()


class TranscendentalChain16Mx3(_GPUWorkload):
    build = staticmethod(W.chain_step)
    kwargs = {"which": "chain"}

    def time_forward_backward(self, device, impl):
        self._sample()


class MLPStepBatch256(_GPUWorkload):
    """784-512-512-10, batch 256, SGD momentum."""
    build = staticmethod(W.mlp_step)

    def time_step(self, device, impl):
        self._sample()


class MLPStepBatch256Graph(_GPUWorkload):
    """The same step as one CUDA graph: jitgrad ``compile(mode="reduce-overhead")``, PyTorch
    ``torch.cuda.graph`` (issue 16's target: at most 0.15x PyTorch eager)."""
    build = staticmethod(W.mlp_step)
    kwargs = {"graph": True}

    def time_step(self, device, impl):
        self._sample()


class MLPStepBig(_GPUWorkload):
    """1024-4096-4096-1024, batch 4096, SGD momentum."""
    build = staticmethod(W.mlp_step)
    kwargs = {"sizes": (1024, 4096, 4096, 1024), "batch": 4096}

    def time_step(self, device, impl):
        self._sample()


class Matmul4096x1024x4096x5(_GPUWorkload):
    params = [["cuda"], IMPLS + ["cupy"]]
    build = staticmethod(W.matmul)

    def time_matmul(self, device, impl):
        self._sample()


class ScalarOps100x3(_GPUWorkload):
    """100-op graph on a 0-d tensor, forward + backward (launch-bound)."""
    build = staticmethod(W.scalar_ops)

    def time_forward_backward(self, device, impl):
        self._sample()


class ScalarOps100Graph(_GPUWorkload):
    """The 100-op graph as one CUDA graph (issue 16's target: at most 0.1x PyTorch eager)."""
    build = staticmethod(W.scalar_ops)
    kwargs = {"graph": True}

    def time_forward_backward(self, device, impl):
        self._sample()


class RawNumbaLaunch1Mx100:
    """A numba.cuda dispatcher launch of a 1M-element multiply, for scale."""
    params = [["cuda"]]
    param_names = ["device"]

    def setup(self, device):
        self.work = W.raw_numba_launch()
        self.work.fn()
        W.synchronize("numba")

    def time_launch(self, device):
        for _ in range(self.work.inner):
            self.work.fn()
        W.synchronize("numba")


class DeviceMemoryAfterSteps:
    """jitgrad.cuda.memory_allocated() after 20 MLP steps minus after 2 (bytes; 0 = no leak)
    and the driver allocations those 18 steps made (0 = every block came from the cache)."""
    params = [["cuda"]]
    param_names = ["device"]
    unit = "bytes"

    def setup(self, device):
        self.work = W.mlp_step("jitgrad")

    def _run(self):
        import jitgrad
        for _ in range(2):
            self.work.fn()
        jitgrad.cuda.synchronize()
        stats0 = jitgrad.cuda.memory_stats()
        for _ in range(18):
            self.work.fn()
        jitgrad.cuda.synchronize()
        stats1 = jitgrad.cuda.memory_stats()
        return {k: stats1[k] - stats0[k]
                for k in ("allocated_bytes.all.current", "num_device_alloc")}

    def track_allocated_growth(self, device):
        return self._run()["allocated_bytes.all.current"]

    def track_driver_allocations(self, device):
        return self._run()["num_device_alloc"]

    track_driver_allocations.unit = "allocations"
