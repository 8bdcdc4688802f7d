"""``CrossMapLRN2d``'s autograd Function: PyTorch's ``torch/nn/modules/_functions.py`` (the
Lua-torch SpatialCrossMapLRN port) op for op in jitgrad tensor ops, so the sums run in its order
(the running channel window of the forward, the running ratio sum of the backward) and one code
path serves CPU and CUDA tensors. Its node is ``CrossMapLRN2dBackward``, as PyTorch's.

Credit: ported from PyTorch's ``torch/nn/modules/_functions.py``
(https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the
PyTorch contributors, BSD 3-Clause license; its terms apply to the ported parts.
"""
from __future__ import annotations

from ...autograd import grad_mode
from ...autograd.function import Function
from ...ops import functional as F
from ...ops.basic import zeros, zeros_like
from ...ops.shape_join import stack

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Function):
    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        ctx.size = size
        ctx.alpha = alpha
        ctx.beta = beta
        ctx.k = k
        ctx.scale = None
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        channels = input.size(1)
        input_square = input.pow(2)
        pre_pad = int((size - 1) / 2 + 1)
        pre_pad_crop = min(pre_pad, channels)
        # the window sum of channel c, built from channel c - 1's by adding the channel that
        # enters and (past pre_pad: Lua-torch's window, kept as is) removing the one that leaves
        scale = [zeros_like(input_square[:, 0])]
        for c in range(pre_pad_crop):
            scale[0] = scale[0] + input_square[:, c]
        for c in range(1, channels):
            current = scale[c - 1]
            if c < channels - pre_pad + 1:
                current = current + input_square[:, c + pre_pad - 1]
            if c > pre_pad:
                current = current - input_square[:, c - pre_pad]
            scale.append(current)
        scale = stack(scale, 1).mul_(alpha / size).add_(k)
        ctx.scale = scale
        output = scale.pow(-beta).mul_(input)
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        if grad_mode.is_grad_enabled() and (grad_output.requires_grad or output.requires_grad):
            # PyTorch's backward writes products through out=, which refuses to record them
            raise RuntimeError("mul(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        batch_size, channels, input_height, input_width = input.shape
        size, scale = ctx.size, ctx.scale
        cache_ratio_value = 2 * ctx.alpha * ctx.beta / size
        inverse_pre_pad = int(size - (size - 1) / 2)
        grad_input = scale.pow(-ctx.beta).mul_(grad_output)
        # every sample at once: PyTorch's loop over n does the same elementwise work per n
        padded_ratio = zeros((batch_size, channels + size - 1, input_height, input_width),
                             dtype=input.dtype, device=input.device)
        center = (grad_output * output).div_(scale)
        padded_ratio.narrow(1, inverse_pre_pad, channels).copy_(center)
        accum_ratio = padded_ratio.narrow(1, 0, size - 1).sum(1)
        rows = []
        for c in range(channels):
            accum_ratio = accum_ratio + padded_ratio[:, c + size - 1]
            rows.append(F.addcmul(grad_input[:, c], input[:, c], accum_ratio,
                                  value=-cache_ratio_value))
            accum_ratio = accum_ratio - padded_ratio[:, c]
        return stack(rows, 1), None, None, None, None
