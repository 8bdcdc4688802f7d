"""``jitgrad.compile(module)``: PyTorch's ``OptimizedModule`` (the module kept as
``_orig_mod``, its parameters shared, ``forward`` compiled)."""
from __future__ import annotations

from ..nn.modules.module import Module


class OptimizedModule(Module):
    def __init__(self, mod, compiled_forward):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_forward", compiled_forward)

    def forward(self, *args, **kwargs):
        return self._compiled_forward(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)
