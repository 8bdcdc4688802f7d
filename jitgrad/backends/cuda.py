"""numba.cuda backend, at the array level: device queries, device arrays, host<->device transfers
(counted), and launchers for the LoopSpec kernels (``codegen/cuda.py``) and the hand-written
kernels (``backends/cuda_kernels``). No Tensor here: the core calls these functions with device
arrays, exactly as it calls ``backends/cpu.py`` with NumPy arrays.

Importing this module does not import numba.cuda (that costs ~0.4 s and must not happen on
``import jitgrad``); the first function that needs it does.

The CPU-mirroring entry points the core uses for elementwise ops::

    mod = cuda.module_for(key, build_spec)       # same key/spec as cpu.module_for
    cuda.launch(mod, n, args)                     # args: flat device arrays + NumPy scalars

``launch`` refuses host arrays: numba-cuda would otherwise copy them silently (both ways), which
is exactly the hidden round-trip the transfer counters exist to catch.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
import types
from contextlib import contextmanager

import numpy as np

__all__ = ["installed", "simulator_active", "is_available", "device_count", "compute_capability",
           "target", "stats", "reset_stats", "to_device", "to_host", "empty", "zeros", "full",
           "module_for", "launch", "launch_flat", "launch_kernel", "copy_device", "launch_config",
           "compile_ptx", "allocator", "f64_instructions", "signature_of", "DEFAULT_CC", "kernels"]

#: Compute capability assumed when compiling without a device (PTX checks, cache keys).
DEFAULT_CC = (8, 0)
#: Threads per block of flat (grid-stride) kernels.
THREADS = 256
SIM_THREADS = 16
SIM_MAX_BLOCKS = 2


class Stats:
    """Counters the tests read: transfers (count and bytes), allocations and kernel launches."""

    __slots__ = ("h2d", "d2h", "h2d_bytes", "d2h_bytes", "allocs", "launches")

    def __init__(self):
        self.reset()

    def reset(self):
        self.h2d = self.d2h = self.h2d_bytes = self.d2h_bytes = 0
        self.allocs = self.launches = 0

    def snapshot(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return f"cuda.Stats({self.snapshot()})"


stats = Stats()


def reset_stats() -> None:
    stats.reset()


# ----------------------------------------------------------------------------- device queries

_cuda_mod = None


def installed() -> bool:
    """True when numba-cuda (and so ``numba.cuda``) can be imported."""
    return importlib.util.find_spec("numba_cuda") is not None


def _cuda():
    global _cuda_mod
    if _cuda_mod is None:
        from .numba_cuda_compat import import_numba_cuda
        _cuda_mod = import_numba_cuda()
    return _cuda_mod


def simulator_active() -> bool:
    """Is numba.cuda (going to be) the simulator? Decided by NUMBA_ENABLE_CUDASIM at its import."""
    if _cuda_mod is not None or "numba.cuda" in __import__("sys").modules:
        from .cuda_env import SIMULATOR
        return SIMULATOR
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_avail = None


def is_available() -> bool:
    """A device to run kernels on: a real GPU with a working driver, or the simulator."""
    global _avail
    if _avail is None:
        if not installed():
            _avail = False
        elif simulator_active():
            _avail = True
        else:
            try:
                _avail = bool(_cuda().is_available())
            except Exception:  # noqa: BLE001 - a broken driver install means "no device"
                _avail = False
    return _avail


def has_gpu() -> bool:
    """A real GPU (not the simulator)."""
    return is_available() and not simulator_active()


def device_count() -> int:
    if not is_available():
        return 0
    if simulator_active():
        return 1
    try:
        return len(_cuda().gpus)
    except Exception:  # noqa: BLE001
        return 0


def compute_capability(device: int | None = None) -> tuple:
    """The current (or given) device's compute capability; ``DEFAULT_CC`` without a real GPU."""
    if not has_gpu():
        return DEFAULT_CC
    cu = _cuda()
    dev = cu.get_current_device() if device is None else cu.gpus[device]
    return tuple(dev.compute_capability)


