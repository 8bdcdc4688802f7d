"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

``scaled_dot_product_attention`` is ATen's math backend written with differentiable ops (scaled
q and k, matmul, mask added, a softmax that gives 0 for fully masked rows, dropout drawn as
``F.dropout`` draws it, matmul), so it runs wherever those ops run (CPU and CUDA) and its
gradients of any order are theirs. PyTorch's CPU dispatcher sends 4-D inputs without dropout and
without a mask that requires grad to its flash kernel, whose node is
``ScaledDotProductFlashAttentionForCpuBackward0``; those calls are shown as that one node here
(``record_composition``), the others record the math backend's own nodes, as in PyTorch.

``multi_head_attention_forward`` is a port of PyTorch's Python function (the slow path of
``nn.MultiheadAttention``), with its checks and messages.

Credit: the code follows PyTorch's ``torch/nn/functional.py``
(https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the
PyTorch contributors, BSD 3-Clause license; its terms apply to the ported parts.
"""
from __future__ import annotations

import math
import warnings

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import record, record_composition
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_ATEN_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}


def _aten_type(dt) -> str:
    return _ATEN_TYPE.get(str(dt).replace("torch.", ""), str(dt))


def _check_sdpa_inputs(query, key, value, attn_mask, dropout_p):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be "
                            f"Tensor, not {parser_type_name(t)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_aten_type(query.dtype)} key.dtype: {_aten_type(key.dtype)} and value.dtype: "
            f"{_aten_type(value.dtype)} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead.")
    if attn_mask is not None and attn_mask.dtype not in (D.bool_, D.float32, query.dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_aten_type(attn_mask.dtype)} and  query.dtype: "
            f"{_aten_type(query.dtype)} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def _causal_mask(query, key):
    """``ones(L, S, bool).tril()``: True where the key index <= the query index."""
    return _lower_triangle(query.shape[-2], key.shape[-2], query.device)


def _lower_triangle(rows, cols, device):
    """Bool ``(rows, cols)``, True on and below the diagonal. The indices are running sums of
    ones made on ``device`` (``arange`` would upload them from the host)."""
    from ...ops.basic import ones
    grid = ones(rows, cols, dtype=D.int64, device=device)
    return grid.cumsum(1) <= grid.cumsum(0)


def _as_float_mask(mask, dtype):
    """ATen's ``convert_boolean_attn_mask``: True attends (0), False is -inf."""
    if mask.dtype != D.bool_:
        return mask
    from ...ops.basic import zeros
    return zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
        mask.logical_not(), float("-inf"))


def _safe_softmax(scores):
    """``at::_safe_softmax`` over the last dim (its node ``SafeSoftmaxBackward0``): softmax,
    0 (not NaN) where a whole row is -inf."""
    return record_composition("SafeSoftmaxBackward0", (scores,), _safe_softmax_composed)


def _safe_softmax_composed(scores):
    from ...ops.functional import where
    dead = (scores == float("-inf")).all(-1, keepdim=True)
    # the softmax of a dead row is taken of zeros, so neither it nor its gradient is NaN
    return where(dead, 0.0, where(dead, 0.0, scores).softmax(-1))


def _mul_scalar(t, factor):
    """``t * factor`` as ATen's ``mul.Scalar`` (node ``MulBackward1``), its result laid out as
    ``t`` (TensorIterator keeps the input's dim order): a transposed key stays transposed, so
    the matmul after it folds and calls BLAS as PyTorch does (same bits)."""
    return record_composition("MulBackward1", (t,), lambda x: _mul_keeping_layout(x, factor))


def _mul_keeping_layout(x, factor):
    import numpy as np
    if not isinstance(x._data, np.ndarray) or x._data.flags.c_contiguous or x.dim() < 2:
        return x * factor
    strides = x._data.strides
    order = sorted(range(x.dim()), key=lambda d: -abs(strides[d]))  # outermost first
    back = [order.index(d) for d in range(x.dim())]
    return (x.permute(*order) * factor).permute(*back)


