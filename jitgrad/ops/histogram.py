"""torch.histogram / torch.histogramdd as ATen's HistogramKernel.cpp computes them, composed
from tensor ops (searchsorted, where, scatter_add), so CUDA tensors take the same path.

* Edges: given tensors (copied), or ``linspace(min, max, bins + 1)`` in the input's dtype over
  ``range`` or the data's per-dimension min/max (read on the host, as ATen does), an empty
  range widened by 0.5 each way (NumPy's rule).
* An element lands in bin ``upper_bound(edges, x) - 1`` (the last bin keeps its right edge);
  elements outside [first, last edge] and NaN are dropped. With bin counts ATen first guesses
  the bin by linear interpolation and searches only the neighbouring edges; that window is
  reproduced (a clamp of the binary search's answer) so the bins are PyTorch's even where the
  guess and the edges disagree.
* Weights (or ones) are added in element order in the input's dtype (scatter_add), as ATen's
  single-threaded loop; ``density`` divides by the total and by each dimension's bin widths.

No gradient: an input requiring grad gives PyTorch's ``NotImplemented`` node, whose backward
raises its error."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .parser_errors import parser_type_name
from .return_types import _return_type

__all__ = ["histogram", "histogramdd"]

HistogramResult = _return_type("histogram", ("hist", "bin_edges"))
HistogramOutResult = _return_type("histogram_out", ("hist", "bin_edges"))
HistogramddResult = _return_type("histogramdd", ("hist", "bin_edges"))


def _fmt(v):
    """A double as c10 prints it in messages (integers without a decimal point)."""
    if v != v or v in (float("inf"), float("-inf")):
        return {True: "inf", False: "-inf"}.get(v > 0, "nan") if v == v else "nan"
    return f"{v:g}"


def _check_float(x):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{D.scalar_name(x.dtype)}'")


def _check_bin_cts(bin_ct, n):
    if n != len(bin_ct):
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    for d, b in enumerate(bin_ct):
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for "
                               f"dimension {d}")


def _outer_edges(x2, range):  # noqa: A002 - PyTorch's name
    """ATen's select_outer_bin_edges: per-dimension (left, right) as Python floats."""
    n = x2.shape[1]
    left, right = [0.0] * n, [1.0] * n
    if range is not None:
        rng = [float(r) for r in range]
        if len(rng) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range "
                               f"should have {2 * n} elements, but got {len(rng)}")
        left, right = rng[0::2], rng[1::2]
    elif x2.numel() > 0:
        with grad_mode.no_grad():
            lo, hi = x2.amin(0).cpu()._data, x2.amax(0).cpu()._data
        left, right = [float(v) for v in lo], [float(v) for v in hi]
    for d in builtins_range(n):
        lo, hi = left[d], right[d]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_fmt(lo)}, "
                               f"{_fmt(hi)}] is not finite")
        if not lo <= hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{_fmt(lo)} max {_fmt(hi)} for dimension {d}")
        if lo == hi:
            left[d], right[d] = lo - 0.5, hi + 0.5
    return left, right


builtins_range = range


def _check_inputs(x2, bins, weight, shape):
    """ATen's histogramdd_check_inputs (``bins``: edge tensors or None)."""
    n = x2.shape[1]
    if bins is not None:
        if len(bins) != n:
            raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a "
                               f"{n}-dimensional histogram but got {len(bins)}")
        for d, b in enumerate(bins):
            if b.dtype is not x2.dtype:
                raise RuntimeError(
                    "torch.histogramdd: input tensor and bins tensors should have the same "
                    f"dtype, but got input with dtype {D.c_name(x2.dtype)} and bins for "
                    f"dimension {d} with dtype {D.c_name(b.dtype)}")
            if b.ndim != 1:
                raise RuntimeError(
                    "torch.histogramdd: bins tensor should have one dimension, but got "
                    f"{b.ndim} dimensions in the bins tensor for dimension {d}")
            if b.numel() == 0:
                raise RuntimeError(
                    "torch.histogramdd: bins tensor should have at least 1 element, but got "
                    f"0 elements in the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype is not x2.dtype:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight "
                f"tensor should have the same dtype, but got input({D.c_name(x2.dtype)}), and "
                f"weight({D.c_name(weight.dtype)})")
        ws = list(weight.shape) or [1]
        if ws != list(shape[:-1]):
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same shape "
                "as the input tensor excluding its innermost dimension, but got input with "
                f"shape {list(shape)} and weight with shape {list(weight.shape)}")


