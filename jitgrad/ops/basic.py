"""Factories, casts and clone as one namespace: the names ``jitgrad/__init__``, ``ops/methods``
and the rest of the package import from here.

They live by topic: ``from_data`` (torch.tensor / as_tensor / from_numpy: tensors from Python
data), ``factories`` (zeros/ones/empty/full/eye/arange/linspace/... and the *_like forms),
``random_factories`` (rand/randn/randint/randperm), ``copies`` (cast, clone, to_device, and the
engine's accumulate_) over ``factory_args`` (the size/dtype rules and allocation they share).
"""
from __future__ import annotations

from .copies import accumulate_, cast, clone, to_device, where_any  # noqa: F401 - to_device
from .factories import (
    arange,
    empty,
    empty_like,
    empty_strided,
    eye,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .factory_args import check_storage  # noqa: F401 - importable from here, as before
from .from_data import as_tensor, from_numpy, is_tensor, numel, scalar_tensor, tensor
from .random_factories import (
    manual_seed,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
)

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye", "arange",
    "linspace", "logspace", "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn",
    "randint", "rand_like", "randn_like", "randint_like", "randperm", "manual_seed", "cast",
    "empty_strided",
    "clone", "accumulate_", "where_any", "is_tensor", "numel", "scalar_tensor",
]
