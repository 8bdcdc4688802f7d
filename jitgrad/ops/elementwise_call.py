"""Running an elementwise op: dtypes, the forward kernel, and its graph node (broadcasting, the
output layout and the kernel's flat operands: ops/elementwise_operands.py).

The forward kernel and the node's VJP kernel are LoopSpecs built from the op's declaration; with
``create_graph=True`` the node evaluates the same scalar VJP source on Tensors instead
(``tensor_env``), which records a graph and so gives higher-order gradients.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._compile import capture as _capture
from .._iter_layout import elementwise_output_layout
from ..autograd import grad_mode
from ..autograd.node import FREED_MESSAGE, Node, SavedTensor, node_class
from ..backends import cpu, vml
from ..codegen.loops import LoopSpec, Stmt
from ..tensor import Tensor
from .elementwise_activation import FLOAT_KERNELS
from .elementwise_operands import (  # noqa: F401 - some are re-exported for importers
    _ND,
    _cpu_out,
    _data_of,
    _device_flat,
    _device_out,
    _device_restrided,
    _flat,
    _inverse,
    _kernel_dtype,
    _operands,
    _output_layout,
    _permuted,
    _restrided,
    _scalar,
    _shapes,
    arrays_layout,
    broadcast_shapes,
    check_same_device,
    has_c_strides,
)
from .registry import ElementwiseOp

__all__ = ["call", "broadcast_shapes", "ElementwiseNode"]


def _dtypes(op: ElementwiseOp, operands):
    rule = op.dtype_rule
    if rule == "logical":
        return None, D.bool_
    ct = _fast_result_type(operands)
    if rule == "float" and not ct.is_floating_point:
        kernel = FLOAT_KERNELS.get(op.name)
        if kernel is not None:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_name(ct)}\'')
        ct = D.get_default_dtype()
    return ct, (D.bool_ if rule == "compare" else ct)


def _fast_result_type(operands):
    """PyTorch's result type; the common cases (one tensor dtype, scalars of a lower or equal
    category) skip the general computation."""
    dt = None
    for a in operands:
        if isinstance(a, Tensor):
            d = a._data.dtype
            if dt is None:
                dt = d
            elif d != dt:
                return D.result_type(*operands)
    if dt is None:
        return D.result_type(*operands)
    t = D.from_numpy_dtype(dt)
    cat = t._category
    for a in operands:
        if not isinstance(a, Tensor) and a is not None:
            if isinstance(a, (bool, np.bool_)):
                continue
            if isinstance(a, (int, np.integer)):
                if cat >= 1:
                    continue
            elif isinstance(a, (float, np.floating)) and cat == 2:
                continue
            return D.result_type(*operands)
    return t


def _forward_spec(op: ElementwiseOp, kinds):
    arrays = tuple(n for n, k in zip(op.f.params, kinds) if k == "a")
    scalars = tuple(n for n, k in zip(op.f.params, kinds) if k == "s")
    stmt = Stmt("out", op.f, op.f.params)
    return LoopSpec(arrays, scalars, (stmt,), (("out", "out"),))


def _vjp_spec(op: ElementwiseOp, needs, kinds):
    """One kernel computing the VJP of every input flagged in ``needs``."""
    wanted = [i for i, nd in zip(op.inputs, needs) if nd]
    names = ["g"] + [n for n in op.arg_names if n not in ("g",)] + ["out"]
    used = set()
    for i in wanted:
        used.update(op.vjp[i].params)
    arrays = tuple(n for n in names if n in used and kinds.get(n, "a") == "a")
    scalars = tuple(n for n in names if n in used and kinds.get(n) == "s")
    stmts = tuple(Stmt("d_" + i, op.vjp[i], op.vjp[i].params) for i in wanted)
    return LoopSpec(arrays, scalars, stmts, tuple(("d_" + i, "d_" + i) for i in wanted))


class _ForwardPlan:
    """Per (target, op, array/scalar pattern): the kernel module and the argument order."""

    __slots__ = ("mod", "arrays", "scalars")

    def __init__(self, backend, op, kinds):
        kind_of = dict(zip(op.arg_names, kinds))
        fkinds = tuple(kind_of[p] for p in op.f.params)
        self.mod = backend.module_for((op.name, "f", fkinds), lambda: _forward_spec(op, fkinds))
        self.arrays = tuple(p for p in op.f.params if kind_of[p] == "a")
        self.scalars = tuple(p for p in op.f.params if kind_of[p] == "s")


_forward_plans = {}


def _forward_plan(backend, op, kinds):
    key = (backend.__name__, op.name, kinds)
    plan = _forward_plans.get(key)
    if plan is None:
        plan = _forward_plans[key] = _ForwardPlan(backend, op, kinds)
    return plan


def _maybe_record(op, args, aux, values, result, ct, out_dt):
    if op.differentiable and out_dt.is_floating_point and grad_mode.is_grad_enabled():
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        if True in needs:
            _record(op, args, aux, needs, values, result, ct)
    return result


def call(op: ElementwiseOp, *args, **aux):
    """Apply ``op`` to edge inputs ``args`` (Tensors or Python scalars) and ``aux`` operands."""
    if not aux:
        # the common case first: CPU tensors of one dtype and shape, scalars that do not change
        # it; a _FastPlan per (op, each operand's dtype or scalar class) holds what the general
        # path would work out again on every call (ops/elementwise_fast.py)
        key = [op]
        shape = None
        rg = scalar = False
        for a in args:
            if isinstance(a, Tensor):
                d = a._data
                if d.__class__ is not _ND or not d.flags.c_contiguous:
                    break  # other devices; PyTorch's output layout (_call_general)
                if shape is None:
                    shape = d.shape
                    dt = d.dtype
                    n = d.size
                elif d.shape != shape or d.dtype is not dt:
                    break
                if a._requires_grad:
                    rg = True
                key.append(dt)
            else:
                key.append(a.__class__)
                if a is not None:
                    scalar = True
        else:
            # with a scalar, TensorIterator sorts the dims by stride, size-1 dims' included
            # (which NumPy's contiguity flag ignores): those need _call_general's layout
            if shape is not None and not (scalar and 1 in shape and _odd_unit_strides(args)):
                key = tuple(key)
                fp = _fast_plans.get(key)
                if fp is None:
                    fp = _fast_plans[key] = _fast_plan(op, args)
                if fp is not False:
                    return _call_fast(fp, op, args, shape, n, rg)
    return _call_general(op, args, aux)


def _odd_unit_strides(args) -> bool:
    """Whether a tensor in ``args`` has other than C strides (only at size-1 dims)."""
    return not all(has_c_strides(a._data) for a in args if isinstance(a, Tensor))


def _call_general(op, args, aux):
    ct, out_dt = _dtypes(op, args)
    shape = None
    same = True
    for a in args:
        if isinstance(a, Tensor):
            if a._data.__class__ is not _ND:
                return _call_device(op, args, aux, ct, out_dt)
            if shape is None:
                shape = a._data.shape
            elif a._data.shape != shape:
                same = False
    cond = aux.get("cond")
    if isinstance(cond, Tensor) and cond._data.shape != shape:
        same = False
    if not same:
        shape = broadcast_shapes(*_shapes(args, cond))
    elif shape is None:
        shape = cond._data.shape if isinstance(cond, Tensor) else ()
    half = ct is D.float16
    # PyTorch's output layout: the kernel runs in its dim order (operands permuted into it),
    # and the output is that buffer viewed back in the tensor's dim order
    perm, strides = _output_layout(op, args, aux, shape)
    kshape = shape if perm is None else tuple(shape[p] for p in perm)
    flat = _flat if perm is None else _permuted(_flat, perm)
    values, kinds = _operands(op, args, aux, kshape, _kernel_dtype(ct), flat, half)
    plan = _forward_plan(cpu, op, kinds)
    half = half and out_dt is D.float16
    # pooled: a forward pass keeps its intermediates alive together, and fresh pages for each
    # would fault on every step (backends/cpu.py)
    out = cpu.empty(kshape, np.float32 if half else out_dt.np)
    if out.size:
        flat_out = out.reshape(-1)
        addr = 0 if half or op.aux else _vml_routine(op, len(plan.arrays), len(plan.scalars),
                                                      out.dtype, out.dtype)
        if not (addr and vml.apply(addr, values[plan.arrays[0]], flat_out,
                                   _data_of(args, perm))):
            cpu.launch(plan.mod, out.size, [values[p] for p in plan.arrays]
                       + [values[p] for p in plan.scalars] + [flat_out])
    if half:
        with np.errstate(over="ignore"):  # beyond half's range: inf, silently (PyTorch)
            out = out.astype(np.float16)
    if perm is not None:
        out = out.transpose(_inverse(perm))
        if strides is not None:
            out = _restrided(out, strides)
    result = Tensor._make(out)
    if _capture.recorder is not None:
        _capture.note_elementwise(op, args, aux, ct, out_dt, result)
    return _maybe_record(op, args, aux, values, result, ct, out_dt)


def _vml_routine(op, n_arrays, n_scalars, cnp, out_np):
    """The address of the MKL VML routine PyTorch's CPU kernel runs for one-operand ``op`` on
    host arrays of the kernel dtype ``cnp`` (backends/vml.py: its bits, not our kernel's); 0 for
    other ops and dtypes, a result dtype other than the kernel's, or without MKL."""
    if n_arrays != 1 or n_scalars or cnp != out_np:
        return 0
    return vml.routine(op.name, cnp)



# ----------------------------------------------------------------------------- CUDA


def _call_device(op, args, aux, ct, out_dt):
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    cond = aux.get("cond")
    check_same_device(list(args) + [v for v in aux.values() if isinstance(v, Tensor)])
    shape = broadcast_shapes(*_shapes(args, cond))
    # PyTorch's output layout, as on the host (``_call_general``)
    perm, strides = _output_layout(op, args, aux, shape)
    kshape = shape if perm is None else tuple(shape[p] for p in perm)
    flat = _device_flat if perm is None else _permuted(_device_flat, perm)
    values, kinds = _operands(op, args, aux, kshape, _kernel_dtype(ct), flat, ct is D.float16)
    plan = _forward_plan(B, op, kinds)
    # float16 as on the CPU: operands were cast to float32 (``_kernel_dtype``), the float32
    # kernel runs and its result is rounded to float16 by one cast kernel
    half = out_dt is D.float16
    out = CudaArray.empty(kshape, np.float32 if half else out_dt.np)
    if out.size:
        B.launch(plan.mod, out.size, [values[p] for p in plan.arrays]
                 + [values[p] for p in plan.scalars] + [out.buf])
    if half:
        out = out.astype(np.float16)
    if perm is not None:
        out = out.transpose(_inverse(perm))
        if strides is not None:
            out = _device_restrided(out, strides)
    result = Tensor._make(out)
    if _capture.recorder is not None:
        _capture.note_elementwise(op, args, aux, ct, out_dt, result)
    return _maybe_record(op, args, aux, values, result, ct, out_dt)


def device_add_into(dst, src) -> None:
    """``dst += src`` on CUDA storages of any strides (gradient accumulation; ``src`` broadcasts
    to ``dst``), as the host's ``np.add(dst, src, out=dst)``: ``dst`` keeps its strides and
    memory. The add kernel runs in the dim order TensorIterator gives the in-place op (the
    output, ``dst``, consulted first: ``elementwise_output_layout``), the forward's permuted
    launch: a dense ``dst`` (contiguous, transposed, channels-last) is then itself the kernel's
    flat operand and output; one with gaps (a slice) is summed into a flat copy that the
    strided copy kernel writes back through its strides."""
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    from .registry import OPS
    if not dst.size:
        return
    shape = dst.shape
    perm = None
    if not (dst.is_contiguous() and (src.shape == shape and src.is_contiguous())):
        perm, _ = elementwise_output_layout(shape, [(dst.shape, dst.st), (src.shape, src.st)])
    flat = _device_flat if perm is None else _permuted(_device_flat, perm)
    kshape = shape if perm is None else tuple(shape[p] for p in perm)
    kdst = dst if perm is None else dst.transpose(perm)
    out = flat(dst, kshape, dst.dtype)  # dst's own memory when dense in kernel order
    plan = _forward_plan(B, OPS["add"], ("a", "a"))
    vals = {"a": out, "b": flat(src, kshape, dst.dtype)}
    B.launch(plan.mod, dst.size, [vals[p] for p in plan.arrays] + [out])
    if not kdst.is_contiguous():  # ``out`` was a copy: write the sums through dst's strides
        B.kernels().layout.copy_into(kdst.kview(), CudaArray(out, kshape).kview())


class ElementwiseNode(Node):
    """The grad_fn of an elementwise op; subclassed per PyTorch node name by ``node_class``."""

    # out_vc: the result's version counter, so fusion can tell whether recomputing the result
    # from the inputs still gives what consumers saw (nothing wrote into it since)
    # wrapped: {operand: the Python number given for it}, set only where one was saved (PyTorch
    # shows it as a wrapped-number tensor: ``(x * 2).grad_fn._saved_other``)
    __slots__ = ("op", "needs", "saved", "kinds", "shape", "ct", "out_vc", "wrapped")

    def apply(self, grads):
        if self._released:
            raise_if_wrapped_number_freed(self)
        g = grads[0]
        if g is None:
            return [None] * len(self.needs)
        if grad_mode.is_grad_enabled():
            return self._apply_tensors(g)
        needs = self.needs
        passed = _passes_gradient(self.op)
        if True in passed:
            # PyTorch's formula for such an input is ``grad`` itself (AddBackward0's ``self``
            # and ``other``, SubBackward0's ``self``): the incoming gradient is handed on, not
            # copied (the engine sums it to the input's shape or casts it when the input was
            # broadcast or promoted; AccumulateGrad and the engine's in-place adds only steal
            # or write into an array nothing else holds)
            computed = tuple(nd and not p for nd, p in zip(needs, passed))
            out = self._vjp(g, computed) if True in computed else [None] * len(needs)
            return [g if nd and p else o for nd, p, o in zip(needs, passed, out)]
        return self._vjp(g, needs)

    def _vjp(self, g, needs):
        if g._data.__class__ is _ND:
            return self._launch_vjp(cpu, g, _flat, cpu.empty, _cpu_out, _restrided, needs)
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        return self._launch_vjp(B, g, _device_flat, CudaArray.empty, _device_out,
                                _device_restrided, needs)

    def _launch_vjp(self, backend, g, flat, new_out, out_arg, restrided, needs=None):
        """One VJP kernel for every input that needs a gradient, on ``backend``'s target. The
        gradients take the layout PyTorch's elementwise backward formulas give them (``g *
        other``, ``where(cond, g, 0)``: TensorIterator's over the incoming gradient and the
        saved operands), the forward's permuted launch: a channels-last or transposed
        gradient stays so, and AccumulateGrad can adopt it as a like-laid-out leaf's .grad."""
        shape = self.shape
        cnp = _kernel_dtype(self.ct)
        saved = {name: s.array(self) if isinstance(s, SavedTensor) else s
                 for name, s in self.saved.items()}  # (unpacked once: pack hooks see one)
        arrays = [g._data]
        for name, kind in self.kinds.items():
            if kind == "a" and name != "g":
                if name == "cond":  # where's condition: ATen's first operand
                    arrays.insert(0, saved[name])
                else:
                    arrays.append(saved[name])
        perm, strides = arrays_layout(arrays, shape, "s" in self.kinds.values())
        if perm is not None:
            shape = tuple(shape[p] for p in perm)
            flat = _permuted(flat, perm)
        vals = {"g": flat(g._data, shape, cnp)}
        for name, a in saved.items():
            if self.kinds[name] == "a":
                vals[name] = flat(a, shape, a.dtype if name == "cond" else cnp)
            else:
                vals[name] = a
        if needs is None:
            needs = self.needs
        plan = _vjp_plan(backend, self.op, needs, self.kinds)
        outs = [new_out(shape, cnp) for nd in needs if nd]
        n = outs[0].size
        if n:
            backend.launch(plan.mod, n, [vals[a] for a in plan.arrays]
                           + [vals[s] for s in plan.scalars] + [out_arg(o) for o in outs])
        if perm is not None:  # the buffers viewed back in the tensor's dim order
            inv = _inverse(perm)
            outs = [o.transpose(inv) if strides is None else restrided(o.transpose(inv), strides)
                    for o in outs]
        it = iter(outs)
        return [Tensor._make(next(it)) if nd else None for nd in needs]

    def _apply_tensors(self, g):
        from .tensor_env import evaluate
        env = {"g": g}
        for name, s in self.saved.items():
            env[name] = s.tensor(self) if isinstance(s, SavedTensor) else s.item()
        return [_as_grad(evaluate(self.op.vjp[i], env), g) if nd else None
                for i, nd in zip(self.op.inputs, self.needs)]

    def release(self) -> None:
        super().release()
        for s in self.saved.values():
            if isinstance(s, SavedTensor):
                s.free()


def raise_if_wrapped_number_freed(node) -> None:
    """PyTorch's error for running a released node again when the VJP needs a Python number
    given for a tensor operand (``x * 2``, ``x / 2``): ATen wraps that number in a 0-dim tensor,
    and MulBackward0/DivBackward0 keep it as a saved variable, freed by the first backward.
    (jitgrad keeps the number as a kernel scalar, which nothing frees; its saved tensors raise
    by themselves.) Scalar parameters (``alpha``, ``negative_slope``) are node attributes in
    PyTorch too, and stay usable."""
    inputs = node.op.inputs
    kinds = node.kinds
    for name in node.saved:
        if name in inputs and kinds.get(name) == "s":
            raise RuntimeError(FREED_MESSAGE)


_passes = {}


def _passes_gradient(op):
    """Per input of ``op``: whether its declared VJP is the incoming gradient itself
    (``def da(g): return g``), found by calling it on a sentinel once per op."""
    r = _passes.get(op)
    if r is None:
        sentinel = object()
        r = []
        for inp in op.inputs:
            d = op.vjp.get(inp)
            try:
                r.append(d is not None and d.params == ("g",) and d.fn(sentinel) is sentinel)
            except Exception:  # noqa: BLE001 - any other body computes something
                r.append(False)
        r = _passes[op] = tuple(r)
    return r


def _as_grad(d, g):
    """A VJP evaluated on Tensors that returns a constant (``lit(g, 0.0)``: floor, sign, ... whose
    PyTorch gradient is ``zeros_like(grad)``) becomes that constant as a Tensor like ``g``."""
    if isinstance(d, Tensor):
        return d
    from .factories import full_like
    return full_like(g, d)


class _VjpPlan:
    __slots__ = ("mod", "arrays", "scalars")

    def __init__(self, backend, op, needs, kinds):
        spec = _vjp_spec(op, needs, kinds)
        key = (op.name, "vjp", needs, tuple(sorted(kinds.items())))
        self.mod = backend.module_for(key, lambda: spec)
        self.arrays, self.scalars = spec.arrays, spec.scalars


_vjp_plans = {}


def _vjp_plan(backend, op, needs, kinds):
    key = (backend, op, needs, tuple(kinds.items()))
    plan = _vjp_plans.get(key)
    if plan is None:
        plan = _vjp_plans[key] = _VjpPlan(backend, op, needs, kinds)
    return plan


def _record(op, args, aux, needs, values, result, ct):
    node = _new_node(node_class(op.node, ElementwiseNode), op, args, needs, result, ct, None)
    saved = {}
    kinds = {}
    by_name = dict(zip(op.inputs, args))
    for name in op.saved_names(needs):
        if name == "out":
            saved[name] = SavedTensor(result, is_output=True)
            kinds[name] = "a"
            continue
        v = by_name[name] if name in by_name else aux[name]
        if isinstance(v, Tensor):
            saved[name] = SavedTensor(v)
            kinds[name] = "a"
        else:
            saved[name] = values[name]
            kinds[name] = "s"
            if name in by_name:
                node.wrapped = {**(getattr(node, "wrapped", None) or {}), name: v}
    kinds["g"] = "a"
    node.saved = saved
    node.kinds = kinds


def _new_node(cls, op, args, needs, result, ct, dt):
    """The ElementwiseNode of ``result``, attached to it; ``dt``: the dtype of every tensor in
    ``args`` when the caller knows they share one (None: each tensor's own)."""
    next_functions, meta = [], []
    for a, nd in zip(args, needs):
        if nd:
            next_functions.append(a._edge())
            meta.append((tuple(a._data.shape), a.dtype if dt is None else dt))
        else:
            next_functions.append((None, 0))
            meta.append(None)
    node = cls(tuple(next_functions), tuple(meta))
    node.op = op
    node.needs = needs
    node.shape = result._data.shape
    node.ct = ct
    node.out_vc = result._vc
    # the result carries its graph before anything is saved (a pack hook sees it, as PyTorch's)
    result._grad_fn = node
    result._requires_grad = True
    return node


# the fast path builds on this module's helpers (imported last: it imports them from here)
from .elementwise_fast import _call_fast, _fast_plan, _fast_plans  # noqa: E402
