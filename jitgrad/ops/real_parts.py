"""The complex accessors on real tensors (jitgrad has no complex dtypes): PyTorch returns the
tensor itself for ``real``/``conj``/``conj_physical`` of a real tensor (the same object, no
node), refuses ``imag``, and ``x.real = v`` copies ``v`` into ``x``."""
from __future__ import annotations

from ..tensor import Tensor
from .parser_errors import parser_type_name


def _need_tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(x)}")


def real(input):
    _need_tensor(input, "real")
    return input


def imag(input):
    _need_tensor(input, "imag")
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input):
    _need_tensor(input, "conj")
    return input


def conj_physical(input):
    _need_tensor(input, "conj_physical")
    return input


def _set_real(self, value):
    self.copy_(value)


def install():
    """Bind the methods and the ``real``/``imag`` properties on Tensor."""
    Tensor.real = property(real, _set_real)
    Tensor.imag = property(imag)
    Tensor.conj = conj
    Tensor.conj_physical = conj_physical
