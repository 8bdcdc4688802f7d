"""ATen's ``vec::reduce_all`` order as one Numba-inlinable helper, for the kernels that must give
PyTorch's bits for a row reduction (softmax/log_softmax forwards and backwards, the cross-entropy
fast path's backward).

ATen reduces a row of ``c`` elements with ``w`` lanes (one vector: 16 float32 / 8 float64 on
the AVX-512 build, 8 / 4 on AVX2; the caller sizes ``acc``): a row shorter than a vector is
reduced left to right; a longer one is accumulated lane by lane (the first vector's elements,
then each further whole vector's, then the partial last vector's into the first lanes), and the
lanes are then folded: float32 by a butterfly (lane ``l`` with lane ``l + h`` for h = w/2, ...,
1: AVX-512's 256/128/64/32-bit shuffles, AVX2's ``_mm256_permute2f128_ps`` then
``_mm256_shuffle_ps`` 0x4E and 0xB1 in ``VecReduceAllSIMD``), float64 left to right (neither
build specializes ``vec_reduce_all`` for double).

The element reduced is ``x[j]`` (``LANE_SUM``, ``LANE_MAX``) or the rounded product ``x[j] *
y[j]`` (``LANE_DOT``: ``map2_reduce_all``); ``fuse_tail`` (dot only) adds the partial last
vector's products with one FMA each, as GCC contracts that loop in one PyTorch build. The
helper is inlined into its callers (``inline="always"``): ``mode`` and ``fuse_tail`` are then
constants of the caller and LLVM drops the branches they decide, and the caller's flags (no
fast-math) apply. Numba's disk cache keys a kernel on its own file only: a change here needs
the callers' ``__pycache__`` entries cleared (or their files touched) to take effect.
"""
from __future__ import annotations

from ..codegen.kcache import njit_cached as njit
from ._intrinsics import fma

__all__ = ["LANE_SUM", "LANE_MAX", "LANE_DOT", "lane_reduce"]

LANE_SUM, LANE_MAX, LANE_DOT = 0, 1, 2

_FLAGS = dict(nogil=True, error_model="numpy", fastmath=False)


@njit(inline="always", **_FLAGS)
def _combine(a, b, mode):
    """``vec::maximum(a, b)`` for ``LANE_MAX`` (``_mm512_max_ps`` keeps ``b`` unless ``a >
    b``; a NaN on either side wins), else ``a + b``."""
    if mode == LANE_MAX:
        if a != a or b != b:
            return a + b
        return a if a > b else b
    return a + b


@njit(inline="always", **_FLAGS)
def _element(x, y, j, mode):
    if mode == LANE_DOT:
        return x[j] * y[j]
    return x[j]


@njit(inline="always", **_FLAGS)
def lane_reduce(x, y, acc, mode, fuse_tail):
    """``vec::reduce_all`` of the 1-D array ``x`` (``LANE_DOT``: of ``x * y``; other modes
    ignore ``y``, pass ``x``) in ATen's order, ``acc`` a scratch array of one vector's lanes in
    the dtype (its length is the lane count)."""
    c = x.shape[0]
    w = acc.shape[0]
    if c < w:
        s = _element(x, y, 0, mode)
        for j in range(1, c):
            s = _combine(s, _element(x, y, j, mode), mode)
        return s
    for lane in range(w):
        acc[lane] = _element(x, y, lane, mode)
    d = w
    while d + w <= c:
        for lane in range(w):
            acc[lane] = _combine(acc[lane], _element(x, y, d + lane, mode), mode)
        d += w
    for lane in range(c - d):
        if mode == LANE_DOT and fuse_tail:
            acc[lane] = fma(x[d + lane], y[d + lane], acc[lane])
        else:
            acc[lane] = _combine(acc[lane], _element(x, y, d + lane, mode), mode)
    if x.itemsize == 4:
        h = w // 2
        while h >= 1:
            for lane in range(h):
                acc[lane] = _combine(acc[lane], acc[lane + h], mode)
            h //= 2
        return acc[0]
    s = acc[0]
    for lane in range(1, w):
        s = _combine(s, acc[lane], mode)
    return s
