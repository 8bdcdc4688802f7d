"""``jitgrad.optim.lr_scheduler``: PyTorch's learning-rate schedulers, by name. The classes
live by kind in ``_lr_scheduler_base`` (``LRScheduler`` and shared helpers),
``_lr_schedulers_decay`` (fixed curves of the step count), ``_lr_schedulers_cyclic``
(``CyclicLR``, ``OneCycleLR``, which also cycle momentum), ``_lr_schedulers_plateau``
(``ReduceLROnPlateau``) and ``_lr_schedulers_compose`` (``SequentialLR``,
``ChainedScheduler``)."""
from __future__ import annotations

# EPOCH_DEPRECATION_WARNING and _LRScheduler (the pre-2.0 name) are importable here as in PyTorch
from ._lr_scheduler_base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler  # noqa: F401
from ._lr_schedulers_compose import ChainedScheduler, SequentialLR
from ._lr_schedulers_cyclic import CyclicLR, OneCycleLR
from ._lr_schedulers_decay import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from ._lr_schedulers_plateau import ReduceLROnPlateau

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "LRScheduler"]

# the classes report the public module, as PyTorch's do (repr, pickling by reference)
for _name in [*__all__, "_LRScheduler"]:
    globals()[_name].__module__ = __name__
del _name
