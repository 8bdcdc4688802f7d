"""Recording what a function does with tensors: the boundaries and the recorder.

``jitgrad.compile`` records a function's first run as a list of *steps* (``Recording``). What a
step is comes from one mechanism, the **boundary**: while a function is recorded (and only
then, ``recording``), jitgrad's public callables are wrapped — Tensor methods and operators,
the functions of ``jitgrad``, ``jitgrad.nn.functional``, ``jitgrad.linalg``,
``jitgrad.nn.utils``, ``jitgrad.autograd.grad``/``backward``, and the call of every jitgrad
module (containers are recorded through); ``Optimizer.step``/``zero_grad`` and
``LRScheduler.step`` are boundaries for good (``optim/``). A call that reaches a boundary while
a recorder is active and no other boundary is running becomes one step: the callable, its
arguments with every tensor replaced by a reference to a recorded value, and the tensors it
returned. Calls inside it (the op's own implementation) are not seen.

An elementwise op of the registry, reached directly through its boundary, is recorded as an
``ElementwiseStep`` (its declaration, operands and constants): consecutive ones fuse into one
kernel with one backward node at replay (``fused.py``). Everything else replays by calling the
same callable again (``CallStep``): the eager implementation, with its own graph nodes.

What cannot be replayed ends the recording (``Recorder.abandon``): the function then runs
eagerly on every call with these guards, and ``jitgrad.autograd.profile`` / the one-line warning
say why. The net that makes this sound: every tensor born while recording must be the output of a
step (a tensor made outside any boundary, e.g. ``Tensor(...)`` or a property like ``x.T``, is not
replayable); every tensor a step consumes must be an argument of the function, an output of an
earlier step, or a tensor that existed before the function was called (a parameter); reading
tensor data on the host (``item()``, ``bool(x)``, printing), ``.grad``/``.data`` access
inside the function, module hooks, non-tensor results of ops, and in-place writes made outside
every boundary (seen through the version counter) are graph breaks. In-place ops through a
boundary replay as calls like any other (on the replay's own tensors).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor

_get_ident = threading.get_ident
_ND = np.ndarray
recorder = None  # the active Recorder, or None (checked by every boundary)

# methods whose (non-tensor) result is tensor metadata, not data: passed through while recording
_METADATA = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset",
    "is_contiguous", "element_size", "get_device", "is_floating_point", "is_complex",
    "is_signed", "__len__", "data_ptr", "type", "is_set_to", "untyped_storage",
    "__hash__"})
# methods that read tensor data on the host: a graph break (data-dependent control flow)
_HOST_READS = frozenset({
    "item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "__complex__",
    "__repr__", "__str__", "__format__", "__array__", "__iter__", "__reduce_ex__", "__deepcopy__",
    "equal", "allclose", "is_nonzero", "register_hook", "retain_grad",
    "register_post_accumulate_grad_hook"})
# never wrapped: object protocol and construction
_SKIP = frozenset({
    "__init__", "__new__", "__init_subclass__", "__getattribute__", "__getattr__",
    "__setattr__", "__delattr__", "__dir__", "__class__", "__subclasshook__", "__sizeof__",
    "__reduce__", "__getstate__", "__setstate__", "__copy__", "__weakref__", "__dict__",
    "__slots__", "__module__", "__doc__", "__class_getitem__", "__array_priority__",
    "__torch_function__", "__cuda_array_interface__", "__dlpack__", "__dlpack_device__",
    "__contains__"})


class Break(Exception):
    """Why a recording cannot be replayed (kept as the reason; never escapes to the user)."""


class Ref:
    """A recorded value in a step's arguments: the i-th tensor of the recording."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"%{self.i}"