def target() -> str:
    """Kernel-cache target of this process: ``cuda-sm80`` etc., or ``cudasim``."""
    if simulator_active():
        return "cudasim"
    cc = compute_capability()
    return f"cuda-sm{cc[0]}{cc[1]}"


# ----------------------------------------------------------------------------- memory


def _require_device():
    if not is_available():
        if not installed():
            raise RuntimeError("Found no NVIDIA driver on your system: the CUDA backend needs "
                               "numba-cuda (pip install 'jitgrad[cuda]') and an NVIDIA GPU")
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have "
                           "an NVIDIA GPU and installed a driver (or set NUMBA_ENABLE_CUDASIM=1 "
                           "before importing jitgrad to use the CUDA simulator)")


def to_device(host) -> object:
    """Copy a host (NumPy) array to a new device array; counted in ``stats``."""
    a = np.ascontiguousarray(host)
    out = empty(a.shape, a.dtype)
    if _tape is not None:
        _tape.host_transfer("an upload of host data")
    stats.h2d += 1
    stats.h2d_bytes += a.nbytes
    if a.size:
        out.copy_to_device(a)
    return out


def to_host(dev, out: np.ndarray | None = None) -> np.ndarray:
    """Copy a device array to the host (into ``out`` if given); counted in ``stats``. A
    synchronizing point: raises what an index kernel flagged (``cuda_kernels.bounds``)."""
    if _tape is not None:
        _tape.host_transfer("a read of device data on the host")
    stats.d2h += 1
    stats.d2h_bytes += int(dev.size) * np.dtype(dev.dtype).itemsize
    if out is not None:
        dev.copy_to_host(out)
    else:
        out = dev.copy_to_host()
    raise_device_errors()
    return out


def raise_device_errors() -> None:
    """Raise the error an index kernel flagged since the last synchronizing point, if any."""
    bounds = sys.modules.get("jitgrad.backends.cuda_kernels.bounds")
    if bounds is not None:
        bounds.raise_pending()


def empty(shape, dtype) -> object:
    """An uninitialized C-contiguous device array (no transfer), from the caching allocator
    (``cuda_alloc``: a cached block of its size class when one is free, the driver otherwise)."""
    stats.allocs += 1
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
        tuple(int(s) for s in shape)
    out = (_allocator or allocator()).empty(shape, dtype)
    if _tape is not None:
        _tape.allocated(out)
    return out


_allocator = None


def allocator():
    """The process's caching allocator (``cuda_alloc``), made on the first device allocation."""
    global _allocator
    if _allocator is None:
        from . import cuda_alloc
        _require_device()
        from .cuda_alloc_drivers import make_driver
        _allocator = cuda_alloc.get(lambda: make_driver(_cuda(), simulator_active()))
    return _allocator


def full(shape, value, dtype) -> object:
    """A device array filled on the device (a kernel launch, no transfer)."""
    from .cuda_kernels.layout import fill
    return fill(empty(shape, dtype), value)


def zeros(shape, dtype) -> object:
    return full(shape, 0, dtype)


# ----------------------------------------------------------------------------- launching


