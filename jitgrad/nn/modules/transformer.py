"""``MultiheadAttention``, ``TransformerEncoderLayer``, ``TransformerEncoder``: PyTorch's
modules (parameter names, registration order and initialization, so seeded constructions and
state dicts match), over ``F.multi_head_attention_forward`` and ``F.scaled_dot_product_attention``.

PyTorch's inference fast paths (``_native_multi_head_attention``,
``_transformer_encoder_layer_fwd``) compute the same function as the slow path, so only the slow
path exists here; the one visible effect of the nested-tensor path of ``TransformerEncoder``
(padded positions of the output are 0) is reproduced.

Credit: the code follows PyTorch's ``torch/nn/modules/activation.py`` and
``torch/nn/modules/transformer.py`` (https://github.com/pytorch/pytorch), Copyright (c) 2016-
Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause license; its terms apply
to the ported parts.
"""
from __future__ import annotations

import copy
import warnings

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.basic import empty
from .. import functional as F
from ..functional.attention import _canonical_mask
from ..parameter import Parameter
from .activation import GELU, ReLU
from .container import ModuleList
from .linear import Linear
from .misc import Dropout, LayerNorm
from .module import Module

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for ``MultiheadAttention.out_proj`` (a plain Linear)."""


def _dtype(dtype):
    return D.to_dtype(dtype) if dtype is not None else None


class MultiheadAttention(Module):
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        kw = {"device": device, "dtype": _dtype(dtype)}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        from .. import init
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           None if attn_mask is None else attn_mask.dtype,
                                           "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = {} if self._qkv_same_embed_dim else dict(
            use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def __setstate__(self, state):
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """Float mask with -inf above the diagonal and 0 elsewhere."""
    from ...ops.factories import full
    from ...ops.triangular import triu
    # PyTorch's construction, so a size or dtype it refuses (negative, integral) fails alike
    return triu(full((sz, sz), float("-inf"), dtype=_dtype(dtype), device=device), 1)


class TransformerEncoderLayer(Module):
    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # compared unwrapped: jitgrad.compile wraps F.relu/F.gelu after this default was bound
        plain = _plain(activation)
        if plain is _plain(F.relu) or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif plain is _plain(F.gelu) or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               None if src_mask is None else src_mask.dtype,
                                               "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


def _sparsity_blocker(layer):
    """Why PyTorch's TransformerEncoder would not use nested tensors with ``layer`` ('' if it
    would)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _sparsity_blocker(encoder_layer)
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def _pads_output(self, src, mask, padding_mask):
        """Whether PyTorch would run the layers on a nested tensor (inference with a
        left-aligned key padding mask), which leaves 0 at the padded positions."""
        first = self.layers[0]
        if not self.use_nested_tensor or first.training or src.dim() != 3 \
                or padding_mask is None or mask is not None:
            return False
        keep = padding_mask.logical_not() if padding_mask.dtype == D.bool_ \
            else padding_mask == 0
        if self.mask_check:
            # left aligned: no kept position after a padded one
            if bool((keep[:, 1:] & ~keep[:, :-1]).any()):
                return False
        args = (src, *first.parameters())
        return not (grad_mode.is_grad_enabled() and any(t.requires_grad for t in args))

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        raw_padding = src_key_padding_mask
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               None if mask is None else mask.dtype, "mask",
                                               src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        batch_first = self.layers[0].self_attn.batch_first
        pads = self._pads_output(src, mask, raw_padding)
        seq_len = src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if pads:
            padded = (src_key_padding_mask != 0).unsqueeze(-1)  # (N, S, 1), batch first
            output = output.masked_fill(padded, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _plain(fn):
    return getattr(fn, "__jitgrad_boundary__", fn)


# PyTorch's ``torch.nn.modules.transformer`` holds the decoder side too; the same import path
# works here (imported last: transformer_decoder builds on the names above)
from .transformer_decoder import (  # noqa: E402,F401
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    _get_clones,
    _get_seq_len,
)
