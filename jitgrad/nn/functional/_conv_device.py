"""``_conv_arrays``' three maps (and unfold/fold) for CUDA arrays: the same steps as on the CPU
(im2col, one GEMM per group batch, col2im) with ``backends/cuda_kernels/conv.py``'s kernels and
the device matmul, over the whole batch at once (no cache to fit). Operands of the GEMMs are
strided Views, so the weight's transpose and the group split cost no copies; the (C, B, L) <->
(B, C, L) reorderings are one layout kernel each.
"""
from __future__ import annotations

from ..._cuda_array import CudaArray
from ...backends import cuda as B
from ...backends.cuda_kernels.common import View

__all__ = ["forward", "input_grad", "weight_grad", "unfold", "fold"]


def _kernels():
    return B.kernels()


def _flat(a):
    """The flat contiguous device buffer of a CudaArray."""
    return a.contiguous().flat()


def _view(buf, shape):
    return View(buf.reshape(buf.size) if len(buf.shape) != 1 else buf, shape)


def _cols(z, geo):
    """im2col of the (B, C, *z) CudaArray ``z``: (C * K, B * L) device array."""
    b, c = z.shape[:2]
    return _kernels().conv.im2col(_flat(z), b, c, geo)


def _small_side(y):
    """(B, Cy, *y) CudaArray -> (Cy, B * L) contiguous device buffer."""
    b, cy = y.shape[:2]
    t = y.reshape(b, cy, -1).transpose(1, 0, 2).contiguous()
    return t.flat()


def forward(z, w, geo, bias=None):
    n, cz = z.shape[:2]
    cy, g = w.shape[0], geo.groups
    ck = (cz // g) * geo.taps
    L = geo.positions
    cols = _cols(z, geo)
    prod = _kernels().matmul.matmul(_view(_flat(w), (g, cy // g, ck)),
                                    _view(cols, (g, ck, n * L)))
    out = CudaArray.wrap(prod).reshape(cy, n, L).transpose(1, 0, 2).contiguous()
    out = out.reshape((n, cy) + tuple(geo.y))
    if bias is not None:
        from .conv import _add_channel_bias
        out = _add_channel_bias(out, bias)
    return out


def input_grad(y, w, geo, cz):
    n, cy = y.shape[:2]
    g = geo.groups
    ck = (cz // g) * geo.taps
    L = geo.positions
    wv = _view(_flat(w), (g, cy // g, ck)).transpose(1, 2)
    cols = _kernels().matmul.matmul(wv, _view(_small_side(y), (g, cy // g, n * L)))
    return CudaArray.wrap(_kernels().conv.col2im(cols, geo, n, cz))


def weight_grad(z, y, geo, w_shape):
    n, cz = z.shape[:2]
    cy, g = w_shape[0], geo.groups
    ck = (cz // g) * geo.taps
    L = geo.positions
    cols = _view(_cols(z, geo), (g, ck, n * L)).transpose(1, 2)
    gw = _kernels().matmul.matmul(_view(_small_side(y), (g, cy // g, n * L)), cols)
    return CudaArray.wrap(gw).reshape(w_shape)


def unfold(z, geo):
    n, c = z.shape[:2]
    cols = CudaArray.wrap(_cols(z, geo))
    return cols.reshape(c * geo.taps, n, geo.positions).transpose(1, 0, 2).contiguous()


def fold(cols, geo, c):
    n = cols.shape[0]
    flat = cols.transpose(1, 0, 2).contiguous().flat()
    return CudaArray.wrap(_kernels().conv.col2im(flat, geo, n, c))
