"""Shared pieces of the hand-written CUDA kernels: strided views, index arithmetic, dtypes.

Every kernel here reads its inputs through a :class:`View`: a flat 1-D device buffer plus
``(offset, shape, strides)`` in *elements* (strides may be 0 for broadcast dimensions, and any
permutation for transposes), so transposed, expanded or sliced operands never need a copy.
Outputs are fresh C-contiguous device arrays. Shapes and strides reach the kernels as tuples
(``UniTuple(int64, ndim)``): one compiled specialization per rank, none per size.
"""
from __future__ import annotations

import math

import numpy as np

from ..._cuda_array import c_strides  # noqa: F401 - the one definition; scan.py imports it here
from ..cuda_env import SIMULATOR, cuda, device_jit

__all__ = ["View", "as_view", "offset_of", "scalar_type", "pad", "prod", "block_size",
           "max_blocks", "SIMULATOR", "cuda"]


def prod(shape) -> int:
    p = 1
    for s in shape:
        p *= int(s)
    return p


class View:
    """A strided view of a flat device buffer (strides and offset in elements)."""

    __slots__ = ("base", "shape", "strides", "offset")

    def __init__(self, base, shape, strides=None, offset=0):
        if len(base.shape) != 1:
            raise ValueError("View.base must be a flat (1-D) device array")
        self.base = base
        self.shape = tuple(int(s) for s in shape)
        self.strides = c_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        if len(self.strides) != len(self.shape):
            raise ValueError("shape and strides differ in length")
        self.offset = int(offset)

    @property
    def dtype(self):
        return np.dtype(self.base.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    def is_contiguous(self) -> bool:
        return all(st == cs for st, cs, s in zip(self.strides, c_strides(self.shape), self.shape)
                   if s != 1)

    def permute(self, axes) -> View:
        axes = tuple(int(a) % max(self.ndim, 1) for a in axes)
        return View(self.base, tuple(self.shape[a] for a in axes),
                    tuple(self.strides[a] for a in axes), self.offset)

    def transpose(self, d0, d1) -> View:
        axes = list(range(self.ndim))
        axes[d0], axes[d1] = axes[d1], axes[d0]
        return self.permute(axes)

    def expand(self, shape) -> View:
        """Broadcast to ``shape`` (NumPy rules): new and size-1 dimensions get stride 0."""
        shape = tuple(int(s) for s in shape)
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"cannot broadcast {self.shape} to {shape}")
        st = [0] * lead
        for s_old, st_old, s_new in zip(self.shape, self.strides, shape[lead:]):
            if s_old == s_new:
                st.append(st_old)
            elif s_old == 1:
                st.append(0)
            else:
                raise ValueError(f"cannot broadcast {self.shape} to {shape}")
        return View(self.base, shape, tuple(st), self.offset)

    def kernel_args(self, ndim=None):
        """``(base, offset, shape, strides)`` with the rank padded to at least 1."""
        shape, strides = pad(self.shape, self.strides, ndim)
        return self.base, np.int64(self.offset), shape, strides

    def __repr__(self):
        return (f"View(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype})")


def pad(shape, strides, ndim=None):
    """Shape/stride tuples of at least one dimension (an empty tuple has no element type)."""
    shape, strides = tuple(shape), tuple(strides)
    want = max(len(shape), 1) if ndim is None else ndim
    while len(shape) < want:
        shape, strides = (1,) + shape, (0,) + strides
    return tuple(int(s) for s in shape), tuple(int(s) for s in strides)


def as_view(x) -> View:
    """A :class:`View` of ``x``: a View, or a C-contiguous device array of any rank."""
    if isinstance(x, View):
        return x
    shape = tuple(int(s) for s in x.shape)
    if not x.is_c_contiguous():
        raise ValueError("as_view needs a C-contiguous device array; describe other layouts "
                         "with View(base, shape, strides, offset)")
    return View(x.reshape(prod(shape)) if len(shape) != 1 else x, shape)


@device_jit
def offset_of(r, shape, strides):
    """Element offset of the C-order flat index ``r`` of ``shape`` under ``strides``."""
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        s = shape[d]
        off += (r % s) * strides[d]
        r //= s
    return off


