"""PyTorch's saved-variable properties on a grad_fn: ``y.grad_fn._saved_self``,
``_saved_result``, ``_saved_self_sym_sizes``, ... and ``_raw_saved_<name>`` (the SavedTensor
object, whose ``register_hooks(pack, unpack)`` replaces how that one tensor is stored).

PyTorch generates one property per variable its derivative formula saves, named after the
formula's argument (``self``, ``other``, ``mat2``, ``result``). A jitgrad node keeps the same
tensors under its own names (an elementwise op's operands ``a``/``b``/``out``, a composite op's
``ctx`` entries), so each node name maps PyTorch's field names to where the value lives
(``FIELDS``); elementwise nodes default to ``a`` -> ``self``, ``b`` -> ``other``, ``out`` ->
``result``. Only fields whose value is exactly PyTorch's are listed: dims are kept normalized
here but as given (negative ones printed as unsigned) there, so ``_saved_dim`` & co. are left
out, as are scalars whose Python type jitgrad does not keep (``_saved_alpha``: 1 or 1.0).

Reading a field does what PyTorch's does: a tensor saved from an input is that tensor (``is``),
an output is a new Tensor on the same storage with the node as grad_fn, a field the node did not
need to save (``(a * 2).grad_fn._saved_self``) is None, a freed one raises the "backward through
the graph a second time" error, one modified in place since raises the version error, one
stored through saved-tensor hooks is unpacked.
"""
from __future__ import annotations

import numpy as np

from .node import FREED_MESSAGE, SavedTensor

__all__ = ["saved_field", "field_names", "RawSavedTensor"]

_FREED_REGISTER = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need "
    "to access saved variables after calling backward.")


# ---- where each field lives. A source is
#   ("t", name, ...)   a saved tensor: the first of the names the node holds (an elementwise
#                      operand or a ctx entry); None when it holds none of them (not needed)
#   ("i", name)        an index/mask array kept as a ctx attribute: an int64/bool Tensor
#   ("v", name)        a plain ctx attribute, as is
#   ("sizes", slot)    the shape of input ``slot`` (a tuple of ints), from the node's metadata
#   ("numel", slot)    its element count
#   ("const", value)   a value this node always has
#   (function,)        function(node): a value worked out from the node

_T = "t"
_SELF_RESULT = {"self": (_T, "x"), "result": (_T, "out")}

