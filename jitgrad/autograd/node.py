"""Graph nodes (``grad_fn`` objects), saved tensors with version checks, AccumulateGrad.

Each node class carries the name PyTorch records (``MulBackward0``, ``SumBackward1``, ...), made
on demand by ``node_class``; ``next_functions`` is ``((node, output_nr) | (None, 0), ...)``.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from .._dtype import _BY_NP
from . import anomaly_mode as _anomaly
from .saved_hooks import stack as _saved_hooks

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "Ctx", "FunctionNode", "node_class"]

_seq = itertools.count()

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


class Node:
    """Base of every grad_fn. Subclasses implement ``apply(grads) -> grads per input slot``."""

    __slots__ = ("next_functions", "_seq", "_input_meta", "_pre_hooks", "_hooks", "_retained",
                 "_released", "_metadata", "__weakref__")
    # nodes with several outputs set their own (a slot or instance attribute); the engine's
    # getattr(node, "_n_outputs", 1) finds this one without raising AttributeError inside
    _n_outputs = 1

    def __init__(self, next_functions=(), input_meta=()):
        self.next_functions = next_functions if next_functions.__class__ is tuple \
            else tuple(next_functions)
        # (shape, dtype) per slot, or None
        self._input_meta = input_meta if input_meta.__class__ is tuple else tuple(input_meta)
        self._seq = next(_seq)
        # {output_nr: [fn]} tensor hooks on this node's outputs; key None: the node's own
        # pre-hooks (register_prehook), which see the whole grad_outputs tuple
        self._pre_hooks = None
        self._hooks = None  # [fn(grad_inputs, grad_outputs)] node post-hooks
        self._retained = None  # {output_nr: weakref(tensor)} for retain_grad()
        self._released = False
        # anomaly mode keeps the forward's stack (metadata["traceback_"]), as PyTorch does
        self._metadata = _anomaly.forward_metadata() if _anomaly.enabled else None

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        name = type(self).__name__
        return _CPP_NAMES.get(name, name)

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def apply(self, grads):
        raise NotImplementedError

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph)."""
        self._released = True

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs) -> tuple | None`` after this node ran."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs) -> tuple | None`` before this node runs."""
        return self._add_pre_hook(None, fn)

    def _add_pre_hook(self, output_nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        lst = self._pre_hooks.setdefault(output_nr, [])
        lst.append(fn)
        return RemovableHandle(lst, fn)

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def __getattr__(self, name):
        # reached only when normal lookup fails: PyTorch's generated saved-variable properties
        # (``_saved_self``, ``_raw_saved_result``, ...), read off the node (saved_fields.py)
        if name.startswith(("_saved_", "_raw_saved_")):
            from .saved_fields import saved_field
            return saved_field(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        from .saved_fields import field_names
        names = field_names(self)
        raw = [f"_raw_saved_{n}" for n, src in names.items() if src[0] == "t"]
        return sorted(set(super().__dir__()) | {f"_saved_{n}" for n in names} | set(raw))


# C++ nodes PyTorch names with their namespace
_CPP_NAMES = {"AccumulateGrad": "torch::autograd::AccumulateGrad",
              "CopyBackwards": "torch::autograd::CopyBackwards",
              "CopySlices": "torch::autograd::CopySlices",
              "Error": "torch::autograd::DelayedError",
              "NotImplemented": "torch::autograd::NotImplemented"}


class RemovableHandle:
    """What ``register_hook`` / ``register_prehook`` return (PyTorch's
    ``torch.utils.hooks.RemovableHandle``: ``remove()``, ``id``, a context manager)."""

    __slots__ = ("_list", "_fn", "id")
    _next_id = itertools.count()

    def __init__(self, lst, fn):
        self._list, self._fn = lst, fn
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        try:
            self._list.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_RemovableHandle = RemovableHandle  # the name jitgrad.tensor imports


_classes: dict = {}


def node_class(name: str, base: type) -> type:
    """The node class called ``name`` (PyTorch's grad_fn name) deriving from ``base``."""
    key = (name, base)
    cls = _classes.get(key)
    if cls is None:
        cls = type(name, (base,), {"__slots__": (), "__module__": "jitgrad.autograd.nodes"})
        _classes[key] = cls
    return cls


_engine_module = None


def _engine():
    """``autograd.engine`` (it imports this module: looked up once, not by an import statement
    per call on the backward's hot path)."""
    global _engine_module
    if _engine_module is None:
        from . import engine
        _engine_module = engine
    return _engine_module


class AccumulateGrad(Node):
    """The sink for a leaf: adds incoming gradients into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        # Node.__init__ written out (a leaf gets a new one per graph: per step, per op on a
        # leaf in a loop); the storage's shape tuple, not ``variable.shape`` (a Size per leaf)
        self.next_functions = ()
        d = variable._data
        dt = _BY_NP.get(d.dtype)  # Tensor.dtype without the property call
        self._input_meta = ((tuple(d.shape), dt if dt is not None else variable.dtype),)
        next(_seq)  # (a sequence number taken, as every node takes one)
        self._pre_hooks = None
        self._hooks = None
        self._retained = None
        self._released = False
        self._metadata = _anomaly.forward_metadata() if _anomaly.enabled else None
        self.variable = variable
        self._seq = 1 << 62  # run as soon as ready, like PyTorch's UINT64_MAX sequence number

    def apply(self, grads):
        _engine().accumulate_into_leaf(self.variable, grads[0])
        return []

    def apply_undefined(self):
        from .accumulate_grad import accumulate_undefined
        accumulate_undefined(self.variable)


def _tensor_type_name(t, legacy: bool = False) -> str:
    """The type name PyTorch's messages print for ``t`` (``torch.FloatTensor``); ``legacy``:
    ``Tensor.type()``'s, which differs for bool (``torch.BoolTensor``, where ATen's error
    messages print its own ``CPUBoolType``)."""
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
             "int32": "IntTensor", "bool": "BoolTensor", "float16": "HalfTensor",
             "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor"}
    cuda = getattr(t, "is_cuda", False)
    if t.dtype.name == "bool" and not legacy:
        return "CUDABoolType" if cuda else "CPUBoolType"
    return ("torch.cuda." if cuda else "torch.") + names.get(t.dtype.name, "Tensor")


def _short_node_name(node) -> str:
    # PyTorch's wording: ExpBackward0 -> "Exp", AsinhBackward1 -> "Asinh1"
    return re.sub(r"Backward(\d*)$", lambda m: "" if m.group(1) in ("", "0") else m.group(1),
                  node.name())


class SavedTensor:
    """A tensor a node keeps for its VJP, with the version it had when saved.

    Outputs of the saving node are kept as their array only (keeping the Tensor would make a
    reference cycle output -> grad_fn -> output); unpacking rebuilds a Tensor pointing at the node.

    With saved-tensor hooks set (``autograd.graph.saved_tensors_hooks``) it keeps what the pack
    hook returned instead (``_hook``; ``data`` is then None) and every use calls the unpack hook.
    """

    __slots__ = ("data", "_vc", "_version", "_tensor", "_is_output", "_shape", "_freed",
                 "_requires_grad", "_output_nr", "_hook")

    def __init__(self, tensor, is_output: bool = False):
        self.data = tensor._data
        self._vc = tensor._vc
        self._version = tensor._vc.value
        self._is_output = is_output
        self._tensor = None if is_output else tensor
        # an output saved by its own node always carries that node's graph
        self._requires_grad = True if is_output else tensor._requires_grad
        self._output_nr = tensor._output_nr
        self._freed = False
        if _saved_hooks:
            self._pack(tensor)

    def _pack(self, tensor, hooks=None) -> None:
        """Keep what the pack hook returns (``hooks``: a (pack, unpack) pair, by default the
        innermost ``saved_tensors_hooks``'; ``_raw_saved_*.register_hooks`` gives its own)."""
        from .saved_hooks import pack
        self._hook = pack(tensor, self._is_output, hooks or _saved_hooks[-1])
        self.data = None
        self._tensor = None

    def _unpacked(self, node):
        """The Tensor the unpack hook gives, as this saved tensor (its graph, the original's)."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        from .saved_hooks import unpack
        return unpack(self._hook, node, self)

    def check(self, node) -> None:
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self.data is None:
            return  # packed by hooks: PyTorch checks no version through them
        if self._vc.value != self._version:
            t = self._tensor
            # the tensor's shape now (an in-place view op such as unsqueeze_ changes it)
            shape = list((self.data if t is None else t._data).shape)
            if self._is_output:
                owner = f", which is output {self._output_nr} of {_short_node_name(node)},"
                tname = _tensor_type_name(_FakeDtype(self.data))
            else:
                gf = t.grad_fn
                owner = (f", which is output {t._output_nr} of {_short_node_name(gf)},"
                         if gf is not None else "")
                tname = _tensor_type_name(t)
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{tname} {shape}]{owner} is at version {self._vc.value}; "
                f"expected version {self._version} instead. Hint: enable anomaly detection to "
                "find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")

    def array(self, node):
        if self.data is None:
            return self._unpacked(node)._data
        self.check(node)
        return self.data

    def tensor(self, node):
        """A Tensor for differentiable use (create_graph=True, composite VJPs)."""
        if self.data is None:
            return self._unpacked(node)
        self.check(node)
        if self._tensor is not None:
            return self._tensor
        from ..tensor import Tensor
        t = Tensor._make(self.data, requires_grad=self._requires_grad)
        if self._requires_grad:
            t._grad_fn = node
            t._output_nr = self._output_nr
        return t

    def free(self) -> None:
        self._freed = True
        self.data = None
        self._tensor = None
        self._hook = None


class _FakeDtype:
    __slots__ = ("dtype",)

    def __init__(self, data):
        from .._dtype import from_numpy_dtype
        self.dtype = from_numpy_dtype(data.dtype)


class Ctx:
    """What a composite op's backward receives: saved tensors and plain attributes."""

    __slots__ = ("_saved", "attrs", "needs_input_grad", "_freed_attrs", "__dict__")

    def __init__(self):
        self._saved = {}
        self.attrs = {}
        self.needs_input_grad = ()
        self._freed_attrs = False  # release() dropped array-holding attrs

    def save(self, name: str, tensor, is_output: bool = False) -> None:
        self._saved[name] = SavedTensor(tensor, is_output)


def _holds_array(v, depth: int = 0) -> bool:
    """True when an attr value keeps array memory alive: an ndarray (not a NumPy scalar), a
    Tensor, a device array, or a tuple/list/dict holding one (a few levels deep)."""
    if v is None or isinstance(v, (str, bytes, int, float, complex, np.generic)):
        return False
    if isinstance(v, (tuple, list)):
        return depth < 4 and any(_holds_array(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return depth < 4 and any(_holds_array(x, depth + 1) for x in v.values())
    from ..tensor import Tensor
    if isinstance(v, (np.ndarray, Tensor)) or type(v).__name__ == "CudaArray":
        return True
    # a device array of another library; asked last, and guarded: a CUDA Tensor that requires
    # grad raises RuntimeError (PyTorch's) from __cuda_array_interface__ instead of
    # AttributeError, which hasattr lets through
    try:
        return hasattr(v, "__cuda_array_interface__")
    except RuntimeError:
        return True


class FunctionNode(Node):
    """A node whose VJP is a Python function over Tensors (composite ops, custom Functions)."""

    __slots__ = ("ctx", "_backward", "_n_outputs")

    def __init__(self, next_functions, input_meta, ctx, backward, n_outputs=1):
        # Node.__init__ written out (one node per recorded op: the super() call showed)
        self.next_functions = next_functions if next_functions.__class__ is tuple \
            else tuple(next_functions)
        self._input_meta = input_meta if input_meta.__class__ is tuple else tuple(input_meta)
        self._seq = next(_seq)
        self._pre_hooks = None
        self._hooks = None
        self._retained = None
        self._released = False
        self._metadata = _anomaly.forward_metadata() if _anomaly.enabled else None
        self.ctx = ctx
        self._backward = backward
        self._n_outputs = n_outputs

    def saved(self, name: str):
        return self.ctx._saved[name].tensor(self)

    def saved_array(self, name: str):
        return self.ctx._saved[name].array(self)

    def apply(self, grads):
        if self._released and (self.ctx._saved or self.ctx._freed_attrs):
            raise RuntimeError(FREED_MESSAGE)
        out = self._backward(self, *grads)
        if not isinstance(out, (tuple, list)):
            out = (out,)
        return list(out)

    def release(self) -> None:
        super().release()
        ctx = self.ctx
        for s in ctx._saved.values():
            if s is not None:
                s.free()
        # work arrays kept in attrs (fused cells' gate activations, layers' workspaces, index
        # tensors) are saved variables in PyTorch's terms: freed with the saved tensors, so the
        # memory goes at backward rather than when the graph is dropped. Shapes, flags and
        # scalars stay, as PyTorch keeps a node's plain attributes (a node saving nothing else
        # can still be run again).
        attrs = ctx.attrs
        if attrs:
            freed = [k for k, v in attrs.items() if _holds_array(v)]
            for k in freed:
                del attrs[k]
            if freed:
                ctx._freed_attrs = True

