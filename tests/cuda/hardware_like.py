"""Make the simulator's device arrays answer like the hardware's (test support).

numba-cuda's simulator keeps a device array as a ``FakeCUDAArray`` that forwards every unknown
attribute to a NumPy array: ``flags`` is NumPy's flags object (``.owndata`` works), ``base``,
``data``, ``astype``, ``sum`` ... all exist. A real ``DeviceNDArray`` has a fixed, smaller API and
its ``flags`` is a plain dict (``{'C_CONTIGUOUS': ..., 'F_CONTIGUOUS': ...}``). Code that leans
on the NumPy-ness of the simulator passes every simulator test and fails on a GPU — issue 11:
``accumulate_into_leaf`` read ``data.base.flags.owndata`` and every training step through a view
died with ``AttributeError: 'dict' object has no attribute 'owndata'`` on an H100.

``install()`` patches ``FakeCUDAArray`` for the whole simulator run (``conftest.py``):

* ``flags`` returns a dict with the hardware's keys;
* attribute forwarding is limited to the names a hardware ``DeviceNDArray`` has
  (``HARDWARE_API``, read off numba-cuda 0.30.4's ``cudadrv/devicearray.py``); anything else
  raises ``AttributeError`` saying it would fail on a GPU.

The simulator's own machinery reads ``_ary`` and a few NumPy names directly on the wrapped
array, not through the wrapper, so kernels still launch.
"""
from __future__ import annotations

#: Attributes of numba-cuda's DeviceNDArray (class and instance), besides dunders: what jitgrad
#: may use on a raw device buffer. ``size``/``shape``/``strides``/``dtype``/``ndim`` are instance
#: attributes set in ``DeviceNDArrayBase.__init__``; ``nbytes``/``alloc_size`` properties.
HARDWARE_API = frozenset({
    "T", "as_cuda_arg", "bind", "copy_to_device", "copy_to_host", "device_ctypes_pointer",
    "flags", "get_ipc_handle", "getitem", "is_c_contiguous", "is_f_contiguous", "nbytes",
    "ravel", "reshape", "setitem", "split", "squeeze", "transpose", "view",
    "alloc_size", "dtype", "gpu_data", "ndim", "shape", "size", "stream", "strides",
    "_numba_type_", "_dummy", "_default_stream",
})

_installed = []


def _flags(self):
    f = self._ary.flags
    return {"C_CONTIGUOUS": bool(f.c_contiguous), "F_CONTIGUOUS": bool(f.f_contiguous)}


def install() -> None:
    """Patch the simulator's FakeCUDAArray (idempotent)."""
    if _installed:
        return
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    forward = FakeCUDAArray.__getattr__

    def __getattr__(self, name):  # noqa: N807 - the patched dunder
        if not name.startswith("__") and name not in HARDWARE_API and name != "_ary":
            raise AttributeError(
                f"{name!r}: a numba-cuda DeviceNDArray on a GPU has no such attribute (the "
                "simulator's FakeCUDAArray forwards it to NumPy); go through CudaArray / "
                "jitgrad._storage instead")
        return forward(self, name)

    FakeCUDAArray.__getattr__ = __getattr__
    FakeCUDAArray.flags = property(_flags)
    _installed.append((FakeCUDAArray, forward))
