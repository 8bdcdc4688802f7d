"""Pooling and resampling as three recorded ops over the last 1-3 dims, on either device.

* ``window_max``: every max pool (plain, dilated, padded, adaptive). Windows are described per
  spatial dim by :class:`Windows` (``range(lo[o], hi[o], step)``, clipped to the input). The
  node saves the flat indices; its backward is ``scatter_planes`` (gradients added at the
  indices), whose own backward gathers at the same indices: differentiable to any order.
* ``resample``: every linear resampling (average pools, adaptive average pools, interpolation
  in all modes) as a separable map given per dim by :class:`Taps`. The backward is the same op
  with the transposed taps (and the transposed op's backward the original), so double backward
  is exact and stays on the kernels.
* ``scatter_planes`` / ``gather_planes``: the index moves of max pools and max unpools.

Geometry (which taps, which windows, which divisor) is the caller's (``nn/functional/
pooling.py`` and ``upsampling.py``): this module only runs it. Tables are host NumPy arrays
built once per geometry (the callers cache them); CUDA copies are uploaded on first use and kept
on the table object, so a training loop moves nothing between host and device.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .composite import ieee_quiet, record

__all__ = ["Taps", "Windows", "resample", "window_max", "scatter_planes", "gather_planes"]


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


_pool_cpu = None


def _cpu():
    """``backends.pool_cpu`` (imports Numba: loaded on first use, then kept here, since an
    import statement on every call costs importlib's parent lookups)."""
    global _pool_cpu
    if _pool_cpu is None:
        from ..backends import pool_cpu
        _pool_cpu = pool_cpu
    return _pool_cpu


def _is_host(data) -> bool:
    return data.__class__ is np.ndarray


def _compute_dtype(dtype) -> np.dtype:
    """float16 is computed in float32 (as PyTorch's opmath) and rounded once on output."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


class Taps:
    """One spatial dim's linear map: ``out[o] = sum_t weight[o, t] * in[index[o, t]] /
    divisor[o]`` (index -1 ends a row). ``n_in``: the input length."""

    __slots__ = ("index", "weight", "divisor", "n_in", "_t", "_cast", "_device")

    def __init__(self, index, weight, divisor, n_in):
        self.index = np.ascontiguousarray(index, dtype=np.int64)
        self.weight = np.ascontiguousarray(weight, dtype=np.float64)
        self.divisor = np.ascontiguousarray(divisor, dtype=np.float64)
        self.n_in = int(n_in)
        self._t = None
        self._cast = {}
        self._device = {}

    @property
    def n_out(self) -> int:
        return self.index.shape[0]

    @staticmethod
    def from_lists(rows, n_in, divisor=None):
        """``rows[o]``: list of ``(index, weight)``; ``divisor`` per output (default 1)."""
        width = max([len(r) for r in rows] + [1])
        index = np.full((len(rows), width), -1, np.int64)
        weight = np.zeros((len(rows), width))
        for o, r in enumerate(rows):
            for t, (i, w) in enumerate(r):
                index[o, t] = i
                weight[o, t] = w
        div = np.ones(len(rows)) if divisor is None else divisor
        return Taps(index, weight, div, n_in)

    @property
    def T(self) -> Taps:  # noqa: N802 - the transpose
        """The transposed map (the VJP): input ``i`` collects ``weight / divisor`` from every
        output that reads it."""
        if self._t is None:
            rows = [[] for _ in range(self.n_in)]
            for o in range(self.n_out):
                for t in range(self.index.shape[1]):
                    i = self.index[o, t]
                    if i < 0:
                        break
                    rows[i].append((o, self.weight[o, t] / self.divisor[o]))
            self._t = Taps.from_lists(rows, self.n_out)
            self._t._t = self
        return self._t

    def tables(self, dtype):
        """``(index, weight, divisor)`` with weights in ``dtype`` (host arrays)."""
        dtype = np.dtype(dtype)
        hit = self._cast.get(dtype)
        if hit is None:
            hit = self._cast[dtype] = (self.index, self.weight.astype(dtype),
                                       self.divisor.astype(dtype))
        return hit

    def device_tables(self, dtype):
        """The same, uploaded once, flat, with the column count: ``(index, weight, div, T)``."""
        dtype = np.dtype(dtype)
        hit = self._device.get(dtype)
        if hit is None:
            from ..backends import cuda as B
            index, weight, div = self.tables(dtype)
            hit = self._device[dtype] = (B.to_device(index.reshape(-1)),
                                         B.to_device(weight.reshape(-1)), B.to_device(div),
                                         index.shape[1])
        return hit


UNIT_TAPS = Taps(np.zeros((1, 1)), np.ones((1, 1)), np.ones(1), 1)


class Windows:
    """One spatial dim's max-pool windows: output ``o`` looks at ``range(lo[o], hi[o], step)``
    of an input of length ``n_in``."""

    __slots__ = ("lo", "hi", "step", "n_in", "regular", "_device")

    def __init__(self, lo, hi, step, n_in):
        self.lo = np.ascontiguousarray(lo, dtype=np.int64)
        self.hi = np.ascontiguousarray(hi, dtype=np.int64)
        self.step = int(step)
        self.n_in = int(n_in)
        self.regular = self._regular()
        self._device = None

    def _regular(self):
        """``(size, stride)`` when output ``o`` looks at ``range(o * stride, o * stride +
        size)`` (no padding, dilation or clipped window: the CPU's fast 2-D kernel), else
        None."""
        lo, hi, n = self.lo, self.hi, self.lo.shape[0]
        if self.step != 1 or n == 0 or lo[0] != 0:
            return None
        size = int(hi[0])
        stride = int(lo[1]) if n > 1 else 1
        if size < 1 or stride < 1:
            return None
        expected = np.arange(n, dtype=np.int64) * stride
        if not (np.array_equal(lo, expected) and np.array_equal(hi, expected + size)):
            return None
        return size, stride

    @property
    def n_out(self) -> int:
        return self.lo.shape[0]

    def device_tables(self):
        if self._device is None:
            from ..backends import cuda as B
            self._device = (B.to_device(self.lo), B.to_device(self.hi), self.step)
        return self._device


UNIT_WINDOWS = Windows(np.zeros(1), np.ones(1), 1, 1)


def _split(x: Tensor, nsp: int):
    shape = tuple(x.shape)
    return shape[:-nsp], shape[-nsp:]


def _pad3(items, unit):
    return (unit,) * (3 - len(items)) + tuple(items)


def _as_host_planes(data, planes, spatial3, dtype):
    return np.ascontiguousarray(data, dtype=dtype).reshape((planes,) + spatial3)


# ----------------------------------------------------------------------------- resample


@ieee_quiet
def _resample_data(data, taps, lead, in_sp, dtype):
    """The resampled array of ``data`` (``lead + in_sp``) under ``taps`` (one per spatial dim)."""
    taps3 = _pad3(taps, UNIT_TAPS)
    in3 = _pad3(in_sp, 1)
    out_sp = tuple(t.n_out for t in taps)
    out3 = tuple(t.n_out for t in taps3)
    planes = _prod(lead)
    cdt = _compute_dtype(dtype)
    if _is_host(data):
        x = _as_host_planes(data, planes, in3, cdt)
        out = _cpu().resample(x, [t.tables(cdt) for t in taps3], out3)
        return out.reshape(lead + out_sp).astype(dtype, copy=False)
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    flat = data.flat()
    tables = [t.device_tables(cdt) for t in taps3]
    out = B.kernels().pool.resample(flat, in3, tables, out3)
    return CudaArray(out, lead + out_sp)


def resample(x: Tensor, taps, node: str, back: str, save_input=False, pooled=None,
             vjp_taps=None) -> Tensor:
    """``x`` resampled over its last ``len(taps)`` dims, recorded as ``node``; the backward
    node (the transposed map) is called ``back``. ``save_input``: keep ``x`` as PyTorch's
    pooling nodes do (``_saved_self``): writing into it in place, or a second backward, then
    raises PyTorch's error; and the backward node then also takes ``x`` (see ``pooled``).
    ``pooled``: for a pool's backward, the pooled input: an extra input slot of zero gradient,
    as in PyTorch's ``*PoolBackward(grad_output, self)`` (whose ``self`` derivative is
    ``zeros_like``), so the node records when only the input requires grad. ``vjp_taps``:
    the map whose transpose is the backward, where it is not ``taps`` (PyTorch's 1-D/3-D
    nearest); the backward's own backward is then ``taps`` again."""
    lead, in_sp = _split(x, len(taps))
    for t, n in zip(taps, in_sp):
        if t.n_in != n:
            raise ValueError(f"resample: taps for length {t.n_in}, input has {n}")
    data = _resample_data(x._data, taps, lead, in_sp, x._data.dtype)
    return record(node, (x, pooled), data, _resample_backward,
                  save=(("self", x),) if save_input else (),
                  attrs={"taps": tuple(taps), "vjp_taps": vjp_taps, "node": node,
                         "back": back, "pooled": pooled})


def _check_saved(node):
    if node.ctx._saved:
        node.saved("self")  # PyTorch's version check on the saved input


def _zero_grad(node):
    """The gradient for a pool backward's ``pooled`` slot: zeros, as PyTorch's."""
    if not node.ctx.needs_input_grad[1]:
        return None
    from .basic import zeros_like
    return zeros_like(node.ctx.attrs["pooled"])


def _pooled_input(node):
    """The forward's saved input, passed on to its backward node as ``pooled``."""
    return node.saved("self") if node.ctx._saved else None


def _resample_backward(node, g):
    _check_saved(node)
    a = node.ctx.attrs
    vjp = a["vjp_taps"]
    gx = resample(g, tuple(t.T for t in (vjp or a["taps"])), a["back"], a["node"],
                  pooled=_pooled_input(node),
                  vjp_taps=None if vjp is None else tuple(t.T for t in a["taps"]))
    return (gx, _zero_grad(node))


# ----------------------------------------------------------------------------- window max


def window_max(x: Tensor, windows, node: str, back: str):
    """Max over windows of the last ``len(windows)`` dims: ``(values, indices)``; values are
    recorded as ``node`` (backward node: ``back``, saving ``x`` as PyTorch's ``_saved_self``),
    indices are flat per plane (int64)."""
    lead, in_sp = _split(x, len(windows))
    w3 = _pad3(windows, UNIT_WINDOWS)
    in3 = _pad3(in_sp, 1)
    out_sp = tuple(w.n_out for w in windows)
    out3 = tuple(w.n_out for w in w3)
    planes = _prod(lead)
    data = x._data
    dtype = data.dtype
    cdt = _compute_dtype(dtype)
    if _is_host(data):
        xs = _as_host_planes(data, planes, in3, cdt)
        if in3[0] == 1 and out3[0] == 1 and w3[1].regular and w3[2].regular:
            (kh, sh), (kw, sw) = w3[1].regular, w3[2].regular
            vals, idx = _cpu().max_pool2d_regular(xs.reshape(planes, in3[1], in3[2]),
                                                  (kh, kw), (sh, sw), out3[1:])
        else:
            vals, idx = _cpu().window_max(xs, [(w.lo, w.hi, w.step) for w in w3], out3)
        vals = vals.reshape(lead + out_sp).astype(dtype, copy=False)
        idx = idx.reshape(lead + out_sp)
    else:
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        flat = data.flat(None, cdt) if cdt != dtype else data.flat()
        v, i = B.kernels().pool.window_max(flat, in3, [w.device_tables() for w in w3], out3)
        vals = CudaArray(v, lead + out_sp)
        if cdt != dtype:
            vals = vals.astype(dtype)
        idx = CudaArray(i, lead + out_sp)
    out = record(node, (x,), vals, _window_max_backward, save=(("self", x),),
                 attrs={"idx": idx, "in_shape": lead + in_sp, "nsp": len(windows),
                        "back": back})
    return out, Tensor._make(idx)


def _window_max_backward(node, g):
    _check_saved(node)
    a = node.ctx.attrs
    return (scatter_planes(g, a["idx"], a["in_shape"], a["nsp"], a["back"],
                           pooled=node.saved("self")),)


def scatter_planes(g: Tensor, idx, in_shape, nsp: int, node: str, pooled=None) -> Tensor:
    """A zero tensor of ``in_shape`` with ``g`` added at ``idx`` (``g``'s shape; flat indices
    into each plane of the last ``nsp`` dims), recorded as ``node``. ``pooled``: as for
    :func:`resample` (a max pool's input: a slot of zero gradient)."""
    in_shape = tuple(in_shape)
    out_shape = tuple(g.shape)
    data = _scatter_data(g._data, idx, out_shape, in_shape, nsp)
    return record(node, (g, pooled), data, _scatter_planes_backward,
                  attrs={"idx": idx, "out_shape": out_shape, "nsp": nsp, "pooled": pooled})


def _planes(out_shape, in_shape, nsp):
    """(planes, outputs per plane, inputs per plane)."""
    return (_prod(in_shape[:len(in_shape) - nsp]), _prod(out_shape[len(out_shape) - nsp:]),
            _prod(in_shape[len(in_shape) - nsp:]))


def _scatter_data(gd, idx, out_shape, in_shape, nsp):
    planes, q, r = _planes(out_shape, in_shape, nsp)
    dtype = gd.dtype
    if _is_host(gd):
        g2 = np.ascontiguousarray(gd, dtype=_compute_dtype(dtype)).reshape(planes, q)
        out = _cpu().scatter_add_planes(g2, idx.reshape(planes, q), r).reshape(in_shape)
        if out.dtype != dtype:
            with np.errstate(all="ignore"):  # float16: a sum past its range is inf, silently
                out = out.astype(dtype)
        return out
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    dst = B.zeros((planes, r), dtype)
    if planes * q:
        B.kernels().index.scatter_add(dst, 1, idx.flat().reshape(planes, q),
                                      gd.flat().reshape(planes, q))
    return CudaArray(dst.reshape(planes * r), in_shape)


def _scatter_planes_backward(node, gg):
    a = node.ctx.attrs
    return (gather_planes(gg, a["idx"], a["out_shape"], a["nsp"]),
            _zero_grad(node))


def gather_planes(x: Tensor, idx, out_shape, nsp: int) -> Tensor:
    """``x`` read at ``idx`` (flat per plane of the last ``nsp`` dims) into ``out_shape``:
    jitgrad's gather, so its gradient (and every higher one) is the index layer's."""
    out_shape = tuple(out_shape)
    planes, q, r = _planes(out_shape, tuple(x.shape), nsp)
    index = Tensor._make(idx.reshape(planes, q))
    return x.reshape(planes, r).gather(1, index).reshape(out_shape)
