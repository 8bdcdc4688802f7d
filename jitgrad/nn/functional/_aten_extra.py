"""More top-level ATen spellings of ``nn.functional`` (``torch.selu``, ``torch.kl_div``,
``torch.embedding``, ``torch.dropout_``, ...), bound lazily by ``jitgrad.__getattr__`` beside
``_aten.py``'s.

Where ``torch.X`` differs from ``torch.nn.functional.X``, the difference is ATen's and kept:

* the losses take ``reduction`` as an int (0 none, 1 mean, 2 sum; anything else is none, and
  an omitted one is 0 in PyTorch 2.13's bindings: the elementwise loss), no legacy
  ``size_average``/``reduce``, and ``kl_div`` gives no 'mean' warning;
* ``embedding(weight, indices, padding_idx=-1, ...)``: weight first, and a negative
  ``padding_idx`` means none (it is not wrapped);
* ``poisson_nll_loss(input, target, log_input, full, eps, reduction)``: all required;
* ``rrelu(input, lower, upper, training=False, generator=None)`` and the dropouts'
  ``(input, p, train)``, all positional.
"""
from __future__ import annotations

import numbers

from ... import _dtype as D
from ...ops import functional as _F
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from . import activation_extra as _act
from . import activation_more as _more
from . import channel_dropout, dropouts, loss_bce, loss_extra
from . import sparse as _sparse
from ._aten import _check_p

__all__ = ["selu", "selu_", "celu", "celu_", "threshold", "threshold_", "rrelu", "rrelu_",
           "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss",
           "triplet_margin_loss", "cosine_embedding_loss", "binary_cross_entropy_with_logits",
           "embedding", "constant_pad_nd", "dropout_", "alpha_dropout_", "feature_dropout",
           "feature_dropout_", "feature_alpha_dropout_"]

# PyTorch's name for an unnamed ``input`` is checked by the wrapped F function; these add the
# checks ATen's parser makes first (a Tensor ``input``, an int ``reduction``)


def _tensor(x, name, arg="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _reduction(r, name, pos):
    if not isinstance(r, numbers.Integral) or isinstance(r, bool):
        raise TypeError(f"{name}(): argument 'reduction' (position {pos}) must be int, not "
                        f"{parser_type_name(r)}")
    return {1: "mean", 2: "sum"}.get(int(r), "none")


def _generator(generator, name):
    if generator is not None:  # jitgrad's rrelu noise comes from the default generator
        raise NotImplementedError(f"{name}: a generator argument is not supported by jitgrad")


# ----------------------------------------------------------------------------- activations

def selu(input):
    _tensor(input, "selu")
    return _act.selu(input)


def selu_(input):
    _tensor(input, "selu_")
    return _act.selu(input, inplace=True)


def celu(input, alpha=1.0):
    _tensor(input, "celu")
    return _act.celu(input, alpha)


def celu_(input, alpha=1.0):
    _tensor(input, "celu_")
    return _act.celu(input, alpha, inplace=True)


def threshold(input, threshold, value):
    _tensor(input, "threshold")
    return _act.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    _tensor(input, "threshold_")
    return _act.threshold(input, threshold, value, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    _tensor(input, "rrelu")
    _generator(generator, "rrelu")
    return _more.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    _tensor(input, "rrelu_")
    _generator(generator, "rrelu_")
    return _more.rrelu(input, lower, upper, training, inplace=True)


# ----------------------------------------------------------------------------- dropouts in place

def dropout_(input, p, train):
    _tensor(input, "dropout_")
    _check_p(p)
    return dropouts.dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p, train):
    _tensor(input, "alpha_dropout_")
    _check_p(p)
    return channel_dropout.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    _tensor(input, "feature_dropout")
    _check_p(p)
    return channel_dropout._feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    _tensor(input, "feature_dropout_")
    _check_p(p)
    return channel_dropout._feature_dropout(input, p, train, True)


def feature_alpha_dropout_(input, p, train):
    _tensor(input, "feature_alpha_dropout_")
    _check_p(p)
    return channel_dropout.feature_alpha_dropout(input, p, train, inplace=True)


# ----------------------------------------------------------------------------- losses

def kl_div(input, target, reduction=0, *, log_target=False):
    """ATen's kl_div: F.kl_div's loss without its 'mean' warning or 'batchmean'."""
    _tensor(input, "kl_div")
    _tensor(target, "kl_div", "target", 2)
    red = _reduction(reduction, "kl_div", 3)
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = _F.exp(target) * (target - input)
    else:
        loss = loss_extra._xlogy_self(target) - target * input
    return loss_extra._apply_reduction(loss, red)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    red = _reduction(reduction, "margin_ranking_loss", 5)
    return loss_extra.margin_ranking_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    red = _reduction(reduction, "hinge_embedding_loss", 4)
    return loss_extra.hinge_embedding_loss(input, target, margin, reduction=red)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    red = _reduction(reduction, "poisson_nll_loss", 6)
    return loss_extra.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=0):
    red = _reduction(reduction, "triplet_margin_loss", 8)
    return loss_extra.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                          reduction=red)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    red = _reduction(reduction, "cosine_embedding_loss", 5)
    return loss_extra.cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    red = _reduction(reduction, "binary_cross_entropy_with_logits", 5)
    return loss_bce.binary_cross_entropy_with_logits(input, target, weight, reduction=red,
                                                     pos_weight=pos_weight)


# ----------------------------------------------------------------------------- the rest

def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding``: weight first; ``padding_idx < 0`` is no padding row."""
    _tensor(weight, "embedding", "weight")
    _tensor(indices, "embedding", "indices", 2)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {indices.type()} instead (while "
                           "checking arguments for embedding)")
    return _sparse.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                             scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd`` (ConstantPadNdBackward0): F.pad's constant mode."""
    from .padding import pad as _pad
    _tensor(input, "constant_pad_nd")
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return _pad(input, tuple(pad), "constant", value)

