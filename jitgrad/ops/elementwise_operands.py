"""Elementwise operands: broadcasting, the output's dim order, and each operand as the kernel's
flat argument.

``call`` (ops/elementwise_call.py) and its fast path, the compiled replays (_compile/fused.py) and
the node's VJP launch prepare their kernel arguments here: the broadcast shape (PyTorch's
``infer_size`` and its error), the layout PyTorch allocates the output with (``_output_layout``,
TensorIterator's rule in _iter_layout) and the operands flattened into that order in the kernel
dtype, scalars typed as ATen's TensorIterator casts them, on the host or as CUDA buffers.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._iter_layout import elementwise_output_layout
from ..tensor import Tensor

__all__ = ["broadcast_shapes", "check_same_device"]


def broadcast_shapes(*shapes):
    """The broadcast shape of ``shapes``, folded left to right as PyTorch's TensorIterator does
    (``infer_size``), so a mismatch names the shape accumulated so far as "a", the operand being
    added as "b", and the first mismatching dimension from the right."""
    out = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:
        if s != out:
            out = _infer_size(out, s)
    return out


def _infer_size(a, b):
    ndim = max(len(a), len(b))
    out = [1] * ndim
    for i in range(ndim - 1, -1, -1):
        off = ndim - 1 - i
        ka = a[len(a) - 1 - off] if len(a) - 1 - off >= 0 else 1
        kb = b[len(b) - 1 - off] if len(b) - 1 - off >= 0 else 1
        if ka != kb and ka != 1 and kb != 1:
            raise RuntimeError(f"The size of tensor a ({ka}) must match the size of tensor b "
                               f"({kb}) at non-singleton dimension {i}")
        out[i] = kb if ka == 1 else ka
    return tuple(out)


def _flat(a: np.ndarray, shape, npdt) -> np.ndarray:
    """``a`` as a flat contiguous array of ``shape`` and dtype (copies only when it must)."""
    if a.dtype != npdt:
        a = a.astype(npdt)
    if a.shape != shape:
        return np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1)
    # reshape(-1) is a view of a contiguous array and a C-order copy of any other, as
    # ascontiguousarray(a).reshape(-1) (0-d included), without its extra call
    return a.reshape(-1)


# ops whose ATen meta function allocates a C-contiguous output whatever the operands' layouts
# (pow.Scalar: ``set_output_raw_strided(0, exp.sizes(), {}, ...)``)
_CONTIGUOUS_OUTPUT = frozenset({"rpow"})


def _output_layout(op, args, aux, shape):
    """``(perm, strides)``: the dims, outermost first, of the layout PyTorch gives this op's
    output, or None for C-contiguous, and the output's strides where a size-1 dim's differ from
    the dense ones of ``perm`` (TensorIterator: ``_iter_layout.elementwise_output_layout``).
    (None, None) when every tensor operand has C strides exactly (a flag read each): NumPy's
    flag, as ATen's ``is_contiguous``, ignores size-1 dims, whose strides TensorIterator's sort
    still reads when a scalar or broadcasting rules out its fast setup."""
    arrays = [a._data for a in args if isinstance(a, Tensor)]
    for name, v in aux.items():  # ATen's operand order: where's condition first
        if isinstance(v, Tensor):
            if name == "cond":
                arrays.insert(0, v._data)
            else:
                arrays.append(v._data)
    if op.name in _CONTIGUOUS_OUTPUT:
        return None, None
    return arrays_layout(arrays, shape,
                         any(a is not None and not isinstance(a, Tensor) for a in args))


def arrays_layout(arrays, shape, scalar):
    """``_output_layout`` of an elementwise op over the host or CUDA ``arrays`` (in ATen's
    operand order) and, with ``scalar``, a Scalar operand: the forward's rule, and the one the
    node's VJP kernel lays its gradients out by (PyTorch computes them with elementwise ops)."""
    for d in arrays:
        if not d.flags.c_contiguous or (1 in d.shape and not has_c_strides(d)):
            break
    else:
        return None, None
    operands = [(d.shape, tuple(s // d.dtype.itemsize for s in d.strides)) for d in arrays]
    if scalar:
        operands.append(((), ()))  # ATen wraps a Scalar operand as a 0-dim tensor
    return elementwise_output_layout(shape, operands)


def has_c_strides(d) -> bool:
    """Whether array ``d`` (host or CUDA) has exactly the C strides of its shape, size-1 dims
    included (the strides a fresh C-contiguous array gets)."""
    step = d.itemsize
    for n, s in zip(reversed(d.shape), reversed(d.strides)):
        if s != step:
            return False
        step *= n
    return True


def _restrided(out, strides):
    """Host array ``out`` with the element ``strides`` (which differ from its own only at
    size-1 dims, so address the same elements)."""
    return np.lib.stride_tricks.as_strided(out, out.shape,
                                           tuple(s * out.itemsize for s in strides))


def _device_restrided(out, strides):
    """``_restrided`` of a CudaArray."""
    return out.strided(out.shape, strides, out.offset)


def _permuted(flat, perm):
    """``flat`` for a kernel run in ``perm``'s dim order: each operand (aligned to the output's
    rank) permuted first, so the flat output is the permuted layout's buffer and operands
    already in that layout are not copied."""
    nd = len(perm)

    def permuted_flat(a, shape, dtype):
        if a.ndim != nd:
            a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
        return flat(a.transpose(perm), shape, dtype)

    return permuted_flat


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _operands(op, args, aux, shape, cnp, flat, half):
    """Kernel operands by name (arrays flattened to ``shape`` in the kernel dtype by ``flat``,
    scalars typed) and the array/scalar pattern, in ``op.arg_names`` order. ``half``: the op
    computes in float16 (with float32 kernels); a scalar operand named in ``op.half_rounded``
    is rounded to half first, as ATen's TensorIterator casts it to the common dtype; the others
    enter as float (ATen's opmath scalar). A tensor of another dtype (a 0-d one, which type
    promotion lets stay float32 or an integer) is cast to half the same way."""
    values, kinds = {}, []
    rounded = op.half_rounded if half else ()
    for name, a in zip(op.inputs, args):
        if isinstance(a, Tensor):
            d = a._data
            if half and d.dtype != _F16 and (name in rounded or d.shape != ()):
                with np.errstate(over="ignore"):  # beyond half's range: inf
                    d = d.astype(_F16)
            values[name] = flat(d, shape, cnp)
            kinds.append("a")
        else:
            values[name] = _scalar(a, cnp, name in rounded)
            kinds.append("s")
    for name, kind in op.aux.items():
        v = aux[name]
        if isinstance(v, Tensor):
            d = v._data
            if half and kind != "bool" and d.dtype != _F16 and name in rounded:
                with np.errstate(over="ignore"):
                    d = d.astype(_F16)
            values[name] = flat(d, shape, _BOOL if kind == "bool" else cnp)
            kinds.append("a")
        else:
            values[name] = np.bool_(v) if kind == "bool" else _scalar(v, cnp, name in rounded)
            kinds.append("s")
    return values, tuple(kinds)


def _scalar(v, cnp, half):
    """A Python scalar in the kernel dtype: integers out of its range wrap (C casts, as PyTorch:
    ``uint8_tensor + -1`` adds 255); ``half``: rounded to half first (beyond its range: inf)."""
    if half:
        with np.errstate(over="ignore"):
            return cnp.type(np.float16(v))
    try:
        return cnp.type(v)
    except OverflowError:
        if cnp.kind not in "iub" or not isinstance(v, (int, np.integer)):
            raise
        bits = 8 * cnp.itemsize
        w = int(v) & ((1 << bits) - 1)
        if cnp.kind == "i" and w >= 1 << (bits - 1):
            w -= 1 << bits
        return cnp.type(w)


def _data_of(args, perm=None):
    """The one tensor operand's array before flattening (backends/vml.py's host routines), in
    the kernel's dim order ``perm``."""
    d = next((a._data for a in args if isinstance(a, Tensor)), None)
    if perm is not None and d is not None and d.ndim == len(perm):
        d = d.transpose(perm)
    return d


def _shapes(args, cond):
    """The operands' shapes in PyTorch's order for broadcasting (and its error message):
    ``where``'s condition first, then the inputs."""
    shapes = [a._data.shape for a in args if isinstance(a, Tensor)]
    if isinstance(cond, Tensor):
        shapes.insert(0, cond._data.shape)
    return shapes


_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_ND = np.ndarray

def check_same_device(tensors):
    """Raise PyTorch's error when ``tensors`` (Tensors; other objects ignored) live on more than
    one device; the common device otherwise (None when there is no Tensor)."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            d = t.device
            if dev is None:
                dev = d
            elif d != dev:
                from .._cuda_array import device_error
                raise device_error(dev, d)
    return dev


def _device_flat(data, shape, dtype):
    return data.flat(shape, dtype)


def _cpu_out(out):
    return out.reshape(-1)


def _device_out(out):
    return out.buf


def _kernel_dtype(ct):
    """The dtype kernels compute in: float16 runs in float32 (Numba has no CPU half math),
    and is rounded back to half on output, as PyTorch's CPU kernels do."""
    if ct is None:
        return _BOOL
    return _F32 if ct is D.float16 else ct.np
