"""Random number generation matching PyTorch's CPU generator (``jitgrad._random``).

``manual_seed(s)`` followed by ``rand``/``randn``/``randint``/``randperm`` gives the numbers
PyTorch gives for the same seed and calls.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator"]


class Generator:
    """``jitgrad.Generator()``: an independent stream (``generator=`` on random factories)."""

    def __init__(self, device="cpu"):
        from ._random import Generator as Impl
        self._impl = Impl()

    def manual_seed(self, seed):
        self._impl.manual_seed(int(seed))
        return self

    def seed(self):
        return self._impl.seed()

    def initial_seed(self):
        return self._impl.initial_seed()

    def get_state(self):
        from .ops.basic import tensor
        return tensor(np.asarray(self._impl.get_state()))

    def set_state(self, state):
        self._impl.set_state(np.asarray(state._data if hasattr(state, "_data") else state))
        return self


_default = None


def default_generator():
    """The process-wide generator implementation (created on first use)."""
    global _default
    if _default is None:
        from ._random import default_generator as impl
        _default = impl
    return _default


def manual_seed(seed):
    default_generator().manual_seed(int(seed))
    from . import _cuda_random  # like torch.manual_seed: seeds the CUDA generator too
    _cuda_random.manual_seed(int(seed))
    g = Generator.__new__(Generator)
    g._impl = default_generator()
    return g


def seed():
    s = default_generator().seed()
    from . import _cuda_random
    _cuda_random.manual_seed(s)
    return s


def initial_seed():
    return default_generator().initial_seed()


def get_rng_state():
    from .ops.basic import tensor
    return tensor(np.asarray(default_generator().get_state()))


def set_rng_state(state):
    default_generator().set_state(np.asarray(state._data if hasattr(state, "_data") else state))
