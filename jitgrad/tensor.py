"""Tensor: a NumPy array (the CPU storage) plus the autograd fields PyTorch users rely on.

Math methods are attached by ``jitgrad.ops.methods``; this module holds storage and autograd
metadata (``requires_grad``, ``grad``, ``grad_fn``, version counter, view base, detach). The
conversions (to NumPy/Python values, other dtypes and devices) are written in
``_tensor_conversions``, the object protocol (hashing, pickling, deepcopy, printing) in
``_tensor_protocol``; both are bound into the class at the end of this module.
"""
from __future__ import annotations

import operator
import warnings
import weakref

import numpy as np

from . import _dtype as D
from ._size import CPU, Size

__all__ = ["Tensor"]

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If "
    "you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. "
    "See github.com/pytorch/pytorch/pull/30531 for more information. (Triggered internally at "
    "/__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)")

_BY_NP = D._BY_NP
_new = object.__new__
_ctype = D.c_name  # PyTorch's C++ / scalar-type names for its messages
_scalar_type = D.scalar_name


class VersionCounter:
    """Shared by a tensor and its views; bumped by every in-place write."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


_AccumulateGrad = None


def _accumulate_grad_class():
    """``autograd.node.AccumulateGrad``, imported once (the module imports this one), not by an
    import statement per leaf per step."""
    global _AccumulateGrad
    if _AccumulateGrad is None:
        from .autograd.node import AccumulateGrad
        _AccumulateGrad = AccumulateGrad
    return _AccumulateGrad


def _alias_without_history(name, share_version):
    """``detach()`` and ``.data``'s getter (one body, no call between them and it): a tensor
    over the same data, not requiring grad, with no ``_base``, sharing ``self``'s version
    counter if ``share_version``; a view's (or a tensor with a recorded layout's) ``stride()``
    and ``storage_offset()`` are kept, as PyTorch's result shares the view's storage."""
    def alias(self):
        t = Tensor._make(self._data, False)
        if share_version:
            t._vc = self._vc
        if self._base is not None or "_torch_layout" in self.__dict__:
            _keep_view_layout(t, self)
        return t
    alias.__name__, alias.__qualname__ = name, f"Tensor.{name}"
    alias.__code__ = alias.__code__.replace(co_name=name)  # (tracebacks and profiles name it)
    return alias


class Tensor:
    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_vc",
                 "_base", "_retains_grad", "_hooks", "_grad_acc", "_view_fn", "_creation",
                 "_attr_version", "__weakref__", "__dict__")
    # ``_creation`` / ``_attr_version`` are set only on views (ops.composite.wrap): how the view
    # was made (None, "multi": one of several views an op returned, "no_grad": made with grad
    # mode off) and the version its grad_fn belongs to (PyTorch's CreationMeta, attr_version)

    # Let NumPy defer to our reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_priority__ = 1000

    # ------------------------------------------------------------------ construction

    def __init__(self, *args, dtype=None, device=None):
        """Legacy constructor: ``Tensor([1, 2])`` (data), ``Tensor(2, 3)`` / ``Tensor(Size)``
        (uninitialized), ``Tensor(other)`` (an alias of ``other``)."""
        from ._size import check_device
        dev = check_device(device)
        dt = D.to_dtype(dtype) if dtype is not None else self._legacy_dtype()
        src = args[0] if len(args) == 1 else None
        if isinstance(src, Tensor):
            if dtype is not None and src.dtype is not dt:  # FloatTensor(long_tensor)
                raise TypeError(f"expected TensorOptions(dtype={_ctype(dt)}, device=cpu, "
                                f"layout=Strided) (got TensorOptions(dtype={_ctype(src.dtype)}, "
                                "device=cpu, layout=Strided))")
            data = src._data  # PyTorch: an alias sharing the storage, any dtype
        elif src is not None and not isinstance(src, (int, np.integer, Size)) or \
                isinstance(src, bool):
            if isinstance(src, str):
                raise TypeError(f"new(): invalid data type '{type(src).__name__}'")
            if not isinstance(src, (list, tuple, np.ndarray)) and not hasattr(src, "__len__"):
                raise TypeError(f"new(): data must be a sequence (got {type(src).__name__})")
            from .ops.basic import tensor
            data = tensor(src, dtype=dt)._data
        else:
            shape = src if isinstance(src, Size) else args
            try:
                shape = tuple(int(operator.index(s)) for s in shape)
            except TypeError:
                raise TypeError(
                    f"new(): argument 'size' failed to unpack the object at pos "
                    f"{next(i for i, s in enumerate(shape) if not isinstance(s, int)) + 1} "
                    f"with error \"type must be tuple of ints,but got "
                    f"{type(next(s for s in shape if not isinstance(s, int))).__name__}\""
                ) from None
            if any(n < 0 for n in shape):
                raise RuntimeError(f"Trying to create tensor with negative dimension "
                                   f"{min(shape)}: {list(shape)}")
            data = np.empty(shape if args else (0,), dtype=dt.np)
        if dev.type == "cuda" and data.__class__ is np.ndarray:
            from ._cuda_array import CudaArray
            data = CudaArray.from_host(data)
        elif dev.type == "cpu" and data.__class__ is not np.ndarray:
            data = data.to_host()
        self._init(data, False)
        if isinstance(src, Tensor) and data is src._data:
            self._vc = src._vc

    @classmethod
    def _legacy_dtype(cls):
        return D.get_default_dtype()

    def _init(self, data, requires_grad):
        self._data = data
        self._requires_grad = requires_grad
        self._grad_fn = None
        self._output_nr = 0
        self._grad = None
        self._vc = VersionCounter()
        self._base = None
        self._retains_grad = False
        self._hooks = None
        self._grad_acc = None
        self._view_fn = None  # a view: base -> this view, replayable (ops.composite.record)

    @staticmethod
    def _make(data, requires_grad=False):
        # ``_init``'s assignments written out: every op's result is made here, and the extra
        # method call was a tenth of a small op's cost
        t = _new(Tensor)
        if Tensor._init is not _plain_init:  # jitgrad.compile watches births through _init
            t._init(data, requires_grad)
            return t
        t._data = data
        t._requires_grad = requires_grad
        t._grad_fn = None
        t._output_nr = 0
        t._grad = None
        t._vc = VersionCounter()
        t._base = None
        t._retains_grad = False
        t._hooks = None
        t._grad_acc = None
        t._view_fn = None
        return t

    # ------------------------------------------------------------------ storage facts

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._wrap_dim(dim)]

    def _wrap_dim(self, dim) -> int:
        n = self._data.ndim
        lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
        if not isinstance(dim, (int, np.integer)) or not lo <= dim <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {dim})")
        return int(dim) % max(n, 1)

    def dim(self) -> int:
        return self._data.ndim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def ndimension(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self):
        # the storage's dtype is a NumPy dtype object: look it up directly (from_numpy_dtype
        # converts its argument first and raises PyTorch's error for unknown ones)
        d = _BY_NP.get(self._data.dtype)
        return d if d is not None else D.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        d = self._data
        return CPU if d.__class__ is np.ndarray else d.device

    @property
    def is_cuda(self) -> bool:
        return self._data.__class__ is not np.ndarray

    @property
    def is_cpu(self) -> bool:
        return self._data.__class__ is np.ndarray

    def _host(self) -> np.ndarray:
        """The data as a host array: the storage on the CPU, a counted copy from a device."""
        d = self._data
        return d if d.__class__ is np.ndarray else d.to_host()

    @property
    def __cuda_array_interface__(self):
        d = self._data
        if d.__class__ is np.ndarray:
            raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                                 f"{_tensor_type(self)} If CUDA data is required use "
                                 "tensor.cuda() to copy tensor to device memory.")
        if self._requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires "
                               "grad. If gradients aren't required, use var.detach() to get "
                               "Variable that doesn't require grad.")
        return d.__cuda_array_interface__

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        return self._data.itemsize

    def stride(self, dim=None):
        d = self._data
        if d.size == 0 and d.__class__ is np.ndarray:
            # NumPy gives fresh empty arrays zero strides: PyTorch's are those its view
            # arithmetic recorded (_layout), else a fresh tensor's (size-0 dims counted as 1)
            from ._layout import contiguous_strides, recorded
            rec = recorded(self) if "_torch_layout" in self.__dict__ else None
            st = rec[0] if rec is not None and rec[0] is not None \
                else contiguous_strides(d.shape)
        else:
            st = tuple(s // d.itemsize for s in d.strides)
        return st if dim is None else st[self._wrap_dim(dim)]

    def storage_offset(self) -> int:
        """Elements between the start of the storage (the view's base) and this view's first."""
        if "_torch_layout" in self.__dict__:  # an empty view, or loaded from shared storage
            from ._layout import recorded
            rec = recorded(self)
            if rec is not None:
                return rec[1]
        from ._storage import offset_from
        base = self._base
        d = self._data
        if base is None or d.size == 0 or (d.__class__ is np.ndarray and not np.may_share_memory(
                d, base._data)):  # (``.data =`` gave this view another array)
            return 0
        off = offset_from(d, base._data)
        # (a view of a loaded tensor: its base's offset into the storage it was saved with)
        return off + base.storage_offset() if "_torch_layout" in base.__dict__ else off

    def _memory_offset(self) -> int:
        """Elements between the first element of the flat array jitgrad keeps this tensor's
        storage in (its root's data) and this tensor's first: ``storage_offset()`` less the
        root's own offset into the storage it was saved with (a loaded tensor's ``_layout``)."""
        off = self.storage_offset()
        root = self._base if self._base is not None else self
        return off - root.storage_offset() if "_torch_layout" in root.__dict__ else off

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format == "channels_last" or memory_format == "channels_last_3d":
            # ATen's exact test, size-1 dims skipped (_memory_format)
            from ._memory_format import is_contiguous_in
            return is_contiguous_in(self._data.shape, self.stride(), memory_format)
        return bool(self._data.flags.c_contiguous)

    @property
    def nbytes(self) -> int:
        return int(self._data.size) * self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    def is_signed(self) -> bool:
        return self._data.dtype.kind in "fi"

    def is_complex(self) -> bool:
        return False

    def get_device(self) -> int:
        return -1 if self._data.__class__ is np.ndarray else 0

    layout = "strided"  # jitgrad.strided
    is_sparse = is_quantized = is_meta = is_mkldnn = is_nested = False

    def data_ptr(self) -> int:
        if self._data.__class__ is not np.ndarray:
            return int(self._data.__cuda_array_interface__["data"][0])
        return int(self._data.__array_interface__["data"][0])

    # ------------------------------------------------------------------ autograd fields

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(bool(value), "only Tensors of floating point and complex dtype "
                                "can require gradients", setter=True)

    def requires_grad_(self, requires_grad=True):
        # PyTorch words this one error three ways depending on the entry point; so do we
        return self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can "
                                       "require gradients")

    def _set_requires_grad(self, requires_grad, int_message, setter=False):
        if not self.is_leaf:  # (a view's grad_fn regenerated first, as PyTorch's is_leaf)
            if not requires_grad or setter:  # (the setter refuses True too)
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables." + (
                        "" if requires_grad else " If you want to use a computed variable in a "
                        "subgraph that doesn't require differentiation use var_no_grad = "
                        "var.detach()."))
            return self
        if requires_grad and self._data.dtype.kind != "f":
            raise RuntimeError(int_message)
        if self._base is not None:
            # a view: its own flag; requires_grad stays its base's where the base's is set
            from .autograd.view_requires_grad import set_view_requires_grad
            set_view_requires_grad(self, bool(requires_grad))
            return self
        if self._requires_grad != bool(requires_grad):
            self._requires_grad = bool(requires_grad)
            if "_views" in self.__dict__:  # views made before follow (PyTorch reads it live)
                from .autograd.view_requires_grad import follow_base
                follow_base(self)
        return self

    @property
    def _version(self) -> int:
        """PyTorch's ``_version``: how many in-place writes the storage has seen (the counter
        itself, shared with views, is ``_vc``)."""
        return self._vc.value

    @property
    def grad_fn(self):
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn

    def _refresh_view(self):
        """A view whose storage was written in place since its grad_fn was set (through its base
        or another view) gets a new grad_fn replayed from the base's current history, as
        PyTorch's view grad_fn getter does (or PyTorch's error for views that cannot)."""
        av = getattr(self, "_attr_version", None)
        if av is not None and av != self._vc.value:
            if self._grad_fn is None and "_nondiff_view" in self.__dict__:
                self._attr_version = self._vc.value  # view(dtype): no history to replay
                return
            from .ops.composite import regenerate_view
            regenerate_view(self)
            if self._grad_fn is not None:  # it requires grad through its grad_fn now
                self.__dict__.pop("_rg_inherited", None)

    @property
    def is_leaf(self) -> bool:
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        g = self._grad
        if g is None:
            if self._grad_fn is not None and not self._retains_grad:
                warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        elif g.__class__ is not Tensor:
            g._data  # noqa: B018 (a compiled step's pending gradient is computed here)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_ctype(value.dtype)}' to a "
                    f"tensor with grad_dtype '{_scalar_type(self.dtype)}'. The gradient must "
                    "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
                    "the tensor's grad_dtype attribute with a specific dtype, or None to allow "
                    "any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                    "its gradient may break downstream systems that assume they match.")
            if value._data.__class__ is not self._data.__class__:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value.device.type}' "
                    f"to a tensor with device type '{self.device.type}'. Please ensure that the "
                    "gradient and the tensor are on the same device")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is not None:
            self._retains_grad = True
            node = self._grad_fn
            if node._retained is None:
                node._retained = {}
            node._retained[self._output_nr] = weakref.ref(self)
        return None

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after a backward pass accumulated into this leaf's ``.grad``."""
        from .autograd.engine_hooks import register_post_accumulate_grad_hook
        return register_post_accumulate_grad_hook(self, hook)

    def register_hook(self, hook):
        """``hook(grad) -> Tensor | None`` runs when this tensor's gradient is computed."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._add_pre_hook(self._output_nr, hook)
        from .autograd.node import _RemovableHandle
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return _RemovableHandle(self._hooks, hook)

    def _accumulator(self):
        """The AccumulateGrad node of a leaf (one per leaf while a graph holds it)."""
        acc = self._grad_acc() if self._grad_acc is not None else None
        if acc is None:
            acc = _accumulate_grad_class()(self)
            self._grad_acc = weakref.ref(acc)
        return acc

    def _edge(self):
        """(node, output_nr) this tensor feeds in a graph, or None."""
        if self._base is not None:
            self._refresh_view()
        if self._grad_fn is not None:
            return (self._grad_fn, self._output_nr)
        if self._requires_grad:
            if self._base is not None and "_rg_inherited" in self.__dict__:
                return (None, 0)  # requires grad through its base only: no accumulator
            return (self._accumulator(), 0)
        return None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from .autograd import engine
        engine.backward([self], [gradient], retain_graph=retain_graph,
                        create_graph=create_graph, inputs=inputs)

    # PyTorch: a non-differentiable view, sharing storage and version counter but with no
    # ``_base`` (writing into it is allowed even when ``self`` is a leaf requiring grad; nodes
    # that saved ``self`` see the version bump)
    detach = _alias_without_history("detach", share_version=True)

    def detach_(self):
        if self._base is not None and "_nondiff_view" not in self.__dict__:
            # (any view but view(dtype)'s, requiring grad or not: PyTorch's is_view())
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self.__dict__.pop("_rg_inherited", None)
        self._grad_fn = None
        self._output_nr = 0
        was, self._requires_grad = self._requires_grad, False
        if was and "_views" in self.__dict__:  # (views inheriting it lose it, as PyTorch's)
            from .autograd.view_requires_grad import follow_base
            follow_base(self)
        return self

    # (its own version counter, as PyTorch's: writes through it are not seen by autograd)
    data = property(_alias_without_history("data", share_version=False))

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind != "f":
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._data = value._data

    # (hashing, pickling, deepcopy and printing: _tensor_protocol; conversions to NumPy/Python
    # values and other dtypes/devices: _tensor_conversions; both bound at the end of this module)


_plain_init = Tensor._init  # what _make writes out (unless something wraps it)


def _tensor_type(t) -> str:
    from .autograd.node import _tensor_type_name
    return _tensor_type_name(t, legacy=True)


def _keep_view_layout(t, view):
    """``detach()``/``.data`` of a view: PyTorch's result shares the view's storage, so it keeps
    the view's ``storage_offset()`` (and an empty view's strides); here it has no ``_base`` to
    count the offset from, so the layout is recorded (views of it add it, as for loaded
    tensors)."""
    if view._data.__class__ is not np.ndarray:
        return
    off = view.storage_offset()
    st = view.stride() if not view._data.size else None
    if off or st is not None:
        from ._layout import record_layout
        record_layout(t, st, off)


def _rebuild(data, requires_grad, layout=None):
    t = Tensor._make(data, False)
    if layout is not None and data.__class__ is np.ndarray:  # (see Tensor._copy_layout)
        from ._layout import record_layout
        st, off = layout
        record_layout(t, None if st is None else tuple(int(v) for v in st), int(off))
    if requires_grad:
        t.requires_grad_(True)
    return t


# The conversions and the object protocol are written in their modules and bound here, into the
# class itself.
from ._tensor_conversions import bind as _bind_conversions  # noqa: E402
from ._tensor_protocol import bind as _bind_protocol  # noqa: E402

_bind_conversions(Tensor)
_bind_protocol(Tensor)
