"""nansum / nanmean: sums and means that treat NaN as zero / as absent.

nansum records PyTorch's NansumBackward0 (the gradient is zero where the input is NaN);
nanmean is PyTorch's composition ``nansum(x) / count of non-NaN`` (DivBackward0). Both are
written over registered ops and ``reduce.sum``, so CUDA tensors take the same path.
"""
from __future__ import annotations

from .. import _dtype as D
from .composite import record
from .reduce_args import _attrs, _dims, _expand_back, _type_word, reduction_entry

__all__ = ["nansum", "nanmean"]


def _zero(like):
    from .basic import full
    return full((), 0, dtype=like.dtype, device=like.device)


def _nansum_backward(node, g):
    # a product with the mask, as PyTorch's (an infinite g gives NaN at the NaN inputs)
    x = node.saved("x")
    return (_expand_back(g, node) * x.isnan().logical_not(),)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over ``dim`` (all dims by default) with NaN counted as zero."""
    from .functional import where
    from .reduce_sums import sum as _sum
    axes = _dims(dim, input.ndim)
    x = input.detach()
    if x.dtype.is_floating_point:
        x = where(x.isnan(), _zero(x), x)
    if dtype is not None and input.requires_grad and not D.to_dtype(dtype).is_floating_point:
        _sum(input, dim, keepdim, dtype=dtype)  # PyTorch's refusal of an integer result
    data = _sum(x, axes if input.ndim else None, keepdim, dtype=dtype)._data
    return record("NansumBackward0", (input,), data, _nansum_backward, save=(("x", input),),
                  attrs=_attrs(input, axes, keepdim))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over ``dim`` of the non-NaN elements (NaN where there are none)."""
    from .reduce_sums import sum as _sum
    if dtype is not None and not D.to_dtype(dtype).is_floating_point:
        raise RuntimeError(
            "nanmean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {_type_word(D.to_dtype(dtype))}")
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_type_word(input.dtype)}")
    count = _sum(input.isnan().logical_not(), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser), as on the reductions, and
# nansum's keepdim a strict bool (reduce_args.reduction_entry; the method's TypeErrors count
# positions from self)
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402

nansum, nansum_method = reduction_entry(nansum), reduction_entry(nansum, method=True)
nanmean = _aliases(nanmean)
