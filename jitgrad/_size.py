"""torch.Size and torch.device look-alikes (they print the way PyTorch prints them)."""
from __future__ import annotations


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
        return Size(tuple.__add__(self, tuple(other)))


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's parameter name
        if isinstance(type, device):
            type, index = type.type, type.index
        type = str(type)
        if ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
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


def check_device(dev) -> device:
    """Accept None/'cpu'/device('cpu'); CUDA arrives with the CUDA backend."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise RuntimeError(
            f"jitgrad has no '{d}' backend in this build: only device='cpu' is available "
            "(jitgrad.cuda.is_available() is False).")
    return CPU
