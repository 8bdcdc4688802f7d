"""``F.pad``: constant, reflect, replicate and circular padding (one index map per mode;
the backward scatters through the same map). On the CPU the maps index NumPy arrays
(``np.take`` forward, ``np.add.at`` backward); on CUDA the same maps, uploaded, feed
``index_select`` (its backward is ``index_add`` on the device), shown as PyTorch's node."""
from __future__ import annotations

import numpy as np

from ...ops.composite import record, record_composition
from ...tensor import Tensor
from .. import _device
from ._common import _check_tensor, _const, _creating_graph


def _pad_index(n, lo, hi, mode):
    """Source index (or -1 for the constant fill) of each output position along one dim."""
    j = np.arange(-lo, n + hi)
    if mode == "constant":
        return np.where((j >= 0) & (j < n), j, -1)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":  # negative pads crop first; the wrap reads the cropped range
        start, m = max(-lo, 0), n + min(lo, 0) + min(hi, 0)
        return start + np.mod(np.arange(-max(lo, 0), m + max(hi, 0)), m)
    period = 2 * (n - 1)  # reflect: mirror about the edges, edges not repeated
    if period == 0:
        return np.zeros_like(j)
    j = np.mod(j, period)
    return np.where(j < n, j, period - j)


def _device_pad(input, maps, value, name):
    """F.pad on a CUDA tensor: per padded dim an ``index_select`` through the same index map as
    the CPU's (uploaded: a few bytes per padded dim, in the forward only) and a ``masked_fill``
    where the constant mode fills, recorded as the one node PyTorch shows."""
    fill = 0 if value is None else value
    device = input.device

    def build(t):
        for d, idx in maps:
            t = t.index_select(d, Tensor._make(np.maximum(idx, 0)).to(device))
            if (idx < 0).any():
                shape = [1] * t.ndim
                shape[d] = -1
                t = t.masked_fill(Tensor._make((idx < 0).reshape(shape)).to(device), fill)
        return t

    return record_composition(name, (input,), build)


def _pad_backward(node, g):
    a = node.ctx.attrs
    maps, shape = a["maps"], a["in_shape"]
    if not _creating_graph():
        gd = g._data
        for d, idx in reversed(maps):
            valid = idx >= 0
            gm = np.moveaxis(gd, d, 0)[valid]
            out = np.zeros((shape[d],) + gm.shape[1:], dtype=gd.dtype)
            np.add.at(out, idx[valid], gm)
            gd = np.moveaxis(out, 0, d)
        return (Tensor._make(np.ascontiguousarray(gd)),)
    from ...ops.basic import zeros
    for d, idx in reversed(maps):
        valid = idx >= 0
        gsel = g.index_select(d, _const(np.nonzero(valid)[0]))
        zshape = list(g.shape)
        zshape[d] = shape[d]
        g = zeros(*zshape, dtype=g.dtype).index_add(d, _const(idx[valid]), gsel)
    return (g,)


def pad(input, pad, mode="constant", value=None):
    """PyTorch's ``F.pad``: ``pad`` lists (left, right) pairs from the last dim backwards.
    Nodes: ConstantPadNdBackward0, ReflectionPad{1,2,3}DBackward0,
    ReplicationPad{1,2,3}DBackward0, CopySlices (circular, as PyTorch's Python version)."""
    _check_tensor(input, "pad")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd, k = input.ndim, len(pad) // 2
    if k > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of "
                           f"dimension {nd}")
    shape = tuple(input.shape)
    if mode == "constant":
        name = "ConstantPadNdBackward0"
    elif mode in ("reflect", "replicate", "circular"):
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if not (k in (1, 2, 3) and k + 1 <= nd <= k + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
        name = {"reflect": f"ReflectionPad{k}DBackward0",
                "replicate": f"ReplicationPad{k}DBackward0", "circular": "CopySlices"}[mode]
    else:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    maps = []
    for i in range(k):
        d = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape[d]
        if n + lo + hi < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{d} of input {list(shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        maps.append((d, _pad_index(n, lo, hi, mode)))
    if _device.is_cuda(input):
        if any(shape[d] == 0 and idx.size for d, idx in maps):
            # what the CPU path raises (NumPy's take); PyTorch fills. Not an out-of-range read
            raise IndexError("cannot do a non-empty take from an empty axes.")
        return _device_pad(input, maps, value, name)
    x = input._data
    for d, idx in maps:
        taken = np.take(x, np.maximum(idx, 0), axis=d)
        if mode == "constant" and np.any(idx < 0):
            fill = np.zeros((), dtype=x.dtype) if value is None else np.asarray(value).astype(
                x.dtype)
            mask_shape = [1] * x.ndim
            mask_shape[d] = idx.size
            taken = np.where((idx < 0).reshape(mask_shape), fill, taken)
        x = taken
    return record(name, (input,), np.ascontiguousarray(x), _pad_backward,
                  attrs={"maps": maps, "in_shape": shape})
