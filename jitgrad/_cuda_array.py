"""Storage of a CUDA tensor: a strided view of a flat numba-cuda device buffer.

A CUDA ``Tensor`` keeps a :class:`CudaArray` in ``_data`` where a CPU tensor keeps a NumPy
array. It answers the metadata the core reads from ``_data`` (``shape``, ``dtype``, ``ndim``,
``size``, ``itemsize``, ``strides`` in bytes, ``flags.c_contiguous``, ``base``), so shape logic,
dtype rules and autograd bookkeeping run unchanged; the numerical work is routed to
``backends.cuda`` by the ops that support the device.

Anything else — a NumPy function, ``np.array(x)``, indexing, an unknown attribute — raises
``NotImplementedError`` naming the jitgrad op that tried it and the device: an op without a
device path never silently copies to the host and back (the ops that deliberately do, and
say so, go through ``ops/host_staged.py``).

Views (transpose/permute/expand/squeeze/unsqueeze/t, basic slicing, view/reshape of a
contiguous tensor) are ``CudaArray``\\ s sharing ``buf`` with other strides/offset; kernels read
them through ``backends.cuda_kernels.View`` without a copy.

This module does not import numba.cuda.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from ._size import device

__all__ = ["CudaArray", "CUDA0", "c_strides", "device_error"]

CUDA0 = device("cuda", 0)


def c_strides(shape) -> tuple:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))


_PKG = os.path.dirname(os.path.abspath(__file__))


def _caller_op() -> str:
    """The innermost jitgrad function (outside this module) on the stack: the op to name."""
    f = sys._getframe(2)
    here = os.path.abspath(__file__)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if fn.startswith(_PKG) and fn != here:
            rel = os.path.relpath(fn, os.path.dirname(_PKG))
            return f"{f.f_code.co_name} ({rel})"
        f = f.f_back
    return "<outside jitgrad>"


def unsupported(what: str = "") -> NotImplementedError:
    op = _caller_op()
    extra = f" [{what}]" if what else ""
    return NotImplementedError(
        f"jitgrad: the operation {op} is not implemented for device 'cuda:0' yet{extra}. "
        "Move the tensor to the host explicitly with .cpu() if you need it.")


def device_error(a, b) -> RuntimeError:
    """PyTorch's (TensorIterator) message for operands on two devices."""
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a} and {b}!")


def _same_memory(a, b) -> bool:
    """Do two device buffers overlap? (A dtype view reinterprets its base's buffer as another
    array object, so ``buf is`` alone misses it.)"""
    ary_a = getattr(a, "_ary", None)  # the simulator's FakeCUDAArray wraps a NumPy array
    if ary_a is not None:
        return bool(np.shares_memory(ary_a, b._ary))
    if not (a.nbytes and b.nbytes):
        return False
    pa, pb = a.device_ctypes_pointer.value, b.device_ctypes_pointer.value
    return pa < pb + b.nbytes and pb < pa + a.nbytes


