"""``jitgrad.nn.functional``: PyTorch's functional layer API.

Ops whose PyTorch node is a single fused node (``NllLossBackward0``, ``MseLossBackward0``,
``NativeLayerNormBackward0``, ``EmbeddingBackward0``, the BCE nodes) are composite ops: a NumPy
forward plus ``record(...)``. Their backward has two paths: when the engine runs with grad mode
off (a plain ``backward()``) it computes the gradient with NumPy directly; with
``create_graph=True`` it is written with differentiable jitgrad ops, so higher-order gradients
flow through it. Everything else is a composition of core ops recording PyTorch's node names
(``linear`` is ``addmm(bias, x, w.t())`` -> AddmmBackward0, ``dropout`` is ``x * mask`` ->
MulBackward0, ``cross_entropy`` is ``nll_loss(log_softmax(x))``).
"""
from __future__ import annotations

from .activation import (
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    normalize,
    relu,
    relu6,
    relu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    tanh,
)
from .activation_extra import (
    celu,
    celu_,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    mish,
    prelu,
    selu,
    selu_,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)
from .dense import bilinear, linear
from .distance import cosine_similarity, pairwise_distance
from .dropouts import dropout
from .layernorm import layer_norm
from .loss_bce import binary_cross_entropy, binary_cross_entropy_with_logits
from .loss_classification import cross_entropy, nll_loss
from .loss_extra import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    kl_div,
    margin_ranking_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .loss_regression import huber_loss, l1_loss, mse_loss, smooth_l1_loss
from .padding import pad
from .sparse import embedding, one_hot

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "gelu", "silu", "elu", "softmax",
    "log_softmax", "softmin", "dropout", "embedding", "layer_norm", "mse_loss", "l1_loss",
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "one_hot", "tanh", "sigmoid", "leaky_relu", "softplus", "logsigmoid", "normalize",
    "hardtanh", "pad", "smooth_l1_loss", "huber_loss",
    "softsign", "hardswish", "hardsigmoid", "mish", "selu", "celu", "glu", "prelu", "threshold",
    "softshrink", "hardshrink", "tanhshrink", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "cosine_similarity", "pairwise_distance", "selu_", "celu_", "threshold_",
]

from .conv import (  # noqa: E402 - topic modules after the core functions they may use
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .fold import fold, unfold  # noqa: E402

__all__ += ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d", "fold", "unfold"]

# ----------------------------------------------------------------------------- topic modules
from . import attention as _attention  # noqa: E402
from . import normalization as _normalization  # noqa: E402
from .attention import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403

__all__ += _normalization.__all__ + _attention.__all__

from . import channel_dropout as _channel_dropout  # noqa: E402
from .channel_dropout import *  # noqa: E402,F401,F403

__all__ += _channel_dropout.__all__

# ----------------------------------------------------------------------------- pooling, resampling
from . import pooling as _pooling  # noqa: E402
from . import pooling_fractional as _pooling_fractional  # noqa: E402
from . import upsampling as _upsampling  # noqa: E402
from .pooling import *  # noqa: E402,F401,F403
from .pooling_fractional import *  # noqa: E402,F401,F403
from .upsampling import *  # noqa: E402,F401,F403

__all__ += _pooling.__all__ + _pooling_fractional.__all__ + _upsampling.__all__

# ----------------------------------------------------------------------------- spatial transformers
from . import sampling as _sampling  # noqa: E402
from .sampling import *  # noqa: E402,F401,F403

__all__ += _sampling.__all__

# ----------------------------------------------------------------------------- more activations
# and margin losses
from . import activation_more as _activation_more  # noqa: E402
from . import loss_margin as _loss_margin  # noqa: E402
from .activation_more import *  # noqa: E402,F401,F403
from .loss_margin import *  # noqa: E402,F401,F403

__all__ += _activation_more.__all__ + _loss_margin.__all__

from . import embedding_bag as _embedding_bag  # noqa: E402
from .embedding_bag import *  # noqa: E402,F401,F403

__all__ += _embedding_bag.__all__

from . import loss_ctc as _loss_ctc  # noqa: E402
from .loss_ctc import *  # noqa: E402,F401,F403

__all__ += _loss_ctc.__all__

# F.conv_tbc is torch.conv_tbc (ATen's signature; PyTorch's F has no __all__ entry for it)
from ._aten_more import conv_tbc  # noqa: E402,F401
