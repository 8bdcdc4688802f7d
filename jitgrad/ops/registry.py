"""The op registry: every op is declared once, with its VJP.

Elementwise ops are declared as a namespace of *scalar* functions written in a fixed vocabulary
(see ``docs/ARCHITECTURE.md``)::

    @elementwise(node="MulBackward0")
    class mul:
        def f(a, b):              # forward, on scalars
            return a * b
        def da(g, b):             # VJP for input ``a``: g is the incoming gradient
            return g * b
        def db(g, a):
            return g * a

The parameter names of each VJP say what the node must save (``da`` reads ``b`` only, so a node
whose ``a`` needs a gradient keeps ``b`` alive and nothing else; ``out`` is the forward result).
Scalar bodies are branch-free Python arithmetic plus the names of ``SCALAR_VOCABULARY`` (``lit``
for typed constants, ``select`` for branches, ``exp``/``log``/...), so the same source compiles as
a Numba CPU loop body, as a CUDA device function, into a fused backward kernel, and runs on
Tensors (the ``create_graph=True`` path), which is what makes higher-order gradients work.
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field

__all__ = ["ElementwiseOp", "elementwise", "OPS", "SCALAR_VOCABULARY"]

# Names a scalar body may use besides arithmetic and comparison operators. Each target binds
# them: ``backends/cpu_env.py`` for Numba on the CPU, ``ops/tensor_env.py`` for Tensors.
SCALAR_VOCABULARY = (
    "lit", "select", "isnan", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "softplus", "erf", "abs", "pow_",
    # rounding (identity on integers; rint rounds half to even), C fmod (sign of the dividend;
    # integer operands stay integer) and the inverse trigonometric functions
    "floor", "ceil", "trunc", "rint", "fmod", "asin", "acos", "atan",
    # libm's inverse hyperbolic functions, atan2 and erfc (1 - erf cancels for large x)
    "asinh", "acosh", "atanh", "atan2", "erfc",
    # integer shifts with PyTorch's rule for counts outside [0, 64): lshift gives 0, rshift the
    # sign fill (computed in int64 and narrowed by the store, which is the same for every
    # integer dtype up to 64 bits)
    "lshift", "rshift",
    # a * b + c rounded once on floats (ATen's vectorized addcmul is an fmadd); a * b + c on
    # integers
    "fma",
    # Euclid's gcd on absolute values (integers: ATen's calc_gcd) and C's nextafter (floats)
    "gcd", "nextafter",
    # gamma, Bessel and normal-quantile functions (ports of ATen's Math.h with loops and
    # branches, in ops/special_scalar.py): lgamma is libm's; polygamma(n, x) takes n in x's type
    "lgamma", "digamma", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "ndtri", "erfcx",
    "log_ndtr",
    # the regularized incomplete gamma P(a, x) / Q(a, x) (ops/special_igamma_scalar.py)
    "igamma", "igammac",
    # torch.special's Airy and Bessel functions (ops/special_bessel_scalar.py) and orthogonal
    # polynomials of (x, n) (ops/special_polynomial_scalar.py); PyTorch has no derivative
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w",
    "shifted_chebyshev_t", "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w",
    "hermite_h", "hermite_he", "laguerre_l", "legendre_p",
)

OPS: dict[str, ElementwiseOp] = {}

_DTYPE_RULES = ("promote", "float", "compare", "logical")

# How a scalar operand (a Python number, or a 0-d tensor of another dtype) enters a float16
# computation. "common": TensorIterator casts it to the common dtype, so it is rounded to half
# before the float math (ATen's generic kernels: add, sub, fmod, pow's exponent, ...). "opmath":
# the kernel reads the scalar's original value as float (``iter.original_scalar_value<opmath_t>``
# in mul_kernel/div_*_kernel, only for the second operand). Inputs default to "common"; aux
# "compute" operands (lerp's weight, addcmul's value, clamp's bounds, ...) to "opmath": ATen
# converts those Scalars to opmath_t itself.
_HALF_SCALAR_RULES = ("common", "opmath")


@dataclass(eq=False)
class ScalarFn:
    """One scalar function of a declaration, with its source ready to be inlined elsewhere."""

    op: str
    part: str  # "f" or "d<input>"
    fn: object
    params: tuple
    source: str = field(repr=False)

    @property
    def symbol(self) -> str:
        return f"{self.op}__{self.part}"

    def renamed_source(self) -> str:
        """The function's source with its name replaced by ``symbol`` (for generated modules)."""
        head = f"def {self.fn.__name__}("
        if not self.source.startswith(head):
            raise AssertionError(f"unexpected source layout for {self.symbol}")
        return f"def {self.symbol}(" + self.source[len(head):]


