"""``backends.cuda_graph.build`` on a GPU, driven against a recording stand-in for the CUDA
driver (no device needed): the calls it makes and their order — a non-blocking side stream,
capture begun, every taped launch and copy re-issued on that stream, capture ended even when a
launch fails, the stream destroyed, the graph instantiated and launched on the default stream.
What the driver then does with them is checked on real hardware (tests/cuda/
test_device_cuda_graphs.py under ``tools/gpu_check.sh``)."""
from __future__ import annotations

import types

import numpy as np
import pytest

pytest.importorskip("numba_cuda")


class _Driver:
    """The few cuda.bindings.driver functions ``build`` and ``Graph.launch`` call."""

    def __init__(self, binding):
        self.calls = []
        self.CUresult = binding.CUresult
        self.CUstream = binding.CUstream
        self.CUstream_flags = binding.CUstream_flags
        self.CUstreamCaptureMode = binding.CUstreamCaptureMode
        ok = binding.CUresult.CUDA_SUCCESS
        for name, result in [("cuStreamCreate", (ok, 7)), ("cuStreamBeginCapture", (ok,)),
                             ("cuStreamEndCapture", (ok, "graph")),
                             ("cuStreamDestroy", (ok,)), ("cuGraphInstantiate", (ok, "exec")),
                             ("cuGraphLaunch", (ok,)), ("cuGraphExecDestroy", (ok,)),
                             ("cuGraphDestroy", (ok,))]:
            setattr(self, name, self._recorder(name, result))

    def _recorder(self, name, result):
        def call(*args):
            self.calls.append((name, args))
            return result
        return call


class _Kernel:
    def __init__(self, log, fail=False):
        self.log, self.fail = log, fail

    def __getitem__(self, config):
        def launch(*args):
            self.log.append(("launch", config, args))
            if self.fail:
                raise RuntimeError("launch refused")
        return launch


class _Array:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def copy_to_device(self, src, stream=None):
        self.log.append(("copy", self.name, src.name, stream))


@pytest.fixture
def fake_gpu(monkeypatch):
    from jitgrad.backends import cuda
    if cuda.simulator_active():
        pytest.skip("the simulator's numba.cuda has no driver module: this runs in the main "
                    "(non-simulator) run")
    from numba.cuda.cudadrv import driver as numba_driver

    from jitgrad.backends import cuda_graph
    fake = _Driver(numba_driver.binding)
    monkeypatch.setattr(numba_driver, "binding", fake)
    streams = []
    cu = types.SimpleNamespace(synchronize=lambda: fake.calls.append(("synchronize", ())),
                               external_stream=lambda ptr: streams.append(ptr) or f"S{ptr}")
    monkeypatch.setattr(cuda, "simulator_active", lambda: False)
    monkeypatch.setattr(cuda, "_cuda", lambda: cu)
    return fake, streams, cuda_graph


def _tape(cuda_graph, log, fail=False):
    tape = cuda_graph.Tape()
    tape.entries = [("launch", _Kernel(log), 2, 32, (np.int64(3),)),
                    ("copy", _Array(log, "dst"), _Array(log, "src")),
                    ("launch", _Kernel(log, fail), (1, 1), (16, 16), ())]
    return tape


def test_build_captures_the_tape_on_a_side_stream_and_launches_on_the_default_stream(fake_gpu):
    fake, streams, cuda_graph = fake_gpu
    log = []
    graph = cuda_graph.build(_tape(cuda_graph, log))
    names = [name for name, _ in fake.calls]
    assert names == ["synchronize", "cuStreamCreate", "cuStreamBeginCapture",
                     "cuStreamEndCapture", "cuStreamDestroy", "cuGraphInstantiate"]
    assert fake.calls[1][1] == (fake.CUstream_flags.CU_STREAM_NON_BLOCKING.value,)
    assert fake.calls[2][1] == (7, fake.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    assert streams == [7]
    # every entry re-issued, in order, on the capture stream
    assert log == [("launch", (2, 32, "S7"), (np.int64(3),)), ("copy", "dst", "src", "S7"),
                   ("launch", ((1, 1), (16, 16), "S7"), ())]
    fake.calls.clear()
    graph.launch()
    ((name, (exe, stream)),) = fake.calls
    assert name == "cuGraphLaunch" and exe == "exec" and int(stream) == 0


def test_a_failed_launch_still_ends_the_capture(fake_gpu):
    fake, _, cuda_graph = fake_gpu
    with pytest.raises(RuntimeError, match="launch refused"):
        cuda_graph.build(_tape(cuda_graph, [], fail=True))
    names = [name for name, _ in fake.calls]
    assert names[-2:] == ["cuStreamEndCapture", "cuStreamDestroy"]
    assert "cuGraphInstantiate" not in names


def test_a_driver_error_raises_with_its_name(fake_gpu):
    fake, _, cuda_graph = fake_gpu
    err = fake.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    fake.cuStreamEndCapture = lambda h: (err, None)
    with pytest.raises(RuntimeError, match="cuStreamEndCapture failed.*INVALIDATED"):
        cuda_graph.build(_tape(cuda_graph, []))
