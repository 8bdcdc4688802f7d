"""``jitgrad.compile(fn, mode="reduce-overhead")`` on CUDA: a recording replayed as one CUDA
graph (``backends/cuda_graph.py``), with one call per step instead of one per kernel.

How a recording becomes a graph:

1. **Static inputs.** The step's argument tensors are copied into buffers of its own (allocated
   once), and every taped run and graph launch reads those: a graph launches on fixed addresses.
2. **Two taped runs.** The next two replays run the ordinary way (every kernel runs) while a
   tape records their launches. If both tapes have the same signature (same kernels, scalars
   and persistent buffers, buffers allocated during the step in the same order) and the step
   changed nothing on the host that a graph would not redo (below), the second tape becomes the
   graph; otherwise the recording keeps replaying the ordinary way, for the reason in
   ``profile().compile_reasons``.
3. **Graph replays.** Copy the arguments in, re-run the host-only calls before and after the
   launches (``zero_grad()`` with ``set_to_none``, ``scheduler.step()``), launch the graph, set
   every parameter's ``.grad`` to the tensor the taped run left there, add the version counter
   bumps the taped run made, and return fresh copies of the results (a result never aliases the
   graph's buffers, as an eager result does not).

Random numbers (dropout) are graph-safe: while a step is taped, the CUDA generator's draws read
(seed, offset) from a device array and count their offsets from the step's start
(``_cuda_random._draw``); a replay rewrites that array and advances the host offset by the
step's draws, so the masks and the stream after the step are eager's.

What keeps a step off graphs (it replays the ordinary way, as correct as before): host reads or
uploads inside the step; optimizer state that changes on the host each step (``Adam``'s step
count without ``capturable=True``, its bias correction a kernel scalar); argument tensors that
require grad or are written in place; hooks on parameters; a scheduler called between launches;
results that are not made by the step or whose graph was not freed by a ``backward()``. A guard
that fails later (a parameter's ``.data`` replaced, a changed learning rate or other optimizer
setting, ``.grad`` reassigned where the graph accumulates into it, the optimizer state
replaced) drops the graph and tapes again, up to ``MAX_REBUILDS`` times.

As with ``torch.cuda.graphs``, the ``.grad`` tensors after a graph replay are the same objects
from step to step, rewritten in place (eager makes new ones when ``zero_grad`` set them to None):
keep a copy (``p.grad.clone()``) to compare gradients across steps.
"""
from __future__ import annotations

from .. import _cuda_random
from .capture import walk_refs
from .lower import FALLBACK

MAX_REBUILDS = 3


