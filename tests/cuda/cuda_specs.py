"""Every LoopSpec the elementwise registry can produce (a subset for ops with more than ``WIDE``
operands), with the dtypes each is compiled for.

``forward_cases()`` / ``vjp_cases()`` yield :class:`Case` objects: the op, the array/scalar
pattern, the spec (built by the core's own ``_forward_spec`` / ``_vjp_spec``, exactly as
``elementwise_call`` builds them) and, per dtype, the NumPy dtype of every kernel argument.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from jitgrad.ops import elementwise  # noqa: F401 - registers the ops
from jitgrad.ops.elementwise_call import _forward_spec, _vjp_spec
from jitgrad.ops.registry import OPS

F32, F64, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64,
                                                  np.bool_))

# compute dtypes per dtype rule (ints: forward only, as PyTorch has no integer gradients)
FORWARD_DTYPES = {"promote": (F32, F64, I32, I64), "float": (F32, F64),
                  "compare": (F32, F64, I64), "logical": (BOOL,)}
VJP_DTYPES = (F32, F64)


@dataclass(frozen=True)
class Case:
    op: str
    kind: str  # "forward" | "vjp"
    pattern: tuple  # (name, "a"|"s") for every argument name of the op
    needs: tuple  # VJP only: inputs whose gradient the kernel computes
    spec: object

    @property
    def id(self) -> str:
        pat = "".join(k for _, k in self.pattern)
        need = "" if self.kind == "forward" else "-d" + "".join(self.needs)
        return f"{self.op}-{self.kind}-{pat}{need}"

    def arg_dtype(self, name: str, ct: np.dtype) -> np.dtype:
        """dtype of value ``name`` (array element or scalar) when the op computes in ``ct``."""
        op = OPS[self.op]
        if op.aux.get(name) == "bool":
            return BOOL
        return ct

    def out_dtype(self, ct: np.dtype) -> np.dtype:
        if self.kind == "vjp":
            return ct
        return BOOL if OPS[self.op].dtype_rule in ("compare", "logical") else ct

    def dtypes(self):
        return VJP_DTYPES if self.kind == "vjp" else FORWARD_DTYPES[OPS[self.op].dtype_rule]

    def kernel_args(self, ct: np.dtype, n: int, values: dict) -> list:
        """Arguments after ``n`` in ``spec.signature()`` order, from ``values`` (name -> array
        or scalar); outputs are fresh zero arrays."""
        spec = self.spec
        args = [values[a] for a in spec.arrays] + [values[s] for s in spec.scalars]
        args += [np.zeros(n, self.out_dtype(ct)) for _ in spec.outputs]
        return args


# ops with more operands than this (gru_cell's 7) get all-array patterns and patterns with one
# scalar, and VJP kernels for all inputs or one: every combination would be thousands of kernels
WIDE = 5


def _patterns(op):
    names = op.arg_names
    if len(names) > WIDE:
        yield tuple((n, "a") for n in names)
        for s in names:
            yield tuple((n, "s" if n == s else "a") for n in names)
        return
    for kinds in itertools.product("as", repeat=len(names)):
        if "a" in kinds:
            yield tuple(zip(names, kinds))


def _needs_subsets(op, arrays_in):
    if len(op.arg_names) > WIDE:
        return [tuple(arrays_in)] + [(a,) for a in arrays_in]
    return [sub for r in range(1, len(arrays_in) + 1)
            for sub in itertools.combinations(arrays_in, r)]


def forward_cases():
    for name, op in OPS.items():
        for pat in _patterns(op):
            kind_of = dict(pat)
            fkinds = tuple(kind_of[p] for p in op.f.params)
            yield Case(name, "forward", pat, (), _forward_spec(op, fkinds))


def vjp_cases():
    for name, op in OPS.items():
        if not op.differentiable:
            continue
        for pat in _patterns(op):
            kind_of = dict(pat)
            arrays_in = [i for i in op.inputs if kind_of[i] == "a"]
            for sub in _needs_subsets(op, arrays_in):
                needs = tuple(i in sub for i in op.inputs)
                kinds = dict(kind_of)
                kinds["g"] = "a"
                kinds["out"] = "a"
                yield Case(name, "vjp", pat, sub, _vjp_spec(op, needs, kinds))


def all_cases():
    return list(forward_cases()) + list(vjp_cases())
