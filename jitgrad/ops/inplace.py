"""In-place ops (``add_``, ``mul_``, ``+=``, ``zero_``, ``copy_`` ...) and the version counter.

Outside a recorded graph they write straight into the storage and bump the version counter, so a
node that saved the tensor notices at backward time. Inside a graph they compute the out-of-place
result from a snapshot of the old value, write it back, and rebase the tensor's ``grad_fn`` on the
new node, which is how PyTorch's in-place autograd behaves. A view is written through its base
(``CopySlices``); other views of the same storage get a new grad_fn when next used
(``Tensor._refresh_view``).

PyTorch's checks, in its order: views made by multi-output ops (split/chunk/unbind) or in no_grad
mode refuse in-place writes that autograd would have to record; then views of leaves and leaves
requiring grad; a written-to tensor whose elements overlap (expand) refuses ops that read it while
writing (``fill_``/``zero_``/``masked_fill_`` are allowed, as in PyTorch).
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..autograd.view_requires_grad import follow_base
from ..tensor import Tensor
from .parser_errors import parser_type_name, raise_instead

__all__ = ["apply_inplace", "add_", "sub_", "mul_", "div_", "pow_", "zero_", "fill_", "copy_",
           "clamp_", "clip_", "unary_inplace", "check_inplace"]

OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor "
                   "refers to a single memory location. Please clone() the tensor before "
                   "performing the operation.")


def check_inplace(t: Tensor, others=()) -> None:
    """PyTorch's ``check_inplace``: the errors for in-place writes autograd cannot record.
    ``others``: the op's other operands (a write of a value requiring grad is recorded)."""
    if not grad_mode.is_grad_enabled():
        return
    base = t._base
    if not (t._requires_grad or (base is not None and base._requires_grad) or any(
            isinstance(o, Tensor) and o._requires_grad for o in others)):
        return
    if base is not None:
        creation = getattr(t, "_creation", None)
        if creation is not None:
            from .composite import view_rebase_error
            raise view_rebase_error(t, creation, indirect=False)
        if base._requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    if t._grad_fn is None and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _has_overlap(a) -> bool:
    return any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))


def _aliases_elements(a) -> bool:
    """Whether two elements of strided ``a`` share memory (``unfold`` with step < size): dims
    by increasing stride, each stride past the span of the smaller ones proves there is none;
    otherwise the element offsets are compared."""
    span = a.itemsize
    for st, n in sorted((abs(st), n) for n, st in zip(a.shape, a.strides) if n > 1):
        if st < span:
            offsets = np.zeros(1, np.int64)
            for n2, st2 in zip(a.shape, a.strides):
                offsets = (offsets[:, None] + np.arange(n2, dtype=np.int64) * st2).ravel()
            return np.unique(offsets).size != offsets.size
        span += st * (n - 1)
    return False


class _Alias:
    """An array interface with the write flag on, over memory a read-only view (NumPy's
    broadcast_to, i.e. expand) shares with a writable array it keeps alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, a):
        iface = dict(a.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface
        self.owner = a


def _make_writable(t: Tensor, overlap_check: bool) -> bool:
    """For a read-only host storage: PyTorch's overlap error (``overlap_check``), or make it a
    writable alias when the memory it views is writable (expand without overlap, or fill_).
    Returns whether the storage changed (False: nothing to do, or not ours to make writable)."""
    a = t._data
    if a.__class__ is not np.ndarray or a.flags.writeable:
        return False
    if overlap_check and _has_overlap(a):
        raise RuntimeError(OVERLAP_MESSAGE)
    owner = a.base
    while isinstance(owner, np.ndarray) and not owner.flags.writeable:
        owner = owner.base
    if not isinstance(owner, np.ndarray):
        return False
    t._data = np.asarray(_Alias(a))
    return True


def _check_cast(self, result_dt, word=None):
    sd = self.dtype
    if result_dt._category > sd._category:
        word = word or _word
        raise RuntimeError(f"result type {_word(result_dt)} can't be cast to the desired output "
                           f"type {word(sd)}")


_word = D.scalar_name


_ctype_word = D.c_name  # clamp_ words its cast error with C type names


def _check_complex(self, other):
    """A Python complex operand: PyTorch's cast error (jitgrad has no complex dtypes)."""
    if other.__class__ is complex:
        name = {"float64": "ComplexDouble", "float16": "ComplexHalf"}.get(self.dtype.name,
                                                                           "ComplexFloat")
        raise RuntimeError(f"result type {name} can't be cast to the desired output type "
                           f"{_word(self.dtype)}")


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
        src = B.full((1,) if len(dst.shape) else (), src, dst.dtype)  # 0-d: (1,) won't expand
        B.kernels().layout.copy_into(dst.kview(), src)
        return
    B.kernels().layout.copy_into(dst.kview(), src.kview())


