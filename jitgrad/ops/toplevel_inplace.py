"""``torch.abs_(t)``, ``torch.clamp_(t, 0, 1)``, ``torch.fill_(t, 2)``, ...: the functional
spellings of the in-place Tensor methods (and of a few others: ``torch.detach(t)``,
``torch.is_same_size(a, b)``, ...), made from the methods themselves (one wrapper, no
per-op code), so they share every rule of ``Tensor.X_`` (leaf checks, casts, grad_fn names).

Only the names PyTorch exposes as ``torch.X_`` are made (``torch.add_`` does not exist), and only
where jitgrad's Tensor has the method. What the wrapper adds is PyTorch's argument parser's
error for a missing or non-Tensor ``input``, which names the function and, for the overloaded
ones, lists their signatures.
"""
from __future__ import annotations

from ..tensor import Tensor
from .parser_errors import parser_type_name

# PyTorch 2.13's torch.X_ functions that are Tensor methods too (dir(torch) ∩ dir(Tensor));
# the nn ones without a method (dropout_, selu_, ...) are nn/functional/_aten_extra.py's
NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_",
    "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "resize_as_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_",
)

# and the out-of-place functions that are a method's call as well
METHOD_FUNCTIONS = ("detach", "is_same_size", "is_signed", "is_inference", "get_device")

# the overloaded ones: PyTorch's parser lists every signature when none matches
_BINARY = ("(Tensor input, Tensor {0})", "(Tensor input, Number {0})")
_CLAMP = ("(Tensor input, Tensor min = None, Tensor max = None)",
          "(Tensor input, Number min = None, Number max = None)")
OVERLOADS = {
    "clamp_": _CLAMP, "clip_": _CLAMP,
    "clamp_max_": tuple(s.format("max") for s in _BINARY),
    "clamp_min_": tuple(s.format("min") for s in _BINARY),
    "fill_": tuple(s.format("value") for s in _BINARY),
    "xlogy_": tuple(s.format("other") for s in _BINARY),
    "addmv_": ("(Tensor input, Tensor mat, Tensor vec, *, Number beta = 1, Number alpha = 1)",),
}
# the required arguments of the single-signature ones that take more than ``input``
_REQUIRED = {"gcd_": ("other",), "lcm_": ("other",), "ldexp_": ("other",),
             "index_put_": ("indices", "values"), "resize_as_": ("the_template",),
             "as_strided_": ("size", "stride"), "is_same_size": ("other",)}


def overload_error(name, sigs, args, kwargs) -> TypeError:
    got = ", ".join([parser_type_name(a) for a in args]
                    + [f"{k}={parser_type_name(v)}" for k, v in kwargs.items()])
    if len(sigs) == 1:
        return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                         f"but expected {sigs[0]}")
    listed = "".join(f" * {s}\n" for s in sigs)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{listed}")


def missing_error(name, required) -> TypeError:
    """PyTorch's wording (its plural and singular as its parser writes them)."""
    names = ", ".join(f'"{r}"' for r in ("input",) + tuple(required))
    word = "arguments" if not required else "argument"
    return TypeError(f"{name}() missing {len(required) + 1} required positional {word}: {names}")


def take_input(name, args, kwargs, overloads=None, required=()):
    """``(input, rest_args)``: the first argument, positional or ``input=``, checked to be a
    Tensor with PyTorch's errors."""
    if args:
        input, rest = args[0], args[1:]
    elif "input" in kwargs:
        input, rest = kwargs.pop("input"), ()
    else:
        if overloads:
            raise overload_error(name, overloads, args, kwargs)
        raise missing_error(name, required)
    if not isinstance(input, Tensor):
        if overloads:
            raise overload_error(name, overloads, args, kwargs)
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    return input, rest


def functional_form(name):
    """``torch.<name>(input, *args, **kwargs)`` = ``input.<name>(*args, **kwargs)``, looked up
    at call time (a method rebound later, as jitgrad.compile does, is the one called)."""
    overloads, required = OVERLOADS.get(name), _REQUIRED.get(name, ())

    def fn(*args, **kwargs):
        input, rest = take_input(name, args, kwargs, overloads, required)
        return getattr(input, name)(*rest, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "jitgrad"
    fn.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)`` (PyTorch's functional form)."
    return fn


def functional_forms() -> dict:
    """Every ``torch.X`` of NAMES and METHOD_FUNCTIONS whose method Tensor has, by name."""
    return {n: functional_form(n) for n in NAMES + METHOD_FUNCTIONS if hasattr(Tensor, n)}