def _bin_counts(x2, edges, weight, density, local_search):
    """The histogram of the rows of ``x2`` (M, N) over ``edges`` (N 1-D tensors)."""
    from .bucketing import searchsorted
    from .factories import zeros
    from .functional import where
    from .gather_scatter import scatter_add
    nbins = [e.shape[0] - 1 for e in edges]
    total = int(np.prod(nbins))
    m = x2.shape[0]
    index = zeros(m, dtype=D.int64, device=x2.device)
    keep = None
    stride = total
    for d, e in enumerate(edges):
        stride //= max(nbins[d], 1)
        v = x2[:, d]
        lo, hi = e[0], e[-1]
        inside = (v >= lo) & (v <= hi)  # NaN fails both
        pos = searchsorted(e, v, right=True) - 1
        if local_search:  # only the edges next to the interpolated guess are searched
            guess = ((v - lo) * nbins[d] / (hi - lo)).trunc()
            guess = where(inside, guess, 0).long()
            pos = pos.clamp_min(guess.clamp_min(1) - 2).clamp_max((guess + 1).clamp_max(
                nbins[d]))
        pos = where(pos == nbins[d], pos - 1, pos).clamp(0, max(nbins[d] - 1, 0))
        index = index + pos * stride
        keep = inside if keep is None else keep & inside
    index = where(keep, index, total)
    w = weight.reshape(m) if weight is not None else \
        zeros(m, dtype=x2.dtype, device=x2.device) + 1
    hist = scatter_add(zeros(total + 1, dtype=x2.dtype, device=x2.device), 0, index, w)
    hist = hist[:total].reshape(nbins)
    if density:
        total = hist.sum()  # on the CPU ATen's cascade order, which density divides by
        hist = hist / total
        for d, e in enumerate(edges):
            shape = [1] * len(edges)
            shape[d] = nbins[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist.contiguous()


def _not_implemented(name):
    def backward(node, *grads):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return backward


def _mark(name, inputs, t):
    """``t`` as an output of PyTorch's ``NotImplemented`` node when an input requires grad."""
    if grad_mode.is_grad_enabled() and any(isinstance(i, Tensor) and i._requires_grad
                                           for i in inputs):
        return record("NotImplemented", tuple(inputs), t._data, _not_implemented(name))
    return t


def aten_linspace(start, end, steps, dt):
    """ATen's CPU linspace for a float dtype ``dt`` (``factories.linspace``'s kernel: the
    step in the dtype, one fused multiply-add per value from the nearer end); float16 and
    other dtypes round a float64 linspace."""
    t = np.dtype(dt).type
    if steps <= 1:
        return np.full(steps, t(start), dt)
    if t not in (np.float32, np.float64):
        return aten_linspace(start, end, steps, np.float64).astype(dt)
    from ._range_kernels import float_linspace
    return float_linspace(start, end, steps, dt)


def _edges_from_counts(x2, bin_ct, range):  # noqa: A002 - PyTorch's name
    from .from_data import tensor
    left, right = _outer_edges(x2, range)
    return [tensor(aten_linspace(left[d], right[d], bin_ct[d] + 1, x2.dtype.np),
                   device=x2.device) for d in builtins_range(len(bin_ct))]


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """``torch.histogram``: (hist, bin_edges) of the flattened input; ``bins`` a count (equal
    bins over ``range`` or the data's range) or a 1-D tensor of edges."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogram(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    _check_float(input)
    x2 = input.detach().reshape(input.numel(), 1)
    w = weight.detach().reshape(weight.numel()) if weight is not None else None
    with grad_mode.no_grad():
        if isinstance(bins, Tensor):
            _check_inputs(x2, [bins], w, x2.shape)
            _check_bin_cts([bins.numel() - 1], 1)
            edges = [bins.detach().clone()]
            hist = _bin_counts(x2, edges, w, density, local_search=False)
        else:
            if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
                raise TypeError(f"histogram(): argument 'bins' (position 2) must be Tensor, not "
                                f"{parser_type_name(bins)}")
            _check_bin_cts([int(bins)], 1)
            edges = _edges_from_counts(x2, [int(bins)], range)
            _check_inputs(x2, None, w, x2.shape)
            hist = _bin_counts(x2, edges, w, density, local_search=True)
    inputs = [t for t in (input, bins, weight) if isinstance(t, Tensor)]
    hist, edge = _mark("histogram", inputs, hist), _mark("histogram", inputs, edges[0])
    if out is None:
        return HistogramResult(hist, edge)
    ho, eo = out
    name = D.c_name(input.dtype)
    if ho.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogram: input tensor and hist tensor should have the same "
                           f"dtype, but got input {name} and hist {D.c_name(ho.dtype)}")
    if eo.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogram: input tensor and bin_edges tensor should have the "
                           f"same dtype, but got input {name} and bin_edges "
                           f"{D.c_name(eo.dtype)} for dimension 0")
    return HistogramOutResult(_write(hist, ho), _write(edge, eo))


def _write(result, out):
    """ATen's out= here: resized (with its warning) and filled; no autograd refusal."""
    from .quantile import _resize_output
    _resize_output(out, list(result.shape))
    with grad_mode.no_grad():
        out.copy_(result)
    return out


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """``torch.histogramdd``: the histogram of the rows of ``input`` (the last dimension holds
    each point's N coordinates); ``bins`` a count, N counts, or N 1-D edge tensors."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogramdd(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    _check_float(input)
    shape = tuple(input.shape)
    n = shape[-1]
    x2 = input.detach().reshape(-1, n)
    w = weight.detach() if weight is not None else None
    tensors = isinstance(bins, (list, tuple)) and len(bins) > 0 and \
        all(isinstance(b, Tensor) for b in bins)
    with grad_mode.no_grad():
        if tensors:
            _check_inputs(x2, list(bins), w, shape)
            _check_bin_cts([b.numel() - 1 for b in bins], n)
            edges = [b.detach().clone() for b in bins]
            hist = _bin_counts(x2, edges, w, density, local_search=False)
            name = "_histogramdd_from_bin_tensors"
        else:
            bin_ct = [int(bins)] * n if isinstance(bins, (int, np.integer)) else \
                [int(b) for b in bins]
            _check_bin_cts(bin_ct, n)
            edges = _edges_from_counts(x2, bin_ct, range)
            _check_inputs(x2, None, w, shape)
            hist = _bin_counts(x2, edges, w, density, local_search=True)
            name = "_histogramdd_from_bin_cts"
    inputs = [t for t in (input, weight) if isinstance(t, Tensor)]
    if tensors:
        edge_out = tuple(bins)  # PyTorch hands the given edge tensors back
    else:
        edge_out = tuple(_mark("_histogramdd_bin_edges", inputs, e) for e in edges)
    return HistogramddResult(_mark(name, inputs + (list(bins) if tensors else []), hist),
                             edge_out)