def apply_inplace(self: Tensor, fn, *args, _overlap=True, _cast_word=None, **kwargs) -> Tensor:
    """Run out-of-place ``fn(self, *args)`` and make its result ``self``'s new value.
    ``_overlap``: the op refuses a written-to tensor whose elements overlap (PyTorch's ops that
    read their output); ``fill_``-like ops do not."""
    check_inplace(self, args)
    if self._data.__class__ is np.ndarray and not self._data.flags.writeable:
        _make_writable(self, _overlap)
    if not _recording(self, args):
        with grad_mode.no_grad():
            res = fn(self, *args, **kwargs)
        _check_cast(self, res.dtype, _cast_word)
        _write(self, res._data)
        return self
    if _overlap and self._data.__class__ is np.ndarray and _has_overlap(self._data):
        raise RuntimeError(OVERLAP_MESSAGE)
    if self._base is not None:
        # another view (or the base) was written since this view's grad_fn was set: the value
        # read here is the new one, so its history must be too (PyTorch's grad_fn getter
        # replays the view on the base's current history before recording the op)
        self._refresh_view()
    snap = Tensor._make(self._data.copy(), self._requires_grad)
    snap._grad_fn, snap._output_nr = self._grad_fn, self._output_nr
    snap._grad_acc = self._grad_acc
    res = fn(snap, *args, **kwargs)
    _check_cast(self, res.dtype, _cast_word)
    if res._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(res._data.shape)}")
    if self._base is not None:
        # a view: write through the base so the base's graph records it (CopySlices); the view
        # gets its new grad_fn (AsStridedBackward0, as PyTorch) when next used
        if _aliases_elements(self._data):
            # the base gradient would count each shared element once per alias (PyTorch's own
            # result there depends on its write order): refuse rather than be silently wrong
            raise RuntimeError(
                "jitgrad cannot record an in-place operation on a view whose elements share "
                "memory (e.g. unfold() with step < size) in a graph: the gradient is "
                "ill-defined. Use the out-of-place operation, or clone() the view first.")
        if self._view_fn is None and self.__dict__.get("_view_key") is None:
            from .composite import view_replay
            self._view_fn = view_replay(self)  # expand & co: replayed by element gather
        from .index import setitem
        setitem(self, Ellipsis, res)
        return self
    _write(self, res._data)
    if res._grad_fn is not None:
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = True
        if "_views" in self.__dict__:  # views made before it required grad now do (PyTorch)
            follow_base(self)
        # the node saved ``res`` as its output: let later saves of ``self`` see the same history
    return self


def _shape_check(self, other):
    full = _broadcast(self._data.shape, other._data.shape)
    if full != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(full)}")


def _broadcast(a, b):
    from .elementwise_call import broadcast_shapes
    return broadcast_shapes(tuple(a), tuple(b))


def _fast_binary(np_fn, self, other):
    """No-graph fast path: NumPy in place, with PyTorch's casting rule."""
    if self._data.__class__ is not np.ndarray or (
            isinstance(other, Tensor) and other._data.__class__ is not np.ndarray) \
            or self._data.dtype == np.float16:
        # float16: NumPy's half loops would not follow ATen's scalar rule (a scalar rounded to
        # half or kept as float, per op: registry ``half_scalar``); the registry kernel does
        from . import functional as F
        fn = {np.add: F.add, np.subtract: F.sub, np.multiply: F.mul, np.true_divide: F.div}[np_fn]
        return apply_inplace(self, fn, other)
    check_inplace(self)
    _check_complex(self, other)
    _check_cast(self, D.result_type(self, other))
    if isinstance(other, Tensor):
        o = other._data
        if o.shape != self._data.shape:
            _shape_check(self, other)
    else:
        o = other
    try:
        np_fn(self._data, o, out=self._data, casting="unsafe")
    except ValueError:
        if not _make_writable(self, True):
            raise
        np_fn(self._data, o, out=self._data, casting="unsafe")
    self._vc.value += 1
    return self


