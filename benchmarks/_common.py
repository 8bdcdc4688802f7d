"""Shared helpers for jitgrad's asv benchmarks: implementation switch and seeded inputs."""
from __future__ import annotations

import numpy as np

IMPLS = ["jitgrad", "torch", "numpy"]


def torch_or_skip():
    """PyTorch, or NotImplementedError (asv skips a benchmark whose setup raises it)."""
    try:
        import torch
    except ImportError:
        raise NotImplementedError("torch is not installed") from None
    return torch


def lib_for(impl):
    if impl == "torch":
        return torch_or_skip()
    if impl == "jitgrad":
        import jitgrad
        return jitgrad
    return None


def arrays(*shapes, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]
