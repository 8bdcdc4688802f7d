"""More top-level ATen spellings over nn.functional (bound lazily by ``jitgrad.__getattr__``,
like ``_aten.py``): ``torch.convolution`` (one entry for every convolution, ATen's list
arguments), ``torch.conv_tbc`` (also ``F.conv_tbc``), ``torch.affine_grid_generator``,
``torch.grid_sampler`` / ``grid_sampler_2d`` / ``grid_sampler_3d`` (integer modes),
``torch.native_dropout`` (output and boolean mask), ``torch.native_group_norm`` (output, mean,
rstd) and ``torch.embedding_renorm_``. Each has ATen's signature, its checks and messages
where they differ from F's, and PyTorch's node names."""
from __future__ import annotations

from ...autograd import grad_mode
from ...ops.composite import record_composition
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from . import conv as _conv
from . import normalization as N
from . import sampling as _s

__all__ = ["convolution", "conv_tbc", "affine_grid_generator", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d", "native_dropout", "native_group_norm",
           "embedding_renorm_"]


def _tensor(x, name, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _int_list(v, name, arg, pos, nd):
    """ATen's ``int[]`` argument: a tuple/list of ints, one entry expanded to ``nd``."""
    if not isinstance(v, (tuple, list)) or not all(_conv._is_int(e) for e in v):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be tuple of ints, "
                        f"not {parser_type_name(v)}")
    v = [int(e) for e in v]
    if len(v) == 1 and nd > 1:
        v = v * nd
    if len(v) != nd:
        raise RuntimeError(f"expected {arg} to be a single integer value or a list of {nd} "
                           f"values to match the convolution dimensions, but got {arg}={v}")
    return v


# ----------------------------------------------------------------------------- convolutions