def _other_error(name, other):
    """PyTorch's TypeError for ``x.<name>(other)`` given neither a Tensor nor a Number (the
    method's positions count from self), or None."""
    if isinstance(other, (Tensor, numbers.Number, np.number, np.bool_)):
        return None
    return TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                     f"{parser_type_name(other)}")


def add_(self, other, *, alpha=1):
    try:  # (free until raised) a wrong-type other is the parser's TypeError
        if alpha != 1:  # one fused multiply-add, as ATen (functional add)
            _check_complex(self, other)
            from .functional import add
            return apply_inplace(self, add, other, alpha=alpha)
        if not _recording(self, (other,)):  # the common case: no import statement on its path
            return _fast_binary(np.add, self, other)
        _check_complex(self, other)
        from .functional import add
        return apply_inplace(self, add, other)
    except Exception:
        raise_instead(_other_error("add_", other))


def sub_(self, other, *, alpha=1):
    try:  # (free until raised) a wrong-type other is the parser's TypeError
        if alpha != 1:  # one fused multiply-add, as ATen (functional sub)
            _check_complex(self, other)
            from .functional import sub
            return apply_inplace(self, sub, other, alpha=alpha)
        if not _recording(self, (other,)):  # the common case: no import statement on its path
            return _fast_binary(np.subtract, self, other)
        _check_complex(self, other)
        from .functional import sub
        return apply_inplace(self, sub, other)
    except Exception:
        raise_instead(_other_error("sub_", other))


def mul_(self, other):
    try:  # (free until raised) a wrong-type other is the parser's TypeError
        from .functional import mul
        if not _recording(self, (other,)):
            return _fast_binary(np.multiply, self, other)
        _check_complex(self, other)
        return apply_inplace(self, mul, other)
    except Exception:
        raise_instead(_other_error("mul_", other))


def div_(self, other, *, rounding_mode=None):
    try:  # (free until raised) a wrong-type other is the parser's TypeError
        from .functional import div
        if rounding_mode is None and not _recording(self, (other,)) and self.is_floating_point():
            return _fast_binary(np.true_divide, self, other)
        _check_complex(self, other)
        return apply_inplace(self, div, other, rounding_mode=rounding_mode)
    except Exception:
        raise_instead(_other_error("div_", other))


def pow_(self, exponent):
    from .functional import pow as pow_fn
    _check_complex(self, exponent)
    return apply_inplace(self, pow_fn, exponent)


# ----------------------------------------------------------------------------- fill_, zero_, copy_
# Inside a graph these record PyTorch's nodes (ZeroBackward0, FillBackward2/3, CopyBackwards):
# the old value gets a zero gradient, a tensor value/source gets the incoming one.


def _zero_grads(node, g):
    from .basic import zeros_like
    return (zeros_like(g),) + tuple(None for _ in node.ctx.needs_input_grad[1:])


def _fill_value_backward(node, g):
    from .basic import zeros_like
    need_self, need_value = node.ctx.needs_input_grad
    return (zeros_like(g) if need_self else None, g.sum() if need_value else None)


def _copy_backward(node, g):
    from .basic import zeros_like
    need_self, need_src = node.ctx.needs_input_grad
    return (zeros_like(g) if need_self else None, g if need_src else None)


def _zero_node(s):
    from .composite import record
    return record("ZeroBackward0", (s,), np.zeros_like(s._data), _zero_grads)


def _fill_node(s, value):
    from .composite import record
    if isinstance(value, Tensor):
        data = np.full_like(s._data, value._data.reshape(()))
        return record("FillBackward3", (s, value), data, _fill_value_backward)
    return record("FillBackward2", (s,), np.full_like(s._data, value), _zero_grads)


def _copy_node(s, src):
    from .composite import record
    if src.dtype is not s.dtype:
        src = src.to(s.dtype)
    data = np.array(np.broadcast_to(src._data, s._data.shape))
    return record("CopyBackwards", (s, src), data, _copy_backward)


