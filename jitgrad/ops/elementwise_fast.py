"""The fast path of ``elementwise_call.call``: CPU tensors of one dtype and shape, with scalars
that do not change that dtype (``a + b``, ``x * 1.01``, ``x.relu()``: most eager calls).

``call`` keys a _FastPlan by (op, each operand's dtype or scalar class); the plan holds what the
general path (``_call_general``) would otherwise work out again on every call: the dtypes, the
kernel and the argument order, the node class, and per ``needs`` which operands the node saves.
The result, its node and the saved operands are the general path's, bit for bit; cases whose
dtypes depend on more than those classes (float16, promotion to another dtype or the default
dtype, aux operands) are never given a plan and always take the general path.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._compile import capture as _capture
from ..autograd import grad_mode
from ..autograd.node import SavedTensor, node_class
from ..backends import cpu, vml
from ..tensor import Tensor
from .elementwise_call import (
    ElementwiseNode,
    _dtypes,
    _forward_plan,
    _new_node,
    _scalar,
    _vml_routine,
)

_fast_plans = {}  # (op, dtype or scalar class per operand) -> _FastPlan, or False: general path


class _FastPlan:
    """What ``call`` needs for one (op, operand dtypes/classes) that takes the fast path: the
    dtypes ``_dtypes`` gives, the kernel, and which argument feeds each kernel parameter."""

    __slots__ = ("ct", "out_dt", "out_np", "cnp", "mod", "arrays", "scalars", "nbytes_per",
                 "record", "saves", "vml")

    def __init__(self, op, args, ct, out_dt):
        self.ct, self.out_dt = ct, out_dt
        self.cnp = ct.np
        self.out_np = out_dt.np
        self.nbytes_per = self.out_np.itemsize
        kinds = tuple("a" if isinstance(a, Tensor) else "s" for a in args)
        plan = _forward_plan(cpu, op, kinds)
        index = {name: i for i, name in enumerate(op.inputs)}
        self.mod = plan.mod
        self.arrays = tuple(index[p] for p in plan.arrays)
        self.scalars = tuple(index[p] for p in plan.scalars)
        # PyTorch's kernel for this op and dtype is MKL VML: its routine's address (0: none)
        self.vml = _vml_routine(op, len(self.arrays), len(self.scalars), self.cnp, self.out_np)
        # the node's class when the result can carry a graph (None: never recorded)
        self.record = (node_class(op.node, ElementwiseNode)
                       if op.differentiable and out_dt.is_floating_point else None)
        self.saves = {}  # needs -> _save_plan



def _fast_plan(op, args):
    """A _FastPlan, or False where the general path must run each time: declared aux operands
    or inputs the forward does not read (their scalars would not be kernel operands),
    float16 (computed in float32 and rounded), a dtype that needs the default dtype or a cast
    of the tensors, and anything ``_dtypes`` rejects or that ``_fast_result_type`` promotes."""
    if op.aux or op.dtype_rule == "logical" or not set(op.inputs) <= set(op.f.params):
        return False
    dt = next(a._data.dtype for a in args if isinstance(a, Tensor))
    t = D.from_numpy_dtype(dt)
    for a in args:  # _fast_result_type's shortcut holds for these classes (no result_type)
        if isinstance(a, Tensor) or isinstance(a, (bool, np.bool_)):
            continue
        if isinstance(a, (int, np.integer)) and t._category >= 1:
            continue
        if isinstance(a, (float, np.floating)) and t._category == 2:
            continue
        return False
    if op.dtype_rule == "float" and not t.is_floating_point:
        return False
    if t is D.float16:
        return False
    ct, out_dt = _dtypes(op, args)
    if ct is not t:
        return False
    return _FastPlan(op, args, ct, out_dt)


def _call_fast(fp, op, args, shape, n, rg):
    """``_call_general`` for a _FastPlan: same kernel, same operands, same result and node.
    ``n``: the element count; ``rg``: some tensor in ``args`` requires grad."""
    vals = [args[i]._data.reshape(-1) for i in fp.arrays]
    if fp.scalars:
        cnp = fp.cnp
        for i in fp.scalars:
            vals.append(_scalar(args[i], cnp, False))
    out = (np.empty(shape, fp.out_np) if n * fp.nbytes_per < cpu.POOL_MIN_BYTES
           else cpu.empty(shape, fp.out_np))
    if n:
        vals.append(out.reshape(-1))
        if not (fp.vml and vml.apply(fp.vml, vals[0], vals[-1], args[fp.arrays[0]]._data)):
            cpu.launch(fp.mod, n, vals)
    result = Tensor._make(out)
    if _capture.recorder is not None:
        _capture.note_elementwise(op, args, {}, fp.ct, fp.out_dt, result)
    if rg and fp.record is not None and grad_mode.is_grad_enabled():
        _record_fast(fp, op, args, vals, result)
    return result


def _record_fast(fp, op, args, vals, result):
    """``_record`` for the fast path: the same node, its saved operands listed once per
    (_FastPlan, needs) instead of worked out from the op's declaration on every call."""
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    node = _new_node(fp.record, op, args, needs, result, fp.ct, fp.ct)
    plan = fp.saves.get(needs)
    if plan is None:
        plan = fp.saves[needs] = _save_plan(fp, op, args, needs)
    names, kinds = plan
    saved = {}
    for name, i in names:
        if i is None:
            saved[name] = SavedTensor(result, is_output=True)
        elif i >= 0:
            saved[name] = SavedTensor(args[i])
        else:
            saved[name] = vals[~i]  # the scalar as the forward kernel took it
            if name in op.inputs:  # the Python number given (``_saved_other``)
                node.wrapped = {name: args[op.inputs.index(name)]}
    node.saved = saved
    node.kinds = kinds  # shared by the nodes of one plan: read only


def _save_plan(fp, op, args, needs):
    """((name, source), ...) for the operands ``_record`` saves, in its order: source None for
    the output, i >= 0 for tensor argument i, ~k for the k-th kernel operand (a scalar); and
    the kinds dict ``_record`` builds."""
    names, kinds = [], {}
    position = {i: k for k, i in enumerate(fp.arrays + fp.scalars)}
    for name in op.saved_names(needs):
        if name == "out":
            names.append((name, None))
            kinds[name] = "a"
            continue
        i = op.inputs.index(name)
        if isinstance(args[i], Tensor):
            names.append((name, i))
            kinds[name] = "a"
        else:
            names.append((name, ~position[i]))
            kinds[name] = "s"
    kinds["g"] = "a"
    return tuple(names), kinds
