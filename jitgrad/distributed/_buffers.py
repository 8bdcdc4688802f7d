"""Tensors as MPI buffers, and PyTorch's reduce ops as MPI ops.

A contiguous CPU tensor's NumPy storage *is* the buffer (mpi4py reads it through the buffer
protocol, no copy). Anything else goes through a contiguous staging array that is copied back
into the tensor when the operation completes:

* a non-contiguous CPU tensor: a contiguous host copy;
* a CUDA tensor with a CUDA-aware MPI (``cuda_aware()``): a contiguous device array passed by
  its ``__cuda_array_interface__`` (no host copy);
* a CUDA tensor otherwise: a host copy (one device->host transfer before, one host->device after).
"""
from __future__ import annotations

import ctypes
import enum
import os

import numpy as np

from ..tensor import Tensor

__all__ = ["ReduceOp", "mpi_op", "Staged", "cuda_aware"]


class _RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"


_RedOpType.__name__ = "RedOpType"


class ReduceOp:
    """``torch.distributed.ReduceOp``: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``,
    ``BAND``, ``BOR``, ``BXOR``."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM
    UNUSED = _RedOpType.UNUSED


_OPS: dict = {}  # (op, dtype kind) -> MPI op, filled on first use


def mpi_op(MPI, op, dtype):
    """The MPI op computing ``op`` on ``dtype`` (a NumPy dtype). AVG is SUM here (the caller
    divides). Booleans reduce logically (SUM/MAX/BOR: or, PRODUCT/MIN/BAND: and, BXOR: xor)."""
    found = _OPS.get((op, dtype.kind))
    if found is None:
        found = _OPS[(op, dtype.kind)] = _mpi_op(MPI, op, dtype)
    return found


def _mpi_op(MPI, op, dtype):
    if not isinstance(op, _RedOpType):
        raise ValueError(f"Invalid reduce op {op!r}: expected a torch.distributed.ReduceOp")
    kind = dtype.kind
    if op is _RedOpType.PREMUL_SUM or op is _RedOpType.UNUSED:
        raise ValueError(f"ReduceOp.{op.name} is not supported by the MPI backend")
    if op is _RedOpType.AVG and kind != "f":
        raise RuntimeError(f"ReduceOp.AVG needs a floating point tensor (got {dtype}): the "
                           "average of integers is not an integer; reduce with SUM and divide")
    if kind == "b":
        return {_RedOpType.SUM: MPI.LOR, _RedOpType.MAX: MPI.LOR, _RedOpType.BOR: MPI.LOR,
                _RedOpType.PRODUCT: MPI.LAND, _RedOpType.MIN: MPI.LAND,
                _RedOpType.BAND: MPI.LAND, _RedOpType.BXOR: MPI.LXOR}[op]
    if kind == "f" and op in (_RedOpType.BAND, _RedOpType.BOR, _RedOpType.BXOR):
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with a floating point tensor "
                           f"({dtype})")
    return {_RedOpType.SUM: MPI.SUM, _RedOpType.AVG: MPI.SUM, _RedOpType.PRODUCT: MPI.PROD,
            _RedOpType.MIN: MPI.MIN, _RedOpType.MAX: MPI.MAX, _RedOpType.BAND: MPI.BAND,
            _RedOpType.BOR: MPI.BOR, _RedOpType.BXOR: MPI.BXOR}[op]


_CUDA_AWARE: list = []


def cuda_aware() -> bool:
    """Whether the MPI library moves device memory itself. ``JITGRAD_MPI_CUDA_AWARE=0/1``
    overrides; otherwise MPICH's and Open MPI's ``MPIX_Query_cuda_support()`` is asked (both
    export it), found in the MPI library the process has loaded."""
    if not _CUDA_AWARE:
        env = os.environ.get("JITGRAD_MPI_CUDA_AWARE")
        if env is not None:
            _CUDA_AWARE.append(env.strip().lower() in ("1", "true", "yes"))
        else:
            _CUDA_AWARE.append(_query_cuda_support())
    return _CUDA_AWARE[0]


def _query_cuda_support() -> bool:
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libmpi" in line and ".so" in line}
    except OSError:
        return False
    for path in sorted(libs):
        try:
            fn = ctypes.CDLL(path).MPIX_Query_cuda_support
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        return bool(fn())
    return False


class Staged:
    """``tensor`` as an MPI buffer (``.buf``) plus what completes the operation
    (``.write_back()``: copy a staged result into the tensor, bump its version)."""

    __slots__ = ("tensor", "buf", "_staged")

    def __init__(self, tensor, fill=True):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
        self.tensor = tensor
        data = tensor._data
        if data.__class__ is np.ndarray:
            if data.flags.c_contiguous:
                self.buf, self._staged = data, False
            else:
                self.buf = np.ascontiguousarray(data) if fill else np.empty(data.shape,
                                                                          data.dtype)
                self._staged = True
        elif cuda_aware():
            self.buf = data.contiguous() if fill else type(data).empty(data.shape, data.dtype)
            self._staged = self.buf is not data
        else:
            self.buf = data.to_host() if fill else np.empty(data.shape, data.dtype)
            self._staged = True

    def write_back(self):
        t = self.tensor
        if self._staged:
            from ..autograd import no_grad
            with no_grad():
                t.copy_(Tensor._make(self.buf, False))
        else:
            t._vc.value += 1  # MPI wrote into the storage: an in-place write


def host_or_device_empty(like, shape):
    """A contiguous staging array for results gathered from ``like``'s kind of storage."""
    data = like._data
    if data.__class__ is np.ndarray or not cuda_aware():
        return np.empty(shape, data.dtype)
    return type(data).empty(shape, data.dtype)