@dataclass(eq=False)
class ElementwiseOp:
    name: str
    node: str  # the grad_fn class name PyTorch records, e.g. "MulBackward0"
    inputs: tuple  # edge inputs: tensors or Python scalars, one next_functions slot each
    aux: dict  # name -> "bool" | "compute": non-differentiable extra operands
    dtype_rule: str
    f: ScalarFn
    vjp: dict  # input name -> ScalarFn
    differentiable: bool
    # operand names whose scalar value is rounded to half before float16 math (see
    # ``_HALF_SCALAR_RULES``); the others enter as float
    half_rounded: frozenset = frozenset()
    _saved_cache: dict = field(default_factory=dict, repr=False)

    @property
    def arg_names(self) -> tuple:
        return self.inputs + tuple(self.aux)

    def saved_names(self, needs: tuple) -> tuple:
        """Operands a node must keep to compute the VJPs of the inputs flagged in ``needs``."""
        cached = self._saved_cache.get(needs)
        if cached is not None:
            return cached
        names = []
        for inp, need in zip(self.inputs, needs):
            if need:
                for p in self.vjp[inp].params:
                    if p != "g" and p not in names:
                        names.append(p)
        self._saved_cache[needs] = tuple(names)
        return tuple(names)


def _scalar_fn(op: str, part: str, fn) -> ScalarFn:
    source = textwrap.dedent(inspect.getsource(fn))
    params = tuple(inspect.signature(fn).parameters)
    return ScalarFn(op, part, fn, params, source)


def elementwise(*, node: str | None, aux: dict | None = None, dtype: str = "promote",
                name: str | None = None, half_scalar: dict | None = None):
    """Declare an elementwise op from a namespace holding ``f`` and ``d<input>`` functions.
    ``half_scalar``: operand name -> "common" | "opmath", where ATen's rule for a scalar operand
    of a float16 computation differs from the default (``_HALF_SCALAR_RULES``)."""
    if dtype not in _DTYPE_RULES:
        raise ValueError(f"dtype rule must be one of {_DTYPE_RULES}")
    aux = dict(aux or {})
    half_scalar = dict(half_scalar or {})
    if set(half_scalar.values()) - set(_HALF_SCALAR_RULES):
        raise ValueError(f"half_scalar rules must be among {_HALF_SCALAR_RULES}")

    def register(ns):
        op_name = name or ns.__name__
        body = {k: v for k, v in vars(ns).items() if inspect.isfunction(v)}
        if "f" not in body:
            raise TypeError(f"elementwise op {op_name!r} declares no forward 'f'")
        f = _scalar_fn(op_name, "f", body["f"])
        inputs = tuple(p for p in f.params if p not in aux)
        vjp = {}
        for inp in inputs:
            d = body.get("d" + inp)
            if d is not None:
                vjp[inp] = _scalar_fn(op_name, "d" + inp, d)
        differentiable = node is not None
        if differentiable and set(vjp) != set(inputs):
            missing = set(inputs) - set(vjp)
            raise TypeError(f"op {op_name!r}: no VJP declared for input(s) {sorted(missing)}")
        allowed = set(f.params) | {"g", "out"}
        for inp, d in vjp.items():
            if not d.params or d.params[0] != "g":
                raise TypeError(f"op {op_name!r}: VJP d{inp} must take 'g' first")
            bad = set(d.params) - allowed
            if bad:
                raise TypeError(f"op {op_name!r}: VJP d{inp} uses unknown names {sorted(bad)}")
        extra = set(body) - {"f"} - {"d" + i for i in inputs}
        if extra:
            raise TypeError(f"op {op_name!r}: unexpected functions {sorted(extra)}")
        unknown = set(half_scalar) - set(f.params)
        if unknown:
            raise TypeError(f"op {op_name!r}: half_scalar names unknown operands {sorted(unknown)}")
        rounded = frozenset(
            n for n in f.params if aux.get(n) != "bool"
            and half_scalar.get(n, "opmath" if n in aux else "common") == "common")
        op = ElementwiseOp(op_name, node, inputs, aux, dtype, f, vjp, differentiable, rounded)
        if op_name in OPS:
            raise ValueError(f"op {op_name!r} declared twice")
        OPS[op_name] = op
        return op

    return register
