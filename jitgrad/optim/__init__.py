"""``jitgrad.optim``: SGD, Adam, AdamW and learning-rate schedulers with PyTorch's names and
semantics; each optimizer updates a parameter with one fused Numba kernel."""
from . import lr_scheduler  # noqa: F401
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