class _Flags:
    """The NumPy flags the core reads (``owndata``: not a view; device storage is writeable)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata", "writeable")

    def __init__(self, c, f, owndata):
        self.c_contiguous = c
        self.f_contiguous = f
        self.owndata = owndata
        self.writeable = True


class CudaArray:
    """``buf`` (1-D device array), ``shape``, ``st`` (strides in elements), ``offset``."""

    __slots__ = ("buf", "shape", "st", "offset", "dtype", "is_view")

    __array_priority__ = 10_000
    device = CUDA0

    def __init__(self, buf, shape, st=None, offset=0, is_view=False):
        self.buf = buf
        self.shape = tuple(int(s) for s in shape)
        self.st = c_strides(self.shape) if st is None else tuple(int(s) for s in st)
        self.offset = int(offset)
        self.dtype = np.dtype(buf.dtype)
        self.is_view = is_view

    # ------------------------------------------------------------------ construction

    @staticmethod
    def wrap(dev) -> CudaArray:
        """A fresh C-contiguous device array of any rank (kernel output) as a CudaArray."""
        shape = tuple(int(s) for s in dev.shape)
        n = 1
        for s in shape:
            n *= s
        return CudaArray(dev.reshape(n) if len(shape) != 1 else dev, shape)

    @staticmethod
    def empty(shape, dtype) -> CudaArray:
        from .backends import cuda as B
        shape = tuple(int(s) for s in shape)
        n = 1
        for s in shape:
            n *= s
        return CudaArray(B.empty((n,), dtype), shape)

    @staticmethod
    def from_host(a) -> CudaArray:
        from .backends import cuda as B
        a = np.require(a, requirements="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
        return CudaArray(B.to_device(a.reshape(-1)), a.shape)

    @staticmethod
    def empty_strided(shape, st, dtype, fill=None) -> CudaArray:
        """A fresh buffer of exactly ``shape``'s size viewed with the dense element strides
        ``st`` (a channels-last or preserved layout: ATen's empty_strided), filled with
        ``fill`` unless None."""
        from .backends import cuda as B
        n = 1
        for s in shape:
            n *= int(s)
        buf = B.empty((n,), dtype)
        if fill is not None and n:
            B.kernels().layout.fill(buf, fill)
        return CudaArray(buf, shape, st)

    @staticmethod
    def from_host_strided(a, st) -> CudaArray:
        """Upload host array ``a`` keeping its dense element strides ``st`` (PyTorch's
        ``.to(device)`` keeps them): its elements go in memory order, one transfer."""
        from .backends import cuda as B
        order = sorted(range(a.ndim), key=lambda d: (-st[d], d))  # outermost dim first
        stored = np.ascontiguousarray(a.transpose(order)).reshape(-1)
        return CudaArray(B.to_device(stored), a.shape, st)

    # ------------------------------------------------------------------ metadata

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        """In bytes, like NumPy's."""
        return tuple(s * self.dtype.itemsize for s in self.st)

    def is_contiguous(self) -> bool:
        if self.size == 0:  # ATen's compute_contiguous (and NumPy's flag): any strides
            return True
        return all(a == b for a, b, s in zip(self.st, c_strides(self.shape), self.shape) if s != 1)

    @property
    def flags(self):
        rev = tuple(reversed(self.shape))
        f = all(a == b for a, b, s in zip(reversed(self.st), c_strides(rev), rev) if s != 1)
        return _Flags(self.is_contiguous(), f, not self.is_view)

    @property
    def base(self):
        """For views, the whole buffer as a CudaArray (mirrors ``ndarray.base``); never the raw
        numba-cuda array, whose attributes differ between the simulator and the hardware."""
        return CudaArray(self.buf, (int(self.buf.size),)) if self.is_view else None

    def spans_buffer(self) -> bool:
        """Does this array start at the buffer's first element and cover all of it?"""
        return self.offset == 0 and self.size == int(self.buf.size)

    # ------------------------------------------------------------------ device-side helpers

    def kview(self):
        """The kernel layer's ``View`` of this storage (imports numba.cuda)."""
        from .backends.cuda_kernels import View
        return View(self.buf, self.shape, self.st, self.offset)

    def flat(self, shape=None, dtype=None):
        """A flat contiguous device array of ``shape`` (broadcast) and ``dtype`` (cast); the
        buffer itself (no kernel) when it already is that."""
        shape = self.shape if shape is None else tuple(shape)
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        n = 1
        for s in shape:
            n *= s
        if shape == self.shape and dtype == self.dtype and self.is_contiguous():
            if self.offset == 0 and self.buf.shape[0] == n:
                return self.buf
            return self.buf[self.offset:self.offset + n]
        from .backends import cuda as B
        out = B.kernels().layout.contiguous(self.kview().expand(shape), dtype)
        return out.reshape(n) if out.ndim != 1 else out

    def contiguous(self, dtype=None) -> CudaArray:
        if dtype is None and self.is_contiguous():
            return self
        return CudaArray(self.flat(None, dtype), self.shape)

    def copy(self) -> CudaArray:
        from .backends import cuda as B
        if self.is_contiguous():
            out = B.empty((self.size,), self.dtype)
            if self.size:
                B.copy_device(out, self.flat())
            return CudaArray(out, self.shape)
        return CudaArray(self.flat(), self.shape)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self.copy() if copy else self
        return CudaArray(self.flat(None, dtype), self.shape)

    def to_host(self) -> np.ndarray:
        """One counted device->host transfer."""
        from .backends import cuda as B
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        return B.to_host(self.flat()).reshape(self.shape)

    def copy_strided(self, st, dtype=None) -> CudaArray:
        """A copy (cast to ``dtype``) laid out with the dense element strides ``st``: the
        strided copy kernel writes through them (clone/contiguous/to in a memory format)."""
        out = CudaArray.empty_strided(self.shape, st, self.dtype if dtype is None else dtype)
        if out.size:
            from .backends import cuda as B
            B.kernels().layout.copy_into(out.kview(), self.kview())
        return out

    def to_host_strided(self) -> np.ndarray:
        """One device->host transfer of an array whose element strides are dense (not
        overlapping, no gaps): the host array gets the same strides (PyTorch's ``.cpu()``)."""
        from .backends import cuda as B
        n = self.size
        flat = B.to_host(self.buf[self.offset:self.offset + n])
        isz = self.dtype.itemsize
        return np.lib.stride_tricks.as_strided(flat, self.shape, tuple(s * isz for s in self.st))

    def strided(self, shape, st, offset) -> CudaArray:
        """A view sharing ``buf``."""
        return CudaArray(self.buf, shape, st, offset, is_view=True)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        shape = list(int(s) for s in shape)
        if -1 in shape:
            k = 1
            for s in shape:
                if s != -1:
                    k *= s
            shape[shape.index(-1)] = self.size // k if k else 0
        shape = tuple(shape)
        st = self.view_strides(shape)
        if st is not None:
            return self.strided(shape, st, self.offset)
        c = self.contiguous()  # a copy, like numpy's reshape of a non-contiguous array
        return CudaArray(c.buf, shape, None, c.offset)

    def view_strides(self, shape):
        """Strides of ``shape`` as a view of this storage without a copy, or None (the one rule
        for CPU and CUDA tensors: ``_storage.view_strides``)."""
        from ._storage import view_strides
        return view_strides(self.shape, self.st, shape)

    def expand_dims(self, d):
        shape = list(self.shape)
        st = list(self.st)
        shape.insert(d, 1)
        st.insert(d, 0)
        return self.strided(shape, st, self.offset)

    def broadcast_to(self, shape):
        v = self.kview().expand(shape)
        return self.strided(v.shape, v.strides, self.offset)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        return self.strided(tuple(self.shape[a] for a in axes), tuple(self.st[a] for a in axes),
                            self.offset)

    def swapaxes(self, d0, d1):
        axes = list(range(self.ndim))
        axes[d0], axes[d1] = axes[d1], axes[d0]
        return self.transpose(axes)

    @property
    def T(self):  # noqa: N802 - numpy's name
        return self.transpose()

    def view(self, dtype) -> CudaArray:
        """The same bytes read as ``dtype`` (``Tensor.view(dtype)``): ATen's view_dtype on the
        element strides. The caller (``shape_views._view_dtype``) has checked ATen's rules for
        a different element size: ``st[-1] == 1``, and when widening by ``k`` the last size,
        the other strides and the offset divisible by ``k``."""
        dtype = np.dtype(dtype)
        old, new = self.dtype.itemsize, dtype.itemsize
        shape, st, off, buf = list(self.shape), list(self.st), self.offset, self.buf
        if new < old:
            k = old // new
            st = [s * k for s in st[:-1]] + [1]
            shape[-1] *= k
            off *= k
        elif new > old:
            k = new // old
            st = [s // k for s in st[:-1]] + [1]
            shape[-1] //= k
            off //= k
            n = int(buf.size) // k * k  # whole wide elements only (the view ends inside them)
            if n != int(buf.size):
                buf = buf[:n]
        # a 1-D C-contiguous buffer: numba-cuda's DeviceNDArray.view reinterprets it in place
        return CudaArray(buf.view(dtype), shape, st, off, is_view=True)

    def shares_memory(self, other) -> bool:
        if not isinstance(other, CudaArray):
            return False
        return other.buf is self.buf or _same_memory(self.buf, other.buf)

    @property
    def __cuda_array_interface__(self):
        base = self.buf.__cuda_array_interface__  # absent under the simulator
        ptr = base["data"][0] + self.offset * self.dtype.itemsize
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (ptr, False),
                "strides": None if self.is_contiguous() else self.strides, "version": 3}

    # ------------------------------------------------------------------ guards

    def __array__(self, *a, **k):
        raise unsupported("it would need the data on the host")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise unsupported(f"numpy.{ufunc.__name__}")

    def __array_function__(self, func, types, args, kwargs):
        raise unsupported(f"numpy.{func.__name__}")

    def __getitem__(self, key):
        """Basic indexing (ints, slices with step > 0, None, Ellipsis): a view, as NumPy's."""
        if not isinstance(key, tuple):
            key = (key,)
        for k in key:
            if not (k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))) \
                    or isinstance(k, (bool, np.bool_)):
                raise unsupported("advanced indexing (index/mask tensors or lists)")
        n_cons = sum(1 for k in key if k is not None and k is not Ellipsis)
        shape, st, off, dim = [], [], self.offset, 0
        for k in key:
            if k is Ellipsis:
                for _ in range(self.ndim - n_cons):
                    shape.append(self.shape[dim])
                    st.append(self.st[dim])
                    dim += 1
            elif k is None:
                shape.append(1)
                st.append(0)
            elif isinstance(k, slice):
                start, stop, step = k.indices(self.shape[dim])
                m = len(range(start, stop, step))
                shape.append(m)
                st.append(self.st[dim] * step)
                off += start * self.st[dim] if m else 0
                dim += 1
            else:
                i = int(k)
                off += (i + self.shape[dim] if i < 0 else i) * self.st[dim]
                dim += 1
        shape += self.shape[dim:]
        st += self.st[dim:]
        return self.strided(shape, st, off)

    def __setitem__(self, key, value):
        raise unsupported("indexed assignment")

    def __iter__(self):
        raise unsupported("iteration")

    def _no_math(self, *a):
        raise unsupported("arithmetic on the storage")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_math
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = _no_math
    __rpow__ = __neg__ = __pos__ = __abs__ = __invert__ = __and__ = __or__ = __xor__ = _no_math
    __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = __rmatmul__ = _no_math
    __iadd__ = __isub__ = __imul__ = __itruediv__ = _no_math

    def __float__(self):
        raise unsupported("a host read")

    __int__ = __complex__ = __index__ = __float__

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(f"array.{name}")

    def __repr__(self):
        return f"CudaArray(shape={self.shape}, strides={self.st}, offset={self.offset}, " \
               f"dtype={self.dtype})"