def scalar_type(dtype):
    """The type to write in kernel source for ``dtype``: a Numba type on a real target (usable
    as ``ty(x)`` casts and in ``cuda.shared.array``), a NumPy scalar type under the simulator."""
    dtype = np.dtype(dtype)
    if SIMULATOR:
        return dtype.type
    from numba.np.numpy_support import from_dtype
    return from_dtype(dtype)


def lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return -math.inf
    if dtype.kind == "b":
        return False
    return int(np.iinfo(dtype).min)


def highest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return math.inf
    if dtype.kind == "b":
        return True
    return int(np.iinfo(dtype).max)


# Threads per block for the block-per-row kernels (reductions, softmax). The simulator runs every
# thread as a Python thread: keep its blocks small.
BLOCK = 256
SIM_BLOCK = 8


def block_size(k: int | None = None) -> int:
    """Threads per block for a row of ``k`` elements (a power of two: the tree halves it)."""
    if SIMULATOR:
        return SIM_BLOCK
    if k is not None and k <= 32:
        return 32
    return BLOCK


_max_blocks = None


def max_blocks() -> int:
    """Cap on grid size for grid-stride kernels (32 blocks per SM; 2 under the simulator)."""
    global _max_blocks
    if _max_blocks is None:
        if SIMULATOR:
            _max_blocks = 2
        else:
            try:
                dev = cuda.get_current_device()
                _max_blocks = 32 * int(dev.MULTIPROCESSOR_COUNT)
            except Exception:  # noqa: BLE001 - no device: only PTX compilation happens
                _max_blocks = 32 * 108
    return _max_blocks


# ----------------------------------------------------------------------------- float16
#
# Device kernels never do float16 arithmetic: as PyTorch's kernels (and jitgrad's CPU path),
# float16 data is computed on in float32 ("opmath") and rounded to float16 once, on output.
# Kernels that only move data (copies, gather/take, scatter/put without accumulation, fill)
# read and write float16 directly; kernels that accumulate or compute go through
# ``half_as_float32``: their float16 operands are cast to float32 copies (one cast kernel each),
# the float32 kernel runs, and its float32 results are cast back to float16.

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)


def _is_half_dtype(a) -> bool:
    return a is np.float16 or (isinstance(a, np.dtype) and a == F16)


def to_float32(x):
    """``x`` (a View or contiguous device array) as a float32 contiguous device array when it
    holds float16 (one cast kernel), else ``x`` itself."""
    v = as_view(x)
    if v.dtype != F16:
        return x
    from .layout import contiguous
    return contiguous(v, F32)


def to_half(out):
    """A float32 device array (kernel output) rounded to a fresh float16 one (round to nearest
    even, as NumPy's and PyTorch's casts); other dtypes pass through."""
    if np.dtype(out.dtype) != F32:
        return out
    from .layout import contiguous
    return contiguous(as_view(out), F16)


def half_as_float32(fn):
    """Wrap a kernel-layer entry point so float16 inputs are computed on in float32.

    Every float16 View/device-array argument becomes a float32 copy, every float16 dtype
    argument (an accumulation/output dtype) ``float32``; when any float16 input was seen, the
    float32 device arrays returned (alone or in a tuple) are cast back to float16. Integer and
    bool results (indices, masks) are returned unchanged. Calls without float16 pay one dtype
    test per argument."""
    import functools

    def up(a, seen):
        if isinstance(a, View) or hasattr(type(a), "is_c_contiguous"):  # a device array
            if np.dtype(a.dtype) == F16:
                seen.append(True)
                return to_float32(a)
            return a
        if _is_half_dtype(a):  # a float16 accumulation/output dtype
            seen.append(True)
            return F32
        return a

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        seen = []
        args = tuple(up(a, seen) for a in args)
        kwargs = {k: up(v, seen) for k, v in kwargs.items()}
        out = fn(*args, **kwargs)
        if not seen:
            return out
        if isinstance(out, tuple):
            return tuple(to_half(o) for o in out)
        return to_half(out)

    wrapper.__wrapped_half__ = fn
    return wrapper
