"""CUDA graphs at the array level: a *tape* of what one run of a compiled step launched, and a
*graph* that launches the whole tape with one call.

A :class:`Tape` is set as ``backends.cuda._tape`` while a compiled step runs (its kernels still
run, as always): ``launch_kernel`` and ``copy_device`` append their kernel, grid, block and
arguments, a library call that is no numba kernel (a cuBLAS GEMM) appends the function that
issues it on a given stream with its arguments (``Tape.external``), ``empty`` notes every
buffer allocated meanwhile, and a host transfer marks the tape
unusable (a graph cannot re-read host memory, and a step that reads device data on the host may
take another path next time). The tape keeps every array it saw alive, so the buffers a graph
launches on stay its own (no later allocation is handed one of them): the graph's share of the
caching allocator's pool.

:meth:`Tape.signature` is the tape with each buffer allocated during the run named by its order
of allocation, the step's inputs by their position and every other buffer by its address: two
consecutive runs with equal signatures launched the same kernels with the same scalars on the
same persistent buffers, so their launches do not depend on anything the step computes on the
host from one run to the next (a learning rate, Adam's step count, an RNG offset would show up
as a differing scalar).

:func:`build` turns a tape into a :class:`Graph`: on a GPU, the tape's launches re-issued on a
side stream under stream capture (``cuStreamBeginCapture``; nothing runs then) and instantiated
once; ``Graph.launch`` is one ``cuGraphLaunch`` on the default stream, ordered after and before
every other jitgrad kernel. Under the simulator (no graphs there) ``launch`` re-issues the taped
launches in order, which is what the graph does on the device: same kernels, same arguments,
same buffers.
"""
from __future__ import annotations

import bisect
import threading
import weakref

import numpy as np

__all__ = ["Tape", "Graph", "build", "taping"]


def _address(a):
    """Device address of array ``a`` (its first element), or None if ``a`` is no array."""
    ptr = getattr(a, "device_ctypes_pointer", None)
    if ptr is not None:
        return ptr.value or 0
    ary = getattr(a, "_ary", None)  # the simulator's FakeCUDAArray
    if ary is not None:
        return ary.__array_interface__["data"][0]
    if isinstance(a, np.ndarray):  # mapped (host-visible) memory, such as the bounds flag
        return a.__array_interface__["data"][0]
    return None


class Tape:
    """What one run launched (see the module docstring)."""

    def __init__(self, inputs=()):
        self.inputs = [(_address(a), a.size * a.dtype.itemsize) for a in inputs]
        # ("launch", kernel, grid, block, args) | ("copy", dst, src) | ("external", issue, args)
        self.entries = []
        self.allocations = []   # (start, end) of every buffer allocated while taping, in order
        self.broken = None      # why this run cannot become a graph, or None
        self._keep = []         # the arrays allocated meanwhile (alive as long as the tape)
        # only the taping thread's work is the step's (another thread's kernels run between)
        self.thread = threading.get_ident()

    # -------------------------------------------------------------- what backends.cuda calls

    def launch(self, kernel, grid, block, args):
        if threading.get_ident() == self.thread:
            self.entries.append(("launch", kernel, grid, block, tuple(args)))

    def copy(self, dst, src):
        if threading.get_ident() == self.thread:
            self.entries.append(("copy", dst, src))

    def external(self, issue, args):
        """A call that is no numba launch: ``issue(stream_handle, *args)`` re-issues it on the
        CUDA stream whose raw handle (an int) it gets, or on the default stream for None. Its
        device arrays, as for a launch, are among ``args``."""
        if threading.get_ident() == self.thread:
            self.entries.append(("external", issue, tuple(args)))

    def allocated(self, arr):
        start = _address(arr)
        if start is not None and arr.size and threading.get_ident() == self.thread:
            self.allocations.append((start, start + arr.size * arr.dtype.itemsize))
            self._keep.append(arr)

    def host_transfer(self, what):
        if self.broken is None and threading.get_ident() == self.thread:
            self.broken = f"the step makes {what}"

    # -------------------------------------------------------------- comparing runs

    def signature(self):
        """The tape with allocated buffers named by allocation order (see the module
        docstring); None when an argument is of a kind a graph cannot hold."""
        starts = sorted((s, e, k) for k, (s, e) in enumerate(self.allocations))
        keys = [s for s, _, _ in starts]

        def arg(a):
            if isinstance(a, (bool, int, float, complex, str, type(None))):
                return (type(a), a)
            if isinstance(a, np.generic):
                return (a.dtype.str, a.tobytes())
            if isinstance(a, tuple):
                return tuple(arg(x) for x in a)
            addr = _address(a)
            if addr is None:
                raise _Unknown(type(a).__name__)
            where = ("at", addr)
            j = bisect.bisect_right(keys, addr) - 1
            if j >= 0 and addr < starts[j][1]:
                where = ("new", starts[j][2], addr - keys[j])
            else:
                for k, (start, nbytes) in enumerate(self.inputs):
                    if start <= addr < start + nbytes:
                        where = ("input", k, addr - start)
                        break
            return ("array", where, tuple(a.shape), tuple(a.strides), a.dtype.str)

        try:
            return tuple((e[0], e[1], e[2], e[3], arg(e[4])) if e[0] == "launch"
                         else (e[0], e[1], arg(e[2])) if e[0] == "external"
                         else (e[0], arg(e[1]), arg(e[2])) for e in self.entries)
        except _Unknown as e:
            self.broken = f"a kernel takes an argument of type {e}"
            return None

    def allocated_here(self, arr) -> bool:
        """Was ``arr``'s memory allocated while taping (made by the taped run)?"""
        addr = _address(arr)
        return addr is not None and any(s <= addr < e for s, e in self.allocations)

    def outside_arrays(self):
        """Addresses of the arrays the tape uses that were not allocated while taping."""
        sig = self.signature() or ()
        out = set()

        def walk(x):
            if isinstance(x, tuple):
                if len(x) == 5 and x[0] == "array":
                    if x[1][0] == "at":
                        out.add(x[1][1])
                    return
                for y in x:
                    walk(y)

        walk(sig)
        return out