def walk_refs(obj):
    """The Refs in ``obj`` (a Ref, or tuples, lists and dicts of them and of constants)."""
    if isinstance(obj, Ref):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from walk_refs(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from walk_refs(o)


class CallStep:
    """Replay by calling ``fn(*args, **kwargs)`` again with the recorded values substituted."""

    __slots__ = ("fn", "args", "kwargs", "outs", "grad_enabled", "name")

    def __init__(self, fn, args, kwargs, outs, grad_enabled, name):
        self.fn, self.args, self.kwargs, self.outs = fn, args, kwargs, outs
        self.grad_enabled, self.name = grad_enabled, name


class ElementwiseStep:
    """One registry op: ``values[out] = op(operands)``; operands are Refs or constants."""

    __slots__ = ("op", "operands", "aux", "out", "shape", "ct", "out_dt", "grad_enabled",
                 "requires_grad", "fusable", "on_cuda")

    def __init__(self, op, operands, aux, out, shape, ct, out_dt, requires_grad, fusable):
        self.op, self.operands, self.aux, self.out = op, operands, aux, out
        self.shape, self.ct, self.out_dt = shape, ct, out_dt
        self.grad_enabled = grad_mode.is_grad_enabled()
        self.requires_grad, self.fusable = requires_grad, fusable
        self.on_cuda = False

    def run(self, values):
        """``values[out] = op(operands)`` eagerly (``values``: a list or dict by value index)."""
        from ..ops.elementwise_call import call
        args = [values[v.i] if isinstance(v, Ref) else v for v in self.operands]
        aux = {k: values[v.i] if isinstance(v, Ref) else v for k, v in self.aux.items()}
        values[self.out] = call(self.op, *args, **aux)


class Recording:
    """What one eager run did: values (by index), steps, and where the arguments and the
    result come from. ``values[i]`` during recording is the Tensor; the replay rebuilds them."""

    def __init__(self):
        self.steps = []
        self.arg_refs = {}  # value index -> path into the flattened arguments
        self.externals = {}  # value index -> Tensor that existed before the call (parameters)
        self.result = None  # the function's result with Refs in place of recorded tensors
        self.n_values = 0


class Recorder:
    def __init__(self, arg_tensors):
        self.rec = Recording()
        self.depth = 0
        self.index = {}  # id(tensor) -> value index
        self.keep = []  # the recorded tensors (so ids stay unique while recording)
        self.born = {}  # id -> tensor made during recording (inside or outside a boundary)
        self.reason = None
        self.elementwise = None  # the direct elementwise call inside the current boundary
        self.thread = None  # the recording thread (other threads' calls are not recorded)
        for path, t in arg_tensors:
            if id(t) not in self.index:
                i = self._value(t)
                self.rec.arg_refs[i] = path

    # -------------------------------------------------------------- values
    def _value(self, t):
        i = self.rec.n_values
        self.rec.n_values += 1
        self.index[id(t)] = i
        self.keep.append(t)
        return i

    def ref(self, t):
        """The Ref for a tensor a step consumes (an argument, an earlier output, an external)."""
        i = self.index.get(id(t))
        if i is not None:
            return Ref(i)
        if id(t) in self.born:
            raise Break("a tensor made inside an operation (e.g. .grad after backward, or a "
                        "property such as .T or .data) is used by a later operation")
        i = self._value(t)
        self.rec.externals[i] = t
        return Ref(i)

    def abandon(self, reason):
        if self.reason is None:
            self.reason = reason

    # -------------------------------------------------------------- structure walking
    def substitute(self, obj):
        """``obj`` with every Tensor replaced by its Ref (tuples, lists and dicts walked)."""
        if isinstance(obj, Tensor):
            return self.ref(obj)
        if type(obj) in (tuple, list):
            return type(obj)(self.substitute(o) for o in obj)
        if type(obj) is dict:
            return {k: self.substitute(v) for k, v in obj.items()}
        return obj

    def outputs(self, obj):
        """Register the tensors of a step's result as new values; the result with Refs."""
        if isinstance(obj, Tensor):
            i = self.index.get(id(obj))
            if i is None:
                i = self._value(obj)
            return Ref(i)
        if type(obj) in (tuple, list) or (isinstance(obj, tuple) and hasattr(obj, "_fields")):
            items = [self.outputs(o) for o in obj]
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        return obj

    # -------------------------------------------------------------- the boundary
    def call(self, name, kind, fn, args, kwargs):
        if self.reason is not None:  # abandoned: just run (eager)
            return fn(*args, **kwargs)
        if kind == "read":
            self.abandon(f"{name}() reads tensor data on the host (a graph break)")
            return fn(*args, **kwargs)
        # one-shot iterators (model.parameters()) become lists, for this call and the replays
        args = tuple(list(a) if _is_iterator(a) else a for a in args)
        kwargs = {k: list(v) if _is_iterator(v) else v for k, v in kwargs.items()}
        try:
            sargs, skw = self.substitute(args), self.substitute(kwargs)
        except Break as e:
            self.abandon(f"{name}: {e}")
            return fn(*args, **kwargs)
        self.depth += 1
        self.elementwise = None
        try:
            out = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        ew, self.elementwise = self.elementwise, None
        if self.reason is not None:
            return out
        if kind == "meta":
            return out
        if out is not None and not _has_tensor(out):
            self.abandon(f"{name} returned {type(out).__name__}, not a tensor")
            return out
        ge = grad_mode.is_grad_enabled()
        if ew is not None and ew is not _SEVERAL and ew.result is out:
            try:
                self._elementwise_step(ew, out)
                return out
            except Break:  # an operand made inside this call: replay the whole call
                pass
        self.rec.steps.append(CallStep(fn, sargs, skw, self.outputs(out), ge, name))
        return out

    def _elementwise_step(self, ew, out):
        operands = tuple(self.ref(a) if isinstance(a, Tensor) else a for a in ew.args)
        aux = {k: (self.ref(v) if isinstance(v, Tensor) else v) for k, v in ew.aux.items()}
        ref = self.outputs(out)
        step = ElementwiseStep(ew.op, operands, aux, ref.i, out._data.shape, ew.ct, ew.out_dt,
                               out._requires_grad, _fusable(ew))
        step.on_cuda = out._data.__class__ is not _ND
        self.rec.steps.append(step)

    def tensor_born(self, t):
        if self.depth == 0 and self.reason is None:
            self.abandon("a tensor was made outside jitgrad's operations (Tensor(...) or a "
                         f"property such as .T, .data, .grad), in {_maker()}")
        self.born[id(t)] = t


class ElementwiseCall:
    """What ``ops.elementwise_call.call`` tells the recorder about itself."""

    __slots__ = ("op", "args", "aux", "ct", "out_dt", "result")

    def __init__(self, op, args, aux, ct, out_dt, result):
        self.op, self.args, self.aux = op, args, aux
        self.ct, self.out_dt, self.result = ct, out_dt, result


def note_elementwise(op, args, aux, ct, out_dt, result):
    """Called by the elementwise forward (only while recording, directly under a boundary)."""
    r = recorder
    if r is None or r.thread != _get_ident():
        return
    if r.depth == 1 and r.elementwise is None:
        r.elementwise = ElementwiseCall(op, args, aux, ct, out_dt, result)
    elif r.depth == 1:
        r.elementwise = _SEVERAL


_SEVERAL = ElementwiseCall(None, (), {}, None, None, None)


def _fusable(ew):
    """Fusable: every operand on the result's device, of its shape and of the kernel's dtype
    (no casts, no broadcasting inside a fused loop), a floating result of that dtype."""
    ct, out_dt = ew.ct, ew.out_dt
    if ct is None or ct is not out_dt or not ct.is_floating_point or ct.itemsize < 4:
        return False
    data = ew.result._data
    for a in list(ew.args) + list(ew.aux.values()):
        if isinstance(a, Tensor):
            d = a._data
            if d.__class__ is not data.__class__ or d.shape != data.shape or d.dtype != ct.np:
                return False
    return True


def _maker():
    """Where the unrecorded tensor was made: the innermost frame outside this package and
    tensor.py (a user's line or the jitgrad function that made it)."""
    import sys
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.endswith(("capture.py", "tensor.py")):
        f = f.f_back
    if f is None:
        return "?"
    return f"{f.f_code.co_name} ({f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno})"


def _is_iterator(obj):
    return hasattr(obj, "__next__") and hasattr(obj, "__iter__") and not isinstance(obj, Tensor)


def _has_tensor(obj):
    if isinstance(obj, Tensor):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_has_tensor(o) for o in obj)
    return False


