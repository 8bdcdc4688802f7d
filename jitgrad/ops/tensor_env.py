"""The scalar vocabulary bound to Tensor operations.

Evaluating a registry VJP here records a graph, which is how ``create_graph=True`` (higher-order
gradients) works for every elementwise op without a second declaration.
"""
from __future__ import annotations

import numpy as np

from . import scalar_stubs

_compiled = {}


def _lift(tensor_fn, scalar_fn):
    """A vocabulary function that also takes the Python scalars a VJP may pass (e.g. a base)."""
    from ..tensor import Tensor

    def fn(a):
        return tensor_fn(a) if isinstance(a, Tensor) else scalar_fn(a)
    return fn


def _lift2(tensor_fn, scalar_fn):
    from ..tensor import Tensor

    def fn(a, b):
        return tensor_fn(a, b) if isinstance(a, Tensor) or isinstance(b, Tensor) \
            else scalar_fn(a, b)
    return fn


def _np_scalar(npfn):
    """A NumPy ufunc on Python scalars, returning a Python float (no warnings)."""
    def fn(*args):
        with np.errstate(all="ignore"):
            return float(npfn(*args))
    return fn


def _namespace():
    import math

    from ..backends.special_targets import python as _special_scalars
    from . import functional as F
    from . import numeric as M
    from . import special as S
    from . import special_functions as SF
    from .copies import where_any
    P = _special_scalars()
    return {
        "lit": scalar_stubs.lit,
        "select": where_any,
        "isnan": _lift(F.isnan, math.isnan),
        "exp": _lift(F.exp, math.exp), "expm1": _lift(F.expm1, math.expm1),
        "log": _lift(F.log, math.log), "log1p": _lift(F.log1p, math.log1p),
        "sqrt": _lift(F.sqrt, math.sqrt), "sin": _lift(F.sin, math.sin),
        "cos": _lift(F.cos, math.cos), "tan": _lift(F.tan, math.tan),
        "tanh": _lift(F.tanh, math.tanh),
        "sigmoid": _lift(F.sigmoid, lambda a: 1.0 / (1.0 + math.exp(-a))),
        "erf": _lift(F.erf, math.erf), "abs": abs, "pow_": lambda a, b: a ** b,
        "softplus": _lift(F.softplus, lambda a: math.log1p(math.exp(a))),
        # Python-scalar fallbacks through NumPy: NaN/inf in, NaN/inf out (math.floor raises)
        "floor": _lift(F.floor, _np_scalar(np.floor)),
        "ceil": _lift(F.ceil, _np_scalar(np.ceil)),
        "trunc": _lift(F.trunc, _np_scalar(np.trunc)),
        "rint": _lift(F.round, _np_scalar(np.rint)),  # half to even
        "fmod": _lift2(F.fmod, _np_scalar(np.fmod)),
        "asin": _lift(F.asin, _np_scalar(np.arcsin)),
        "acos": _lift(F.acos, _np_scalar(np.arccos)),
        "atan": _lift(F.atan, _np_scalar(np.arctan)),
        "asinh": _lift(S.asinh, _np_scalar(np.arcsinh)),
        "acosh": _lift(S.acosh, _np_scalar(np.arccosh)),
        "atanh": _lift(S.atanh, _np_scalar(np.arctanh)),
        "atan2": _lift2(S.atan2, _np_scalar(np.arctan2)),
        "erfc": _lift(S.erfc, math.erfc),
        "fma": lambda a, b, c: a * b + c,  # on Tensors: the same value up to its rounding
        # gamma/Bessel/ndtri: the user functions on Tensors, special_scalar's on scalars
        "lgamma": _lift(SF.lgamma, P["lgamma"]), "digamma": _lift(SF.digamma, P["digamma"]),
        "polygamma": _lift2(lambda n, a: SF.polygamma(int(n), a), P["polygamma"]),
        "zeta": _lift2(SF.special_zeta, P["zeta"]), "i0": _lift(SF.i0, P["i0"]),
        "i0e": _lift(SF.special_i0e, P["i0e"]), "i1": _lift(SF.special_i1, P["i1"]),
        "i1e": _lift(SF.special_i1e, P["i1e"]), "ndtri": _lift(SF.special_ndtri, P["ndtri"]),
        "erfcx": _lift(SF.special_erfcx, P["erfcx"]),
        "log_ndtr": _lift(SF.special_log_ndtr, P["log_ndtr"]),
        "igamma": _lift2(SF.igamma, P["igamma"]), "igammac": _lift2(SF.igammac, P["igammac"]),
        # torch.special's Airy/Bessel functions and polynomials (no derivatives: bound for
        # completeness)
        **_bessel_namespace(P),
        # integer-only and never differentiated: bound for completeness (Python ints)
        "lshift": _lift2(S.bitwise_left_shift,
                         lambda a, b: (a << b) if 0 <= b < 64 else 0),
        "rshift": _lift2(S.bitwise_right_shift,
                         lambda a, b: a >> (b if 0 <= b < 64 else 63)),
        "gcd": _lift2(M.gcd, math.gcd),
        "nextafter": _lift2(M.nextafter, math.nextafter),
    }


def _bessel_namespace(P):
    from ..backends.special_targets import EXTRA_NAMES
    from . import special_bessel as B
    ops = {"chebyshev_t": "chebyshev_polynomial_t", "chebyshev_u": "chebyshev_polynomial_u",
           "chebyshev_v": "chebyshev_polynomial_v", "chebyshev_w": "chebyshev_polynomial_w",
           "hermite_h": "hermite_polynomial_h", "hermite_he": "hermite_polynomial_he",
           "laguerre_l": "laguerre_polynomial_l", "legendre_p": "legendre_polynomial_p"}
    ops.update({"shifted_" + k: "shifted_" + v for k, v in list(ops.items())[:4]})
    out = {}
    for name in EXTRA_NAMES:
        if name in ops:
            out[name] = _lift2(getattr(B, "special_" + ops[name]), P[name])
        else:
            out[name] = _lift(getattr(B, "special_" + name), P[name])
    return out


def evaluate(fn, env: dict):
    """Run scalar function ``fn`` (a registry ScalarFn) with Tensor/scalar arguments."""
    py = _compiled.get(fn.symbol)
    if py is None:
        ns = _namespace()
        exec(compile(fn.renamed_source(), f"<jitgrad tensor_env {fn.symbol}>", "exec"), ns)
        py = _compiled[fn.symbol] = ns[fn.symbol]
    return py(*(env[p] for p in fn.params))
