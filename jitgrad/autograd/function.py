"""``autograd.Function``: user-defined ops with a hand-written backward, PyTorch's API.

As in PyTorch, the ``ctx`` a Function's ``forward`` receives *is* the node its outputs get as
``grad_fn`` (``XBackward``, a ``BackwardCFunction``): attributes set on ``ctx`` are readable on
``y.grad_fn``, and ``grad_fn.saved_tensors`` unpacks (with the version checks) like
``ctx.saved_tensors`` does in ``backward``.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from . import grad_mode
from .node import FREED_MESSAGE, Node, SavedTensor, node_class
from .view_requires_grad import follow_base

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]


class FunctionCtx:
    """The methods ``forward`` / ``setup_context`` call on ``ctx``."""

    def save_for_backward(self, *tensors):
        from ..tensor import Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs):
        warnings.warn("mark_shared_storage is deprecated. Tensors with shared storages are "
                      "automatically tracked. Note that calls to `set_()` are not tracked",
                      DeprecationWarning, stacklevel=2)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one ``Function.apply`` call."""

    def __init__(self, cls, next_functions, input_meta, needs, is_tensor):
        Node.__init__(self, next_functions, input_meta)
        self._forward_cls = cls
        self.needs_input_grad = needs
        self._is_tensor_input = is_tensor
        self._saved = None
        self._outputs_meta = ()
        self._n_outputs = 1
        self.materialize_grads = True
        self.to_save = None

    def __repr__(self):  # a Python object's repr, as PyTorch's Function nodes print
        cls = type(self)
        return f"<{cls.__module__}.{cls.__qualname__} object at {hex(id(self))}>"

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            return ()
        return tuple(None if s is None else s.tensor(self) for s in saved)

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors

    def release(self) -> None:
        super().release()
        if self._saved:
            for s in self._saved:
                if s is not None:
                    s.free()

    def apply(self, grads):
        return _function_backward(self, grads)


class _DelayedError(Node):
    """What ``once_differentiable`` puts on gradients computed with create_graph=True."""

    __slots__ = ("msg", "_n_outputs")

    def __init__(self, msg, next_functions, input_meta):
        super().__init__(next_functions, input_meta)
        self.msg = msg

    def apply(self, grads):
        raise RuntimeError(self.msg)


_Error = node_class("Error", _DelayedError)


def _function_backward(node, grads):
    from ..ops.basic import zeros_like
    from ..tensor import Tensor
    if node._released and node._saved:
        raise RuntimeError(FREED_MESSAGE)
    if node.materialize_grads:
        grads = [g if g is not None or o.__class__ is _NoGrad else zeros_like(o)
                 for g, o in zip(grads, node._outputs_meta)]
    cls = node._forward_cls
    user_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
    if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           "allowed. You should only implement one of them.")
    res = user_fn(node, *grads[:node._n_outputs])
    if not isinstance(res, tuple):
        res = (res,)
    name = node.name()
    n_in = len(node.next_functions)
    if len(res) != n_in:
        if len(res) > n_in and all(r is None for r in res[n_in:]):
            res = res[:n_in]
        else:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n_in}, got {len(res)})")
    out = []
    keep = grad_mode.is_grad_enabled()
    for i, (r, meta) in enumerate(zip(res, node._input_meta)):
        if r is None:
            out.append(None)
            continue
        if not isinstance(r, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
        if not node._is_tensor_input[i]:
            raise RuntimeError(f"function {name} returned a gradient different than None at "
                               f"position {i + 1}, but the corresponding forward input was not "
                               "a Variable")
        if meta is None:  # an input that does not require grad: the gradient is dropped
            out.append(None)
            continue
        shape = meta[0]
        if tuple(r.shape) != shape and not _expandable(shape, tuple(r.shape)):
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                               f"{list(r.shape)} but expected shape compatible with "
                               f"{list(shape)}")
        # a user's backward may return tensors it keeps (its saved inputs, say): the engine
        # passes on only arrays it owns, so leaves can adopt them without copying
        out.append(r if keep else Tensor._make(r._data.copy()))
    return out


def _expandable(shape, desired) -> bool:
    """PyTorch's is_expandable_to(shape, desired): ``shape`` broadcasts to ``desired``."""
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired)):
        if s != d and s != 1:
            return False
    return True


def _setup_context_defined(fn) -> bool:
    return fn is not _SingleLevelFunction.setup_context