class _Unknown(Exception):
    pass


class taping:
    """``with taping(tape):`` sets ``backends.cuda._tape`` for the block (not reentrant)."""

    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        from . import cuda
        if cuda._tape is not None:
            raise RuntimeError("a CUDA graph tape is already being recorded")
        cuda._tape = self.tape
        return self.tape

    def __exit__(self, *exc):
        from . import cuda
        cuda._tape = None


class Graph:
    """The launches of a tape, as one call (see the module docstring)."""

    def __init__(self, tape, exec_handle=None):
        self.tape = tape            # holds every buffer the graph launches on
        self._exec = exec_handle

    def launch(self):
        from . import cuda
        cuda.stats.launches += 1
        if self._exec is None:
            for e in self.tape.entries:
                _issue(e, None)
            return
        from numba.cuda.cudadrv.driver import binding
        _check(binding.cuGraphLaunch(self._exec, binding.CUstream(0)), "cuGraphLaunch")


def _issue(entry, stream, handle=None):
    """Run one taped entry (on ``stream``, whose raw handle is ``handle``, or numba's default
    stream when None)."""
    if entry[0] == "external":
        entry[1](handle, *entry[2])
    elif entry[0] == "launch":
        _, kernel, grid, block, args = entry
        (kernel[grid, block] if stream is None else kernel[grid, block, stream])(*args)
    else:
        _, dst, src = entry
        if stream is None:
            dst.copy_to_device(src)
        else:
            dst.copy_to_device(src, stream=stream)


def _check(result, what):
    from numba.cuda.cudadrv.driver import binding
    err = result[0] if isinstance(result, tuple) else result
    if err != binding.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what} failed: {err!r}")
    return result[1] if isinstance(result, tuple) and len(result) > 1 else None


def _destroy(graph, exe):
    from numba.cuda.cudadrv.driver import binding
    try:
        binding.cuGraphExecDestroy(exe)
        binding.cuGraphDestroy(graph)
    except Exception:  # noqa: BLE001 - interpreter shutdown: the context is gone already
        pass


def build(tape) -> Graph:
    """A :class:`Graph` of ``tape``'s launches (captured on the device; see the module
    docstring)."""
    from . import cuda
    if cuda.simulator_active():
        return Graph(tape)
    from numba.cuda.cudadrv.driver import binding
    cu = cuda._cuda()
    cu.synchronize()  # the taped run's own work is done before anything is captured
    # a non-blocking side stream: nothing on the legacy default stream may join the capture
    handle = _check(binding.cuStreamCreate(binding.CUstream_flags.CU_STREAM_NON_BLOCKING.value),
                    "cuStreamCreate")
    try:
        stream = cu.external_stream(int(handle))
        mode = binding.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        _check(binding.cuStreamBeginCapture(handle, mode), "cuStreamBeginCapture")
        try:
            for e in tape.entries:
                _issue(e, stream, int(handle))
        finally:
            # always end the capture: a stream left capturing fails every later launch on it
            graph = _check(binding.cuStreamEndCapture(handle), "cuStreamEndCapture")
    finally:
        binding.cuStreamDestroy(handle)
    exe = _check(binding.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
    out = Graph(tape, exe)
    weakref.finalize(out, _destroy, graph, exe)
    return out
