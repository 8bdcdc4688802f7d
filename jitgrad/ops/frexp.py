"""torch.frexp: ``input = mantissa * 2**exponent`` with |mantissa| in [0.5, 1) (0, inf and NaN
keep themselves as the mantissa, exponent 0), exponent int32; FrexpBackward0 gives the
mantissa ``grad / 2**exponent`` (derivatives.yaml), the exponent no gradient.

CPU tensors use NumPy's frexp (C's frexp, as ATen's kernel). Other devices compose it from
tensor ops: a first guess ``floor(log2|x|) + 1`` scaled away in two exact power-of-two halves
(so subnormals and 2^127 neither overflow nor underflow), then one correction step for a guess
that log2's rounding put one off."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .parser_errors import parser_type_name
from .return_types import _return_type

__all__ = ["frexp"]

FrexpResult = _return_type("frexp", ("mantissa", "exponent"))
FrexpOutResult = _return_type("frexp_out", ("mantissa", "exponent"))


def _frexp_backward(node, g, _g_exponent=None):
    """derivatives.yaml: ``grad / exponent.exp2()``."""
    return (g / node.ctx.attrs["exponent"].exp2(),)


def _pow2(k, dtype):
    """``2**k`` for an integral-valued float tensor ``k`` within the normal range, built from its
    exponent bits: exact on any device (libdevice's ``exp2`` is not exact for every integer
    argument; on an H200 it put frexp's mantissa one ulp off in a third of the elements)."""
    if dtype == D.float64:
        return ((k.to(D.int64) + 1023) << 52).view(D.float64)
    return ((k.to(D.int32) + 127) << 23).view(D.float32).to(dtype)


def _composed(x):
    """(mantissa, int32 exponent) of ``x`` from tensor ops (any device)."""
    from .functional import where
    a = x.abs()
    special = (a == 0) | ~a.isfinite()
    safe = where(special, 1.0, a)
    e = safe.log2().floor() + 1
    h = (e * -0.5).floor()
    m = x * _pow2(h, x.dtype) * _pow2(-e - h, x.dtype)
    big = m.abs() >= 1
    m, e = where(big, m * 0.5, m), where(big, e + 1, e)
    small = m.abs() < 0.5
    m, e = where(small, m * 2, m), where(small, e - 1, e)
    return where(special, x, m), where(special, 0.0, e).to(D.int32)


def _frexp_arrays(x):
    if x._data.__class__ is np.ndarray:
        m, e = np.frexp(x._data)
        return Tensor._make(np.asarray(m)), Tensor._make(np.asarray(e, dtype=np.int32))
    return _composed(x)


def frexp(input, *, out=None):
    """``torch.frexp``: (mantissa, exponent) as ``torch.return_types.frexp``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frexp(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if out is not None:
        return _frexp_out(input, out)
    with grad_mode.no_grad():
        m, e = _frexp_arrays(input.detach())
    mant = record("FrexpBackward0", (input,), m._data, _frexp_backward,
                  attrs={"exponent": e})
    return FrexpResult(mant, e)


def _frexp_out(input, out):
    from .out import write_out
    if not isinstance(out, (tuple, list)) or len(out) != 2 or \
            not all(isinstance(t, Tensor) for t in out):
        raise TypeError("frexp(): argument 'out' must be tuple of Tensors, not "
                        f"{parser_type_name(out)}")
    mo, eo = out
    if mo.dtype is not input.dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype "
                           f"{D.c_name(input.dtype)} but got {D.c_name(mo.dtype)}")
    if eo.dtype is not D.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                           f"{D.c_name(eo.dtype)}")
    with grad_mode.no_grad():
        m, e = _frexp_arrays(input.detach())
    return FrexpOutResult(write_out("frexp", m, mo, (input,)),
                          write_out("frexp", e, eo, (input,)))
