"""Lazy modules: ``LazyModuleMixin`` and ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``,
``LazyBatchNorm*``, ``LazyInstanceNorm*``.

Their parameters start as ``UninitializedParameter``/``UninitializedBuffer``; a forward
pre-hook reads the first input's shape, materializes them, runs the eager class's
``reset_parameters`` (so the same RNG draws as the eager module under the same seed) and swaps
the module's class to ``cls_to_become``. ``load_state_dict`` of initialized tensors materializes
them too (a load pre-hook).

Credit: ported from PyTorch's ``torch/nn/modules/lazy.py`` and the Lazy classes of
``linear.py``, ``conv.py``, ``batchnorm.py``, ``instancenorm.py``
(https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the
PyTorch contributors, BSD 3-Clause license; its terms apply to the ported parts.
"""
from __future__ import annotations

import itertools

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.basic import tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
    _NormBase,
)
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """A mixin for modules whose parameters' shapes come from their first input."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized tensors are saved as themselves (detach() would refuse them)
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        """Materialize an uninitialized tensor that the state dict gives an initialized value,
        so that the ordinary copy can fill it."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with grad_mode.no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether a parameter or buffer of this module is still uninitialized."""
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None):
        # the forward pre-hook: initialize from the first call's arguments, then leave
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize the "
                           "modules")


def _factory(device, dtype):
    return {"device": device, "dtype": dtype}


# ---------------------------------------------------------------------- linear

class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        kw = _factory(device, dtype)
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**kw)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**kw)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with grad_mode.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                    f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


# ---------------------------------------------------------------------- convolutions

class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        num_dims_no_batch = self._nd + 1  # the channel dim and the spatial ones
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(
                f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D (batched) input "
                f"to {self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]


class _LazyConv(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        kw = _factory(device, dtype)
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, **kw)
        self.weight = UninitializedParameter(**kw)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**kw)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        kw = _factory(device, dtype)
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, **kw)
        self.weight = UninitializedParameter(**kw)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**kw)


class LazyConv1d(_LazyConv, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    cls_to_become = ConvTranspose3d


# ---------------------------------------------------------------------- normalization

class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        kw = _factory(device, dtype)
        # affine and track_running_stats off: no tensors that would be replaced at once
        super().__init__(0, eps, momentum, False, False, **kw, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(**kw)
            if bias:
                self.bias = UninitializedParameter(**kw)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(**kw)
            self.running_var = UninitializedBuffer(**kw)
            self.num_batches_tracked = tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                if not isinstance(self.weight, UninitializedParameter):
                    raise AssertionError("self.weight must be an UninitializedParameter")
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    if not isinstance(self.bias, UninitializedParameter):
                        raise AssertionError("self.bias must be an UninitializedParameter")
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm1d
    _no_batch_dim = InstanceNorm1d._no_batch_dim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm2d
    _no_batch_dim = InstanceNorm2d._no_batch_dim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm3d
    _no_batch_dim = InstanceNorm3d._no_batch_dim
