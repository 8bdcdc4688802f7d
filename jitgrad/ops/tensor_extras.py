"""The smaller Tensor methods PyTorch users reach for: ``greater_equal(_)``/``less_equal(_)``,
``fill_diagonal_``, ``sum_to_size``, the legacy ``new``, ``is_same_size``, ``is_inference``,
``dim_order``, ``resize_``/``resize_as_``, ``apply_``/``map_``, ``share_memory_``/``is_shared``,
``pin_memory``/``is_pinned`` and ``const_data_ptr``. Importing the module binds them.

What some of them do here, where jitgrad's storage differs from ATen's:

* ``resize_`` keeps the tensor's storage (the tensor's root array: a view's base) while the new
  size fits in it, as ATen does: shrinking, or growing a view back over its base's memory, shares
  memory with the base and its other views. Growing past the storage allocates a new one (the
  old values copied, the new elements zero where ATen leaves them uninitialized); unlike ATen,
  which reallocates the storage that every view shares, only this tensor moves to the new memory.
* ``share_memory_`` moves a tensor that owns its storage into an anonymous shared mapping
  (``mmap``: shared with processes ``fork``ed afterwards, as PyTorch's file-descriptor sharing
  is for ``multiprocessing``); ``is_shared`` says whether the data lives in one. A view's storage
  is its base's, which jitgrad cannot move under the base: NotImplementedError.
* ``pin_memory`` needs CUDA, as PyTorch's (the same RuntimeError without it): the copy is made
  in page-locked memory by Numba; ``is_pinned`` is True for such copies.
* ``is_inference``: jitgrad has no inference tensors (``inference_mode`` behaves as ``no_grad``,
  see autograd/grad_mode.py), so it is always False.
"""
from __future__ import annotations

import mmap
import numbers
import operator

import numpy as np

from .. import _dtype as D
from .._iter_layout import (
    dim_comparator,
    is_channels_last_strides,
    is_contiguous_strides,
    sort_dims,
)
from .._size import Size
from ..tensor import Tensor
from .parser_errors import parser_type_name

# ----------------------------------------------------------------------------- small ones

_MISSING = object()  # an argument not given (PyTorch's own missing-argument wording)


def is_same_size(self, other=_MISSING) -> bool:
    if other is _MISSING:
        raise TypeError('is_same_size() missing 1 required positional arguments: "other"')
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                        f"{parser_type_name(other)}")
    return tuple(self.shape) == tuple(other.shape)


def is_inference(self) -> bool:
    return False  # no inference tensors in jitgrad (module docstring)


def const_data_ptr(self) -> int:
    return self.data_ptr()