def _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """ATen's ``_scaled_dot_product_attention_math``, op by op (PyTorch's values and nodes):
    half inputs computed in float32; q and k each scaled by sqrt(scale) (q by its negative for a
    negative scale); ``is_causal`` as a ``tril`` bool mask made additive; grouped key/value
    heads by ``repeat_interleave``; ``matmul(q, k^T)``, the mask added, ``_safe_softmax``,
    dropout, ``matmul`` with v, and back to the input dtype."""
    from . import dropout
    origin = query.dtype
    if attn_mask is not None:  # the dispatcher's convert_boolean_attn_mask (query's dtype)
        attn_mask = _as_float_mask(attn_mask, origin)
    if origin == D.float16:  # kept in float32 for accuracy, as ATen (half and bfloat16)
        query, key, value = query.float(), key.float(), value.float()
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    root = math.sqrt(abs(factor))
    q = _mul_scalar(query, -root if factor < 0 else root)
    if is_causal:
        causal = _as_float_mask(_causal_mask(query, key), query.dtype)
        # a mask and is_causal together come only from the flash route's fallback (the math
        # backend refuses them): the flash kernel applies both
        attn_mask = causal if attn_mask is None else attn_mask + causal
    if enable_gqa and query.dim() >= 3 \
            and not query.shape[-3] == key.shape[-3] == value.shape[-3]:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
        value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    attn = q.matmul(_mul_scalar(key.transpose(-2, -1), root))
    if attn_mask is not None:
        attn = attn + attn_mask
    attn = _safe_softmax(attn)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    out = attn.matmul(value)
    return out if out.dtype == origin else out.to(origin)


