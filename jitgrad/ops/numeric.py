"""The last torch.* functions of the misc sweep, with PyTorch's argument checks and errors:
gcd/lcm/ldexp/nextafter (over ``elementwise_numeric``'s declarations), renorm (ATen's
composition shown as RenormBackward0), isposinf/isneginf/isreal, is_nonzero/is_complex and
resolve_conj/resolve_neg (jitgrad has no complex dtypes and no conjugate/negative bits: the
identity). ``METHODS`` holds the Tensor methods ``ops/methods.py`` binds; the in-place forms
(gcd_, lcm_, ldexp_, nextafter_, renorm_, masked_scatter_) come from ``inplace_methods``."""
from __future__ import annotations

from .. import _dtype as D
from .elementwise_call import call
from .functional_args import _need_tensor, _not_implemented
from .registry import OPS

__all__ = ["gcd", "lcm", "ldexp", "nextafter", "renorm", "isposinf", "isneginf", "isreal",
           "is_nonzero", "is_complex", "resolve_conj", "resolve_neg", "is_conj", "is_neg"]


def _kernel(name, t):
    return f"{name}_{'cuda' if t.device.type == 'cuda' else 'cpu'}"


def _integer_binary(name):
    op = OPS[name]

    def fn(input, other, *, _pos=2):
        _need_tensor(input, name, 1)
        _need_tensor(other, name, _pos, "other")
        ct = D.result_type(input, other)
        if ct.is_floating_point or ct is D.bool_:
            raise _not_implemented(_kernel(name, input), ct)
        return call(op, input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}`` of integer tensors (no derivative, as PyTorch's)."
    return fn


gcd = _integer_binary("gcd")
lcm = _integer_binary("lcm")


def _ldexp_backward(node, g):
    """derivatives.yaml: ``grad * pow(2, other)`` (an integer power for an integer ``other``)
    and ``grad * result * ln 2``."""
    from .functional import pow as pow_
    need_self, need_other = node.ctx.needs_input_grad
    return (g * pow_(2, node.saved("other")) if need_self else None,
            g * node.saved("out") * 0.6931471805599453 if need_other else None)


def ldexp(input, other, *, _pos=2):
    """``input * 2**other`` (LdexpBackward0); integer operands give the default float dtype."""
    from ..autograd import grad_mode
    from .composite import record
    _need_tensor(input, "ldexp", 1)
    _need_tensor(other, "ldexp", _pos, "other")
    with grad_mode.no_grad():
        out = call(OPS["ldexp"], input.detach(), other.detach())
    return record("LdexpBackward0", (input, other), out._data, _ldexp_backward,
                  save=(("other", other),), save_outputs=(("out", 0),))


def nextafter(input, other, *, _pos=2):
    """The next floating-point value after ``input`` towards ``other`` (NextafterBackward0)."""
    _need_tensor(input, "nextafter", 1)
    _need_tensor(other, "nextafter", _pos, "other")
    ct = D.result_type(input, other)
    if not ct.is_floating_point:
        raise _not_implemented(_kernel("nextafter", input), ct)
    if ct is D.float16:
        return _half_nextafter(input, other)
    return call(OPS["nextafter"], input, other)


def _nextafter_backward(node, g):
    """NextafterBackward0 as the declared op's VJP: ``grad`` where the inputs differ, zeros
    for ``other``."""
    from .factories import zeros_like
    from .functional_compare import where
    need_self, need_other = node.ctx.needs_input_grad
    a, b = node.saved("self"), node.saved("other")
    return (where(a == b, 0.0, g) if need_self else None,
            zeros_like(g) if need_other else None)


def _half_nextafter(input, other):
    """float16's nextafter by stepping the bits (kernels compute float16 in float32, whose
    next value would round back to ``input``): one up in magnitude when moving away from
    zero, one down otherwise; from zero the smallest subnormal with ``other``'s sign; equal
    inputs give ``other`` and a NaN gives NaN, as C's nextafter."""
    from ..autograd import grad_mode
    from .composite import record
    from .functional_compare import isnan, where
    from .shape_views import broadcast_tensors
    with grad_mode.no_grad():
        a, b = broadcast_tensors(input.detach().to(D.float16), other.detach().to(D.float16))
        step = where((b > a) == (a > 0), 1, -1).to(D.int16)
        out = (a.view(D.int16) + step).view(D.float16)
        out = where(a == 0, where(b > 0, 2.0 ** -24, -(2.0 ** -24)).to(D.float16), out)
        out = where(a == b, b, out)
        out = where(isnan(a) | isnan(b), a + b, out)
    return record("NextafterBackward0", (input, other), out._data, _nextafter_backward,
                  save=(("self", input), ("other", other)))


def _scalar_word(v):
    """A double as C++'s ostream prints it (``-1``, ``-0.5``)."""
    return f"{float(v):g}"


def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm``
    (factor ``maxnorm / (norm + 1e-7)``), as ATen's renorm: one RenormBackward0 node over the
    composition (vector_norm over the other dims, where, mul)."""
    from .composite import record_composition
    from .reduce_args import _wrap
    _need_tensor(input, "renorm", 1)
    if not float(p) > 0.0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not float(maxnorm) >= 0.0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got "
                           f"{_scalar_word(maxnorm)}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    d = _wrap(dim, input.ndim)
    dims = [i for i in range(input.ndim) if i != d]

    def build(x):
        from .. import linalg
        from .functional import where
        norm = linalg.vector_norm(x, p, dims, keepdim=True)
        factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
        return x * factor.to(x.dtype)
    return record_composition("RenormBackward0", (input,), build)


def isposinf(input):
    """``input == +inf`` (all False for integer and bool tensors)."""
    return _isinf(input, "isposinf", float("inf"))


def isneginf(input):
    """``input == -inf`` (all False for integer and bool tensors)."""
    return _isinf(input, "isneginf", float("-inf"))


def _isinf(input, name, v):
    from ..autograd import grad_mode
    from .basic import zeros
    _need_tensor(input, name, 1)
    if not input.dtype.is_floating_point:
        return zeros(tuple(input.shape), dtype=D.bool_, device=input.device)
    with grad_mode.no_grad():
        return input.detach() == v


def isreal(input):
    """All True: jitgrad's dtypes are real."""
    from .basic import ones
    _need_tensor(input, "isreal", 1)
    return ones(tuple(input.shape), dtype=D.bool_, device=input.device)


def is_nonzero(input):
    """The one element of ``input`` is not zero (NaN counts as nonzero), PyTorch's errors for
    other sizes."""
    _need_tensor(input, "is_nonzero", 1)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_complex(input):
    _need_tensor(input, "is_complex", 1)
    return input.is_complex()


def resolve_conj(input):
    """``input`` itself (no tensor of jitgrad has the conjugate bit)."""
    _need_tensor(input, "resolve_conj", 1)
    return input


def resolve_neg(input):
    """``input`` itself (no tensor of jitgrad has the negative bit)."""
    _need_tensor(input, "resolve_neg", 1)
    return input


def is_conj(input):
    """False: jitgrad has no conjugate bit."""
    _need_tensor(input, "is_conj", 1)
    return False


def is_neg(input):
    """False: jitgrad has no negative bit."""
    _need_tensor(input, "is_neg", 1)
    return False


def _method(fn):
    """The Tensor method: the other tensor is argument 1 in its TypeError."""
    def m(self, other, *args, **kwargs):
        return fn(self, other, *args, _pos=1, **kwargs)
    m.__name__ = m.__qualname__ = fn.__name__
    return m


def _methods():
    from . import index_masked, view_scatter
    out = {name: _method(globals()[name]) for name in ("gcd", "lcm", "ldexp", "nextafter")}
    out.update({name: globals()[name] for name in (
        "renorm", "isposinf", "isneginf", "isreal", "is_nonzero", "resolve_conj",
        "resolve_neg", "is_conj", "is_neg")})
    out["masked_scatter"] = index_masked.masked_scatter_method
    out["masked_scatter_"] = index_masked.masked_scatter_
    for name in view_scatter.__all__:
        out[name] = view_scatter.method(getattr(view_scatter, name))
    return out