FIELDS: dict[str, dict] = {
    # elementwise ops whose operands are not self/other/result
    "PowBackward1": {"self": (_T, "a"), "exponent": (_T, "b"), "result": (_T, "out")},
    "PowBackward2": {"exponent": (_T, "b"), "result": (_T, "out")},
    "WhereBackward0": {"condition": (_T, "cond")},
    # activations written as composite nodes
    "GeluBackward0": {"self": (_T, "x"), "approximate": ("v", "approximate")},
    "SiluBackward0": {"self": (_T, "x")},
    "EluBackward0": {"self": (_T, "x")},
    "SoftplusBackward0": {"self": (_T, "x")},
    "HardswishBackward0": {"self": (_T, "x")},
    "MishBackward0": {"self": (_T, "x")},
    # reductions
    "SumBackward0": {"self_sym_sizes": ("sizes", 0)},
    "SumBackward1": {"keepdim": ("v", "keepdim"), "self_sym_sizes": ("sizes", 0)},
    "MeanBackward0": {"self_sym_sizes": ("sizes", 0), "self_sym_numel": ("numel", 0)},
    "MeanBackward1": {"keepdim": ("v", "keepdim"), "self_sym_sizes": ("sizes", 0),
                      "self_sym_numel": ("numel", 0)},
    "MaxBackward1": _SELF_RESULT, "MinBackward1": _SELF_RESULT,
    "MaxBackward0": {"indices": ("i", "indices"), "keepdim": ("v", "keepdim"),
                     "self_sym_sizes": ("sizes", 0)},
    "MinBackward0": {"indices": ("i", "indices"), "keepdim": ("v", "keepdim"),
                     "self_sym_sizes": ("sizes", 0)},
    "AmaxBackward0": {**_SELF_RESULT, "keepdim": ("v", "keepdim")},
    "AminBackward0": {**_SELF_RESULT, "keepdim": ("v", "keepdim")},
    "VarBackward0": {"self": (_T, "x"), "keepdim": ("v", "keepdim")},
    "StdBackward0": {**_SELF_RESULT, "keepdim": ("v", "keepdim")},
    "LinalgVectorNormBackward0": {**_SELF_RESULT, "keepdim": ("v", "keepdim")},
    "ProdBackward0": _SELF_RESULT,
    "LogsumexpBackward0": {**_SELF_RESULT, "keepdim": ("v", "keepdim")},
    # matrix products
    # (PyTorch's ``*_sym_strides`` outlive the backward; jitgrad keeps no strides apart from
    # the saved tensors, which the backward frees: left out)
    "MmBackward0": {"self": (_T, "a"), "mat2": (_T, "b"),
                    "self_sym_sizes": ("sizes", 0), "mat2_sym_sizes": ("sizes", 1)},
    "AddmmBackward0": {"mat1": (_T, "m1", "x"), "mat2": (lambda n: _addmm_mat2(n),),
                       "mat1_sym_sizes": ("sizes", 1), "mat2_sym_sizes": ("sizes", 2),
                       # linear's node keeps no alpha/beta: PyTorch's addmm there gets 1, 1
                       "alpha": ("v", "alpha", 1), "beta": ("v", "beta", 1)},
    "BmmBackward0": {"self": (_T, "a"), "mat2": (_T, "b")},
    # views and copies
    "ViewBackward0": {"self_sym_sizes": ("sizes", 0)},
    "UnsafeViewBackward0": {"self_sym_sizes": ("sizes", 0)},
    "ExpandBackward0": {"self_sym_sizes": ("sizes", 0)},
    "SqueezeBackward0": {"self_sym_sizes": ("sizes", 0)},
    "SelectBackward0": {"self_sym_sizes": ("sizes", 0)},
    "SliceBackward0": {"self_sym_sizes": ("sizes", 0)},
    "IndexBackward0": {"self_sym_sizes": ("sizes", 0)},
    "RepeatBackward0": {"self_sym_sizes": ("sizes", 0)},
    "IndexSelectBackward0": {"index": ("i", "index"), "self_sym_sizes": ("sizes", 0)},
    "GatherBackward0": {"index": ("i", "index"), "sparse_grad": ("const", False)},
    "MaskedFillBackward0": {"mask": ("i", "mask")},
    # softmax, losses, normalization, convolution, pooling, embedding
    "SoftmaxBackward0": {"result": (_T, "out")},
    "LogSoftmaxBackward0": {"result": (_T, "out")},
    "MseLossBackward0": {"self": (_T, "x"), "target": (_T, "t"),
                         "reduction": (lambda n: _REDUCTION[n.ctx.attrs["reduction"]],)},
    "ConvolutionBackward0": {"input": (_T, "x"), "weight": (_T, "w"),
                             "transposed": ("v", "transposed"),
                             "groups": (lambda n: n.ctx.attrs["geo"].groups,)},
    "MaxPool2DWithIndicesBackward0": {"self": (_T, "self"), "result1": ("i", "idx")},
    "AvgPool2DBackward0": {"self": (_T, "self")},
    "EmbeddingBackward0": {"indices": ("i", "indices"),
                           "weight_sym_argsize_0": ("v", "num_weights"),
                           # an int64 read back as unsigned: PyTorch shows -1 (no padding
                           # index) as 2**64 - 1
                           "padding_idx": (lambda n: n.ctx.attrs["padding_idx"] % 2 ** 64,),
                           "scale_grad_by_freq": ("v", "scale_grad_by_freq")},
}

_REDUCTION = {"none": 0, "mean": 1, "sum": 2}  # at::Reduction


def _addmm_mat2(node):
    """addmm's ``mat2``: ``torch.addmm``'s own, or ``weight.t()`` for ``linear``, whose node
    keeps the weight as given (PyTorch's linear calls addmm(bias, input, weight.t()))."""
    _, entry = _find_saved(node, ("m2",))
    if entry is not None:
        return entry.tensor(node)
    _, entry = _find_saved(node, ("w",))
    return None if entry is None else entry.tensor(node).t()


# an elementwise node's operands under PyTorch's argument names
_ELEMENTWISE = {"a": "self", "b": "other", "out": "result"}


def _elementwise_fields(node) -> dict:
    table = FIELDS.get(type(node).__name__)
    if table is not None:
        return table
    names = [_ELEMENTWISE[n] for n in node.op.saved_names(tuple(True for _ in node.needs))
             if n in _ELEMENTWISE]
    return {pt: (_T, ours) for ours, pt in _ELEMENTWISE.items() if pt in names}


