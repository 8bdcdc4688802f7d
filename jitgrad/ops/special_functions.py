"""User-facing gamma, Bessel and normal-distribution functions over ``elementwise_gamma``'s
declarations: ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, ``i0`` and the
``torch.special`` ones jitgrad had no op for (``i0e``, ``i1``, ``i1e``, ``ndtr``, ``ndtri``,
``entr``, ``xlog1py``, ``zeta``, ``erfcx``, ``log_ndtr``), the regularized incomplete gamma
``igamma`` / ``igammac``, ``modified_bessel_i0`` and ``spherical_bessel_j0``, with PyTorch's
argument checks and node names; ``install()`` adds the Tensor methods and their in-place
forms."""
from __future__ import annotations

import math

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .elementwise_call import call
from .functional_args import (
    _check,
    _need_tensor,
    _not_implemented,
    _overload_error,
    _unary,
    _wrapped,
)
from .out import with_out
from .parser_errors import parser_type_name
from .registry import OPS

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "special_i0e", "special_i1",
           "special_i1e", "special_ndtri", "special_ndtr", "special_entr", "special_xlog1py",
           "special_zeta", "special_erfcx", "special_log_ndtr", "igamma", "igammac",
           "special_modified_bessel_i0", "special_spherical_bessel_j0", "install"]

lgamma = _unary("lgamma")
digamma = _unary("digamma")
i0 = _unary("i0")
special_i0e = _unary("special_i0e")
special_i1 = _unary("special_i1")
special_i1e = _unary("special_i1e")
special_entr = _unary("special_entr")


def _no_half_on_cpu(fn, kernel):
    """``fn`` refusing a float16 CPU tensor as PyTorch does (its CPU kernel is dispatched for
    float32/float64 only)."""
    def checked(input):
        if isinstance(input, Tensor) and input.dtype is D.float16 and input.device.type == "cpu":
            raise _not_implemented(kernel, input.dtype)
        return fn(input)
    checked.__name__ = checked.__qualname__ = fn.__name__
    return checked


special_ndtri = _no_half_on_cpu(_unary("special_ndtri"), "ndtri_cpu")
special_erfcx = _no_half_on_cpu(_unary("special_erfcx"), "erfcx_cpu")
special_log_ndtr = _no_half_on_cpu(_unary("special_log_ndtr"), "log_ndtr_cpu")


def polygamma(n, input):
    """The n-th derivative of digamma (PolygammaBackward0; n == 0 is digamma's kernel, 1
    trigamma's, as ATen's)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{parser_type_name(n)}")
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return call(OPS["polygamma"], input, order=n)


def _mvlgamma_check(input, p):
    if not isinstance(input, Tensor):
        raise TypeError(f"mvlgamma(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if input.dtype is D.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")


def mvlgamma(input, p):
    """Multivariate log-gamma: ``sum_i lgamma(x - i/2) + p(p-1)/4 log(pi)`` (ATen's
    composition; MvlgammaBackward0, whose gradient is the sum of the digammas)."""
    _mvlgamma_check(input, p)
    from .basic import tensor
    from .composite import record_composition
    dt = input.dtype if input.dtype.is_floating_point else D.get_default_dtype()
    # ATen: arange(-p/2 + 1/2, 1/2, 1/2) + x.unsqueeze(-1), lgamma, summed over the last dim
    offsets = tensor([-(p - 1) * 0.5 + 0.5 * i for i in range(p)], dtype=dt,
                     device=input.device)
    constant = float(p * (p - 1)) * math.log(math.pi) * 0.25

    def build(x):
        return lgamma(offsets + x.unsqueeze(-1)).sum(-1) + constant
    return record_composition("MvlgammaBackward0", (input,), build)


def special_ndtr(input):
    """The standard normal CDF, ATen's composition ``(1 + erf(x / sqrt 2)) * 0.5``
    (its last node: MulBackward1)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_ndtr(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    from .composite import record_composition
    from .functional import erf
    return record_composition("MulBackward1", (input,),
                              lambda x: (1 + erf(x * 0.7071067811865476)) * 0.5)


def special_xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN);
    SpecialXlog1PyBackward0 (tensors) / 1 (a scalar input) / 2 (a scalar other)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return call(OPS["special_xlog1py"], input, other)
    if isinstance(input, Tensor):
        _check(other, "special_xlog1py", 2)
        ct = D.result_type(input, other)
        x = input if input.dtype is ct else input.to(ct)
        return call(OPS["special_xlog1py_scalar"], x, other=other)
    if not isinstance(other, Tensor):
        _overload_error("special_xlog1py", input, other)
    _check(input, "special_xlog1py", 1, "self")
    ct = D.result_type(input, other)
    y = other if other.dtype is ct else other.to(ct)
    return call(OPS["special_rxlog1py"], y, base=input)


def _zeta_backward(x, q):
    def backward(node, g):
        needs = node.ctx.needs_input_grad
        grads = []
        for slot, need in zip((x, q), needs):
            if not need:
                grads.append(None)
            elif slot is x:
                raise NotImplementedError("the derivative for 'zeta' is not implemented.")
            else:
                grads.append(g * -x * special_zeta(x + 1.0, q))
        return tuple(grads)
    return backward