def sum_to_size(self, *size):
    """ATen's ``sum_to``: the leading dims and the dims ``size`` has as 1 summed (keepdim), then
    viewed as ``size`` when dims were dropped (SumBackward1 / ViewBackward0)."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if not size:  # ATen's sum_to: a plain sum (SumBackward0)
        return self.sum()
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size)
                                if s == 1 and shape[lead + i] != 1]
    r = self.sum(dims, keepdim=True) if dims else self
    return r.view(size) if lead else r


# ----------------------------------------------------------------------------- dim_order

def dim_order(self, *, ambiguity_check=False):
    """PyTorch's ``compute_elementwise_output_logical_to_physical_perm`` for one tensor: the
    dims from outermost to innermost in memory (a stable insertion sort by stride)."""
    if not isinstance(ambiguity_check, bool):
        raise NotImplementedError("dim_order: jitgrad takes ambiguity_check as a bool only")
    shape, st = tuple(self.shape), self.stride()
    nd = len(shape)
    # PyTorch's first check: equal neighbouring strides or a size-1 dim make it ambiguous
    if ambiguity_check and (any(a == b for a, b in zip(st, st[1:])) or 1 in shape):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    if nd < 2:
        return tuple(range(nd))
    contiguous = is_contiguous_strides(shape, st)
    channels_last = is_channels_last_strides(shape, st)
    if contiguous and not channels_last:
        return tuple(range(nd))
    if channels_last and not contiguous:
        return (0, *range(2, nd), 1)
    should_swap = dim_comparator(shape, (st,))
    perm = sort_dims(nd, should_swap)
    if ambiguity_check and any(should_swap(perm[i], perm[i + 1]) != -1 for i in range(nd - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


# ----------------------------------------------------------------------------- fill_diagonal_

def fill_diagonal_(self, fill_value, wrap=False):
    """ATen's: the main diagonal (all indices equal) filled; with ``wrap`` a tall matrix's
    diagonal restarts every ``width + 1`` rows (counted in row-major element order, which is
    ATen's strided walk for a contiguous matrix)."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    h, w = self.shape[0], self.shape[1]
    if nd > 2 and any(self.shape[i] != h for i in range(1, nd)):
        raise RuntimeError("all dimensions of input must be of equal length")
    if self._requires_grad and self._grad_fn is None:  # ATen fills an as_strided view of it
        from ..autograd import grad_mode
        if grad_mode.is_grad_enabled():
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
    # written through views, as ATen's as_strided views: recorded as CopySlices
    diag = self
    for _ in range(nd - 1):
        diag = diag.diagonal(0, 0, 1)
    diag.fill_(fill_value)
    if wrap and nd == 2 and h > w + 1:
        step = w + 1
        extra = (h * w + step - 1) // step - min(h, w)
        if self.is_contiguous():
            self.view(-1)[w * step::step][:extra].fill_(fill_value)
        else:  # the same elements, by index (IndexPutBackward0 in a graph)
            from .basic import tensor
            rows, cols = np.unravel_index(w * step + np.arange(extra) * step, (h, w))
            self[tensor(rows), tensor(cols)] = fill_value
    return self


# ----------------------------------------------------------------------------- new

def _got(args, kwargs):
    parts = ([parser_type_name(a) for a in args]
             + [f"{k}={parser_type_name(v)}" for k, v in kwargs.items()])
    return ", ".join(parts) + (", " if kwargs and not args else "")


def new(self, *args, **kwargs):
    """The legacy constructor with ``self``'s dtype and device: ``new()`` (empty), ``new(2, 3)``
    / ``new(Size)`` (uninitialized), ``new(data)``, ``new(tensor)`` (an alias, AliasBackward0);
    only ``device=`` may be given."""
    if set(kwargs) - {"device"}:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({_got(args, kwargs)}), but expected one of:\n"
                        " * (*, torch.device device = None)\n * (torch.Storage storage)\n"
                        " * (Tensor other)\n * (tuple of ints size, *, torch.device device = "
                        "None)\n * (object data, *, torch.device device = None)\n")
    device = kwargs.get("device")
    if len(args) == 1 and isinstance(args[0], Tensor) and args[0].dtype is self.dtype \
            and device is None:
        from .shape_views import _alias
        return _alias(args[0])
    return Tensor(*args, dtype=self.dtype, device=device if device is not None else self.device)


# ----------------------------------------------------------------------------- resize_

def _size_list(name, size):
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) \
        else size
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{parser_type_name(s)}")
    if any(s < 0 for s in size):
        raise RuntimeError("numel: integer multiplication overflow")
    return tuple(int(s) for s in size)


def _storage(root):
    """The flat array of ``root``'s storage (kept across resizes that shrank it): its data
    itself (a copy where the data has gaps, so callers that must alias check)."""
    buf = root.__dict__.get("_resize_storage")
    if buf is not None:
        return buf
    d = root._data
    return d.reshape(-1) if d.flags.c_contiguous else np.ascontiguousarray(d).reshape(-1)


def _resize(self, size, memory_format=None):
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self._data.__class__ is not np.ndarray:
        raise NotImplementedError("resize_ of a CUDA tensor is not supported by jitgrad")
    if memory_format not in (None, "contiguous_format", "channels_last", "channels_last_3d"):
        raise RuntimeError("Unsupported memory formatPreserve")
    if size == tuple(self.shape) and memory_format is None:
        return self
    n = 1
    for s in size:
        n *= s
    root = self._base if self._base is not None else self
    flat = _storage(root)
    offset = self._memory_offset()  # (a loaded tensor's storage_offset is the file's)
    if offset + n > flat.size:  # a new storage, the old values copied (see the docstring)
        grown = np.zeros(offset + n, dtype=flat.dtype)
        grown[:flat.size] = flat
        flat = grown
        if self._base is not None:
            self._base, self._view_fn = None, None
            self.__dict__.pop("_view_key", None)
        root = self
    if root is self:
        self.__dict__["_resize_storage"] = flat
    chunk = flat[offset:offset + n]
    if memory_format in ("channels_last", "channels_last_3d") and len(size) in (4, 5):
        order = (0,) + tuple(range(2, len(size))) + (1,)
        data = chunk.reshape(tuple(size[d] for d in order)).transpose(np.argsort(order))
    else:
        data = chunk.reshape(size)
    self._data = data
    return self


def resize_(self, *size, memory_format=None):
    return _resize(self, _size_list("resize_", size), memory_format)


def resize_as_(self, the_template, memory_format=None):
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, "
                        f"not {parser_type_name(the_template)}")
    return _resize(self, tuple(the_template.shape), memory_format)


# ----------------------------------------------------------------------------- apply_ / map_

