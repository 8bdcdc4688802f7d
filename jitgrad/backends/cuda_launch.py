"""The lean kernel launch (issue 12): a ``cuda.jit`` kernel launched on the GPU without going
through numba-cuda's dispatcher on every call.

Measured on an H200 (numba-cuda 0.30.4): half of a jitgrad op's host time was the dispatcher's
``kernel[grid, block](*args)``: per call it types every argument (a fresh numba ``Array`` type
for every freshly allocated result), looks the overload up, converts every array to a strided
memory view and builds a ``LaunchConfig`` and a stream object. None of that changes between two
launches of one kernel with arguments of the same kinds. So the first launch for a combination
of argument kinds goes through the dispatcher (which compiles if needed and launches), and
remembers the overload it chose, its ``cuda.core`` kernel object and the numba argument types;
the later ones pack the arguments exactly as the dispatcher's ``_Kernel.launch`` does (an array
is ``meminfo, parent, size, itemsize, data pointer, *shape, *strides``; other arguments go
through the overload's own ``_prepare_args``) and call ``cuda.core.launch`` directly.

The *kind* of an argument is what numba's typing of it depends on: for a device array its dtype,
rank and layout ('C', 'F' or 'A', computed as ``DeviceNDArray._numba_type_`` does), for a
scalar its Python or NumPy type, for a tuple the kinds of its items. Anything else (host or
mapped arrays, records, ...), a debug, cooperative or launch-configuration-sensitive kernel, or
a kernel with argument extensions takes the dispatcher every time. The simulator never gets
here (``backends.cuda.launch_kernel`` decides). ``JITGRAD_CUDA_LEAN_LAUNCH=0`` turns it off.
"""
from __future__ import annotations

import os
import threading
import warnings

import numpy as np

__all__ = ["enabled", "launch", "dispatch", "arg_kind", "pack", "clear"]

enabled = os.environ.get("JITGRAD_CUDA_LEAN_LAUNCH", "1") != "0"

#: (kernel, argument kinds) -> (overload, cuda.core kernel, numba argument types), or None where
#: that combination must take the dispatcher
_plans: dict = {}
_configs: dict = {}     # (grid, block) -> cuda.core LaunchConfig
_local = threading.local()
_core = None            # (cuda.core.launch, LaunchConfig, the default stream, normalize dims)

_SCALARS = frozenset({float, bool, complex, np.bool_, np.int8, np.int16, np.int32, np.int64,
                      np.uint8, np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                      np.float64, np.complex64, np.complex128})
_INT64 = (-(1 << 63), (1 << 63) - 1)


def clear() -> None:
    """Forget every plan (tests; a new context)."""
    _plans.clear()
    _configs.clear()


def arg_kind(a):
    """What numba's typing of launch argument ``a`` depends on, or None when the lean path
    does not handle ``a``."""
    t = type(a)
    if t in _SCALARS:
        return t
    if t is int:
        return int if _INT64[0] <= a <= _INT64[1] else None
    if t is tuple:
        kinds = tuple(arg_kind(v) for v in a)
        return None if None in kinds else ("tuple", kinds)
    if isinstance(a, np.ndarray):  # host or mapped memory: the dispatcher handles it
        return None
    dummy = getattr(a, "_dummy", None)
    if dummy is None or getattr(a, "gpu_data", None) is None:
        return None
    flags = dummy.flags
    broadcast = a.size != 0 and 0 in a.strides
    if flags["C_CONTIGUOUS"] and not broadcast:
        layout = "C"
    elif flags["F_CONTIGUOUS"] and not broadcast:
        layout = "F"
    else:
        layout = "A"
    return ("array", a.dtype, a.ndim, layout)


def dispatch(kernel, grid, block, args) -> None:
    """``kernel[grid, block](*args)`` through numba-cuda's dispatcher, without its
    NumbaPerformanceWarning for grids under 128 blocks: jitgrad sizes its grids to the data, and
    a small tensor's launch is no user error (PyTorch says nothing either). Only jitgrad's own
    launches are quieted; a user's kernels keep numba's warning."""
    with warnings.catch_warnings():
        # the message starts with a terminal highlight code: match anywhere in it
        warnings.filterwarnings("ignore", message=".*Grid size .* under-utilization")
        kernel[grid, block](*args)


def _load_core():
    global _core
    from cuda.core import LaunchConfig
    from cuda.core import launch as core_launch
    from numba.cuda.cudadrv import driver
    from numba.cuda.errors import normalize_kernel_dimensions
    _core = (core_launch, LaunchConfig, driver._to_core_stream(0), normalize_kernel_dimensions)
    return _core


def _plan(kernel, args):
    """After the dispatcher launched ``kernel`` with ``args``: what later launches with
    arguments of the same kinds reuse, or None if they must take the dispatcher."""
    if getattr(kernel, "_launch_config_sensitive", False) or kernel.targetoptions.get(
            "extensions"):
        return None
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    overload = kernel.overloads.get(argtypes)
    if overload is None or overload.debug or overload.cooperative:
        return None
    if getattr(overload, "launch_config_sensitive", False):
        return None
    return overload, overload._codelibrary.get_cufunc().kernel, argtypes


def _config(grid, block):
    core = _core or _load_core()
    griddim, blockdim = core[3](grid, block)
    cfg = core[1](grid=griddim, block=blockdim, shmem_size=0)
    _configs[(grid, block)] = cfg
    return cfg


def launch(kernel, grid, block, args) -> None:
    """``kernel[grid, block](*args)`` (see the module docstring)."""
    key = (kernel, *[arg_kind(a) for a in args])
    plan = _plans.get(key, False)
    if not plan:  # not seen yet (False), or a combination the dispatcher must take (None)
        dispatch(kernel, grid, block, args)
        if plan is False and None not in key:
            _plans[key] = _plan(kernel, args)
        return
    if not getattr(_local, "ready", False):  # this thread's current context (numba's own
        from numba.cuda.cudadrv.devices import get_context  # launch makes it current too)
        get_context()
        _local.ready = True
    overload, cu_kernel, argtypes = plan
    params = pack(overload._prepare_args, argtypes, args)
    cfg = _configs.get((grid, block)) or _config(grid, block)
    core = _core or _load_core()
    core[0](core[2], cfg, cu_kernel, *params)


def pack(prepare_args, argtypes, args) -> list:
    """The kernel parameters for ``args`` (of numba types ``argtypes``), as numba's
    ``_Kernel.launch`` builds them: a device array directly (``meminfo, parent, size, itemsize,
    data pointer, *shape, *strides``), anything else through ``prepare_args`` (the overload's
    ``_prepare_args``)."""
    params = []
    retr = []
    for ty, a in zip(argtypes, args):
        c = a.__class__
        if c is tuple or c is int or c in _SCALARS:
            prepare_args(ty, a, 0, retr, params)
        else:
            params += (0, 0, a.size, a.dtype.itemsize, a.device_ctypes_pointer.value, *a.shape,
                       *a.strides)
    return params