def special_zeta(input, other):
    """Hurwitz zeta ``sum_k (k + other) ** -input`` (ATen's Cephes port); differentiable in
    ``other`` only: SpecialZetaBackward0 (tensors) / 1 (a scalar input) / 2 (a scalar other),
    whose backward for ``input`` raises PyTorch's not-implemented error."""
    from .composite import record
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        x, q, kind, slots = input, other, 0, (input, other)
    elif isinstance(input, Tensor):
        _check(other, "special_zeta", 2)
        x, q, kind, slots = input, _wrapped(other, input), 2, (input, None)
    else:
        if not isinstance(other, Tensor):
            _overload_error("special_zeta", input, other)
        _check(input, "special_zeta", 1, "self")
        x, q, kind, slots = _wrapped(input, other), other, 1, (None, other)
    ct = D.result_type(x, q)
    if ct is D.float16 and x.device.type == "cpu":
        raise _not_implemented("zeta_cpu", ct)
    with grad_mode.no_grad():
        out = call(OPS["special_zeta"], x, q)
    return record(f"SpecialZetaBackward{kind}", slots, out._data, _zeta_backward(x, q))


def _igamma_backward(name, a, x, sign):
    def backward(node, g):
        from ..autograd.engine import should_compute
        need_a, need_x = node.ctx.needs_input_grad
        if need_a and should_compute(node.next_functions[0]):
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        if not need_x:
            return None, None
        from .functional import exp, log
        # derivatives.yaml: grad * exp((self - 1) * log(other) - other - lgamma(self))
        d = exp((a - 1) * log(x) - x - lgamma(a))
        return None, (g if sign > 0 else -g) * d
    return backward


def _incomplete_gamma(name, input, other, method=False):
    from .composite import record
    _need_tensor(input, name, 1, "input")
    _need_tensor(other, name, 1 if method else 2, "other")
    ct = D.result_type(input, other)
    if not ct.is_floating_point:
        raise _not_implemented(f"{name}_{input.device.type}", ct)
    with grad_mode.no_grad():
        x, y = input, other
        if ct is D.float16:  # PyTorch rounds both operands to half first (a 0-d double too)
            x, y = x.to(ct), y.to(ct)
        out = call(OPS[name], x, y)
    return record(f"{name.capitalize()}Backward0", (input, other), out._data,
                  _igamma_backward(name, input, other, 1 if name == "igamma" else -1))


def _igamma(input, other):
    """The regularized lower incomplete gamma P(input, other) (ATen's calc_igamma, from
    SciPy/Cephes); IgammaBackward0, differentiable in ``other`` only."""
    return _incomplete_gamma("igamma", input, other)


def _igammac(input, other):
    """The regularized upper incomplete gamma Q(input, other) = 1 - P (ATen's calc_igammac);
    IgammacBackward0, differentiable in ``other`` only."""
    return _incomplete_gamma("igammac", input, other)


igamma = with_out("igamma")(_igamma)
igammac = with_out("igammac")(_igammac)


def _no_grad_unary(name, compute, arg="input"):
    """A ``torch.special`` function PyTorch declares without derivative: its result never
    requires grad (so ``out=`` is not refused for an input that does); ``input`` only a
    Tensor, float16 refused on the CPU as PyTorch's kernel is."""
    kernel = name[len("special_"):] + "_cpu"

    def fn(input, *, out=None):
        _need_tensor(input, name, 1, arg)
        if input.dtype is D.float16 and input.device.type == "cpu":
            raise _not_implemented(kernel, input.dtype)
        x = input if input.dtype.is_floating_point else input.to(D.get_default_dtype())
        with grad_mode.no_grad():
            res = compute(x.detach())
        from .out import write_out
        return write_out(name, res, out, ())
    fn.__name__ = fn.__qualname__ = name
    return fn


def _spherical_bessel_j0(x):
    """ATen's spherical_bessel_j0_forward: 0 at +-inf, a degree-12 series for |x| < 0.5 (its
    constants are T(1) / T(k!) rounded in x's type), sin(x) / x otherwise."""
    from .functional import abs as _abs
    from .functional import isinf, sin, where
    x2 = x * x
    series = x.new_tensor(1.0 / 6227020800.0)
    for k in (39916800.0, 362880.0, 5040.0, 120.0, 6.0):
        c = 1.0 / k if k in (362880.0, 120.0) else -1.0 / k
        series = x.new_tensor(c) + x2 * series
    series = 1.0 + x2 * series
    return where(isinf(x), x.new_tensor(0.0), where(_abs(x) < 0.5, series, sin(x) / x))


special_modified_bessel_i0 = _no_grad_unary("special_modified_bessel_i0", i0)
special_spherical_bessel_j0 = _no_grad_unary("special_spherical_bessel_j0",
                                             _spherical_bessel_j0, "x")


def install():
    """Tensor methods: lgamma, digamma, polygamma(n), mvlgamma(p), i0 and their in-place forms
    (polygamma_ records PolygammaBackward1, the others their out-of-place node, as PyTorch)."""
    from . import inplace
    from .composite import record_composition

    def polygamma_method(self, n):
        return polygamma(n, self)

    def polygamma_inplace_fn(self, n):
        return record_composition("PolygammaBackward1", (self,), lambda x: polygamma(n, x))

    def polygamma_(self, n):
        return inplace.apply_inplace(self, polygamma_inplace_fn, n)

    def igamma_method(self, other):
        return _incomplete_gamma("igamma", self, other, True)

    def igammac_method(self, other):
        return _incomplete_gamma("igammac", self, other, True)

    def _named(fn, name):
        def checked(self, other):
            _need_tensor(other, name, 1, "other")
            return fn(self, other)
        return checked

    methods = {"lgamma": lgamma, "digamma": digamma, "i0": i0, "mvlgamma": mvlgamma,
               "polygamma": polygamma_method, "polygamma_": polygamma_,
               "igamma": igamma_method, "igammac": igammac_method}
    for name in ("lgamma", "digamma", "i0", "mvlgamma"):
        methods[name + "_"] = inplace.unary_inplace(methods[name])
    for name in ("igamma", "igammac"):
        methods[name + "_"] = _named(inplace.unary_inplace(methods[name]), name + "_")
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