def _to_element(r, dt):
    """``r`` (a callable's result) as an element of ``dt``, with CPython's unpacking errors."""
    if dt is D.bool_:
        return bool(r)
    if dt.is_floating_point:
        if not isinstance(r, numbers.Real):
            raise TypeError(f"must be real number, not {parser_type_name(r)}")
        return float(r)
    if isinstance(r, float):
        r = int(r)
    try:
        r = operator.index(r)
    except TypeError:
        raise TypeError(f"'{type(r).__name__}' object cannot be interpreted as an "
                        "integer") from None
    if not -2 ** 63 <= r < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return r


def _elementwise_python(self, name, fn, tensors=()):
    """``fn`` over the elements of ``self`` and ``tensors`` (broadcast to it), in row-major
    order, the results written back into ``self``."""
    if self._data.__class__ is not np.ndarray:
        raise TypeError(f"{name}_ is only implemented on CPU tensors")
    if self._requires_grad or any(o._requires_grad for o in tensors):
        raise RuntimeError(f"Can't call {name}_() on Variable that requires grad. Use "
                           f"var.detach().{name}_() instead.")
    dt = self.dtype
    cols = [self._data.reshape(-1).tolist()]
    cols += [o.expand(self.shape).contiguous()._data.reshape(-1).tolist() for o in tensors]
    out = [_to_element(fn(*vals), dt) for vals in zip(*cols)]
    if out:
        self._data[...] = np.asarray(out, dtype=dt.np).reshape(self._data.shape)
    self._vc.value += 1
    return self


def apply_(self, callable):  # noqa: A002 - PyTorch's name
    """``callable`` on every element (a Python scalar), written back in ``self``'s dtype."""
    return _elementwise_python(self, "apply", callable)


def map_(self, tensor, callable):  # noqa: A002
    """``callable(self_element, other_element)`` with ``tensor`` broadcast to ``self``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{parser_type_name(tensor)}")
    if tensor.dtype is not self.dtype:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    return _elementwise_python(self, "map", callable, (tensor,))


# ----------------------------------------------------------------------------- memory placement

def share_memory_(self):
    if self._data.__class__ is not np.ndarray or is_shared(self):
        return self  # CUDA memory is shared by IPC handles in PyTorch: nothing to move
    if self._base is not None:
        raise NotImplementedError("share_memory_ of a view: jitgrad cannot move its base's "
                                  "storage; call it on the base")
    d = self._data
    buf = mmap.mmap(-1, max(d.nbytes, 1))
    shared = np.frombuffer(buf, dtype=d.dtype, count=d.size).reshape(d.shape)
    shared[...] = d
    self._data = shared
    self.__dict__.pop("_resize_storage", None)
    return self


def is_shared(self) -> bool:
    base = self._data
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def pin_memory(self, device=None):
    from .. import cuda
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self._data.__class__ is not np.ndarray:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    from numba import cuda as nb_cuda
    pinned = nb_cuda.pinned_array(self._data.shape, dtype=self._data.dtype)
    pinned[...] = self._data
    out = Tensor._make(pinned)
    out.__dict__["_pinned"] = True
    return out


def is_pinned(self, device=None) -> bool:
    return bool(self.__dict__.get("_pinned", False)) if self._base is None else \
        bool(self._base.__dict__.get("_pinned", False))


def _as_strided(self, size, stride, storage_offset=None):
    from .shape_as_strided import as_strided
    return as_strided(self, size, stride, storage_offset)


def _alias_method(name):
    return lambda self, *a, **k: getattr(self, name)(*a, **k)


METHODS = {
    "greater_equal": _alias_method("ge"), "greater_equal_": _alias_method("ge_"),
    "less_equal": _alias_method("le"), "less_equal_": _alias_method("le_"),
    "is_same_size": is_same_size, "is_inference": is_inference,
    "const_data_ptr": const_data_ptr, "sum_to_size": sum_to_size, "dim_order": dim_order,
    "fill_diagonal_": fill_diagonal_, "new": new, "resize_": resize_, "resize_as_": resize_as_,
    "apply_": apply_, "map_": map_, "share_memory_": share_memory_, "is_shared": is_shared,
    "pin_memory": pin_memory, "is_pinned": is_pinned, "as_strided": _as_strided,
}


def install() -> None:
    for name, fn in METHODS.items():
        if name in vars(Tensor):
            raise AssertionError(f"Tensor.{name} is defined twice")
        if getattr(fn, "__name__", "<lambda>") == "<lambda>":
            fn.__name__ = name
        fn.__qualname__ = f"Tensor.{name}"
        setattr(Tensor, name, fn)
    # in place, as inplace_methods makes x.t_(): x becomes the view (AsStridedBackward1)
    from .inplace_methods import _shape_inplace
    Tensor.as_strided_ = _shape_inplace("as_strided", lambda a, k: "AsStridedBackward1")


install()
