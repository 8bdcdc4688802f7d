"""``grid_sample``'s kernels, declared once and rendered for the CPU (Numba) and CUDA (numba-cuda).

The ``gs_*`` functions below are the declaration: scalar Python over flat arrays, written only
with the shared scalar vocabulary (``lit``, ``floor``, ``rint``, ``trunc``; see
``backends/cpu_env.py`` and ``backends/cuda_env.py``) and one write primitive, ``add_at``. A
target renders their source into a kernel module (``kcache.load``; the text is the cache key),
as ``codegen`` does for elementwise LoopSpecs: on the CPU every function becomes an ``njit``
function (inlined by LLVM), ``add_at`` a plain ``+=`` and the loops run over samples (serial,
or ``prange`` over the batch for large inputs: each sample owns its slice of the input
gradient, so the parallel backward adds in the same order as the serial one); on CUDA they
become ``device_jit`` functions, ``add_at`` is ``cuda.atomic.add`` (several grid points may read
one pixel) and the loops are grid-stride kernels over (sample, grid point).

The arithmetic is ATen's CPU kernel (``native/cpu/GridSamplerKernel.cpp``, PyTorch's vectorized
``ComputeLocation`` and ``ApplyGridSample``), operation for operation, so values and the NaN/inf
rules agree with PyTorch on the CPU: the forward clip sends NaN to 0 (``clamp_min(Vec(0), in)``)
while the backward's ``clip_coordinates_get_grad`` keeps it; reflection is the
``trunc``-of-double-flips form; out-of-range taps read 0 but still multiply their weight (so an
inf or NaN coordinate gives NaN under zeros padding); nearest rounds half to even. ATen tests
bounds on int32 conversions of the floored coordinates; here the same tests are made on the
floats (equal for every coordinate inside int32's range), so a NaN or inf never reaches an
integer conversion (undefined on the CPU, saturating on a GPU). Where ATen reads out of bounds
(a NaN grid coordinate in the bilinear backward with border/reflection padding: PyTorch crashes
or reads garbage) the tap is skipped and the grid gradient is NaN.

Modes: 0 bilinear, 1 nearest, 2 bicubic; padding: 0 zeros, 1 border, 2 reflection (ATen's
enums). Arrays are flat and C-contiguous: input ``(N, C, H, W)``, grid ``(N, P, 2)`` (``P`` the
output's ``H_out * W_out``), output ``(N, C, P)``.
"""
# ruff: noqa: F821 - the declaration uses the vocabulary names, bound by each target's module
from __future__ import annotations

__all__ = ["gs_forward_point", "gs_backward_point"]


# ----------------------------------------------------------------------------- the declaration


def gs_scale(v, size, align):
    """ATen's ``scaling_factor`` (the unnormalization's slope) in ``v``'s type."""
    if align:
        return (size - lit(v, 1.0)) / lit(v, 2.0)
    return size / lit(v, 2.0)


def gs_unnormalize(v, size, align):
    if align:
        return (v + lit(v, 1.0)) * gs_scale(v, size, align)
    return (v + lit(v, 1.0)) * gs_scale(v, size, align) - lit(v, 0.5)


def gs_clip(v, size):
    # clamp_min(Vec(0), in) is max(in, 0) with 0 as the answer for NaN
    lo = v if v > lit(v, 0.0) else lit(v, 0.0)
    hi = size - lit(v, 1.0)
    return lo if lo < hi else hi


def gs_clip_grad(v, size):
    """``clip_coordinates_get_grad``: NaN-propagating bounds, borders count as outside."""
    zero = lit(v, 0.0)
    lo = v if (v > zero or v != v) else zero
    hi = size - lit(v, 1.0)
    r = lo if (lo < hi or lo != lo) else hi
    inside = (lo != zero) and (r != hi)
    return r, inside


def gs_span(v, size, align):
    """(low, twice_span, empty) of the reflection (ATen's ComputeLocationBase)."""
    if align:
        return lit(v, 0.0), (size - lit(v, 1.0)) * lit(v, 2.0), size <= lit(v, 1.0)
    return lit(v, -0.5), size * lit(v, 2.0), size <= lit(v, 0.0)


def gs_reflect(v, size, align):
    low, twice, empty = gs_span(v, size, align)
    if empty:
        return lit(v, 0.0)
    a = abs(v - low)
    extra = a - trunc(a / twice) * twice
    other = twice - extra
    # at::vec::minimum propagates NaN: ``other`` is NaN whenever ``extra`` is
    return (extra if extra < other else other) + low


