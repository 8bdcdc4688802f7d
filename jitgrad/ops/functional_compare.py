"""User-facing comparisons and the functions that choose by comparing: clamp/clip/clamp_min/
clamp_max, maximum/minimum, fmax/fmin, where, nan_to_num, heaviside; eq/ne/lt/le/gt/ge (and
aliases), equal, the logical ops, isnan/isinf/isfinite, isclose/allclose, signbit."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .elementwise_call import call
from .factories import _checked_fill
from .functional_args import (
    _binary,
    _need_tensor,
    _no_derivative,
    _Number,
    _tensor_binary,
    invalid_combination,
)
from .functional_arith import add, mul, sub
from .functional_math import abs  # the Tensor abs, for isclose's integer path
from .parser_errors import parser_type_name
from .registry import OPS

# --------------------------------------------------------------------------- clamp


def _bound(v, dt, low):
    if v is None:
        if dt.is_floating_point:
            return -np.inf if low else np.inf
        info = np.iinfo(dt.np) if dt is not D.bool_ else None
        return (info.min if low else info.max) if info else (0 if low else 1)
    if isinstance(v, Tensor):  # a 0-d tensor bound takes PyTorch's unchecked Tensor overload
        return v.item()
    return _checked_fill(v, dt)  # a Number bound is a Scalar: PyTorch's overflow check


def _clamp_backward(node, g):
    """PyTorch's ``clamp_backward_min_max``: ``self`` gets ``g`` where min <= self <= max, a
    bound gets it where it clamped (with min > max: max wins)."""
    a = node.ctx.attrs
    needs = node.ctx.needs_input_grad
    x = node.saved("self")
    lo = node.saved("min") if a["lo"] else None
    hi = node.saved("max") if a["hi"] else None
    gx = glo = ghi = None
    if lo is not None and hi is not None:
        if needs[0]:
            gx = where(logical_and(ge(x, lo), le(x, hi)), g, 0.0)
        if needs[1]:
            glo = where(logical_and(lt(x, lo), lt(lo, hi)), g, 0.0)
        if needs[2]:
            ghi = where(logical_or(gt(x, hi), lt(hi, lo)), g, 0.0)
    elif lo is not None:
        gx = where(ge(x, lo), g, 0.0) if needs[0] else None
        glo = where(lt(x, lo), g, 0.0) if needs[1] else None
    else:
        gx = where(le(x, hi), g, 0.0) if needs[0] else None
        ghi = where(gt(x, hi), g, 0.0) if needs[-1] else None
    if a["name"] == "ClampBackward0":
        return (gx, glo, ghi)
    return (gx, glo if lo is not None else ghi)


def _clamp_tensors(name, input, lo, hi):
    """clamp with Tensor bounds (PyTorch's ``clamp.Tensor``, ``clamp_min.Tensor``, ...): the
    bounds broadcast and get gradients; one node, ClampBackward0 with slots (self, min, max), or
    ClampMinBackward1/ClampMaxBackward1 with (self, bound)."""
    with grad_mode.no_grad():
        r = input
        if lo is not None:
            r = maximum(r, lo)
        if hi is not None:
            r = minimum(r, hi)
    slots = (input, lo, hi) if name == "ClampBackward0" else \
        (input, lo if lo is not None else hi)
    save = [("self", input)] + [(n, v) for n, v in (("min", lo), ("max", hi)) if v is not None]
    return record(name, slots, r._data, _clamp_backward, save=save,
                  attrs={"name": name, "lo": lo is not None, "hi": hi is not None})


_CLAMP_SIGS = ("(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
               "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)")
_CLAMP_METHOD_SIGS = ("(Tensor min = None, Tensor max = None)",
                      "(Number min = None, Number max = None)")
_BOUND_SIGS = ("(Tensor input, Tensor {0}, *, Tensor out = None)",
               "(Tensor input, Number {0}, *, Tensor out = None)")
_BOUND_METHOD_SIGS = ("(Tensor {0})", "(Number {0})")


def _clamp_args(name, self, args, kwargs, bounds=("min", "max")):
    """``(input, min, max)`` of a clamp call as PyTorch's parser binds it (``self``: the
    method form's tensor, None for ``torch.clamp``), or its TypeError when no overload (Tensor
    bounds, or Number bounds, where a 0-d tensor not requiring grad counts as a Number) takes
    the arguments; ``bounds``: ``("min",)`` for clamp_min, ``("max",)`` for clamp_max."""
    names = bounds if self is not None else ("input",) + bounds
    one = len(bounds) == 1
    sigs = ((_BOUND_METHOD_SIGS if self is not None else _BOUND_SIGS) if one else
            _CLAMP_METHOD_SIGS if self is not None else _CLAMP_SIGS)
    sigs = tuple(sig.format(bounds[0]) for sig in sigs)

    def fail():
        return invalid_combination(name, args, kwargs, sigs)
    if len(args) > len(names) or any(k not in names for k in kwargs) or any(
            n in kwargs for n in names[:len(args)]):
        raise fail()
    given = dict(zip(names, args))
    given.update(kwargs)
    input = self if self is not None else given.get("input")
    if not isinstance(input, Tensor) or (one and bounds[0] not in given):
        raise fail()
    lo, hi = given.get("min"), given.get("max")
    if one and given[bounds[0]] is None:
        raise fail()  # (clamp_min/clamp_max: no None overload)
    if any(v is not None and not isinstance(v, (Tensor,) + _Number) for v in (lo, hi)):
        raise fail()
    if (isinstance(lo, Tensor) or isinstance(hi, Tensor)) and (
            isinstance(lo, _Number) or isinstance(hi, _Number)) and any(
            isinstance(v, Tensor) and (v.ndim != 0 or v._requires_grad) for v in (lo, hi)):
        raise fail()  # a Tensor bound with a Number bound: only the Scalar overload, 0-d
    return input, lo, hi


def _renamed(t, name):
    """The scalar clamp's node under the name PyTorch gives ``clamp_min``/``clamp_max``."""
    gf = t._grad_fn
    if gf is not None and type(gf).__name__ == "ClampBackward1":
        from ..autograd.node import node_class
        gf.__class__ = node_class(name, type(gf).__mro__[1])
    return t