# ----------------------------------------------------------------------------- installing

def boundary(fn, name, kind="op"):
    """``fn`` wrapped so that an active recorder sees each outermost call of it."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        r = recorder
        if r is None or r.depth or r.thread != _get_ident():
            return fn(*args, **kwargs)
        return r.call(name, kind, fn, args, kwargs)
    wrapper.__jitgrad_boundary__ = fn
    return wrapper


def _breaking(fn, reason):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        r = recorder
        if r is not None and r.depth == 0 and r.thread == _get_ident():
            r.abandon(reason)
        return fn(*args, **kwargs)
    wrapper.__jitgrad_boundary__ = fn
    return wrapper


_patches = None  # [(owner, name, original, wrapped)], built once
structure = [0]  # bumped when a module's parameters, buffers, submodules, hooks or mode change


class recording:
    """``with recording(rec):`` the boundaries are in place and ``rec`` sees this thread's
    calls. Outside a recording jitgrad runs unwrapped: eager code pays nothing, and warnings'
    stack levels and identity checks (``activation is F.relu``) see the plain functions."""

    def __init__(self, rec):
        self.rec = rec

    def __enter__(self):
        global recorder
        if _patches is None:
            install()
        self.rec.thread = threading.get_ident()
        for owner, name, _, wrapped in _patches:
            setattr(owner, name, wrapped)
        recorder = self.rec
        return self.rec

    def __exit__(self, *exc):
        global recorder
        recorder = None
        for owner, name, original, _ in _patches:
            setattr(owner, name, original)
        return False


def install():
    """Build the boundary wrappers of jitgrad's public callables (once); bump the module
    structure version on reassignments from now on."""
    global _patches
    if _patches is not None:
        return
    import jitgrad

    from .. import linalg
    from ..nn import functional as F
    from ..nn import utils as nn_utils
    from ..nn.modules.module import Module
    from ..nn.utils import clip_grad
    from ..tensor import VersionCounter

    patches = []

    def patch(owner, name, wrapped):
        patches.append((owner, name, vars(owner)[name], wrapped))

    for name, attr in list(vars(Tensor).items()):
        if name in _SKIP or (name.startswith("_") and not name.startswith("__")):
            continue
        if isinstance(attr, property):
            if name in ("grad", "data"):
                patch(Tensor, name, property(
                    _breaking(attr.fget, f"reads .{name} inside the compiled function"),
                    attr.fset and _breaking(attr.fset, f"sets .{name} inside the compiled "
                                                       "function"), attr.fdel, attr.__doc__))
            continue
        if not callable(attr) or isinstance(attr, (type, staticmethod, classmethod)):
            continue
        kind = "meta" if name in _METADATA else "read" if name in _HOST_READS else "op"
        patch(Tensor, name, boundary(attr, name, kind))
    for mod in (jitgrad, F, linalg, nn_utils, clip_grad):
        for name, attr in list(vars(mod).items()):
            if name.startswith("_") or isinstance(attr, type) or not callable(attr):
                continue
            if not getattr(attr, "__module__", "").startswith("jitgrad"):
                continue
            if name in _NOT_OPS:
                continue
            patch(mod, name, boundary(attr, name))
    from .. import autograd
    for name in ("grad", "backward"):  # autograd.grad(...) inside a compiled function
        patch(autograd, name, boundary(vars(autograd)[name], f"autograd.{name}"))
    patch(Tensor, "_init", _born(Tensor._init))
    # Optimizer.step/zero_grad and LRScheduler.step are boundaries for good (optim/): LR
    # schedulers keep a reference to opt.step made before any recording
    slot = VersionCounter.value
    patch(VersionCounter, "value", property(slot.__get__, _version_setter(slot)))
    patch(Module, "__call__", _module_call(Module.__call__))
    for name in ("__setattr__", "__delattr__", "register_parameter", "register_buffer",
                 "add_module", "register_forward_hook", "register_forward_pre_hook",
                 "register_full_backward_hook", "register_full_backward_pre_hook",
                 "register_backward_hook"):
        setattr(Module, name, _bumping(getattr(Module, name)))
    _patches = patches


# jitgrad functions that are not operations on tensors (state queries, context managers)
_NOT_OPS = frozenset({
    "compile", "is_grad_enabled", "get_default_dtype", "is_tensor", "is_storage",
    "is_floating_point", "is_complex", "numel", "typename", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "is_inference_mode_enabled", "get_default_device",
    "get_printoptions", "initial_seed", "promote_types", "result_type", "can_cast"})


# jitgrad modules that only call their children: recorded through, not as one step
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterList",
                         "ParameterDict", "OptimizedModule"})


def _module_call(call):
    """Module.__call__ while recording: hooks are a graph break (Python the replay would
    skip); a jitgrad module (Linear, Conv2d, TransformerEncoderLayer, ...) is one boundary,
    since its forward calls jitgrad's functions directly rather than through their public
    names; a user's module or a container is recorded through (its calls are seen)."""
    @functools.wraps(call)
    def __call__(self, *args, **kwargs):
        r = recorder
        if r is None or r.depth or r.thread != _get_ident():
            return call(self, *args, **kwargs)
        if (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            r.abandon(f"{type(self).__name__} has hooks (they run Python the replay would "
                      "skip)")
            return call(self, *args, **kwargs)
        cls = type(self)
        if cls.__module__.startswith("jitgrad.") and cls.__name__ not in _CONTAINERS:
            return r.call(cls.__name__, "op", call, (self,) + args, kwargs)
        return call(self, *args, **kwargs)
    return __call__


def _version_setter(slot):
    """The version counter's setter while recording: an in-place write made outside every
    boundary (jitgrad internals called directly, an unwrapped optimizer) is not replayable."""
    def set_value(self, v):
        r = recorder
        if r is not None and r.depth == 0 and r.thread == _get_ident() and r.reason is None:
            r.abandon(f"an in-place write outside jitgrad's public operations, in {_maker()}")
        slot.__set__(self, v)
    return set_value


def _born(init):
    @functools.wraps(init)
    def _init(self, data, requires_grad):
        init(self, data, requires_grad)
        r = recorder
        if r is not None and r.thread == _get_ident():
            r.tensor_born(self)
    return _init


def _bumping(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        structure[0] += 1
        return method(self, *args, **kwargs)
    return wrapper