def gs_reflect_grad(v, size, align):
    low, twice, empty = gs_span(v, size, align)
    if empty:
        return lit(v, 0.0), lit(v, 0.0)
    d = v - low
    neg = d < lit(v, 0.0)
    a = abs(d)
    extra = a - trunc(a / twice) * twice
    other = twice - extra
    more = extra > other
    r = (other if more else extra) + low
    return r, (lit(v, -1.0) if more != neg else lit(v, 1.0))


def gs_coordinates(v, size, padding, align):
    """``compute_coordinates``: padding applied to an unnormalized coordinate."""
    if padding == 1:
        return gs_clip(v, size)
    if padding == 2:
        return gs_clip(gs_reflect(v, size, align), size)
    return v


def gs_source(v, size, padding, align):
    """``ComputeLocation::apply``: the source coordinate of a grid value."""
    return gs_coordinates(gs_unnormalize(v, size, align), size, padding, align)


def gs_source_grad(v, size, padding, align):
    """``ComputeLocation::apply_get_grad``: (source coordinate, d source / d grid value)."""
    u = gs_unnormalize(v, size, align)
    s = gs_scale(v, size, align)
    if padding == 1:
        r, inside = gs_clip_grad(u, size)
        return r, (s if inside else lit(v, 0.0))
    if padding == 2:
        r, gr = gs_reflect_grad(u, size, align)
        r, inside = gs_clip_grad(r, size)
        return r, (gr * s if inside else lit(v, 0.0))
    return u, s


def gs_corners(x, y, wf, hf, padding):
    """Bilinear taps around (x, y): ((west, north) floors, the four distances, the four
    in-bounds masks nw/ne/sw/se). ATen's int32 tests ``i > -1 & i < W`` are made on the floors;
    with border/reflection padding only the east/south taps can fall outside."""
    xw = floor(x)
    yn = floor(y)
    w = x - xw
    n = y - yn
    if padding == 0:
        mw = (xw >= lit(x, 0.0)) and (xw < wf)
        mn = (yn >= lit(y, 0.0)) and (yn < hf)
        me = (xw >= lit(x, -1.0)) and (xw < wf - lit(x, 1.0))
        ms = (yn >= lit(y, -1.0)) and (yn < hf - lit(y, 1.0))
    else:
        mw = xw == xw
        mn = yn == yn
        me = mw and (xw < wf - lit(x, 1.0))
        ms = mn and (yn < hf - lit(y, 1.0))
    return xw, yn, w, lit(x, 1.0) - w, n, lit(y, 1.0) - n, mw and mn, me and mn, mw and ms, \
        me and ms


def gs_index(xw, yn, ok_x, ok_y, width):
    """The flat plane offset of the north-west tap (0 where it is not a finite coordinate)."""
    if ok_x and ok_y:
        return int(yn) * width + int(xw)
    return 0


def gs_read(a, i, ok, zero):
    return a[i] if ok else zero


def gs_tap(xv, yv, width, wf, hf, padding, align):
    """Bicubic's ``get_value_bounded`` geometry: (in bounds, flat plane offset)."""
    xc = gs_coordinates(xv, wf, padding, align)
    yc = gs_coordinates(yv, hf, padding, align)
    tx = trunc(xc)
    ty = trunc(yc)
    if padding == 0:
        ok = (tx > lit(xv, -1.0)) and (tx < wf) and (ty > lit(yv, -1.0)) and (ty < hf)
    else:
        ok = (tx == tx) and (ty == ty)
    if ok:
        return ok, int(ty) * width + int(tx)
    return ok, 0


def gs_cubic(t):
    a = lit(t, -0.75)
    one = lit(t, 1.0)
    x = t + one
    c0 = ((a * x - lit(t, 5.0) * a) * x + lit(t, 8.0) * a) * x - lit(t, 4.0) * a
    c1 = ((a + lit(t, 2.0)) * t - (a + lit(t, 3.0))) * t * t + one
    x = one - t
    c2 = ((a + lit(t, 2.0)) * x - (a + lit(t, 3.0))) * x * x + one
    x = lit(t, 2.0) - t
    c3 = ((a * x - lit(t, 5.0) * a) * x + lit(t, 8.0) * a) * x - lit(t, 4.0) * a
    return c0, c1, c2, c3