def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """``torch.convolution``: conv{1,2,3}d or conv_transpose{1,2,3}d by the weight's rank
    (ConvolutionBackward0). Unbatched input is an error here, as in ATen."""
    _tensor(input, "convolution", "input", 1)
    _tensor(weight, "convolution", "weight", 2)
    nd = weight.dim() - 2
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight {list(weight.shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input.shape)} instead")
    stride = _int_list(stride, "convolution", "stride", 4, nd)
    padding = _int_list(padding, "convolution", "padding", 5, nd)
    dilation = _int_list(dilation, "convolution", "dilation", 6, nd)
    output_padding = _int_list(output_padding, "convolution", "output_padding", 8, nd)
    if transposed:
        return _conv._conv_transpose(nd, input, weight, bias, stride, padding, output_padding,
                                     groups, dilation)
    return _conv._conv(nd, input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over (time, batch, channel) input with a (kernel, in, out) weight:
    ``conv1d`` on the permuted tensors, shown as one ConvTbcBackward0 node. (ATen sums one
    GEMM per kernel tap, so its float32 results can differ from this im2col GEMM in the last
    bits.)"""
    _tensor(input, "conv_tbc", "self", 1)
    _tensor(weight, "conv_tbc", "weight", 2)
    _tensor(bias, "conv_tbc", "bias", 3)
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    from .conv import conv1d

    def build(x, w, b):
        return conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), b, 1, int(pad)).permute(2, 0, 1)
    return record_composition("ConvTbcBackward0", (input, weight, bias), build)


# ----------------------------------------------------------------------------- sampling

def affine_grid_generator(theta, size, align_corners):
    """``F.affine_grid`` with ATen's signature (AffineGridGeneratorBackward0)."""
    _tensor(theta, "affine_grid_generator", "theta", 1)
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    return _s.affine_grid(theta, list(size), bool(align_corners))


_MODE_NAMES = {v: k for k, v in _s._MODES.items()}
_PADDING_NAMES = {v: k for k, v in _s._PADDINGS.items()}


def _grid_sampler(name, want, input, grid, interpolation_mode, padding_mode, align_corners):
    _tensor(input, name, "input", 1)
    _tensor(grid, name, "grid", 2)
    if want and (input.dim() != want or grid.dim() != want):
        raise RuntimeError(f"grid_sampler(): expected {want}D input and grid with same number "
                           f"of dimensions, but got input with sizes {_s._sizes(input)} and "
                           f"grid with sizes {_s._sizes(grid)}")
    mode = _MODE_NAMES.get(int(interpolation_mode))
    padding = _PADDING_NAMES.get(int(padding_mode))
    if mode is None or padding is None:  # ATen reads garbage; refuse instead
        raise RuntimeError(f"{name}(): interpolation_mode must be 0, 1 or 2 and padding_mode "
                           f"0, 1 or 2, got {interpolation_mode} and {padding_mode}")
    return _s.grid_sample(input, grid, mode, padding, bool(align_corners))


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``F.grid_sample`` with ATen's integer modes (0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sampler("grid_sampler", None, input, grid, interpolation_mode, padding_mode,
                         align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler("grid_sampler_2d", 4, input, grid, interpolation_mode, padding_mode,
                         align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler("grid_sampler_3d", 5, input, grid, interpolation_mode, padding_mode,
                         align_corners)


# ----------------------------------------------------------------------------- dropout, norms

def native_dropout(input, p, train):
    """``(output, mask)``: ATen's native_dropout_cpu. Training (``train`` True or None): a bool
    mask drawn as ``bernoulli_(1 - p)`` (the generator's stream as PyTorch's), output =
    input * mask * 1/(1-p) (0 when p == 1); evaluation: a clone and an all-True mask. One
    NativeDropoutBackward0 node either way."""
    _tensor(input, "native_dropout", "input", 1)
    from ... import _dtype as D
    from ...ops.basic import empty_like, ones_like
    if input.numel() == 0:
        return input, empty_like(input)
    if train is None or train:
        p1m = 1.0 - float(p)
        scale = 0.0 if p1m == 0 else 1.0 / p1m
        mask = empty_like(input, dtype=D.bool_).bernoulli_(p1m)

        def build(x):
            return x.mul(mask).mul(scale)
    else:
        mask = ones_like(input, dtype=D.bool_)

        def build(x):
            return x.clone()
    out = record_composition("NativeDropoutBackward0", (input,), build)
    return out, mask


def native_group_norm(input, weight, bias, N_, C, HxW, group, eps):
    """``(output, mean, rstd)``, mean and rstd per (sample, group) in the input's dtype; one
    NativeGroupNormBackward0 node over all three (mean and rstd are differentiable, as in
    PyTorch)."""
    _tensor(input, "native_group_norm", "input", 1)
    if input.numel() != int(N_) * int(C) * int(HxW):
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    N._group_norm(input.detach(), group, None if weight is None else weight.detach(),
                  None if bias is None else bias.detach(), eps)  # ATen's checks, in its order
    n, g = int(N_), int(group)

    def build(x, w, b):
        out = N._group_norm(x, g, w, b, eps)
        xg = x.reshape(n, g, -1)
        mean = xg.mean(2)
        var = xg.var(2, unbiased=False)
        return out, mean, (var + eps).rsqrt()
    return record_composition("NativeGroupNormBackward0", (input, weight, bias), build)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rows of ``input`` at ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` scaled to
    ``max_norm / (norm + 1e-7)``, in place, as ATen's loop (each distinct row once; the norm
    computed in the weight's dtype, the scale in double). Tensor ops, so either device."""
    _tensor(input, "embedding_renorm_", "input", 1)
    _tensor(indices, "embedding_renorm_", "indices", 2)
    if input.dim() != 2:
        raise RuntimeError(f"embedding_renorm_(): Expected 2-D tensor for argument #1 'self' "
                           f"(while checking arguments for embedding_renorm_), but got "
                           f"{input.dim()}-D tensor")
    from ...ops import inplace
    inplace.check_inplace(input, ())
    from ... import _dtype as D
    with grad_mode.no_grad():
        rows = indices.reshape(-1).unique()
        norms = input.index_select(0, rows).norm(norm_type, 1).to(D.float64)
        big = norms > max_norm
        scale = (max_norm / (norms + 1e-7)).where(big, norms.new_ones(()))
        input.index_copy_(0, rows, input.index_select(0, rows)
                          * scale.to(input.dtype).unsqueeze(1))
    return input
