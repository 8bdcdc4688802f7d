"""``grid_sample``'s 5-D (volumetric) kernels, declared once like the 4-D ones of
``_sampling_kernels`` and rendered with them into the same modules by ``_sampling_arrays``.

ATen's 3-D CPU kernel is not the vectorized one of the 4-D case: it is the scalar loop of
``native/GridSampler.cpp`` (``grid_sampler_3d_cpu_impl`` and its backward) over the
``GridSampler.h`` helpers, and those round and treat NaN/inf differently, so this follows them:

* the unnormalization is the 4-D one's (``gs_unnormalize``: both forms round identically, the
  halvings being exact) and so are the backward's clip (``gs_clip_grad``: NaN stays NaN with
  slope 1), the slope ``gs_scale`` and the reflection span ``gs_span``;
* the forward clip is ``std::min(size - 1, std::max(in, 0))``, which sends NaN to ``size - 1``
  (``gs3_clip``), where the vectorized 4-D clip sends it to 0;
* the reflection is ``fmod`` plus the parity of ``int(floor(in / span))``: an ``int`` conversion
  out of range (inf, NaN, huge coordinates) gives INT_MIN on x86, an even count, and
  ``gs3_even`` says so on the floats (so a GPU, whose conversion saturates, agrees);
* taps out of bounds are skipped, not read as 0 times their weight: a NaN or infinite source
  coordinate (whose ``int64`` floor is INT64_MIN) reads nothing, so the output is 0 and the
  gradients are 0, never NaN. As in the 4-D kernels the bounds tests are made on the floats.

Arrays are flat and C-contiguous: input ``(N, C, D, H, W)``, grid ``(N, P, 3)`` (``P`` the
output's ``D_out * H_out * W_out``), output ``(N, C, P)``. Modes 0 bilinear (trilinear), 1
nearest; padding 0 zeros, 1 border, 2 reflection.
"""
# ruff: noqa: F821 - the declaration uses the vocabulary names, bound by each target's module
from __future__ import annotations

__all__ = ["gs3_forward_point", "gs3_backward_point"]


def gs3_clip(v, size):
    """``clip_coordinates``: as ``gs_clip`` but NaN goes to ``size - 1`` (std::min/max)."""
    if v != v:
        return size - lit(v, 1.0)
    return gs_clip(v, size)


def gs3_even(f):
    """Whether ATen's ``static_cast<int>(f)`` of a floored value is even (INT_MIN outside
    int32's range and for NaN)."""
    if not (f >= lit(f, -2147483648.0) and f < lit(f, 2147483648.0)):
        return True
    return f - lit(f, 2.0) * floor(f * lit(f, 0.5)) == lit(f, 0.0)


def gs3_reflect(v, size, align):
    """``reflect_coordinates`` (without the clip)."""
    low, twice, empty = gs_span(v, size, align)
    if empty:
        return lit(v, 0.0)
    span = twice / lit(v, 2.0)
    a = abs(v - low)
    extra = fmod(a, span)
    if gs3_even(floor(a / span)):
        return extra + low
    return span - extra + low


def gs3_reflect_grad(v, size, align):
    """``reflect_coordinates_set_grad``: (coordinate, its slope)."""
    low, twice, empty = gs_span(v, size, align)
    if empty:
        return lit(v, 0.0), lit(v, 0.0)
    span = twice / lit(v, 2.0)
    a = v - low
    sign = lit(v, 1.0)
    if a < lit(v, 0.0):
        sign = lit(v, -1.0)
        a = -a
    extra = fmod(a, span)
    if gs3_even(floor(a / span)):
        return extra + low, sign
    return span - extra + low, -sign


def gs3_source(v, size, padding, align):
    """``grid_sampler_compute_source_index``."""
    u = gs_unnormalize(v, size, align)
    if padding == 1:
        return gs3_clip(u, size)
    if padding == 2:
        return gs3_clip(gs3_reflect(u, size, align), size)
    return u


def gs3_source_grad(v, size, padding, align):
    """``grid_sampler_compute_source_index_set_grad``: (coordinate, d coordinate / d v)."""
    u = gs_unnormalize(v, size, align)
    s = gs_scale(v, size, align)
    if padding == 1:
        r, inside = gs_clip_grad(u, size)
        return r, (s if inside else lit(v, 0.0))
    if padding == 2:
        r, gr = gs3_reflect_grad(u, size, align)
        r, inside = gs_clip_grad(r, size)
        return r, (s * gr if inside else lit(v, 0.0))
    return u, s


def gs3_inside(t, size):
    """``0 <= int64(t) < size`` for a floored/rounded ``t`` (NaN and inf: INT64_MIN, outside)."""
    return t >= lit(t, 0.0) and t < size


def gs3_weight(bit, v, f):
    """One axis' factor of a trilinear weight: ``v - floor`` for the far tap, else
    ``floor + 1 - v`` (ATen's ``ix - ix_tnw`` and ``ix_bse - ix``)."""
    if bit:
        return v - f
    return (f + lit(v, 1.0)) - v


def gs3_point(grid, n, q, npts):
    i = (n * npts + q) * 3
    return grid[i], grid[i + 1], grid[i + 2]


def gs3_nearest(xs, ys, zs, wf, hf, df, height, width):
    """(in bounds, flat volume offset) of the rounded (half to even) source coordinate."""
    xr = rint(xs)
    yr = rint(ys)
    zr = rint(zs)
    ok = gs3_inside(xr, wf) and gs3_inside(yr, hf) and gs3_inside(zr, df)
    if ok:
        return ok, (int(zr) * height + int(yr)) * width + int(xr)
    return ok, 0