def launch_config(n: int) -> tuple:
    """(blocks, threads) of a grid-stride launch over ``n`` elements.

    Enough blocks to cover ``n`` once, capped at 32 per SM (the grid-stride loop does the rest);
    under the simulator, at most 2 blocks of 16 threads (every thread is a Python thread there).
    """
    if simulator_active():
        threads = SIM_THREADS
        return max(1, min(-(-n // threads), SIM_MAX_BLOCKS)), threads
    from .cuda_kernels.common import max_blocks
    return max(1, min(-(-n // THREADS), max_blocks())), THREADS


def _is_host_array(a) -> bool:
    # mapped (page-locked, device-visible) arrays subclass ndarray but are kernel-addressable
    return isinstance(a, np.ndarray) and a.ndim > 0 and not hasattr(a, "device_ctypes_pointer")


def _check_args(args) -> None:
    for a in args:
        if _is_host_array(a):
            raise TypeError("a host (NumPy) array was passed to a CUDA kernel: numba-cuda would "
                            "copy it implicitly; copy it once with backends.cuda.to_device")


#: The tape (``cuda_graph.Tape``) of the compiled step being recorded for a CUDA graph, or None.
#: While one is set, every launch and device-to-device copy is also appended to it (they still
#: run), every allocation is noted, and a host transfer marks it unusable.
_tape = None


def launch_kernel(kernel, grid, block, args) -> None:
    """Launch ``kernel`` (a ``cuda.jit`` dispatcher) on ``grid`` x ``block`` threads: the one
    place every jitgrad kernel launch goes through (counted, and taped for CUDA graphs)."""
    stats.launches += 1
    if _tape is not None:
        _tape.launch(kernel, grid, block, args)
    (_launcher or _choose_launcher())(kernel, grid, block, args)


def _simulated_launch(kernel, grid, block, args):
    kernel[grid, block](*args)


#: How launch_kernel launches: ``cuda_launch.launch`` on a GPU (the lean path),
#: ``cuda_launch.dispatch`` there with JITGRAD_CUDA_LEAN_LAUNCH=0, the dispatcher as is under the
#: simulator; None until the first launch or copy decides. ``_lean_copies``: the lean path is
#: on, so dense device copies are one driver memcpy too.
_launcher = None
_lean_copies = False


def _choose_launcher():
    global _launcher, _lean_copies
    from . import cuda_launch
    if simulator_active():
        _launcher = _simulated_launch
    else:
        _launcher = cuda_launch.launch if cuda_launch.enabled else cuda_launch.dispatch
    _lean_copies = _launcher is cuda_launch.launch
    return _launcher


def copy_device(dst, src) -> None:
    """Copy device array ``src`` into device array ``dst`` (same size), on the device."""
    if _tape is not None:
        _tape.copy(dst, src)
    if _launcher is None:
        _choose_launcher()
    if _lean_copies and _dense_pair(dst, src):
        # numba's copy_to_device spends ~20 Python calls (views, squeezes, checks) per copy:
        # most of a compiled CUDA-graph step's host time on an H200. The same driver call:
        nbytes = dst.size * dst.dtype.itemsize
        if nbytes:
            from numba.cuda.cudadrv import driver
            driver.device_to_device(dst, src, nbytes)
        return
    dst.copy_to_device(src)


def _dense_pair(dst, src) -> bool:
    """Are ``dst`` and ``src`` numba device arrays (not mapped host memory) of one dtype and
    size, both C-contiguous, so that one device-to-device memcpy is ``dst[...] = src``?"""
    if isinstance(dst, np.ndarray) or isinstance(src, np.ndarray):
        return False
    dd, ds = getattr(dst, "_dummy", None), getattr(src, "_dummy", None)
    return (dd is not None and ds is not None and dst.dtype == src.dtype
            and dst.size == src.size and dd.flags["C_CONTIGUOUS"]
            and ds.flags["C_CONTIGUOUS"])


def launch_flat(kernel, n: int, args) -> None:
    """Launch a grid-stride ``kernel`` (a ``cuda.jit`` dispatcher) over ``n`` elements."""
    _check_args(args)
    launch_kernel(kernel, *launch_config(n), args)


_modules: dict = {}
_modules_lock = threading.Lock()


def module_for(key, build_spec):
    """The CUDA kernel module for the LoopSpec identified by ``key`` (built on first use).

    Mirrors ``cpu.module_for``: the source is ``render_cuda(spec)``, loaded through the
    content-addressed kernel cache under target ``target()`` (which holds the compute capability,
    so two GPUs of different architectures never share an entry)."""
    tgt = target()
    mod = _modules.get((tgt, key))
    if mod is None:
        from ..codegen import kcache
        from ..codegen.cuda import render_cuda
        spec = build_spec()
        cache = kcache.disk_cache_enabled() and not simulator_active()
        mod = kcache.load(render_cuda(spec, cache=cache), tgt)
        with _modules_lock:
            _modules[(tgt, key)] = mod
    return mod


def launch(mod, n: int, args) -> None:
    """Run a LoopSpec kernel module over ``n`` elements (``args`` in ``spec.signature()`` order
    after ``n``: flat device arrays for array inputs and outputs, NumPy scalars for scalars)."""
    launch_flat(mod.kernel, n, (np.int64(n), *args))


def kernels():
    """The hand-written kernels package (``layout``, ``reduce``, ``matmul``, ``softmax``,
    ``index``), imported on first use."""
    from . import cuda_kernels
    return cuda_kernels


# ----------------------------------------------------------------------------- PTX


_ptx_lock = threading.Lock()


@contextmanager
def _assume_device(cc):
    """numba-cuda (0.30) compiles a device function called from a kernel for
    ``get_current_device().compute_capability``, which needs a driver even inside
    ``compile_ptx``. Without a GPU, answer that query with ``cc`` for the duration of the call
    (the final PTX target is ``compile_ptx``'s own ``cc`` either way)."""
    if has_gpu():
        yield
        return
    from numba.cuda import dispatcher
    orig = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=tuple(cc))
    try:
        yield
    finally:
        dispatcher.get_current_device = orig


def compile_ptx(pyfunc, sig, cc=DEFAULT_CC, **kwargs) -> str:
    """PTX of kernel ``pyfunc`` for argument types ``sig`` on compute capability ``cc``; works
    without a GPU (needs the ``nvidia-cuda-nvrtc`` and ``nvidia-nvvm`` wheels)."""
    if simulator_active():
        raise RuntimeError("compile_ptx needs the real numba.cuda target, not the simulator "
                           "(unset NUMBA_ENABLE_CUDASIM)")
    cu = _cuda()
    with _ptx_lock, _assume_device(cc):
        ptx, _ = cu.compile_ptx(pyfunc, sig, cc=tuple(cc), **kwargs)
    return ptx


# libdevice's float32 sin/cos/tan (__nv_sinf, ...; nvcc's sinf is the same code) reduce huge
# arguments (|x| > 105615) with a Payne-Hanek step that converts a 64-bit fixed-point product to
# double and scales it by pi/2 * 2**-64 (0x3BF921FB54442D19): four double-precision lines on a
# slow path that ordinary arguments never take. They are libdevice's, not a promotion in our
# code, and are the only ``.f64`` a float32 kernel may contain (when it calls sin/cos/tan).
_TRIG_REDUCTION_F64 = (
    re.compile(r"^\.reg \.f64\s+%fd<\d+>;$"),
    re.compile(r"^cvt\.rn\.f64\.s64\s+%fd\d+, %rd\d+;$"),
    re.compile(r"^mul\.f64\s+%fd\d+, %fd\d+, 0d3BF921FB54442D19;$"),
    re.compile(r"^cvt\.rn\.f32\.f64\s+%f\d+, %fd\d+;$"),
)


def f64_instructions(ptx: str, allow_trig_reduction: bool = False) -> list:
    """PTX lines that declare or use double precision (comments stripped): a float32 kernel must
    have none, except, with ``allow_trig_reduction``, libdevice's own sin/cos/tan huge-argument
    reduction (see ``_TRIG_REDUCTION_F64``)."""
    found = []
    for line in ptx.splitlines():
        code = line.split("//", 1)[0].strip()
        if code and ".f64" in code:
            if allow_trig_reduction and any(p.match(code) for p in _TRIG_REDUCTION_F64):
                continue
            found.append(code)
    return found


def signature_of(args) -> tuple:
    """Numba argument types of example kernel arguments (NumPy arrays stand for device arrays
    of the same dtype/rank: a contiguous device array types as the same ``array(..., C)``)."""
    from numba import typeof
    from numba.core import types as nt
    sig = []
    for a in args:
        if isinstance(a, bool):
            sig.append(nt.boolean)
        elif isinstance(a, int):
            sig.append(nt.int64)
        elif isinstance(a, float):
            sig.append(nt.float64)
        elif isinstance(a, tuple):
            sig.append(nt.UniTuple(nt.int64, len(a)))
        else:
            sig.append(typeof(a))
    return tuple(sig)