def _clamp(input, min, max):  # noqa: A002 - PyTorch's names
    """clamp of checked arguments (``_clamp_args``)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if (isinstance(min, Tensor) or isinstance(max, Tensor)) and not isinstance(
            min, _Number) and not isinstance(max, _Number):
        # PyTorch's overloads, in its order: clamp(Tensor? min, Tensor? max) (ClampBackward0);
        # clamp(Scalar? min, Scalar? max), which takes a 0-d tensor not requiring grad
        return _clamp_tensors("ClampBackward0", input, min, max)
    ct = D.result_type(input, *(v for v in (min, max) if v is not None))
    x = input if ct is input.dtype else input.to(ct)
    return call(OPS["clamp"], x, lo=_bound(min, ct, True), hi=_bound(max, ct, False))


def _clamp_entry(name):
    def fn(*args, **kwargs):
        return _clamp(*_clamp_args(name, None, args, kwargs))
    fn.__name__ = fn.__qualname__ = name
    return fn


clamp = _clamp_entry("clamp")
clip = _clamp_entry("clip")


def clamp_min(*args, **kwargs):
    input, lo, _ = _clamp_args("clamp_min", None, args, kwargs, ("min",))
    return _clamp_min(input, lo)


def clamp_max(*args, **kwargs):
    input, _, hi = _clamp_args("clamp_max", None, args, kwargs, ("max",))
    return _clamp_max(input, hi)


def _clamp_min(input, min):  # noqa: A002
    if isinstance(min, Tensor):
        return _clamp_tensors("ClampMinBackward1", input, min, None)
    return _renamed(_clamp(input, min, None), "ClampMinBackward0")


def _clamp_max(input, max):  # noqa: A002
    if isinstance(max, Tensor):
        return _clamp_tensors("ClampMaxBackward1", input, None, max)
    return _renamed(_clamp(input, None, max), "ClampMaxBackward0")


def _clamp_method(name, bounds=("min", "max")):
    """``Tensor.clamp``/``clip``/``clamp_min``/``clamp_max``: the method form's errors."""
    def method(self, *args, **kwargs):
        input, lo, hi = _clamp_args(name, self, args, kwargs, bounds)
        if bounds == ("min",):
            return _clamp_min(input, lo)
        if bounds == ("max",):
            return _clamp_max(input, hi)
        return _clamp(input, lo, hi)
    method.__name__ = method.__qualname__ = name
    return method


