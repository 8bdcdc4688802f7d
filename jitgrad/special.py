"""``torch.special``: PyTorch 2.13's names bound to jitgrad's functions.

Most are aliases of functions jitgrad already has (``gammaln`` is ``lgamma``, ``expit`` is
``sigmoid``, ``psi`` is ``digamma``, ...): the same function runs, under a wrapper that only
renames a TypeError about the arguments the way PyTorch's ``special_<name>()`` parser words it.
The gamma/Bessel/normal functions live in ``ops/special_functions.py`` (declarations in
``ops/elementwise_gamma.py``); the Airy, Bessel J/Y, ``modified_bessel_i1/k0/k1`` (with the
scaled K) and the orthogonal polynomials in ``ops/special_bessel.py`` (declarations in
``ops/elementwise_bessel.py``, ATen's kernels ported in ``ops/special_bessel_scalar.py`` and
``ops/special_polynomial_scalar.py``).
"""
from __future__ import annotations

import functools
import inspect

import jitgrad as _jg

from .ops import out as _out
from .ops import special_args as _sa
from .ops import special_bessel as _sb
from .ops import special_functions as _sf
from .tensor import Tensor

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfinv",
           "expit", "logit", "exp2", "expm1", "log1p", "xlogy", "xlog1py", "sinc", "round",
           "entr", "ndtr", "ndtri", "i0", "i0e", "i1", "i1e", "logsumexp", "softmax",
           "log_softmax", "zeta", "erfcx", "log_ndtr", "gammainc", "gammaincc",
           "modified_bessel_i0", "spherical_bessel_j0", *_sb.UNARY, *_sb.POLYNOMIALS]

# the signatures PyTorch's parser binds (native_functions.yaml's special_* entries)
_UNARY = ("Tensor input, *, Tensor out=None",)
_TWO_OPERANDS = ("Tensor input, Tensor other, *, Tensor out=None",
                 "Scalar self, Tensor other, *, Tensor out=None",
                 "Tensor input, Scalar other, *, Tensor out=None")
_UNARY_X = ("Tensor x, *, Tensor out=None",)  # the yaml's parameter is x, not self
_POLYNOMIAL = ("Tensor x, Tensor n, *, Tensor out=None",
               "Scalar x, Tensor n, *, Tensor out=None",
               "Tensor x, Scalar n, *, Tensor out=None")


def _named(fn, name, signatures=_UNARY):
    """``fn`` under ``special_<name>``'s argument parser (``ops/special_args``: PyTorch's
    keyword names and aliases, its TypeErrors); a TypeError ``fn`` itself raises about its
    arguments is renamed to ``special_<name>`` as PyTorch's are."""
    public = "special_" + name
    sigs = [_sa.Signature(public, text) for text in signatures]
    params = inspect.signature(fn, follow_wrapped=False).parameters
    if "out" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        fn = _out.with_out(public)(fn)  # PyTorch's out= rules around the out-less function

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        i, bound = _sa.parse(public, sigs, args, kwargs)
        pos, kw = [], {}
        for p in sigs[i].params:
            v = bound[p.name]
            if not p.keyword_only:
                pos.append(v)
            elif v is not None or p.default is not None:  # unset out=/dtype=: fn's default
                kw[p.name] = v
        try:
            return fn(*pos, **kw)
        except TypeError as e:
            msg = str(e)
            head, sep, rest = msg.partition("(): ")
            if sep and " " not in head:
                raise TypeError(public + sep + rest) from None
            raise
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


gammaln = _named(_jg.lgamma, "gammaln")
digamma = _named(_jg.digamma, "digamma")
psi = _named(_jg.digamma, "psi")
polygamma = _named(_jg.polygamma, "polygamma", ("int n, Tensor input, *, Tensor out=None",))
multigammaln = _named(_jg.mvlgamma, "multigammaln", ("Tensor input, int p, *, Tensor out=None",))
erf = _named(_jg.erf, "erf")
erfc = _named(_jg.erfc, "erfc")
erfinv = _named(_jg.erfinv, "erfinv")
expit = _named(_jg.sigmoid, "expit")
logit = _named(_jg.logit, "logit", ("Tensor input, float? eps=None, *, Tensor out=None",))
exp2 = _named(_jg.exp2, "exp2")
expm1 = _named(_jg.expm1, "expm1")
log1p = _named(_jg.log1p, "log1p")
xlogy = _named(_jg.xlogy, "xlogy", _TWO_OPERANDS)
xlog1py = _named(_sf.special_xlog1py, "xlog1py", _TWO_OPERANDS)
sinc = _named(_jg.sinc, "sinc")


def _round(input, *, decimals=0):
    """ATen's special_round is ``round(input, decimals=decimals)``: its node is RoundBackward1
    even for ``decimals=0``, and integer inputs have no kernel."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and decimals == 0:
        from .ops.functional_args import _not_implemented
        raise _not_implemented("round_vml_cpu", input.dtype)
    if isinstance(input, Tensor) and input.requires_grad:
        from .ops.composite import record_composition
        return record_composition("RoundBackward1", (input,),
                                  lambda t: _jg.round(t, decimals=decimals))
    return _jg.round(input, decimals=decimals)


round = _named(_round, "round", ("Tensor input, *, int decimals=0, Tensor out=None",))  # noqa: A001 - PyTorch's name
entr = _named(_sf.special_entr, "entr")
ndtr = _named(_sf.special_ndtr, "ndtr")
ndtri = _named(_sf.special_ndtri, "ndtri")
i0 = _named(_jg.i0, "i0")
i0e = _named(_sf.special_i0e, "i0e")
i1 = _named(_sf.special_i1, "i1")
i1e = _named(_sf.special_i1e, "i1e")
logsumexp = _named(_jg.logsumexp, "logsumexp",
                   ("Tensor input, int[1] dim, bool keepdim=False, *, Tensor out=None",))
softmax = _named(_jg.softmax, "softmax", ("Tensor input, int dim, ScalarType? dtype=None",))
log_softmax = _named(_jg.log_softmax, "log_softmax",
                     ("Tensor input, int dim, *, ScalarType? dtype=None",))
zeta = _named(_sf.special_zeta, "zeta", _TWO_OPERANDS)
erfcx = _named(_sf.special_erfcx, "erfcx")
log_ndtr = _named(_sf.special_log_ndtr, "log_ndtr")
# out= errors name igamma / igammac, as PyTorch's (its special_gammainc calls igamma)
gammainc = _named(_jg.igamma, "gammainc", ("Tensor input, Tensor other, *, Tensor out=None",))
gammaincc = _named(_jg.igammac, "gammaincc", ("Tensor input, Tensor other, *, Tensor out=None",))
# no derivative in PyTorch: results never require grad. modified_bessel_i0's kernel gives i0's
# values bit for bit; spherical_bessel_j0 is ATen's series / sin(x) / x (sin: jitgrad.math's)
modified_bessel_i0 = _named(_sf.special_modified_bessel_i0, "modified_bessel_i0")
spherical_bessel_j0 = _named(_sf.special_spherical_bessel_j0, "spherical_bessel_j0", _UNARY_X)

_X_NAMED = ("airy_ai", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1")
# ATen's Airy/Bessel kernels and orthogonal polynomials: no derivative in PyTorch either
for _name in _sb.UNARY:
    globals()[_name] = _named(getattr(_sb, "special_" + _name), _name,
                              _UNARY_X if _name in _X_NAMED else _UNARY)
for _name in _sb.POLYNOMIALS:
    globals()[_name] = _named(getattr(_sb, "special_" + _name), _name, _POLYNOMIAL)
del _name
