"""The layer classes of ``jitgrad.nn``."""
from .activation import (
                         ELU,
                         GELU,
                         Hardtanh,
                         LeakyReLU,
                         LogSigmoid,
                         LogSoftmax,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softmin,
                         Softplus,
                         Tanh,
)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .misc import Dropout, Embedding, Flatten, LayerNorm, Unflatten
from .module import Module

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "ReLU", "ReLU6", "GELU", "SiLU", "ELU", "Tanh", "Sigmoid",
    "Softmax", "Softmin", "LogSoftmax", "LeakyReLU", "Softplus", "Hardtanh", "LogSigmoid",
    "Dropout", "Flatten", "Unflatten", "Embedding", "LayerNorm", "L1Loss", "MSELoss",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
]
