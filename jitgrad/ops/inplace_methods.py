"""In-place forms of the elementwise methods (``x.floor_()``, ``x.addcmul_(t1, t2)``,
``x.eq_(y)``, ...): the out-of-place method's result written into ``self`` by
``inplace.apply_inplace``, which gives PyTorch's checks (leaf, overlap, cast to ``self``'s
dtype, broadcast shape) and records the out-of-place op's node for ``self``'s new value.

Where PyTorch's in-place form records something else, a small wrapper says so: comparisons
record ``EqBackward0/1`` & co. (a zero gradient: the old value no longer matters), ops without a
derivative name the in-place op in their error, ``float_power_`` and ``cumsum_`` have their own
dtype errors."""
from __future__ import annotations

from .. import _dtype as D
from ..autograd import grad_mode
from ..autograd.node import node_class
from ..tensor import Tensor
from . import inplace

# every elementwise method PyTorch also has with a trailing underscore (ops whose in-place form
# is defined elsewhere, with its own rules, are not listed: add_, mul_, clamp_, exp_, ...)
ELEMENTWISE = (
    "absolute", "acos", "arccos", "arcsin", "arctan", "asin", "atan", "ceil", "cosh",
    "deg2rad", "erf", "exp2", "expm1", "fix", "floor", "frac", "log10", "log1p", "log2",
    "logit", "nan_to_num", "negative", "rad2deg", "reciprocal", "round", "rsqrt", "sgn", "sign",
    "sinc", "sinh", "square", "tan", "trunc",
    "addcdiv", "addcmul", "copysign", "divide", "float_power", "floor_divide", "fmod",
    "heaviside", "hypot", "lerp", "multiply", "remainder", "subtract", "true_divide", "xlogy",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "eq", "ge", "greater", "gt", "le", "less", "lt", "ne", "not_equal",
    "logical_and", "logical_not", "logical_or", "logical_xor",
    "cumsum",
    "gcd", "lcm", "ldexp", "nextafter",
)
# other in-place forms made the same way (not elementwise: their own arguments)
OTHER = ("renorm",)

# PyTorch's node for an in-place comparison, by method name (Backward1 for a tensor operand)
_COMPARISON_NODES = {"eq": "Eq", "ne": "Ne", "not_equal": "Ne", "lt": "Lt", "less": "Lt",
                     "le": "Le", "gt": "Gt", "greater": "Gt", "ge": "Ge"}
_NO_DERIVATIVE = ("floor_divide", "heaviside")


def _zero_backward(node, g):
    from .basic import zeros_like
    return tuple(zeros_like(g) if need else None for need in node.ctx.needs_input_grad)


def _comparison(fn, node):
    def inplace_form(input, other):
        from .composite import record
        with grad_mode.no_grad():
            out = fn(input, other).to(input.dtype)
        suffix = 1 if isinstance(other, Tensor) else 0
        return record(f"{node}Backward{suffix}", (input, other), out._data, _zero_backward)
    return inplace_form


def _without_derivative(fn, name):
    def inplace_form(input, other):
        from .functional_args import _no_derivative
        with grad_mode.no_grad():
            out = fn(input, other)
        return _no_derivative(name + "_", out, (input, other))
    return inplace_form


def _float_power(fn):
    def inplace_form(input, exponent):
        if input.dtype is not D.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{D.scalar_name(input.dtype)} but the operation's result "
                               "requires dtype Double")
        return fn(input, exponent)
    return inplace_form


def _cumsum(fn):
    def inplace_form(input, *args, **kwargs):
        if input.dtype is D.bool_:
            raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")
        return fn(input, *args, **kwargs)
    return inplace_form


def _cast_first(fn):
    """gcd_/lcm_: PyTorch refuses the cast into ``self`` before the dtype's kernel error."""
    def inplace_form(input, other):
        if isinstance(other, Tensor):
            inplace._check_cast(input, D.result_type(input, other))
        return fn(input, other)
    return inplace_form


def _ldexp(fn):
    def inplace_form(input, other):
        if not input.dtype.is_floating_point:
            raise RuntimeError(f"ldexp can't be cast to the desired output type "
                               f"{D.scalar_name(input.dtype)}")
        return fn(input, other)
    return inplace_form


def install() -> None:
    for name in ELEMENTWISE + OTHER:
        if hasattr(Tensor, name + "_"):
            raise AssertionError(f"Tensor.{name}_ is defined twice")
        fn = getattr(Tensor, name)
        if name in _COMPARISON_NODES:
            fn = _comparison(fn, _COMPARISON_NODES[name])
        elif name in _NO_DERIVATIVE:
            fn = _without_derivative(fn, name)
        elif name == "float_power":
            fn = _float_power(fn)
        elif name == "cumsum":
            fn = _cumsum(fn)
        elif name == "ldexp":
            fn = _ldexp(fn)
        elif name in ("gcd", "lcm"):
            fn = _cast_first(fn)
        method = inplace.unary_inplace(fn)
        method.__name__ = method.__qualname__ = name + "_"
        setattr(Tensor, name + "_", method)


# ----------------------------------------------------------------------------- shape, in place
# ``x.unsqueeze_(0)``, ``x.t_()``, ...: ``x`` itself becomes the view the out-of-place method
# returns (same memory, new shape and strides), its version counter bumped; in a graph it is
# recorded under PyTorch's in-place node name (UnsqueezeBackward1, TBackward1, ...).

def _squeeze_node(args, kwargs):
    dim = args[0] if args else kwargs.get("dim")
    if dim is None:
        return "SqueezeBackward3"
    return "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4"


SHAPE = {"unsqueeze": lambda a, k: "UnsqueezeBackward1", "squeeze": _squeeze_node,
         "t": lambda a, k: "TBackward1", "transpose": lambda a, k: "TransposeBackward1",
         "swapaxes": lambda a, k: "TransposeBackward1",
         "swapdims": lambda a, k: "TransposeBackward1"}

def _shape_inplace(name, node_name):
    view = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        if name == "t" and self._data.ndim > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                               f"{self._data.ndim}D")
        inplace.check_inplace(self)
        r = view(self, *args, **kwargs)
        node = r._grad_fn
        if node is not None and node is not self._grad_fn:
            # the out-of-place view's node, under the in-place op's name
            node.__class__ = node_class(node_name(args, kwargs), type(node).__mro__[1])
            self._grad_fn, self._output_nr = node, r._output_nr
        self._data = r._data
        if r._base is not self:  # self was a view: it stays one, of the same base
            self._base, self._view_fn = r._base, r._view_fn
        # a basic-indexing key describes the old shape's view: the new one has its own (or none)
        self.__dict__.pop("_view_key", None)
        if "_view_key" in r.__dict__:
            self._view_key = r.__dict__["_view_key"]
        self._vc.value += 1
        return self
    method.__name__ = method.__qualname__ = name + "_"
    return method


def install_shape() -> None:
    for name, node_name in SHAPE.items():
        if hasattr(Tensor, name + "_"):
            raise AssertionError(f"Tensor.{name}_ is defined twice")
        setattr(Tensor, name + "_", _shape_inplace(name, node_name))
