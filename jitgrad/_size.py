"""torch.Size and torch.device look-alikes (they print the way PyTorch prints them)."""
from __future__ import annotations

import re


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"torch.Size([{', '.join(str(int(s)) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= int(s)
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):  # (4,) + Size([2, 3]) is a Size too
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


# c10's device-string grammar: a type name, then optionally ':' and an index without leading 0s
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?")
_TORCH_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, "
                       "xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone")


def _parse_device(s, index):
    """``(type, index)`` of a device string, with c10's errors (only cpu and cuda exist here)."""
    if s == "cpu" or s == "cuda":  # (the common strings, without the regex)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        return s, index
    if not s:
        raise RuntimeError("Device string must not be empty")
    m = _DEVICE_STRING.fullmatch(s)
    if m is None:
        raise RuntimeError(f"Invalid device string: '{s}'")
    if m.group(1) not in ("cpu", "cuda"):
        raise RuntimeError(f"Expected one of {_TORCH_DEVICE_TYPES} device type at start of "
                           f"device string: {m.group(1)}")
    if m.group(2) is not None:
        index = int(m.group(2))
    elif index is not None and index < 0:
        raise RuntimeError("Device index must not be negative")
    return m.group(1), index


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's parameter name
        if isinstance(type, device):
            type, index = type.type, type.index
        type, index = _parse_device(str(type), index)
        self.type = type
        self.index = index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")
CUDA = device("cuda", 0)

#: ``jitgrad.set_default_device``: where factories without ``device=`` allocate.
_default = [CPU]


def set_default_device(dev) -> None:
    _default[0] = CPU if dev is None else check_device(dev, explicit=True)


def get_default_device() -> device:
    return _default[0]


def check_device(dev, explicit=False) -> device:
    """The device a factory/conversion allocates on: None -> the default device; 'cpu';
    'cuda'/'cuda:0' (the only CUDA device index jitgrad drives). CUDA needs numba-cuda and a GPU
    (or the simulator): otherwise PyTorch-like RuntimeErrors."""
    if dev is None:
        return _default[0]
    if dev is CPU:
        return CPU
    if isinstance(dev, int) and not isinstance(dev, bool):
        dev = device("cuda", dev)
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return CPU
    from .backends import cuda as B
    if not B.installed():
        raise RuntimeError(
            f"jitgrad cannot use device '{d}': numba-cuda is not installed "
            "(pip install 'jitgrad[cuda]'); jitgrad.cuda.is_available() is False.")
    if not B.is_available():
        raise RuntimeError(
            "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
            "and installed a driver (or set NUMBA_ENABLE_CUDASIM=1 before importing jitgrad to "
            "use the CUDA simulator).")
    if d.index not in (None, 0):
        raise RuntimeError(f"CUDA error: invalid device ordinal (jitgrad drives cuda:0 only, "
                           f"got '{d}')")
    return CUDA
