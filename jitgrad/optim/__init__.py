"""``jitgrad.optim``: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop,
ASGD, Adafactor, Muon, LBFGS, SparseAdam (its dense-gradient error only), learning-rate
schedulers and ``swa_utils`` with PyTorch's names and semantics. SGD and Adam/AdamW update a
parameter with one fused Numba kernel; the others run PyTorch's single-tensor update op by op
in jitgrad tensor ops (the same code on CPU and CUDA)."""
from . import lr_scheduler, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam",
           "RAdam", "Adadelta", "Rprop", "ASGD", "LBFGS",
           "Adafactor", "SparseAdam", "Muon",
           "lr_scheduler", "swa_utils"]
