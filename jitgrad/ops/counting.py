"""bincount, isin, unique_consecutive: PyTorch's checks, dtypes and errors.

bincount's output size depends on the values: the counts are made on the host (a CUDA input is
read back, as PyTorch synchronizes there too) and the result goes back to the input's device.
isin compares every element with every test element in tensor ops (both devices).
unique_consecutive runs on the host (a CUDA input is staged: ``host_staged``). Neither
bincount (weights) nor unique_consecutive is differentiable in PyTorch: their nodes
(NotImplemented / UniqueConsecutiveBackward0) raise its errors.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .host_staged import host_staged
from .parser_errors import parser_type_name
from .reduce_args import _wrap

__all__ = ["bincount", "isin", "unique_consecutive"]


def _int_arg(fn, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {parser_type_name(v)}")


def _bincount_backward(node, g):
    raise RuntimeError("derivative for aten::bincount is not implemented")


def bincount(input, weights=None, minlength=0):
    """Occurrences of each value 0..max(input) in a 1-D non-negative integer tensor (summed
    ``weights`` instead of ones when given): int64 counts; float32 weights sum in float32, any
    other weights in float64."""
    from .basic import tensor
    _int_arg("bincount", "minlength", minlength)
    if input.dtype.is_floating_point or input.dtype is D.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim == 1 and input.numel() == 0:
        return tensor(np.zeros(minlength, np.int64), device=input.device)  # even with weights
    values = np.asarray(input.cpu()._data).astype(np.int64)
    if input.ndim != 1 or values.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return tensor(np.bincount(values, minlength=minlength).astype(np.int64),
                      device=input.device)
    if weights.ndim != 1 or weights.shape[0] != input.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = np.float32 if weights.dtype is D.float32 else np.float64
    w = np.asarray(weights.detach().cpu()._data).astype(dt)
    counts = np.zeros(max(minlength, int(values.max()) + 1), dt)
    np.add.at(counts, values, w)  # in input order, in the weights' dtype (as ATen's loop)
    data = tensor(counts, device=input.device)._data
    if weights._requires_grad:  # PyTorch records a node whose backward raises
        return record("NotImplemented", (weights,), data, _bincount_backward)
    return Tensor._make(data)


_ISIN_SIGNATURES = (
    " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = "
    "False, Tensor out = None)\n"
    " * (Number element, Tensor test_elements, *, bool assume_unique = False, bool invert = "
    "False, Tensor out = None)\n"
    " * (Tensor elements, Number test_element, *, bool assume_unique = False, bool invert = "
    "False, Tensor out = None)\n")


def _is_number(v):
    return isinstance(v, (int, float, bool, np.number, np.bool_))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (compared in their promoted
    dtype); ``invert`` negates. Either side may be a number (not both)."""
    from .basic import scalar_tensor
    from .functional import logical_not
    e_t, t_t = isinstance(elements, Tensor), isinstance(test_elements, Tensor)
    if (not (e_t or t_t) or not (e_t or _is_number(elements))
            or not (t_t or _is_number(test_elements))
            or not isinstance(assume_unique, bool) or not isinstance(invert, bool)):
        got = ", ".join([parser_type_name(a)
                         for a in (elements, test_elements)]
                        + [f"{k}={parser_type_name(v)}" for k, v in
                           (("assume_unique", assume_unique), ("invert", invert))
                           if not isinstance(v, bool)])
        raise TypeError(f"isin() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n{_ISIN_SIGNATURES}")
    for v in (elements, test_elements):
        if (isinstance(v, Tensor) and v.dtype is D.bool_) or isinstance(v, (bool, np.bool_)):
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    device = (elements if e_t else test_elements).device
    if not e_t:
        elements = scalar_tensor(elements, dtype=D.result_type(elements, test_elements),
                                 device=device)
    if not t_t:
        test_elements = scalar_tensor(test_elements,
                                      dtype=D.result_type(elements, test_elements),
                                      device=device)
    dt = D.result_type(elements, test_elements)
    a = elements.detach().to(dt)
    b = test_elements.detach().to(dt).reshape(-1)
    if b.numel() == 0:
        from .basic import zeros
        hit = zeros(tuple(a.shape), dtype=D.bool_, device=device)
    else:
        hit = (a.reshape((-1, 1)) == b.reshape((1, -1))).any(-1).reshape(tuple(a.shape))
    return logical_not(hit) if invert else hit


def _unique_consecutive_backward(node, g):
    raise NotImplementedError("the derivative for 'unique_consecutive' is not implemented.")


@host_staged
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapses runs of equal consecutive elements (slices along ``dim``) to one, with the
    inverse indices (which run each element belongs to) and the run lengths on request."""
    a = input._data
    if dim is None:
        flat = a.reshape(-1)
        starts = np.ones(flat.shape[0], bool)
        starts[1:] = flat[1:] != flat[:-1]
        out = flat[starts]
        inv_shape = a.shape
    else:
        _int_arg("unique_consecutive", "dim", dim)
        if a.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = _wrap(dim, a.ndim)
        if a.size == 0 and a.shape[d] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        moved = np.moveaxis(a, d, 0).reshape(a.shape[d], a.size // max(a.shape[d], 1))
        starts = np.ones(a.shape[d], bool)
        starts[1:] = (moved[1:] != moved[:-1]).any(1)
        out = np.compress(starts, a, axis=d)
        inv_shape = (a.shape[d],)
    inv = (np.cumsum(starts) - 1).astype(np.int64).reshape(inv_shape)
    counts = np.diff(np.append(np.flatnonzero(starts), starts.shape[0])).astype(np.int64)
    outs = [record("UniqueConsecutiveBackward0", (input,), np.ascontiguousarray(out),
                   _unique_consecutive_backward)]
    if return_inverse:
        outs.append(Tensor._make(inv))
    if return_counts:
        outs.append(Tensor._make(counts))
    return outs[0] if len(outs) == 1 else tuple(outs)
