"""``jitgrad.compile``: record a function's first run, replay it on later calls.

Each call computes a guard key from its arguments (tensor shapes, dtypes, devices,
requires_grad, leaf-ness and aliasing; Python scalars by value; other objects by identity), the
grad mode and the module-structure version (bumped whenever a module's parameters, buffers or
submodules are reassigned). A key seen before replays its recording after checking the
parameters it reads kept their shape, dtype, device and requires_grad; a new key records (at
most ``max_variants`` of them; then, or when a recording hit a graph break, the function runs
eagerly for that key, with one warning saying why).

Replay runs the recorded steps without the function's Python: runs of elementwise ops as one
fused kernel each (``fused.py``), every other step by calling the same jitgrad callable again.
Python code in the function that does not go through jitgrad (printing a string, appending to a
list, reading a global) runs only when the function is recorded, as with tinygrad's ``TinyJit``
and CUDA graphs: keep it outside the compiled function.
"""
from __future__ import annotations

import functools
import os
import sys
import warnings

from ..autograd import grad_mode
from ..tensor import Tensor
from . import capture
from .capture import ElementwiseStep, Recorder, Ref, walk_refs
from .fused import Group
from .lower import FALLBACK as _FALLBACK

_DEBUG = "compile" in os.environ.get("JITGRAD_DEBUG", "").replace(",", " ").split()


class Stats:
    """Counters read by ``jitgrad.autograd.profile`` (captures, replays, guard failures,
    eager calls) and the reasons of the last breaks and guard failures."""

    def __init__(self):
        self.captures = 0
        self.replays = 0
        self.lowered_replays = 0  # replays that ran as a lowered step (lower.py)
        self.cuda_graphs = 0  # CUDA graphs built (graphed.py)
        self.cuda_graph_replays = 0  # replays that launched one
        self.guard_failures = 0
        self.eager_calls = 0
        self.capture_seconds = 0.0
        self.n_reasons = 0  # breaks and guard failures so far
        self.reasons = []  # the last 100 of them, in words

    def note(self, reason):
        self.n_reasons += 1
        self.reasons.append(reason)
        del self.reasons[:-100]


stats = Stats()
_EAGER = object()


class CompiledFunction:
    def __init__(self, fn, *, max_variants=8, fullgraph=False, cuda_graphs=False):
        functools.update_wrapper(self, fn)
        self._cuda_graphs = cuda_graphs
        self._fn = fn
        # a callable object (functools.partial, a class instance) may have no __name__
        self._name = getattr(fn, "__name__", type(fn).__name__)
        self._variants = {}
        self._max_variants = max_variants
        self._fullgraph = fullgraph
        self._warned = set()
        self._structure = capture.structure[0]
        self._failures = 0
        self._py_names = _python_names(fn)

    def __get__(self, obj, objtype=None):  # methods: bind like a function
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if capture.structure[0] != self._structure:
            # a module's parameters, buffers, submodules, hooks or train/eval mode changed:
            # every recording may read what is no longer there
            self._structure = capture.structure[0]
            if self._variants:
                self._guard_failed("a module's parameters, submodules, hooks or mode changed")
                self._variants.clear()
        key, tensors = _guard_key(args, kwargs, self._py_names)
        entry = self._variants.get(key)
        if entry is not None:
            if entry is _EAGER:
                stats.eager_calls += 1
                return self._fn(*args, **kwargs)
            reason = entry.check()
            if reason is None:
                stats.replays += 1
                return entry.replay(tensors)
            self._guard_failed(reason)
            del self._variants[key]
            if self._failures > 4 * self._max_variants:
                return self._eager(key, f"guards keep failing ({reason})", args, kwargs)
        if len(self._variants) >= self._max_variants:
            return self._eager(key, f"more than {self._max_variants} recorded variants "
                                    "(shapes or arguments keep changing)", args, kwargs)
        return self._record(key, args, kwargs, tensors)

    def _record(self, key, args, kwargs, tensors):
        import time
        if capture.recorder is not None:  # nested compiled functions: the outer one records
            return self._fn(*args, **kwargs)
        t0 = time.perf_counter()
        rec = Recorder(list(enumerate(tensors)))
        with capture.recording(rec):
            result = self._fn(*args, **kwargs)
        if rec.reason is None:
            try:
                rec.rec.result = rec.substitute(result)
            except capture.Break as e:
                rec.abandon(str(e))
        if rec.reason is not None:
            if self._fullgraph:
                raise RuntimeError(f"jitgrad.compile(fullgraph=True): {rec.reason}")
            self._variants[key] = _EAGER
            self._warn(rec.reason)
            return result
        program = Program(rec.rec, {i: t._requires_grad for i, t in enumerate(rec.keep)},
                          rec.keep, cuda_graphs=self._cuda_graphs)
        self._variants[key] = program
        stats.captures += 1
        stats.capture_seconds += time.perf_counter() - t0
        _debug(f"recorded {self._name}: {program.describe()}")
        return result

    def _guard_failed(self, reason):
        self._failures += 1
        stats.guard_failures += 1
        stats.note(f"guard failed: {reason}")
        _debug(f"guard failed for {self._name}: {reason}")

    def _eager(self, key, reason, args, kwargs):
        self._variants[key] = _EAGER
        self._warn(reason)
        stats.eager_calls += 1
        return self._fn(*args, **kwargs)

    def _warn(self, reason):
        stats.note(reason)
        _debug(f"{self._name} runs eagerly: {reason}")
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"jitgrad.compile: {self._name} runs eagerly for these "
                          f"arguments: {reason}", stacklevel=3)


