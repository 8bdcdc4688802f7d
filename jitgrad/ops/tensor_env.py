"""The scalar vocabulary bound to Tensor operations.

Evaluating a registry VJP here records a graph, which is how ``create_graph=True`` (higher-order
gradients) works for every elementwise op without a second declaration.
"""
from __future__ import annotations

from . import scalar_stubs

_compiled = {}


def _namespace():
    from . import functional as F
    from .basic import where_any
    return {
        "lit": scalar_stubs.lit,
        "select": where_any,
        "isnan": F.isnan,
        "exp": F.exp, "expm1": F.expm1, "log": F.log, "log1p": F.log1p, "sqrt": F.sqrt,
        "sin": F.sin, "cos": F.cos, "tan": F.tan, "tanh": F.tanh, "sigmoid": F.sigmoid,
        "erf": F.erf, "abs": abs, "pow_": lambda a, b: a ** b,
        "softplus": lambda a: F.softplus(a),
    }


def evaluate(fn, env: dict):
    """Run scalar function ``fn`` (a registry ScalarFn) with Tensor/scalar arguments."""
    py = _compiled.get(fn.symbol)
    if py is None:
        ns = _namespace()
        exec(compile(fn.renamed_source(), f"<jitgrad tensor_env {fn.symbol}>", "exec"), ns)
        py = _compiled[fn.symbol] = ns[fn.symbol]
    return py(*(env[p] for p in fn.params))
