"""In-place ops (``add_``, ``mul_``, ``+=``, ``zero_``, ``copy_`` ...) and the version counter.

Outside a recorded graph they write straight into the storage and bump the version counter, so a
node that saved the tensor notices at backward time. Inside a graph they compute the out-of-place
result from a snapshot of the old value, write it back, and rebase the tensor's ``grad_fn`` on the
new node, which is how PyTorch's in-place autograd behaves.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .index import check_inplace

__all__ = ["apply_inplace", "add_", "sub_", "mul_", "div_", "pow_", "zero_", "fill_", "copy_",
           "clamp_", "unary_inplace"]


def _check_cast(self, result_dt):
    sd = self.dtype
    if result_dt._category > sd._category:
        raise RuntimeError(f"result type {_word(result_dt)} can't be cast to the desired output "
                           f"type {_word(sd)}")


def _word(dt):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
            "bool": "Bool", "float16": "Half"}.get(dt.name, dt.name)


def _recording(self, args):
    return grad_mode.is_grad_enabled() and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))


def _write(self, res_data):
    if res_data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(res_data.shape)}")
    if self._data.__class__ is not np.ndarray:
        _device_write(self._data, res_data)
    else:
        np.copyto(self._data, res_data, casting="unsafe")
    self._vc.value += 1


def _device_write(dst, src):
    """Write ``src`` (a CUDA storage, or a scalar) into the CUDA storage ``dst`` (any strides),
    casting to ``dst``'s dtype: one kernel, no transfer."""
    from ..backends import cuda as B
    if src.__class__ is np.ndarray:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           "two devices, cuda:0 and cpu!")
    if not hasattr(src, "kview"):  # a Python/NumPy scalar
        src = B.full((1,), src, dst.dtype)
        B.kernels().layout.copy_into(dst.kview(), src)
        return
    B.kernels().layout.copy_into(dst.kview(), src.kview())


def apply_inplace(self: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run out-of-place ``fn(self, *args)`` and make its result ``self``'s new value."""
    check_inplace(self)
    if not _recording(self, args):
        with grad_mode.no_grad():
            res = fn(self, *args, **kwargs)
        _check_cast(self, res.dtype)
        _write(self, res._data)
        return self
    snap = Tensor._make(self._data.copy(), self._requires_grad)
    snap._grad_fn, snap._output_nr = self._grad_fn, self._output_nr
    snap._grad_acc = self._grad_acc
    res = fn(snap, *args, **kwargs)
    _check_cast(self, res.dtype)
    if self._base is not None:
        # a view: write through the base so the base's graph records it (CopySlices)
        from .index import setitem
        setitem(self, Ellipsis, res)
        return self
    _write(self, res._data)
    if res._grad_fn is not None:
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = True
        # the node saved ``res`` as its output: let later saves of ``self`` see the same history
    return self


def _fast_binary(np_fn, self, other):
    """No-graph fast path: NumPy in place, with PyTorch's casting rule."""
    if self._data.__class__ is not np.ndarray or (
            isinstance(other, Tensor) and other._data.__class__ is not np.ndarray):
        from . import functional as F
        fn = {np.add: F.add, np.subtract: F.sub, np.multiply: F.mul, np.true_divide: F.div}[np_fn]
        return apply_inplace(self, fn, other)
    check_inplace(self)
    _check_cast(self, D.result_type(self, other))
    o = other._data if isinstance(other, Tensor) else other
    if isinstance(other, Tensor):
        full = np.broadcast_shapes(o.shape, self._data.shape)
        if full != self._data.shape:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                               f"broadcast shape {list(full)}")
    np_fn(self._data, o, out=self._data, casting="unsafe")
    self._vc.value += 1
    return self


def add_(self, other, *, alpha=1):
    from .functional import add, mul
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    if not _recording(self, (other,)):
        return _fast_binary(np.add, self, other)
    return apply_inplace(self, add, other)


def sub_(self, other, *, alpha=1):
    from .functional import mul, sub
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    if not _recording(self, (other,)):
        return _fast_binary(np.subtract, self, other)
    return apply_inplace(self, sub, other)


def mul_(self, other):
    from .functional import mul
    if not _recording(self, (other,)):
        return _fast_binary(np.multiply, self, other)
    return apply_inplace(self, mul, other)


def div_(self, other, *, rounding_mode=None):
    from .functional import div
    if rounding_mode is None and not _recording(self, (other,)) and self.is_floating_point():
        return _fast_binary(np.true_divide, self, other)
    return apply_inplace(self, div, other, rounding_mode=rounding_mode)


def pow_(self, exponent):
    from .functional import pow as pow_fn
    return apply_inplace(self, pow_fn, exponent)


def zero_(self):
    return fill_(self, 0)


def fill_(self, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        value = value.item()
    if not _recording(self, ()):
        check_inplace(self)
        if self._data.__class__ is not np.ndarray:
            _device_write(self._data, value)
        else:
            self._data[...] = value
        self._vc.value += 1
        return self
    return apply_inplace(self, lambda s: s * 0 + value)


def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if not _recording(self, (src,)) and (self._data.__class__ is not np.ndarray or
                                         src._data.__class__ is not np.ndarray):
        check_inplace(self)
        from .shape import expand
        if self._data.__class__ is np.ndarray:  # device -> host: one counted download
            np.copyto(self._data, np.broadcast_to(src._host(), self._data.shape),
                      casting="unsafe")
        else:
            if src._data.__class__ is np.ndarray:  # host -> device: one counted upload
                src = src.to(self.device)
            _device_write(self._data, expand(src, tuple(self.shape))._data)
        self._vc.value += 1
        return self
    if not _recording(self, (src,)):
        check_inplace(self)
        try:
            np.copyto(self._data, np.broadcast_to(src._data, self._data.shape), casting="unsafe")
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self.ndim else 1}"
                               f") must match the size of tensor b ({src._data.shape[-1]}) at "
                               "non-singleton dimension 0") from None
        self._vc.value += 1
        return self
    from .shape import expand
    return apply_inplace(self, lambda s, x: s * 0 + expand(x, tuple(s.shape)).to(s.dtype), src)


def clamp_(self, min=None, max=None):  # noqa: A002
    from .functional import clamp
    return apply_inplace(self, clamp, min, max)


def unary_inplace(fn):
    """``x.exp_()`` and friends from the out-of-place ``fn``."""
    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method
