"""Padding modules (``ConstantPad*``, ``ZeroPad*``, ``ReflectionPad*``, ``ReplicationPad*``,
``CircularPad*``, 1d/2d/3d): PyTorch's classes over ``F.pad``. As in PyTorch, an int padding
is repeated 2/4/6 times and a sequence is kept as given (a wrong length is ``F.pad``'s error);
only the circular modules check the input's dimension themselves."""
from __future__ import annotations

from collections.abc import Iterable

from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _ntuple(padding, n):
    """torch.nn.modules.utils._ntuple: an iterable becomes a tuple as is, else n copies."""
    if isinstance(padding, Iterable):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    __constants__ = ["padding"]
    _sides = 2
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._sides)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


# ----------------------------------------------------------------------------- constant / zero

class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _sides = 2


class ConstantPad2d(_ConstantPadNd):
    _sides = 4


class ConstantPad3d(_ConstantPadNd):
    _sides = 6


class _ZeroPad:
    """A constant pad of 0.0 (repr without the value)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    pass


# ----------------------------------------------------------------------------- reflect / replicate

class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    _sides = 2


class ReflectionPad2d(_ReflectionPadNd):
    _sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    _sides = 6


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    _sides = 2


class ReplicationPad2d(_ReplicationPadNd):
    _sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    _sides = 6


# ----------------------------------------------------------------------------- circular

class _CircularPadNd(_PadNd):
    _mode = "circular"
    _dims = (2, 3)

    def forward(self, input):
        if input.dim() not in self._dims:
            a, b = self._dims
            raise ValueError(f"expected {a}D or {b}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    _sides = 2
    _dims = (2, 3)


class CircularPad2d(_CircularPadNd):
    _sides = 4
    _dims = (3, 4)


class CircularPad3d(_CircularPadNd):
    _sides = 6
    _dims = (4, 5)
