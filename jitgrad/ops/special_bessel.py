"""torch.special's Airy and Bessel functions and orthogonal polynomials over
``elementwise_bessel``'s declarations, with PyTorch's argument rules.

PyTorch declares none of them differentiable and has no ``torch.*`` or Tensor-method spelling
for them: results never require grad (so ``out=`` is not refused for an input that does), and
its kernels are dispatched for float32/float64 only (float16 raises its NotImplementedError on
either device). The unary ones take one Tensor (integers promote to the default float); the
polynomials take ``(x, n)`` as two Tensors or a Tensor and a Number, promoted together as
PyTorch promotes a wrapped number.
"""
from __future__ import annotations

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .elementwise_call import call
from .functional_args import _need_tensor, _not_implemented, _wrapped
from .out import write_out
from .parser_errors import parser_type_name
from .registry import OPS

# function -> the name of its argument in PyTorch's signature ("input" also accepts x=)
UNARY = {"airy_ai": "x", "bessel_j0": "input", "bessel_j1": "input", "bessel_y0": "input",
         "bessel_y1": "input", "modified_bessel_i1": "input", "modified_bessel_k0": "input",
         "modified_bessel_k1": "input", "scaled_modified_bessel_k0": "x",
         "scaled_modified_bessel_k1": "x"}
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")

__all__ = ["special_" + n for n in (*UNARY, *POLYNOMIALS)]

_NUMBER = (bool, int, float)
_SIGNATURES = ("expected one of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n"
               " * (Number x, Tensor n, *, Tensor out = None)\n"
               " * (Tensor x, Number n, *, Tensor out = None)\n")


def _run(name, operands, out):
    """The kernel on ``operands`` (Tensors), refusing float16 as ATen's dispatch does."""
    ct = D.result_type(*operands)
    if not ct.is_floating_point:
        ct = D.get_default_dtype()
    if ct is D.float16:
        raise _not_implemented(f"{name}_{operands[0].device.type}", ct)
    with grad_mode.no_grad():
        res = call(OPS["special_" + name], *(t.detach() for t in operands))
    return write_out("special_" + name, res, out, ())


def _unary(name, arg):
    public = "special_" + name
    keywords = (arg, "x") if arg == "input" else (arg,)

    def fn(*args, out=None, **kwargs):
        if len(args) > 1:
            raise TypeError(f"{public}() takes 1 positional argument but {len(args)} were given")
        if args:
            value = args[0]
        else:
            key = next((k for k in keywords if k in kwargs), None)
            if key is None:
                raise TypeError(f'{public}() missing 1 required positional arguments: "{arg}"')
            value = kwargs.pop(key)
        if kwargs:
            raise TypeError(f"{public}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        _need_tensor(value, public, 1, arg)
        return _run(name, (value,), out)
    fn.__name__ = fn.__qualname__ = public
    return fn


def _invalid(public, args, kwargs):
    """PyTorch's parser message when no overload of (x, n) takes the arguments."""
    got = ", ".join(parser_type_name(a) for a in args)
    named = "".join(f"{k}={parser_type_name(v)}, " for k, v in kwargs.items())
    if got and named:
        got = got + ", " + named[:-2]
    elif named:
        got = named
    return TypeError(f"{public}() received an invalid combination of arguments - got ({got}), "
                     f"but {_SIGNATURES}")


def _polynomial(name):
    public = "special_" + name

    def fn(*args, out=None, **kwargs):
        shown = dict(kwargs)
        if out is not None and not isinstance(out, Tensor):
            shown["out"] = out
        if set(kwargs) - {"x", "n"} or len(args) + len(kwargs) != 2 or len(args) > 2 \
                or (len(args) == 2 and kwargs) or (len(args) == 1 and "x" in kwargs) \
                or "out" in shown:
            raise _invalid(public, args, shown)
        x = args[0] if args else kwargs["x"]
        n = args[1] if len(args) > 1 else kwargs["n"]
        x_tensor, n_tensor = isinstance(x, Tensor), isinstance(n, Tensor)
        if not ((x_tensor or isinstance(x, _NUMBER)) and (n_tensor or isinstance(n, _NUMBER))
                and (x_tensor or n_tensor)):
            raise _invalid(public, args, shown)
        if not x_tensor:
            x = _wrapped(x, n)
        elif not n_tensor:
            n = _wrapped(n, x)
        return _run(name, (x, n), out)
    fn.__name__ = fn.__qualname__ = public
    return fn


for _name, _arg in UNARY.items():
    globals()["special_" + _name] = _unary(_name, _arg)
for _name in POLYNOMIALS:
    globals()["special_" + _name] = _polynomial(_name)
del _name, _arg