def _debug(msg):
    if _DEBUG:
        print(f"[jitgrad compile] {msg}", file=sys.stderr)


# ----------------------------------------------------------------------------- guards

def _python_names(fn):
    """The globals and closure cells ``fn``'s code (and the lambdas and comprehensions in it)
    names: ``[(namespace, name)]``, cells as ``(cell, None)``. Their values are guards, so that
    rebinding a global tensor, number or model the function reads is seen (the replay does not
    run the function's Python, which would have looked the name up again)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    glb = getattr(fn, "__globals__", {})
    out = [(glb, n) for n in sorted(names) if n in glb and not _is_static(glb[n])]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if not _is_static(value):
            out.append((cell, None))
    return tuple(out)


def _is_static(value):
    """Modules, classes and functions: looked up, but rebinding them is not guarded."""
    import types
    return isinstance(value, (types.ModuleType, type, types.FunctionType,
                              types.BuiltinFunctionType, CompiledFunction))


def _python_value(ns, name):
    try:
        v = ns.cell_contents if name is None else ns.get(name, _EAGER)
    except ValueError:
        return None
    t = type(v)
    return (t, v) if t in (int, float, bool, str, type(None), complex) else ("id", id(v))


def _guard_key(args, kwargs, py_names=()):
    tensors = []
    seen = {}

    def walk(obj):
        if isinstance(obj, Tensor):
            k = id(obj)
            if k in seen:
                return ("alias", seen[k])
            seen[k] = len(tensors)
            tensors.append(obj)
            d = obj._data
            # the array's dtype object and class (NumPy: the CPU; CudaArray: cuda) say what
            # str(dtype) and .device.type say, without building either on every call
            return ("T", d.shape, d.dtype, d.__class__, obj._requires_grad,
                    obj._grad_fn is None)
        t = type(obj)
        if t in (int, float, bool, str, type(None), complex):
            return (t, obj)
        if t in (tuple, list):
            return (t, tuple(walk(o) for o in obj))
        if t is dict:
            return (t, tuple((k, walk(v)) for k, v in obj.items()))
        return ("id", id(obj))

    key = (walk(args), walk(kwargs), grad_mode.is_grad_enabled(),
           tuple(_python_value(ns, n) for ns, n in py_names))
    return key, tensors


# ----------------------------------------------------------------------------- the program

class Program:
    """A recording planned for replay: fused groups and call steps in order."""

    def __init__(self, rec, requires, keep=None, cuda_graphs=False):
        from . import lower
        self.n_values = rec.n_values
        self.arg_slots = list(rec.arg_refs.items())
        self.externals = list(rec.externals.items())
        self.external_meta = [(t._data.shape, t._data.dtype, t.device.type, t._requires_grad)
                              for _, t in self.externals]
        self.result = rec.result
        self.items = self._plan(rec, requires, keep)
        # the whole step on arrays, without graph or engine, where every step has a rule
        self.lowered = lower.plan(rec, keep) if keep is not None else None
        # mode="reduce-overhead": a CUDA step replayed as one CUDA graph (graphed.py)
        self.graphed = None
        if cuda_graphs and keep and self.lowered is None:
            from .graphed import GraphedReplay
            self.graphed = GraphedReplay(self, keep)

    def check(self):
        for (_, t), meta in zip(self.externals, self.external_meta):
            d = t._data
            if (d.shape, d.dtype, t.device.type, t._requires_grad) != meta:
                return f"a tensor the function reads changed ({meta[0]} -> {d.shape})"
        return None

    def _plan(self, rec, requires, keep=None):
        """Runs of fusable elementwise steps become Groups. ``requires``: requires_grad of
        every value as recorded (the replay's guards keep it so); ``keep``: the recorded
        tensors (their strides seed each group's output layouts)."""
        steps = rec.steps
        used_after = _uses_after(steps, rec.result)
        items, run = [], []

        def flush():
            if len(run) >= 2:
                end = run[-1][0]
                escapes = {s.out for _, s in run if used_after.get(s.out, -1) > end}
                items.append(("group", Group([s for _, s in run], escapes, requires, keep)))
            else:
                items.extend(("step", s) for _, s in run)
            run.clear()

        for k, s in enumerate(steps):
            if isinstance(s, ElementwiseStep) and s.fusable:
                if run and not _same_group(run[-1][1], s):
                    flush()
                run.append((k, s))
                continue
            flush()
            items.append(("step", s))
        flush()
        return items

    def describe(self):
        if self.lowered is not None:
            return self.lowered.describe()
        parts = []
        for kind, it in self.items:
            if kind == "group":
                parts.append(f"fused[{'+'.join(s.op.name for s in it.steps)}]")
            elif isinstance(it, ElementwiseStep):
                parts.append(it.op.name)
            else:
                parts.append(it.name)
        return f"{len(self.items)} steps: " + ", ".join(parts)

    def replay(self, tensors):
        values = [None] * self.n_values
        for i, path in self.arg_slots:
            values[i] = tensors[path]
        for i, t in self.externals:
            values[i] = t
        if self.lowered is not None:
            out = self.lowered.run(values)
            if out is not _FALLBACK:
                stats.lowered_replays += 1
                return out
        if self.graphed is not None and self.graphed.off is None:
            out = self.graphed.replay(tensors, values)
            if out is not _FALLBACK:
                return out
        self._run_items(values)
        return _fill(self.result, values)

    def _run_items(self, values, marks=None):
        """Run every planned item on ``values``; ``marks``: a list that gets the length of the
        CUDA graph tape after each item (``graphed.py``)."""
        if marks is not None:
            from ..backends import cuda
        for _, it in self.items:
            self._run_item(it, values)
            if marks is not None:
                marks.append(len(cuda._tape.entries))

    def _run_item(self, it, values):
        enabled = grad_mode.is_grad_enabled()
        ge = it.grad_enabled
        if ge != enabled:
            grad_mode._set(ge)
        try:
            if isinstance(it, (Group, ElementwiseStep)):
                it.run(values)
            else:
                out = it.fn(*_fill(it.args, values), **_fill(it.kwargs, values))
                if it.outs is not None:
                    _assign(it.outs, out, values)
        finally:
            if ge != enabled:
                grad_mode._set(enabled)


def _same_group(a, b):
    return (a.shape == b.shape and a.ct is b.ct and a.grad_enabled == b.grad_enabled
            and a.on_cuda == b.on_cuda)


def _uses_after(steps, result):
    """value index -> position of its last use (len(steps) for the function's result)."""
    last = {}
    for k, s in enumerate(steps):
        if isinstance(s, ElementwiseStep):
            refs = [v for v in list(s.operands) + list(s.aux.values()) if isinstance(v, Ref)]
        else:
            refs = list(walk_refs((s.args, s.kwargs)))
        for r in refs:
            last[r.i] = k
    for r in walk_refs(result):
        last[r.i] = len(steps)
    return last


def _fill(obj, values):
    if obj.__class__ is Ref:
        return values[obj.i]
    t = type(obj)
    if t is tuple or t is list:
        return t(_fill(o, values) for o in obj)
    if t is dict:
        return {k: _fill(v, values) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return t(*(_fill(o, values) for o in obj))
    return obj


def _assign(template, out, values):
    if template.__class__ is Ref:
        values[template.i] = out
    elif isinstance(template, (tuple, list)):
        for t, o in zip(template, out):
            _assign(t, o, values)