class GraphedReplay:
    """The CUDA-graph state of one recording (``Program``): taping, built, or off."""

    def __init__(self, program, keep):
        from ..optim.optimizer import Optimizer
        self.program = program
        self.off = None            # why this recording does not use graphs, or None
        self.static = None         # the static input tensors, by argument path
        self.prev_sig = None       # the last taped run's signature
        self.graph = None
        self.rebuilds = 0
        self.optimizers = []       # whose calls the recording makes (state and settings)
        for kind, it in program.items:
            owner = it.args[0] if kind == "step" and getattr(it, "args", None) else None
            if isinstance(owner, Optimizer) and owner not in self.optimizers:
                self.optimizers.append(owner)
        if any(not _on_cuda(t) for t in keep):
            self.off = "the step has tensors on the CPU"

    # -------------------------------------------------------------- the replay

    def replay(self, tensors, values):
        """The step's result, or ``FALLBACK`` when nothing ran and this call must replay the
        ordinary way (``off`` says why)."""
        if self.static is not None and _layouts_differ(tensors, self.static):
            # the graph's kernels run in the static inputs' layout, and so would their
            # results' layouts: an argument laid out otherwise replays the ordinary way
            return FALLBACK
        if self.graph is not None:
            reason = self._guard()
            if reason is None:
                return self._launch(tensors, values)
            self._drop(f"guard failed: {reason}")
            if self.off is not None:
                return FALLBACK
        return self._taped(tensors, values)

    def _taped(self, tensors, values):
        """Run the step the ordinary way under a tape: the first time on the caller's own
        tensors (every effect eager's), then on the static inputs; the second of two equal
        tapes becomes the graph."""
        from ..backends import cpu, cuda_graph
        prog = self.program
        if self.prev_sig is None:
            reason = _argument_problem(tensors)
            if reason is not None:
                self._give_up(reason)
                return FALLBACK  # nothing ran: the ordinary replay runs it
            inputs = tensors
        else:
            if self.static is None:
                # clone keeps a dense argument's strides: the step's results get eager's
                # layouts (a transposed batch gives transposed elementwise results)
                self.static = [t.detach().clone() for t in tensors]
            self._copy_in(tensors, values)
            inputs = self.static
        before = self._host_state(inputs)
        cpu_launches = cpu.stats.launches
        tape, marks = cuda_graph.Tape([t._data.buf for t in inputs]), _Marks(self._settings)
        gen = _cuda_random.default_generator
        gen.begin_graph_step()
        try:
            with cuda_graph.taping(tape):
                prog._run_items(values, marks)
        finally:
            draws = gen.end_graph_step()
        sig = tape.signature()
        reason = tape.broken or self._effects_problem(before, marks, values, tape, inputs,
                                                      draws)
        if reason is None and cpu.stats.launches != cpu_launches:
            reason = "the step runs CPU kernels"
        if reason is not None:
            for i, path in prog.arg_slots:  # the caller's own tensors in the result
                values[i] = tensors[path]
            self._give_up(reason)
        elif inputs is not tensors and sig == self.prev_sig:
            self.rng_draws = draws
            self._build(tape, marks, before, values)
            return _copy_results(prog.result, values)  # the graph's buffers stay its own
        else:
            self.prev_sig = sig
        from .compiled import _fill
        return _fill(prog.result, values)

    def _build(self, tape, marks, before, values):
        from ..backends import cuda_graph
        prog = self.program
        first = next(k for k, m in enumerate(marks) if m > (marks[k - 1] if k else 0))
        last = max(k for k, m in enumerate(marks) if m > (marks[k - 1] if k else 0))
        self.prologue = [it for _, it in prog.items[:first]]
        self.epilogue = [it for _, it in prog.items[last + 1:]]
        self.grads = [(p, p._grad) for p in self._params()]
        # a gradient the taped run did not make is one it accumulated into: it must stay
        self.grad_guards = [(p, g) for p, g in self.grads
                            if g is not None and not tape.allocated_here(g._data.buf)]
        self.results = {r.i: values[r.i] for r in walk_refs(prog.result)}
        after_vc = {id(t): t._vc.value for t in self._roots()}
        self.vc_bumps = [(t, after_vc[id(t)] - v) for t, v in before["vc"]
                         if id(t) in after_vc and after_vc[id(t)] != v]
        self.data_guards = [(t, t._data) for t in self._roots()]
        self.state_guard = self._state_identity()
        self.settings = marks.settings  # as the launches saw them (after the host-only calls)
        self.prev_sig = None
        try:
            self.graph = cuda_graph.build(tape)
        except Exception as e:  # noqa: BLE001 - the driver refused the capture: replay as before
            self._give_up(f"capturing the CUDA graph failed ({type(e).__name__}: {e})")
            return
        from .compiled import _debug, stats
        stats.cuda_graphs += 1
        _debug(f"CUDA graph: {len(tape.entries)} launches and copies in one call")

    def _launch(self, tensors, values):
        from .compiled import _fill, stats
        prog = self.program
        for it in self.prologue:
            prog._run_item(it, values)
        if self._settings() != self.settings:  # a scheduler in the prologue may change them
            self._drop("guard failed: an optimizer setting (learning rate, ...) changed")
            for _, it in prog.items[len(self.prologue):]:
                prog._run_item(it, values)
            return _fill(prog.result, values)
        self._copy_in(tensors, values)
        gen = _cuda_random.default_generator
        if self.rng_draws:  # the draws' base offset, read on the device by the graph's kernels
            gen.upload_graph_state()
        self.graph.launch()
        gen.advance(self.rng_draws)
        for p, g in self.grads:
            p._grad = g
        for t, d in self.vc_bumps:
            t._vc.value += d
        out = _copy_results(prog.result, self.results)
        for it in self.epilogue:
            prog._run_item(it, values)
        stats.cuda_graph_replays += 1
        return out

    # -------------------------------------------------------------- guards and state

    def _guard(self):
        for t, d in self.data_guards:
            if t._data is not d:
                return "a tensor the step reads was replaced (.data assigned)"
        for p, g in self.grad_guards:
            if p._grad is not g:
                return "a .grad the step accumulates into was replaced"
        if self._state_identity() != self.state_guard:
            return "the optimizer state was replaced (load_state_dict, a new parameter's state)"
        for p in self._params():
            if p._hooks or p.__dict__.get("_post_accumulate_grad_hooks"):
                return "a parameter has hooks"
        return None  # the optimizer settings: after the host-only calls (``_launch``)

    def _drop(self, reason):
        from .compiled import _debug, stats
        stats.note(reason)
        _debug(f"CUDA graph dropped: {reason}")
        self.graph = None
        self.rebuilds += 1
        if self.rebuilds > MAX_REBUILDS:
            self._give_up(f"its CUDA graph was rebuilt {MAX_REBUILDS} times ({reason})")

    def _give_up(self, reason):
        from .compiled import _debug, stats
        self.off = reason
        self.graph = self.static = self.prev_sig = None
        stats.note(f"no CUDA graph: {reason}")
        _debug(f"no CUDA graph: {reason}")

    def _params(self):
        seen, out = set(), []
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    if id(p) not in seen:
                        seen.add(id(p))
                        out.append(p)
        for _, t in self.program.externals:
            if t._grad_fn is None and t._requires_grad and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
        return out

    def _roots(self):
        """Tensors that outlive the step and that the graph reads or writes in place:
        externals, parameters, their gradients, optimizer state, static inputs."""
        out = [t for _, t in self.program.externals] + self._params() + list(self.static or ())
        out += [p._grad for p in self._params() if p._grad is not None]
        for opt in self.optimizers:
            for state in opt.state.values():
                out += [v for v in state.values() if hasattr(v, "_data") and _on_cuda(v)]
        return out

    def _state_identity(self):
        """The optimizer state's tensors, by identity (the graph updates these buffers)."""
        return [(id(state), k, id(v)) for opt in self.optimizers for state in opt.state.values()
                for k, v in state.items()]

    def _settings(self):
        return [tuple(sorted((k, repr(v)) for k, v in g.items() if k != "params"))
                for opt in self.optimizers for g in opt.param_groups]

    def _host_state(self, inputs):
        """What the graph cannot redo, before a taped run, and version counters."""
        gen = _cuda_random.default_generator
        return {"rng": (gen._seed, gen._offset),
                "optim": [_host_part(opt) for opt in self.optimizers],
                "vc": [(t, t._vc.value) for t in self._roots()],
                "inputs": [t._vc.value for t in inputs]}

    def _effects_problem(self, before, marks, values, tape, inputs, draws):
        from ..optim.lr_scheduler import LRScheduler
        gen = _cuda_random.default_generator
        seed, offset = before["rng"]
        if (gen._seed, gen._offset) != (seed, offset + draws):
            return "the step reseeds or draws random numbers outside the device-side state"
        if [_host_part(opt) for opt in self.optimizers] != before["optim"]:
            return "optimizer state changes on the host every step (e.g. Adam's step count)"
        if [t._vc.value for t in inputs] != before["inputs"]:
            return "the step writes to its input tensors"
        for p in self._params():
            if p._hooks or p.__dict__.get("_post_accumulate_grad_hooks"):
                return "a parameter has hooks"
        if not marks or marks[-1] == 0:
            return "the step launches no kernels"
        launching = [k for k, m in enumerate(marks) if m > (marks[k - 1] if k else 0)]
        for k, (_, it) in enumerate(self.program.items):
            owner = getattr(it, "args", None)
            if launching[0] < k < launching[-1] and owner and isinstance(owner[0], LRScheduler):
                return "a scheduler steps between kernel launches"
        for r in walk_refs(self.program.result):
            t = values[r.i]
            node = t._grad_fn
            if not tape.allocated_here(t._data.buf) or (node is not None and not node._released):
                return "the step returns a tensor it did not make, or one with a live graph"
        return None

    def _copy_in(self, tensors, values):
        """Copy the arguments into the static inputs, which stand for them in ``values``."""
        from ..backends import cuda
        for i, path in self.program.arg_slots:
            src, dst = tensors[path], self.static[path]
            if src._data.size:  # the same dense strides (replay's guard): the same span
                cuda.copy_device(_span(dst._data), _span(src._data))
            values[i] = dst