def field_names(node) -> dict:
    """{PyTorch field name: source} for ``node`` (empty for nodes not described)."""
    if hasattr(node, "op") and hasattr(node, "saved"):
        return _elementwise_fields(node)
    return FIELDS.get(type(node).__name__, {}) if hasattr(node, "ctx") else {}


def _saved_entries(node) -> dict:
    return node.saved if hasattr(node, "op") else node.ctx._saved


def _find_saved(node, names):
    """(key, entry) of the first of ``names`` the node saved, else (None, None)."""
    entries = _saved_entries(node)
    for n in names:
        if n in entries:
            return n, entries[n]
    return None, None


def _wrapped_number(node, key):
    """An elementwise node's saved Python scalar as PyTorch's wrapped-number tensor (int64,
    float64, bool or complex128 0-dim; freed with the graph, as PyTorch's is)."""
    from ..tensor import Tensor
    if node._released:
        raise RuntimeError(FREED_MESSAGE)
    value = node.wrapped.get(key) if getattr(node, "wrapped", None) else None
    if value is None:
        return None
    dtype = (np.bool_ if isinstance(value, (bool, np.bool_)) else
             np.complex128 if isinstance(value, complex) else
             np.int64 if isinstance(value, (int, np.integer)) else np.float64)
    return Tensor._make(np.array(value, dtype=dtype))


def _value(node, source):
    kind = source[0]
    if kind == _T:
        key, entry = _find_saved(node, source[1:])
        if entry is None:
            return None
        if isinstance(entry, SavedTensor):
            return entry.tensor(node)
        return _wrapped_number(node, key)
    if kind == "sizes":
        meta = node._input_meta[source[1]]
        return None if meta is None else tuple(int(s) for s in meta[0])
    if kind == "numel":
        meta = node._input_meta[source[1]]
        return None if meta is None else int(np.prod(meta[0], dtype=np.int64))
    if kind == "const":
        return source[1]
    if callable(kind):
        return kind(node)
    attrs = node.ctx.attrs
    if source[1] not in attrs:
        if len(source) > 2:
            return source[2]
        if node._released:  # an array attribute, freed with the saved tensors
            raise RuntimeError(FREED_MESSAGE)
        return None
    value = attrs[source[1]]
    if kind == "i":
        from ..tensor import Tensor
        if isinstance(value, Tensor):
            return value
        if not isinstance(value, (np.ndarray, np.generic, list, tuple)):
            return Tensor._make(value)  # a device array (a CUDA node's indices), as kept
        arr = np.asarray(value)
        return Tensor._make(arr if arr.dtype == np.bool_ else arr.astype(np.int64, copy=False))
    return value


def saved_field(node, attr: str):
    """``node._saved_<name>`` or ``node._raw_saved_<name>``; AttributeError as Python's when the
    node has no such field."""
    raw = attr.startswith("_raw_saved_")
    name = attr[len("_raw_saved_"):] if raw else attr[len("_saved_"):]
    fields = field_names(node)
    source = fields.get(name)
    if source is None or (raw and source[0] != _T):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}'")
    if raw:
        _, entry = _find_saved(node, source[1:])
        return RawSavedTensor(node, entry if isinstance(entry, SavedTensor) else None)
    return _value(node, source)


class RawSavedTensor:
    """``grad_fn._raw_saved_<name>``: the saved tensor itself. ``register_hooks(pack, unpack)``
    calls ``pack`` on it now and ``unpack`` at every later use (the backward's included), as
    ``saved_tensors_hooks`` does for every tensor saved under it."""

    __slots__ = ("_node", "_saved")

    def __init__(self, node, saved):
        self._node, self._saved = node, saved

    @property
    def data(self):
        s = self._saved
        if s is None or s._freed:
            return None
        return s.tensor(self._node) if s.data is not None else None

    def register_hooks(self, pack_hook, unpack_hook):
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument "
                "types are supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: "
                "collections.abc.Callable, arg1: collections.abc.Callable) -> None\n\nInvoked "
                f"with: {self!r}, {pack_hook!r}, {unpack_hook!r}")
        s = self._saved
        if s is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden")
        if s._freed:
            raise RuntimeError(_FREED_REGISTER)
        if s.data is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time.")
        s._pack(s.tensor(self._node), (pack_hook, unpack_hook))

    def __repr__(self):
        return f"<torch._C._autograd.SavedTensor object at {hex(id(self))}>"