def zero_(self):
    if not _recording(self, ()) or self._data.__class__ is not np.ndarray:
        return fill_(self, 0)
    return apply_inplace(self, _zero_node, _overlap=False)


def fill_(self, value):
    tensor_value = None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        tensor_value = value
        value = value.item()
    else:
        # PyTorch's checked conversion of the scalar to self's dtype (300 into int8 raises,
        # -1 into uint8 wraps, 1e300 into float32 raises)
        from .factories import _checked_fill, _one_cpu_element
        value = _checked_fill(value, self.dtype, _one_cpu_element(self.shape, self.device))
    # fill_(Tensor) on the value's device is PyTorch's copy_, which refuses a written-to tensor
    # whose elements overlap (fill_(Scalar) does not)
    overlap = tensor_value is not None and \
        tensor_value._data.__class__ is self._data.__class__
    if not _recording(self, (tensor_value,)):
        check_inplace(self)
        if overlap and self._data.__class__ is np.ndarray and not self._data.flags.writeable \
                and _has_overlap(self._data):
            raise RuntimeError(OVERLAP_MESSAGE)
        if self._data.__class__ is not np.ndarray:
            _device_write(self._data, value)
        else:
            # beyond float16's range: inf, silently (PyTorch's half conversion)
            with np.errstate(over="ignore"):
                try:
                    self._data[...] = value
                except ValueError:
                    if not _make_writable(self, False):
                        raise
                    self._data[...] = value
        self._vc.value += 1
        return self
    if self._data.__class__ is not np.ndarray:
        return apply_inplace(self, lambda s: s * 0 + value, _overlap=False)
    if tensor_value is not None and tensor_value._requires_grad:
        return apply_inplace(self, _fill_node, tensor_value, _overlap=overlap)
    return apply_inplace(self, _fill_node, value, _overlap=overlap)


def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {parser_type_name(src)}")
    if not _recording(self, (src,)) and (self._data.__class__ is not np.ndarray or
                                         src._data.__class__ is not np.ndarray):
        check_inplace(self)
        from .shape_views import expand
        if self._data.__class__ is np.ndarray:  # device -> host: one counted download
            np.copyto(self._data, np.broadcast_to(src._host(), self._data.shape),
                      casting="unsafe")
        else:
            if src._data.__class__ is np.ndarray:  # host -> device: one counted upload
                src = src.to(self.device)
            _device_write(self._data, expand(src, tuple(self.shape))._data)
        self._vc.value += 1
        return self
    if src._data.shape != self._data.shape:
        _shape_check(self, src)
    if not _recording(self, (src,)):
        check_inplace(self)
        try:
            np.copyto(self._data, np.broadcast_to(src._data, self._data.shape), casting="unsafe")
        except ValueError:
            if not _make_writable(self, True):
                raise
            np.copyto(self._data, np.broadcast_to(src._data, self._data.shape), casting="unsafe")
        self._vc.value += 1
        return self
    if self._data.__class__ is not np.ndarray:
        from .shape_views import expand
        return apply_inplace(self, lambda s, x: s * 0 + expand(x, tuple(s.shape)).to(s.dtype),
                             src)
    return apply_inplace(self, _copy_node, src)


def _clamp_inplace(name):
    def method(self, *args, **kwargs):
        from .functional_compare import _clamp, _clamp_args
        _, lo, hi = _clamp_args(name, self, args, kwargs)  # (the errors name clamp_/clip_)
        # (C type names for a scalar bound, as ATen's scalar clamp; a Tensor bound goes
        # through TensorIterator's check, which says the ScalarType names)
        word = _word if isinstance(lo, Tensor) or isinstance(hi, Tensor) else _ctype_word
        return apply_inplace(self, _clamp, lo, hi, _cast_word=word)
    method.__name__ = method.__qualname__ = name
    return method


clamp_ = _clamp_inplace("clamp_")
clip_ = _clamp_inplace("clip_")


def unary_inplace(fn):
    """``x.exp_()`` and friends from the out-of-place ``fn``."""
    overlap = fn.__name__ != "masked_fill"  # PyTorch's masked_fill_ writes overlapping memory

    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, _overlap=overlap, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method
