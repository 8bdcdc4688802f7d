"""The layer classes of ``jitgrad.nn``."""
from .activation import (
                         CELU,
                         ELU,
                         GELU,
                         GLU,
                         SELU,
                         Hardshrink,
                         Hardsigmoid,
                         Hardswish,
                         Hardtanh,
                         LeakyReLU,
                         LogSigmoid,
                         LogSoftmax,
                         Mish,
                         PReLU,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softmin,
                         Softplus,
                         Softshrink,
                         Softsign,
                         Tanh,
                         Tanhshrink,
                         Threshold,
)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import (
                         Conv1d,
                         Conv2d,
                         Conv3d,
                         ConvTranspose1d,
                         ConvTranspose2d,
                         ConvTranspose3d,
                         Fold,
                         Unfold,
)
from .distance import CosineSimilarity, PairwiseDistance
from .linear import Bilinear, Identity, Linear
from .loss import (
                         BCELoss,
                         BCEWithLogitsLoss,
                         CosineEmbeddingLoss,
                         CrossEntropyLoss,
                         GaussianNLLLoss,
                         HingeEmbeddingLoss,
                         KLDivLoss,
                         L1Loss,
                         MarginRankingLoss,
                         MSELoss,
                         MultiLabelSoftMarginLoss,
                         NLLLoss,
                         PoissonNLLLoss,
                         SoftMarginLoss,
                         TripletMarginLoss,
)
from .misc import Dropout, Embedding, Flatten, LayerNorm, Unflatten
from .module import Module

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "ReLU", "ReLU6", "GELU", "SiLU", "ELU", "Tanh", "Sigmoid",
    "Softmax", "Softmin", "LogSoftmax", "LeakyReLU", "Softplus", "Hardtanh", "LogSigmoid",
    "Dropout", "Flatten", "Unflatten", "Embedding", "LayerNorm", "L1Loss", "MSELoss",
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "Softsign", "Tanhshrink",
    "Hardswish", "Hardsigmoid", "Mish", "SELU", "CELU", "GLU", "Threshold", "Softshrink",
    "Hardshrink", "PReLU", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
    "TripletMarginLoss", "CosineSimilarity", "PairwiseDistance",
]

# normalization, channel dropout, attention
from . import batchnorm as _batchnorm  # noqa: E402
from . import dropout as _dropout  # noqa: E402
from . import normalization as _normalization  # noqa: E402
from . import transformer as _transformer  # noqa: E402
from . import transformer_decoder as _transformer_decoder  # noqa: E402
from .batchnorm import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403
from .transformer_decoder import *  # noqa: E402,F401,F403

__all__ += _batchnorm.__all__ + _dropout.__all__ + _normalization.__all__ + _transformer.__all__
__all__ += _transformer_decoder.__all__

# recurrent layers
from . import rnn as _rnn  # noqa: E402
from . import rnn_cell as _rnn_cell  # noqa: E402
from .rnn import *  # noqa: E402,F401,F403
from .rnn_cell import *  # noqa: E402,F401,F403

__all__ += _rnn.__all__ + _rnn_cell.__all__

# pooling and resampling layers
from . import pooling as _pooling  # noqa: E402
from . import upsampling as _upsampling  # noqa: E402
from .pooling import *  # noqa: E402,F401,F403
from .upsampling import *  # noqa: E402,F401,F403

__all__ += _pooling.__all__ + _upsampling.__all__

__all__ += ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
            "ConvTranspose3d", "Fold", "Unfold"]

# more losses, padding, activations
from . import activation_more as _activation_more  # noqa: E402
from . import loss_more as _loss_more  # noqa: E402
from . import padding as _padding  # noqa: E402
from .activation_more import *  # noqa: E402,F401,F403
from .loss_more import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403

__all__ += _activation_more.__all__ + _loss_more.__all__ + _padding.__all__

from . import embedding_bag as _embedding_bag  # noqa: E402
from .embedding_bag import *  # noqa: E402,F401,F403

__all__ += _embedding_bag.__all__

from . import loss_ctc as _loss_ctc  # noqa: E402
from .loss_ctc import *  # noqa: E402,F401,F403

__all__ += _loss_ctc.__all__

from . import adaptive as _adaptive  # noqa: E402
from .adaptive import *  # noqa: E402,F401,F403

__all__ += _adaptive.__all__

from . import lazy as _lazy  # noqa: E402
from .lazy import *  # noqa: E402,F401,F403

__all__ += [n for n in _lazy.__all__ if n != "LazyModuleMixin"]