class _FunctionMeta(type):
    """Gives each Function subclass its own node class, named ``<Name>Backward`` in this module,
    as PyTorch does (two Functions of the same name in different modules get different
    classes; ``repr(grad_fn)`` reads ``<jitgrad.autograd.function.<Name>Backward object ...>``)."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"__slots__": (), "__module__": __name__,
                                  "__qualname__": name + "Backward"})
        super().__init__(name, bases, attrs)


class _SingleLevelFunction(metaclass=_FunctionMeta):
    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")


class Function(_SingleLevelFunction):
    """Subclass with static ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grads)``; call ``apply``."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor
        setup = _setup_context_defined(cls.setup_context)
        if kwargs or setup:
            # PyTorch binds keyword (and default) arguments to forward's positional inputs
            sig = inspect.signature(cls.forward)
            if setup:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                args = bound.args
            else:
                bound = sig.bind(None, *args, **kwargs)
                bound.apply_defaults()
                args = bound.args[1:]
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        needs = tuple(t and a.requires_grad for t, a in zip(is_tensor, args))
        executable = any(needs) and grad_mode.is_grad_enabled()
        next_functions, meta = [], []
        if executable:
            for a, n in zip(args, needs):
                if n:
                    next_functions.append(a._edge())
                    meta.append((tuple(a.shape), a.dtype))
                else:
                    next_functions.append((None, 0))
                    meta.append(None)
        else:
            next_functions = [(None, 0)] * len(args)
            meta = [None] * len(args)
        ctx = cls._backward_cls(cls, next_functions, meta, needs, is_tensor)
        with grad_mode.no_grad():
            if setup:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if executable:
            outs = _wrap_outputs(ctx, args, outs)
        else:
            _check_dirty_leaves(ctx, args)
        _save(ctx, outs, executable)
        return outs[0] if single else outs


def _check_dirty_leaves(ctx, args):
    for d in getattr(ctx, "dirty_tensors", None) or ():
        if d.is_leaf and d.requires_grad and grad_mode.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                               "operation.")


def _wrap_outputs(ctx, args, outs):
    """Attach the node to the differentiable outputs (PyTorch's _wrap_outputs)."""
    from ..tensor import Tensor
    dirty = getattr(ctx, "dirty_tensors", None) or ()
    non_diff = getattr(ctx, "non_differentiable", None) or ()
    dirty_ids = {id(t) for t in dirty}
    non_diff_ids = {id(t) for t in non_diff}
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    new_outs, metas = [], []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            new_outs.append(o)
            metas.append(None)
            continue
        metas.append(Tensor._make(o._data))
        if id(o) in dirty_ids:
            if o.is_leaf and o.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            o._vc.value += 1  # PyTorch bumps the version of every tensor marked dirty
        elif id(o) in input_ids:
            # an input returned as is: the output is a new tensor sharing its storage and
            # version (PyTorch returns a view of it)
            t = Tensor._make(o._data)
            t._vc = o._vc
            o = t
        if o.is_floating_point() and id(outs[i]) not in non_diff_ids:
            o._grad_fn, o._output_nr, o._requires_grad = ctx, i, True
            if "_views" in o.__dict__:  # a dirty base: views made before follow (PyTorch)
                follow_base(o)
        new_outs.append(o)
    ctx._outputs_meta = tuple(m if m is not None else _NoGrad() for m in metas)
    ctx._n_outputs = len(outs)
    return tuple(new_outs)


class _NoGrad:
    """Stands for a non-Tensor output when materializing gradients: its gradient stays None."""


def _save(ctx, outs, executable):
    to_save = ctx.to_save
    if to_save is None:
        return
    ctx.to_save = None
    if not executable:
        return
    out_ids = {id(o): o for o in outs}
    saved = []
    for t in to_save:
        if t is None:
            saved.append(None)
        elif id(t) in out_ids and t._grad_fn is ctx:
            saved.append(SavedTensor(t, is_output=True))
        else:
            saved.append(SavedTensor(t))
    ctx._saved = saved


def once_differentiable(fn):
    """Run ``backward`` without building a graph; differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from ..tensor import Tensor
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        edges, metas, wrapped = [], [], []
        for o in outs:
            if isinstance(o, Tensor):
                d = o.detach()
                d.requires_grad_(True)
                edges.append(d._edge())
                metas.append((tuple(d.shape), d.dtype))
            else:
                edges.append((None, 0))
                metas.append(None)
        node = _Error("trying to differentiate twice a function that was marked with "
                      "@once_differentiable", edges, metas)
        node._n_outputs = len(outs)
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                t = Tensor._make(o._data, True)
                t._grad_fn, t._output_nr = node, i
                o = t
            wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


FunctionCtx.__module__ = __name__