# ----------------------------------------------------------------------------- helpers

class _Marks(list):
    """The tape's length after each item of a taped run; ``settings``: the optimizer settings
    when the first launch was made (after the host-only calls before it)."""

    def __init__(self, settings):
        super().__init__()
        self._read = settings
        self.settings = settings()

    def append(self, n):
        super().append(n)
        if n == 0:
            self.settings = self._read()


def _on_cuda(t):
    return t.device.type == "cuda"


def _argument_problem(tensors):
    from .._memory_format import _non_overlapping_and_dense
    for t in tensors:
        if not _on_cuda(t):
            return "an argument is on the CPU"
        if t._requires_grad or t._grad_fn is not None:
            return "an argument requires grad (a graph reads a copy of it)"
        d = t._data
        if not _non_overlapping_and_dense(d.shape, d.st):
            # its static copy would be dense, and eager's results for it may be laid out
            # otherwise than for that copy
            return "an argument is not dense (a slice with gaps, an expanded tensor)"
    return None


def _layouts_differ(tensors, static):
    for t, s in zip(tensors, static):
        if t._data.st != s._data.st:
            return True
    return False


def _span(a):
    """The ``size`` elements a dense array occupies in its buffer, from its first."""
    if a.offset == 0 and a.buf.shape[0] == a.size:
        return a.buf
    return a.buf[a.offset:a.offset + a.size]