def gs_cubic_grad(t):
    """ATen's ``get_cubic_coefficients_grad`` (its sign convention: the backward subtracts)."""
    a = lit(t, -0.75)
    x = lit(t, -1.0) - t
    g0 = (lit(t, -3.0) * a * x - lit(t, 10.0) * a) * x - lit(t, 8.0) * a
    x = lit(t, 0.0) - t
    g1 = (lit(t, -3.0) * (a + lit(t, 2.0)) * x - lit(t, 2.0) * (a + lit(t, 3.0))) * x
    x = lit(t, 1.0) - t
    g2 = (lit(t, 3.0) * (a + lit(t, 2.0)) * x - lit(t, 2.0) * (a + lit(t, 3.0))) * x
    x = lit(t, 2.0) - t
    g3 = (lit(t, 3.0) * a * x - lit(t, 10.0) * a) * x + lit(t, 8.0) * a
    return g0, g1, g2, g3


def gs_pick(i, a, b, c, d):
    if i == 0:
        return a
    if i == 1:
        return b
    if i == 2:
        return c
    return d


def gs_cubic_row(x, base, ix, yv, cx0, cx1, cx2, cx3, width, wf, hf, padding, align):
    zero = lit(ix, 0.0)
    ok, o = gs_tap(ix - lit(ix, 1.0), yv, width, wf, hf, padding, align)
    r = cx0 * gs_read(x, base + o, ok, zero)
    ok, o = gs_tap(ix, yv, width, wf, hf, padding, align)
    r = r + cx1 * gs_read(x, base + o, ok, zero)
    ok, o = gs_tap(ix + lit(ix, 1.0), yv, width, wf, hf, padding, align)
    r = r + cx2 * gs_read(x, base + o, ok, zero)
    ok, o = gs_tap(ix + lit(ix, 2.0), yv, width, wf, hf, padding, align)
    return r + cx3 * gs_read(x, base + o, ok, zero)


def gs_forward_point(n, q, npts, channels, height, width, x, grid, out, mode, padding, align):
    """All channels of output point ``q`` of sample ``n``."""
    gx = grid[(n * npts + q) * 2]
    gy = grid[(n * npts + q) * 2 + 1]
    wf = lit(gx, width)
    hf = lit(gx, height)
    zero = lit(gx, 0.0)
    plane = height * width
    if mode == 2:
        xs = gs_unnormalize(gx, wf, align)
        ys = gs_unnormalize(gy, hf, align)
        ix = floor(xs)
        iy = floor(ys)
        cx0, cx1, cx2, cx3 = gs_cubic(xs - ix)
        cy0, cy1, cy2, cy3 = gs_cubic(ys - iy)
        for c in range(channels):
            base = (n * channels + c) * plane
            r0 = gs_cubic_row(x, base, ix, iy - lit(gx, 1.0), cx0, cx1, cx2, cx3, width, wf,
                              hf, padding, align)
            r1 = gs_cubic_row(x, base, ix, iy, cx0, cx1, cx2, cx3, width, wf, hf, padding,
                              align)
            r2 = gs_cubic_row(x, base, ix, iy + lit(gx, 1.0), cx0, cx1, cx2, cx3, width, wf,
                              hf, padding, align)
            r3 = gs_cubic_row(x, base, ix, iy + lit(gx, 2.0), cx0, cx1, cx2, cx3, width, wf,
                              hf, padding, align)
            out[(n * channels + c) * npts + q] = cy0 * r0 + cy1 * r1 + cy2 * r2 + cy3 * r3
        return
    xs = gs_source(gx, wf, padding, align)
    ys = gs_source(gy, hf, padding, align)
    if mode == 1:
        xr = rint(xs)
        yr = rint(ys)
        if padding == 0:
            ok = (xr >= zero) and (xr < wf) and (yr >= zero) and (yr < hf)
        else:
            ok = (xr == xr) and (yr == yr)
        o = gs_index(xr, yr, ok, ok, width)
        for c in range(channels):
            out[(n * channels + c) * npts + q] = gs_read(x, (n * channels + c) * plane + o,
                                                         ok, zero)
        return
    xw, yn, w, e, nn, s, mnw, mne, msw, mse = gs_corners(xs, ys, wf, hf, padding)
    o = gs_index(xw, yn, mnw or mne or msw or mse, True, width)
    for c in range(channels):
        base = (n * channels + c) * plane + o
        vnw = gs_read(x, base, mnw, zero)
        vne = gs_read(x, base + 1, mne, zero)
        vsw = gs_read(x, base + width, msw, zero)
        vse = gs_read(x, base + width + 1, mse, zero)
        out[(n * channels + c) * npts + q] = vnw * (s * e) + vne * (s * w) + vsw * (nn * e) + \
            vse * (nn * w)


