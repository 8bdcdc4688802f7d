"""Every elementwise op, declared once: a scalar forward + one scalar VJP per input (see
``registry.py``). Importing this module fills ``registry.OPS``; the declarations live by topic:
``elementwise_arith`` (arithmetic, powers, rounding, remainders, lerp/addcmul/addcdiv),
``elementwise_math`` (exp/log, trigonometric and hyperbolic functions, erf, hypot, xlogy, ...),
``elementwise_activation`` (relu, gelu, softplus, ...), ``elementwise_compare`` (clamp,
maximum/minimum, where, comparisons, logical ops) and ``elementwise_special`` (inverse hyperbolic
functions, atan2, erfc/erfinv, integer shifts), ``elementwise_gamma`` (lgamma, digamma, polygamma,
the Bessel i0/i0e/i1/i1e, ndtri, entr, xlog1py, zeta), ``elementwise_rnn`` (an LSTM or GRU
step's fused gate arithmetic), ``elementwise_bessel`` (torch.special's Airy/Bessel functions and
orthogonal polynomials).

Vocabulary reminders for writing one: write every constant as ``lit(like, value)`` so float32
math stays float32 (a bare literal promotes it to float64 in Numba); write branches as
``select(cond, a, b)``; the names in ``registry.SCALAR_VOCABULARY`` are the only functions
available. NaN propagation follows PyTorch (relu/clamp/maximum propagate NaN). Node names and
derivative formulas are PyTorch's (tools/autograd/derivatives.yaml). A zero gradient that PyTorch
writes with ``where``/``masked_fill``/``zeros_like`` is ``lit(g, 0.0)`` (exactly +0 whatever g
is; a VJP may return it alone); ``g * lit(g, 0.0)`` (-0 for a negative g, NaN for a NaN or
infinite one) only where PyTorch's formula multiplies (abs, nan_to_num, ...):
tests/test_zero_gradient_signs.py checks each against PyTorch.
"""
# the topic modules register on import; each op name is declared once, so their order is free
from . import (  # noqa: F401
    elementwise_activation,
    elementwise_arith,
    elementwise_bessel,
    elementwise_compare,
    elementwise_gamma,
    elementwise_math,
    elementwise_numeric,
    elementwise_rnn,
    elementwise_special,
)