#: Tensor.clamp & co (bound by ops/methods)
CLAMP_METHODS = {"clamp": _clamp_method("clamp"), "clip": _clamp_method("clip"),
                 "clamp_min": _clamp_method("clamp_min", ("min",)),
                 "clamp_max": _clamp_method("clamp_max", ("max",))}


# --------------------------------------------------------------------------- selection


def maximum(input, other):
    return _tensor_binary("maximum", input, other)


def minimum(input, other):
    return _tensor_binary("minimum", input, other)


_WHERE_OVERLOADS = ("(Tensor condition)",
                    "(Tensor condition, Tensor input, Tensor other, *, Tensor out = None)",
                    "(Tensor condition, Number self, Tensor other)",
                    "(Tensor condition, Tensor input, Number other)",
                    "(Tensor condition, Number self, Number other)")
_NOT_GIVEN = object()


def _where_error(condition, input, other):
    given = tuple(v for v in (condition, input, other) if v is not _NOT_GIVEN)
    return invalid_combination("where", given, {}, _WHERE_OVERLOADS)


def where(condition, input=_NOT_GIVEN, other=_NOT_GIVEN):
    if input is _NOT_GIVEN and other is _NOT_GIVEN:
        if not isinstance(condition, Tensor):  # (the rare one-argument form only)
            raise TypeError("where(): argument 'condition' (position 1) must be Tensor, not "
                            f"{parser_type_name(condition)}")
        from .index import nonzero
        return nonzero(condition, as_tuple=True)
    # both values or none (where(c, x) is no overload); None is neither a Tensor nor a Number
    if input is _NOT_GIVEN or other is _NOT_GIVEN or input is None or other is None:
        raise _where_error(condition, input, other)
    if not isinstance(condition, Tensor):
        raise _where_error(condition, input, other)
    try:  # (free until raised) a value neither a Tensor nor a Number: no overload takes it
        if condition.dtype is not D.bool_:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {D.scalar_name(condition.dtype)}")
        # a NumPy bool value is a double to PyTorch's parser (where(c, int_x, np.bool_(True)):
        # float32), as for the arithmetic ops (tested inline: where is hot)
        if input.__class__ is np.bool_ or other.__class__ is np.bool_:
            input, other = D.parser_scalar(input), D.parser_scalar(other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            from .basic import tensor
            input = tensor(input, dtype=D.result_type(input, other))
        return call(OPS["where"], input, other, cond=condition)
    except Exception:
        if isinstance(input, (Tensor,) + _Number) and isinstance(other, (Tensor,) + _Number):
            raise
        raise _where_error(condition, input, other) from None


def fmax(input, other):
    """NaN-ignoring maximum (FmaxBackward0: ties give the whole gradient to ``input``)."""
    return _tensor_binary("fmax", input, other)


def fmin(input, other):
    return _tensor_binary("fmin", input, other)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to ``posinf``/``neginf`` (default: the dtype's largest/lowest
    finite value); integers and bools come back unchanged (a copy). NanToNumBackward0."""
    _need_tensor(input, "nan_to_num")
    if not input.dtype.is_floating_point:
        from .basic import clone
        return clone(input)
    info = np.finfo(input.dtype.np)
    return call(OPS["nan_to_num"], input, nan=nan,
                posinf=float(info.max) if posinf is None else posinf,
                neginf=float(info.min) if neginf is None else neginf)


def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero; no derivative (NotImplemented node)."""
    _need_tensor(input, "heaviside", 1)
    _need_tensor(values, "heaviside", 2, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    with grad_mode.no_grad():
        res = call(OPS["heaviside"], input, values)
    return _no_derivative("heaviside", res, (input, values))


# --------------------------------------------------------------------------- comparisons


_COMPARE_SIGS = ("(Tensor input, Tensor other, *, Tensor out = None)",
                 "(Tensor input, Number other, *, Tensor out = None)")
_COMPARE_METHOD_SIGS = ("(Tensor other)", "(Number other)")


def _bind(args, kwargs, names):
    """``args``/``kwargs`` bound to ``names`` (all required), or None when they do not fit."""
    if len(args) > len(names) or any(k not in names for k in kwargs):
        return None
    values = list(args) + [kwargs.get(n, _NOT_GIVEN) for n in names[len(args):]]
    if any(v is _NOT_GIVEN for v in values) or any(n in kwargs for n in names[:len(args)]):
        return None
    return values


def _complex_kernel_error(op, input):
    """PyTorch compares with a complex number in the complex type of (input, number), which
    has no ordering kernel."""
    dt = input.dtype
    name = ("ComplexDouble" if dt is D.float64 else "ComplexHalf" if dt is D.float16
            else "ComplexFloat")
    device = "cuda" if input._data.__class__ is not np.ndarray else "cpu"
    return NotImplementedError(f'"{op}_{device}" not implemented for \'{name}\'')


def _compared(name, op, input, other, args, kwargs, sigs):
    if not isinstance(input, Tensor) or not isinstance(other, (Tensor,) + _Number):
        raise invalid_combination(name, args, kwargs, sigs)
    if isinstance(other, complex):  # (Python's complex and np.complex128; no complex dtype here)
        if other.imag == 0:
            other = other.real
        elif op in ("eq", "ne"):
            # no real number equals it: eq is all False, ne all True, as NaN compares
            other = float("nan")
        else:
            raise _complex_kernel_error(op, input)
    return _binary(op, input, other)


def _compare(name, op=None):
    """``torch.<name>``: a comparison with PyTorch's Tensor and Number overloads."""
    op = op or name

    def fn(*args, **kwargs):
        if len(args) == 2 and not kwargs:
            input, other = args
            if isinstance(input, Tensor) and other.__class__ in _PLAIN_OTHER:
                return _binary(op, input, other)
        else:
            bound = _bind(args, kwargs, ("input", "other"))
            if bound is None:
                raise invalid_combination(name, args, kwargs, _COMPARE_SIGS)
            input, other = bound
        return _compared(name, op, input, other, args, kwargs, _COMPARE_SIGS)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _compare_method(name, op=None):
    """``Tensor.<name>``: as ``_compare``, its errors leaving ``self`` out of the arguments."""
    op = op or name

    def method(self, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            other = args[0]
            if other.__class__ in _PLAIN_OTHER:
                return _binary(op, self, other)
        else:
            bound = _bind(args, kwargs, ("other",))
            if bound is None:
                raise invalid_combination(name, args, kwargs, _COMPARE_METHOD_SIGS)
            other = bound[0]
        return _compared(name, op, self, other, args, kwargs, _COMPARE_METHOD_SIGS)
    method.__name__ = method.__qualname__ = name
    return method


_PLAIN_OTHER = (Tensor, int, float, bool)  # (exact classes: the common calls, no checks)

eq = _compare("eq")
ne = _compare("ne")
lt = _compare("lt")
le = _compare("le")
gt = _compare("gt")
ge = _compare("ge")
greater, less = _compare("greater", "gt"), _compare("less", "lt")
greater_equal, less_equal = _compare("greater_equal", "ge"), _compare("less_equal", "le")
not_equal = _compare("not_equal", "ne")
#: Tensor.eq, ... (bound by ops/methods)
COMPARE_METHODS = {n: _compare_method(n, op) for n, op in (
    ("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"),
    ("greater", "gt"), ("less", "lt"), ("not_equal", "ne"))}  # (greater_equal/less_equal:
#: ops/tensor_extras, with their in-place forms)


def equal(input, other) -> bool:
    _need_tensor(input, "equal", 1)
    _need_tensor(other, "equal", 2)
    if tuple(input.shape) != tuple(other.shape):
        return False
    if input._data.__class__ is np.ndarray and other._data.__class__ is np.ndarray:
        return bool(np.array_equal(input._data, other._data))
    return bool(eq(input, other).all())  # CUDA: a device compare and all(), one 1-byte read


def equal_method(self, other) -> bool:
    """``Tensor.equal``: ``other`` is the method's first argument in PyTorch's errors."""
    _need_tensor(other, "equal", 1, "other")
    return equal(self, other)


def logical_not(input):
    _need_tensor(input, "logical_not")
    return call(OPS["logical_not"], input)


def logical_and(input, other):
    return _tensor_binary("logical_and", input, other)


def logical_or(input, other):
    return _tensor_binary("logical_or", input, other)


def logical_xor(input, other):
    return _tensor_binary("logical_xor", input, other)


def isnan(input):
    _need_tensor(input, "isnan")
    return call(OPS["isnan_"], input)


def _never_inf(input):
    """Integers and bools are finite: no kernel (``a - a`` has no bool version)."""
    from .basic import zeros_like
    return zeros_like(input, dtype=D.bool_)


def isinf(input):
    if not input.dtype.is_floating_point:
        return _never_inf(input)
    return call(OPS["isinf"], input)


def isfinite(input):
    if not input.dtype.is_floating_point:
        from .basic import ones_like
        return ones_like(input, dtype=D.bool_)
    return call(OPS["isfinite"], input)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """PyTorch's isclose: ``input == other``, or both NaN with ``equal_nan``, or a finite
    ``|input - other| <= atol + |rtol * other|`` (floats: in their precision, one registry op;
    integers/bools: the difference is taken in the integer type, then compared in the default
    float type, as PyTorch does)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not "
                        f"{parser_type_name(other)}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{D.scalar_name(input.dtype)} did not match "
                           f"{D.scalar_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    if input.dtype.is_floating_point:
        return call(OPS["isclose"], input, other, rtol=rtol, atol=atol,
                    equal_nan=bool(equal_nan))
    close = eq(input, other)
    if rtol == 0 and atol == 0:
        return close
    fdt = D.get_default_dtype()
    a, b = (input.to(fdt), other.to(fdt)) if input.dtype is D.bool_ else (input, other)
    diff = abs(sub(a, b))
    if not diff.dtype.is_floating_point:
        diff = diff.to(fdt)
    allowed = add(abs(mul(b, rtol)), atol)
    return logical_or(close, le(diff, allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    if not isinstance(other, Tensor):
        raise TypeError(f"allclose(): argument 'other' (position 2) must be Tensor, not "
                        f"{parser_type_name(other)}")
    if input.dtype is not other.dtype:  # isclose's checks, before NumPy's own
        raise RuntimeError(f"{D.scalar_name(input.dtype)} did not match "
                           f"{D.scalar_name(other.dtype)}")
    if input._data.__class__ is np.ndarray and other._data.__class__ is np.ndarray:
        if input._data.shape != other._data.shape:
            from .elementwise_call import broadcast_shapes
            broadcast_shapes(input._data.shape, other._data.shape)  # PyTorch's error
        return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol,
                                equal_nan=equal_nan))
    # CUDA: the isclose kernel and a device all(); one 1-byte read for the answer
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def signbit(input):
    _need_tensor(input, "signbit")
    if input.dtype is D.bool_ or input.dtype is D.uint8:
        from .basic import zeros_like
        return zeros_like(input, dtype=D.bool_)
    return call(OPS["signbit"], input)