def _host_part(opt):
    """An optimizer's state that lives on the host: Python values and CPU tensors' bytes."""
    out = []
    for state in opt.state.values():
        for k in sorted(state):
            v = state[k]
            if hasattr(v, "_data"):
                out.append((k, id(v), None if _on_cuda(v) else v._data.tobytes()))
            else:
                out.append((k, repr(v)))
    return out


def _copy_results(template, values):
    """The step's result with every tensor replaced by a fresh copy with the same grad_fn name
    (its graph freed, as the taped run's was). Each buffer a result lies in is copied whole,
    once, and the result is the same view of the copy: strides, storage offset (a view's base
    is copied too, sharing the version counter), and results sharing storage still share it,
    as eager's results do."""
    from .._cuda_array import CudaArray
    from ..backends import cuda
    from .compiled import _fill
    from .lower_ops import freed_result
    buffers, bases = {}, {}

    def same_view(a):
        buf = buffers.get(id(a.buf))
        if buf is None:
            buf = buffers[id(a.buf)] = cuda.empty(a.buf.shape, a.dtype)
            if a.buf.shape[0]:
                cuda.copy_device(buf, a.buf)
        return CudaArray(buf, a.shape, a.st, a.offset, a.is_view)

    copies = {}
    for r in walk_refs(template):
        t = values[r.i]
        node = t._grad_fn
        data = same_view(t._data)
        copies[r.i] = bases[id(t)] = freed_result(data, type(node).__name__) \
            if node is not None else t.__class__._make(data)
    for r in walk_refs(template):  # a view's base: a result's copy, or a copy of its own
        t, out = values[r.i], copies[r.i]
        base = t._base
        if base is not None and base._data.buf is t._data.buf:
            copy = bases.get(id(base))
            if copy is None:
                copy = bases[id(base)] = base.__class__._make(same_view(base._data))
            out._base, out._vc = copy, copy._vc
            if "_creation" in t.__dict__:
                out._creation = t._creation
    return _fill(template, copies)