def _uses_cpu_flash(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether PyTorch's CPU dispatcher picks its flash kernel (``use_flash_attention_cpp``):
    4-D inputs, no dropout, equal head sizes and batch sizes, non-empty sequences, unit stride
    along the head dim, heads equal (or grouped with ``enable_gqa``), and a mask that needs no
    gradient and is 2-D or 4-D broadcasting over batch and heads."""
    if not query.dim() == key.dim() == value.dim() == 4 or dropout_p != 0.0:
        return False
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return False
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        return False
    # check_nonzero_sequence_lengths_dense, check_last_dim_stride_equals_1_dense (the mask's
    # stride is not checked on the CPU)
    if 0 in (query.shape[2], key.shape[2], value.shape[2]):
        return False
    if any(t.dim() and t.stride(-1) != 1 for t in (query, key, value)):
        return False
    hq, hk, hv = query.shape[1], key.shape[1], value.shape[1]
    if not (hq == hk == hv or (enable_gqa and hk == hv and hq % hk == 0)):
        return False
    if attn_mask is None:
        return True
    m = attn_mask.shape
    if attn_mask.requires_grad or m[-2] not in (query.shape[2], 1) \
            or m[-1] not in (key.shape[2], 1):
        return False
    return attn_mask.dim() == 2 or (attn_mask.dim() == 4 and m[0] in (1, query.shape[0])
                                    and m[1] in (1, hq))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, *, scale=None, enable_gqa=False):
    """``softmax(q k^T * scale + mask) v`` over the last two dims, batch dims broadcast.

    ``attn_mask``: bool (True takes part) or float (added), broadcastable to ``(..., L, S)``;
    ``is_causal``: the lower-triangular mask; ``scale``: default ``1/sqrt(E)``;
    ``enable_gqa``: key/value may have fewer heads (dim -3) than query.
    """
    _check_sdpa_inputs(query, key, value, attn_mask, dropout_p)
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in ")
    flash = _uses_cpu_flash(query, key, value, attn_mask, dropout_p, enable_gqa)
    if is_causal and attn_mask is not None and not flash:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not flash:
        return _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale,
                          enable_gqa)
    flash = _flash_forward_on_host(query, key, value, attn_mask, is_causal, scale)
    if flash is None:
        return record_composition(
            "ScaledDotProductFlashAttentionForCpuBackward0", (query, key, value),
            lambda q, k, v: _sdpa_math(q, k, v, attn_mask, 0.0, is_causal, scale, enable_gqa))
    # the kernel's values (PyTorch's bits) under PyTorch's node, whose backward is the kernel's
    # too; a backward with create_graph differentiates the math composition, built then
    return record("ScaledDotProductFlashAttentionForCpuBackward0", (query, key, value),
                  flash[0], _flash_backward((query, key, value), flash,
                                            (attn_mask, is_causal, scale, enable_gqa)),
                  save=tuple(zip(_SAVED, (query, key, value))))


_SAVED = ("query", "key", "value")


def _flash_backward(inputs, flash, args):
    """The flash node's backward: ATen's ``cpu_flash_attention_backward`` (PyTorch's bits)
    when no graph is being built; with create_graph, the nested gradient of the math
    composition over aliases of the inputs (partial derivatives, as ``record_composition``)."""
    import numpy as np
    out, lse, mask, causal, factor = flash

    def backward(node, *gs):
        g = gs[0]
        if g is None:
            return (None, None, None)
        # the saved inputs: PyTorch's errors for an in-place change or a second backward
        arrays = tuple(node.saved_array(name) for name in _SAVED)
        if not grad_mode.is_grad_enabled() and isinstance(g._data, np.ndarray):
            from . import _flash_attention_aten as kernel
            got = kernel.backward(g._data, *arrays, out, lse, mask, causal, factor)
            if got is not None:
                return tuple(Tensor._make(a) if need else None
                             for a, need in zip(got, node.ctx.needs_input_grad))
        return _composed_gradients(inputs, g, args, node.ctx.needs_input_grad)
    return backward


def _composed_gradients(inputs, g, args, needs):
    from ...autograd import engine
    from ...ops.shape_views import _alias
    attn_mask, is_causal, scale, enable_gqa = args
    create = grad_mode.is_grad_enabled()
    engine._same_pass[0] += 1  # a nested pass of the running backward (as compositions do)
    try:
        with grad_mode.enable_grad():
            seen = tuple(_alias(t) if need else t.detach() for t, need in zip(inputs, needs))
            out = _sdpa_math(*seen, attn_mask, 0.0, is_causal, scale, enable_gqa)
        diff = [t for t, need in zip(seen, needs) if need]
        grads = iter(engine.grad([out], diff, [g], retain_graph=create, create_graph=create,
                                 allow_unused=True))
    finally:
        engine._same_pass[0] -= 1
    return tuple(next(grads) if need else None for need in needs)


def _flash_forward_on_host(query, key, value, attn_mask, is_causal, scale):
    """ATen's CPU flash kernel's (output, logsumexp, mask array, is_causal, scale) (ndarrays,
    PyTorch's bits) for host float32/float64 inputs with as many key/value heads as query
    heads; None elsewhere (CUDA, other dtypes, grouped heads, empty sizes, no MKL): the caller
    composes the math backend."""
    import numpy as np
    ts = (query, key, value) if attn_mask is None else (query, key, value, attn_mask)
    if any(t.is_cuda or not isinstance(t._data, np.ndarray) for t in ts):
        return None
    if query.dtype not in (D.float32, D.float64) or query.shape[1] != key.shape[1] \
            or 0 in tuple(query.shape) or 0 in tuple(key.shape):
        return None
    for t in (query, key, value):  # operands MKL takes as they are (else ATen's own GEMM)
        st, item = t._data.strides, t._data.itemsize
        if any(x < 0 or x % item for x in st) or (t.shape[2] > 1 and
                                                   st[2] // item < t.shape[3]):
            return None
    from . import _flash_attention_aten as flash
    mask = None
    if attn_mask is not None:
        mask = attn_mask._data
        if mask.dtype == np.bool_:  # convert_boolean_attn_mask: where(!mask, -inf, 0)
            mask = np.where(mask, np.zeros((), query._data.dtype),
                            np.array(-np.inf, query._data.dtype))
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    got = flash.forward(query._data, key._data, value._data, mask, is_causal, factor)
    return None if got is None else (got[0], got[1], mask, is_causal, factor)


# ----------------------------------------------------------------------------- multi-head


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    if mask is None:
        return None
    if mask.dtype != D.bool_ and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=2)  # its caller, as PyTorch
    if not mask.is_floating_point():
        from ...ops.basic import zeros
        mask = zeros(tuple(mask.shape), dtype=target_type, device=mask.device) \
            .masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projection_packed(q, k, v, w, b=None):
    from . import linear
    e = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, e)).unsqueeze(0).transpose(0, -2) \
                .squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([e, e * 2])
        b_q, b_kv = (None, None) if b is None else b.split([e, e * 2])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, e)).unsqueeze(0).transpose(0, -2) \
            .squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    from . import linear
    eq, ek, ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for what, w, shape in (("query", w_q, (eq, eq)), ("key", w_k, (eq, ek)),
                           ("value", w_v, (eq, ev))):
        if tuple(w.shape) != shape:
            raise AssertionError(f"expecting {what} weights shape of {shape}, but got {w.shape}")
    for what, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (eq,):
            raise AssertionError(f"expecting {what} bias shape of {(eq,)}, but got {b.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's ``F.multi_head_attention_forward`` (sequence-first ``(L, N, E)`` inputs)."""
    from ...ops.basic import zeros
    from ...ops.shape_join import cat
    from . import dropout, linear, pad, softmax
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # sdpa builds the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None
                             else "bias_v is set but bias_k is None")
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    for name, static in (("k", static_k), ("v", static_v)):
        if static is not None:
            if static.shape[0] != bsz * num_heads:
                raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, "
                                     f"but got {static.shape[0]}")
            if static.shape[2] != head_dim:
                raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                                     f"{static.shape[2]}")
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None \
        else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None \
        else static_v
    if add_zero_attn:
        zero = zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = cat([k, zero], dim=1)
        v = cat([v, zero], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len) \
            .expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        e = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(e))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            weights = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            weights = q_scaled.bmm(k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.bmm(v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None