def gs3_forward_point(n, q, npts, channels, depth, height, width, x, grid, out, mode, padding,
                      align):
    """All channels of output point ``q`` of sample ``n``."""
    gx, gy, gz = gs3_point(grid, n, q, npts)
    wf = lit(gx, width)
    hf = lit(gx, height)
    df = lit(gx, depth)
    zero = lit(gx, 0.0)
    volume = depth * height * width
    xs = gs3_source(gx, wf, padding, align)
    ys = gs3_source(gy, hf, padding, align)
    zs = gs3_source(gz, df, padding, align)
    if mode == 1:
        ok, o = gs3_nearest(xs, ys, zs, wf, hf, df, height, width)
        for c in range(channels):
            out[(n * channels + c) * npts + q] = gs_read(x, (n * channels + c) * volume + o,
                                                         ok, zero)
        return
    fx = floor(xs)
    fy = floor(ys)
    fz = floor(zs)
    for c in range(channels):
        base = (n * channels + c) * volume
        acc = zero
        for k in range(8):  # tnw, tne, tsw, tse, bnw, bne, bsw, bse: ATen's order of the sum
            bx = k & 1
            by = (k >> 1) & 1
            bz = k >> 2
            tx = fx + lit(gx, bx)
            ty = fy + lit(gx, by)
            tz = fz + lit(gx, bz)
            if gs3_inside(tx, wf) and gs3_inside(ty, hf) and gs3_inside(tz, df):
                wgt = gs3_weight(bx, xs, fx) * gs3_weight(by, ys, fy) * gs3_weight(bz, zs, fz)
                acc = acc + x[base + (int(tz) * height + int(ty)) * width + int(tx)] * wgt
        out[(n * channels + c) * npts + q] = acc


def gs3_backward_point(n, q, npts, channels, depth, height, width, x, grid, gout, gin, ggrid,
                       mode, padding, align, need_input):
    """Point ``q`` of sample ``n``: its taps' input gradients added into ``gin`` (when
    ``need_input``) and its grid gradient written to ``ggrid``."""
    gx, gy, gz = gs3_point(grid, n, q, npts)
    wf = lit(gx, width)
    hf = lit(gx, height)
    df = lit(gx, depth)
    zero = lit(gx, 0.0)
    volume = depth * height * width
    g0 = (n * npts + q) * 3
    xs, mx = gs3_source_grad(gx, wf, padding, align)
    ys, my = gs3_source_grad(gy, hf, padding, align)
    zs, mz = gs3_source_grad(gz, df, padding, align)
    if mode == 1:
        if need_input:
            ok, o = gs3_nearest(xs, ys, zs, wf, hf, df, height, width)
            if ok:
                for c in range(channels):
                    add_at(gin, (n * channels + c) * volume + o,
                           gout[(n * channels + c) * npts + q])
        ggrid[g0] = zero
        ggrid[g0 + 1] = zero
        ggrid[g0 + 2] = zero
        return
    fx = floor(xs)
    fy = floor(ys)
    fz = floor(zs)
    ax = zero
    ay = zero
    az = zero
    for c in range(channels):
        base = (n * channels + c) * volume
        go = gout[(n * channels + c) * npts + q]
        for k in range(8):
            bx = k & 1
            by = (k >> 1) & 1
            bz = k >> 2
            tx = fx + lit(gx, bx)
            ty = fy + lit(gx, by)
            tz = fz + lit(gx, bz)
            if need_input and gs3_inside(tx, wf) and gs3_inside(ty, hf) and \
                    gs3_inside(tz, df):
                wgt = gs3_weight(bx, xs, fx) * gs3_weight(by, ys, fy) * gs3_weight(bz, zs, fz)
                add_at(gin, base + (int(tz) * height + int(ty)) * width + int(tx), wgt * go)
        # ATen adds all eight input gradients before it reads the taps for the grid's
        for k in range(8):
            bx = k & 1
            by = (k >> 1) & 1
            bz = k >> 2
            tx = fx + lit(gx, bx)
            ty = fy + lit(gx, by)
            tz = fz + lit(gx, bz)
            if gs3_inside(tx, wf) and gs3_inside(ty, hf) and gs3_inside(tz, df):
                val = x[base + (int(tz) * height + int(ty)) * width + int(tx)]
                wx = gs3_weight(bx, xs, fx)
                wy = gs3_weight(by, ys, fy)
                wz = gs3_weight(bz, zs, fz)
                dx = val * wy * wz * go
                dy = val * wx * wz * go
                dz = val * wx * wy * go
                ax = ax + dx if bx else ax - dx
                ay = ay + dy if by else ay - dy
                az = az + dz if bz else az - dz
    ggrid[g0] = mx * ax
    ggrid[g0 + 1] = my * ay
    ggrid[g0 + 2] = mz * az


_DECLARATION_3D = (gs3_clip, gs3_even, gs3_reflect, gs3_reflect_grad, gs3_source,
                   gs3_source_grad, gs3_inside, gs3_weight, gs3_point, gs3_nearest,
                   gs3_forward_point, gs3_backward_point)

_FORWARD_ARGS_3D = ("n_batch, npts, channels, depth, height, width, x, grid, out, mode, "
                    "padding, align")
_BACKWARD_ARGS_3D = ("n_batch, npts, channels, depth, height, width, x, grid, gout, gin, "
                     "ggrid, mode, padding, align, need_input")