def gs_backward_point(n, q, npts, channels, height, width, x, grid, gout, gin, ggrid, mode,
                      padding, align, need_input):
    """Point ``q`` of sample ``n``: its taps' input gradients added into ``gin`` (when
    ``need_input``) and its grid gradient written to ``ggrid``."""
    gx = grid[(n * npts + q) * 2]
    gy = grid[(n * npts + q) * 2 + 1]
    wf = lit(gx, width)
    hf = lit(gx, height)
    zero = lit(gx, 0.0)
    plane = height * width
    if mode == 1:
        if need_input:
            xs = gs_source(gx, wf, padding, align)
            ys = gs_source(gy, hf, padding, align)
            xr = rint(xs)
            yr = rint(ys)
            if padding == 0:
                ok = (xr >= zero) and (xr < wf) and (yr >= zero) and (yr < hf)
            else:
                ok = (xr == xr) and (yr == yr)
            if ok:
                o = gs_index(xr, yr, ok, ok, width)
                for c in range(channels):
                    add_at(gin, (n * channels + c) * plane + o,
                           gout[(n * channels + c) * npts + q])
        ggrid[(n * npts + q) * 2] = zero
        ggrid[(n * npts + q) * 2 + 1] = zero
        return
    if mode == 2:
        xs = gs_unnormalize(gx, wf, align)
        ys = gs_unnormalize(gy, hf, align)
        ix = floor(xs)
        iy = floor(ys)
        cx0, cx1, cx2, cx3 = gs_cubic(xs - ix)
        cy0, cy1, cy2, cy3 = gs_cubic(ys - iy)
        dx0, dx1, dx2, dx3 = gs_cubic_grad(xs - ix)
        dy0, dy1, dy2, dy3 = gs_cubic_grad(ys - iy)
        ax = zero
        ay = zero
        for c in range(channels):
            base = (n * channels + c) * plane
            go = gout[(n * channels + c) * npts + q]
            for i in range(4):
                cxi = gs_pick(i, cx0, cx1, cx2, cx3)
                dxi = gs_pick(i, dx0, dx1, dx2, dx3)
                for j in range(4):
                    cyj = gs_pick(j, cy0, cy1, cy2, cy3)
                    dyj = gs_pick(j, dy0, dy1, dy2, dy3)
                    ok, o = gs_tap(ix + lit(gx, i - 1), iy + lit(gx, j - 1), width, wf, hf,
                                   padding, align)
                    if need_input and ok:
                        add_at(gin, base + o, go * cxi * cyj)
                    val = gs_read(x, base + o, ok, zero)
                    ax = ax - val * go * dxi * cyj
                    ay = ay - val * go * dyj * cxi
        ggrid[(n * npts + q) * 2] = ax * gs_scale(gx, wf, align)
        ggrid[(n * npts + q) * 2 + 1] = ay * gs_scale(gx, hf, align)
        return
    xs, mx = gs_source_grad(gx, wf, padding, align)
    ys, my = gs_source_grad(gy, hf, padding, align)
    xw, yn, w, e, nn, s, mnw, mne, msw, mse = gs_corners(xs, ys, wf, hf, padding)
    o = gs_index(xw, yn, mnw or mne or msw or mse, True, width)
    ax = zero
    ay = zero
    for c in range(channels):
        base = (n * channels + c) * plane + o
        go = gout[(n * channels + c) * npts + q]
        if need_input:
            if mnw:
                add_at(gin, base, s * e * go)
            if mne:
                add_at(gin, base + 1, s * w * go)
            if msw:
                add_at(gin, base + width, nn * e * go)
            if mse:
                add_at(gin, base + width + 1, nn * w * go)
        vnw = gs_read(x, base, mnw, zero)
        vne = gs_read(x, base + 1, mne, zero)
        vsw = gs_read(x, base + width, msw, zero)
        vse = gs_read(x, base + width + 1, mse, zero)
        ax = ax + ((vne - vnw) * s + (vse - vsw) * nn) * go
        ay = ay + ((vsw - vnw) * e + (vse - vne) * w) * go
    ggrid[(n * npts + q) * 2] = ax * mx
    ggrid[(n * npts + q) * 2 + 1] = ay * my


_DECLARATION = (gs_scale, gs_unnormalize, gs_clip, gs_clip_grad, gs_span, gs_reflect,
                gs_reflect_grad, gs_coordinates, gs_source, gs_source_grad, gs_corners, gs_index,
                gs_read, gs_tap, gs_cubic, gs_cubic_grad, gs_pick, gs_cubic_row,
                gs_forward_point, gs_backward_point)

_FORWARD_ARGS = "n_batch, npts, channels, height, width, x, grid, out, mode, padding, align"
_BACKWARD_ARGS = ("n_batch, npts, channels, height, width, x, grid, gout, gin, ggrid, mode, "
                  "padding, align, need_input")
