"""``F.dropout``: the mask is drawn from PyTorch's CPU generator stream in memory order
(channel dropouts live in ``channel_dropout``)."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...ops.parser_errors import input_type_error
from ...tensor import Tensor
from .. import _device


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability ``p`` and scales the rest by ``1/(1-p)``.

    The mask is drawn from the global generator exactly as PyTorch's CPU kernel draws it
    (``bernoulli_(1-p)`` then ``div_(1-p)``), so seeded runs drop the same elements.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        if not training or p == 0.0 or input.numel() == 0:
            return input
    except AttributeError:
        raise input_type_error("dropout", (input,), {}) from None
    if _device.is_cuda(input):  # mask drawn on the device (CUDA generator)
        return _device.dropout(input, p, inplace)
    if not input.is_floating_point():  # the mask is float: PyTorch's in-place mul_ refuses
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{D.scalar_name(input.dtype)}")
    from ...random import default_generator
    dt = input._data.dtype
    if p == 1.0:
        mask = Tensor._make(np.zeros((), dtype=dt))
    else:
        from .channel_dropout import memory_order_draw
        mask = Tensor._make(memory_order_draw(
            input._data, lambda shape: default_generator().dropout_mask(shape, p, dt)))
    if inplace:
        return input.mul_(mask)
    return input * mask
