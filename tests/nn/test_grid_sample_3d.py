"""grid_sample on 5-D (volumetric) input and affine_grid's 3-D grids (nn/functional/sampling.py,
_sampling3d_kernels.py) against PyTorch: values, GridSampler3DBackward0 and both gradients over
modes (trilinear, nearest) x padding modes x align_corners in float32/float64, NaN/inf/huge
coordinates (ATen's 3-D kernel skips taps at them, clips NaN to the far border, counts
reflections with an int conversion), one-voxel and empty shapes, the parallel loop; float64
gradcheck; an independent NumPy trilinear reference; errors and warnings word for word.

    python -m pytest -q tests/nn/test_grid_sample_3d.py
"""
import warnings

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn.functional as F
from tests._parity import assert_parity, raises_like

torch = pytest.importorskip("torch")

MODES = ("bilinear", "nearest")
PADS = ("zeros", "border", "reflection")
CASES = [(m, p, ac) for m in MODES for p in PADS for ac in (False, True)]
IDS = [f"{m}-{p}-{'ac' if ac else 'noac'}" for m, p, ac in CASES]
# ATen's 3-D CPU kernel is a scalar loop; jitgrad repeats its operations in its order, so the
# results agree to the last bit here (measured: zero difference); the tolerances are rounding's
TOL = {np.float32: dict(rtol=1e-6, atol=1e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}


def _grid(dt, seed=0, special=False):
    """(2, 2, 3, 4, 3): uniform over [-1.4, 1.4] (out of range too), exact borders, voxel
    centres, +-1e10; with ``special`` NaN, +-inf and 2**32 + 1.5 (whose reflection count
    overflows ATen's int: INT_MIN, counted even)."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-1.4, 1.4, (2, 2, 3, 4, 3))
    g[0, 0, 0, 0] = [-1.0, 1.0, -1.0]
    g[0, 0, 0, 1] = [1.0, -1.0, 1.0]
    g[0, 0, 1, 0] = [0.0, 0.5, -0.5]
    g[1, 0, 0, 0] = [-0.6, 0.25, 1.0 / 3.0]  # voxel centres of (D, H, W) = (3, 4, 5), no ac
    g[1, 0, 0, 1] = [1.2, -1.25, 1.0]
    g[0, 1, 0, 0] = [1e10, -1e10, 0.2]
    if special:
        g[0, 1, 1, 1] = [np.nan, 0.1, 0.2]
        g[0, 1, 2, 2] = [0.3, np.nan, -0.4]
        g[1, 1, 0, 3] = [0.1, 0.2, np.nan]
        g[1, 1, 1, 0] = [np.inf, 0.1, 0.2]
        g[1, 1, 1, 1] = [0.1, -np.inf, 0.2]
        g[1, 1, 2, 2] = [2.0 ** 32 + 1.5, 0.1, 0.2]
        g[1, 1, 2, 3] = [0.1, -(2.0 ** 32) - 1.5, -0.9]
    return g.astype(dt)


def _input(dt, seed=1, shape=(2, 3, 3, 4, 5)):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _sample(mode, pad, ac):
    def fn(lib, x, g):
        return lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad,
                                             align_corners=ac)
    return fn


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mode,pad,ac", CASES, ids=IDS)
def test_values_and_gradients(mode, pad, ac, dt):
    """Finite grids: values, GridSampler3DBackward0, input and grid gradients."""
    got = assert_parity(_sample(mode, pad, ac), _input(dt), _grid(dt), grad=True, **TOL[dt],
                        where=f"{mode} {pad} {ac}")
    assert got.grad_fns == ["GridSampler3DBackward0"]
    assert got.values[0].shape == (2, 3, 2, 3, 4)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mode,pad,ac", CASES, ids=IDS)
def test_nan_inf_and_huge_coordinates(mode, pad, ac, dt):
    """ATen's 3-D rules, gradients included: zeros padding reads nothing at NaN/inf (0, not
    NaN), border/reflection clip NaN to size - 1 in the forward but skip it in the backward."""
    assert_parity(_sample(mode, pad, ac), _input(dt), _grid(dt, seed=3, special=True),
                  grad=True, **TOL[dt], where=f"{mode} {pad} {ac}")


def test_nan_rules_differ_from_4d():
    """Not the 4-D kernel's rules: there a NaN coordinate under zeros padding gives NaN."""
    x = jt.ones(1, 1, 2, 2, 2)
    g = jt.tensor([[[[[float("nan"), 0.0, 0.0]]]]])
    out = F.grid_sample(x, g, align_corners=False)
    assert out.item() == 0.0
    out = F.grid_sample(x, g, padding_mode="border", align_corners=False)
    assert out.item() == 1.0  # the far border voxel


@pytest.mark.parametrize("mode", MODES)
def test_shapes(mode):
    """One-voxel axes (reflection's empty span with align_corners=True), outputs of other
    sizes, one channel, odd extents."""
    rng = np.random.default_rng(4)
    for shape, gshape in (((1, 1, 1, 1, 1), (1, 2, 1, 3, 3)), ((2, 2, 1, 3, 2), (2, 1, 4, 2, 3)),
                          ((1, 1, 4, 1, 3), (1, 3, 2, 1, 3))):
        x = rng.standard_normal(shape)
        g = rng.uniform(-1.5, 1.5, gshape)
        for pad in PADS:
            for ac in (False, True):
                assert_parity(_sample(mode, pad, ac), x, g, grad=True, **TOL[np.float64],
                              where=f"{shape} {pad} {ac}")


@pytest.mark.parametrize("xshape,gshape", [((1, 2, 2, 3, 4), (1, 0, 2, 2, 3)),
                                           ((1, 0, 2, 3, 4), (1, 2, 2, 2, 3)),
                                           ((0, 2, 2, 3, 4), (0, 2, 2, 2, 3))],
                         ids=["no-points", "no-channels", "no-batch"])
def test_empty(xshape, gshape):
    assert_parity(_sample("bilinear", "zeros", False), np.ones(xshape), np.zeros(gshape),
                  grad=True)


def test_parallel_loop_matches():
    """A batch large enough for the CPU's prange loop (each sample owns its input-gradient
    slice): the same bits as PyTorch."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 5, 6, 7))
    g = rng.uniform(-1.2, 1.2, (4, 16, 16, 32, 3))
    for mode, pad in (("bilinear", "reflection"), ("nearest", "zeros")):
        assert_parity(_sample(mode, pad, False), x, g, grad=True, **TOL[np.float64])


def test_one_gradient_at_a_time():
    """Only the input, or only the grid, requiring grad."""
    x, g = _input(np.float64), _grid(np.float64)
    for want in ("input", "grid"):
        res = {}
        for lib in (jt, torch):
            xt = lib.tensor(x, requires_grad=want == "input")
            gt = lib.tensor(g, requires_grad=want == "grid")
            out = lib.nn.functional.grid_sample(xt, gt, padding_mode="border",
                                                align_corners=True)
            (out * out.detach()).sum().backward()
            res[lib.__name__] = (type(out.grad_fn).__name__,
                                 (xt if want == "input" else gt).grad.numpy(),
                                 (gt if want == "input" else xt).grad)
        (jn, jg, jo), (tn, tg, to) = res["jitgrad"], res["torch"]
        assert jn == tn == "GridSampler3DBackward0" and jo is None and to is None
        np.testing.assert_allclose(jg, tg, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("pad", PADS)
@pytest.mark.parametrize("ac", [False, True], ids=["noac", "ac"])
def test_gradcheck(pad, ac):
    """float64 finite differences (jitgrad.autograd.gradcheck) away from the kinks: trilinear
    w.r.t. input and grid, nearest w.r.t. input (its grid gradient is 0 by definition)."""
    rng = np.random.default_rng(7)
    x = jt.tensor(rng.standard_normal((1, 2, 3, 4, 3)), requires_grad=True)
    g = jt.tensor(rng.uniform(-0.9, 0.9, (1, 2, 2, 3, 3)), requires_grad=True)
    assert jt.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, padding_mode=pad, align_corners=ac), (x, g))
    assert jt.autograd.gradcheck(
        lambda a: F.grid_sample(a, g.detach(), mode="nearest", padding_mode=pad,
                                align_corners=ac), (x,))


def _trilinear_reference(x, g):
    """NumPy: zeros padding, align_corners=True, written from the definition (weights as
    products of 1 - |distance|, taps outside the volume contribute nothing)."""
    n, c, d, h, w = x.shape
    out = np.zeros((n, c) + g.shape[1:4])
    for b in range(n):
        for idx in np.ndindex(*g.shape[1:4]):
            src = [(g[b][idx][k] + 1) / 2 * (s - 1) for k, s in enumerate((w, h, d))]
            lo = [int(np.floor(v)) for v in src]
            for corner in np.ndindex(2, 2, 2):
                ix, iy, iz = (lo[k] + corner[k] for k in range(3))
                if 0 <= ix < w and 0 <= iy < h and 0 <= iz < d:
                    wt = np.prod([1 - abs(src[k] - (lo[k] + corner[k])) for k in range(3)])
                    out[(b, slice(None)) + idx] += wt * x[b, :, iz, iy, ix]
    return out


def test_independent_reference():
    x, g = _input(np.float64), _grid(np.float64)
    got = F.grid_sample(jt.tensor(x), jt.tensor(g), align_corners=True).numpy()
    np.testing.assert_allclose(got, _trilinear_reference(x, g), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("size,ac", [((2, 3, 2, 3, 4), False), ((2, 1, 3, 2, 2), True),
                                     ((2, 2, 1, 3, 1), True), ((2, 1, 1, 1, 1), False)])
def test_affine_grid_3d(size, ac, dt):
    """(N, 3, 4) theta: values, AffineGridGeneratorBackward0, theta's gradient, and the
    unit-size warning."""
    theta = np.random.default_rng(8).standard_normal((2, 3, 4)).astype(dt)
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=ac),
                  theta, grad=True, rtol=1e-6 if dt == np.float32 else 1e-13, atol=1e-6)


@pytest.mark.parametrize("mode,pad", [("bilinear", "zeros"), ("bilinear", "reflection"),
                                      ("nearest", "border")])
def test_volumetric_spatial_transformer(mode, pad):
    """affine_grid then grid_sample on a volume, gradients back to theta and the input."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 2, 4, 5, 3))
    theta = np.concatenate([np.eye(3), np.zeros((3, 1))], 1) + 0.2 * rng.standard_normal((2, 3, 4))

    def fn(lib, x, t):
        grid = lib.nn.functional.affine_grid(t, (2, 2, 3, 4, 4), align_corners=False)
        return lib.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=pad,
                                             align_corners=False)
    assert_parity(fn, x, theta, grad=True, rtol=1e-12, atol=1e-12)


def test_second_derivative_is_refused_clearly():
    x = jt.randn(1, 1, 2, 3, 3, requires_grad=True)
    g = jt.zeros(1, 1, 1, 2, 3, requires_grad=True)
    out = F.grid_sample(x, g, align_corners=False)
    gx, gg = jt.autograd.grad(out.sum(), (x, g), create_graph=True)
    assert type(gx.grad_fn).__name__ == "GridSampler3DBackwardBackward0"
    with pytest.raises(NotImplementedError, match="GridSampler3DBackwardBackward0"):
        gg.sum().backward()


def test_float16_computes_in_float32():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 3, 4, 4)).astype(np.float16)
    g = rng.uniform(-1, 1, (1, 2, 3, 3, 3)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g),
                                               align_corners=False).numpy()
    got = F.grid_sample(jt.tensor(x), jt.tensor(g), align_corners=False)
    assert got.dtype == jt.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def _call(*args, **kw):
    def fn(lib, *tensors):
        return lib.nn.functional.grid_sample(*tensors, *args, **kw)
    return fn


X = np.zeros((1, 2, 3, 4, 5))
G = np.zeros((1, 2, 2, 2, 3))


@pytest.mark.parametrize("fn,arrays", [
    (_call(align_corners=False), (X.astype(np.int32), G.astype(np.int32))),
    (_call(align_corners=False), (X.astype(np.int64), G)),
    (_call(align_corners=False), (X.astype(np.float32), G)),
    (_call(align_corners=False), (X, G.astype(np.float32))),
    (_call(), (X, G[..., :2])),
    (_call(), (X, G[0])),
    (_call(), (X[0], G)),
    (_call(), (np.zeros((2, 2, 3, 4, 5)), G)),
    (_call(), (X[:, :, :, :0], G)),
    (_call(), (X, np.zeros((1, 2, 2, 2, 2, 3)))),
    (_call(), (X[None], np.zeros((1, 2, 2, 2, 2, 4)))),
    (_call(mode="bicubic"), (X, G)),
    (_call(mode="bicubic", padding_mode="border", align_corners=True), (X, G)),
], ids=["int", "long-input", "float-input", "float-grid", "grid-last-dim", "4d-grid",
        "4d-input", "batch", "empty-spatial", "6d-grid", "6d-input", "bicubic",
        "bicubic-border"])
def test_errors(fn, arrays):
    """PyTorch's error, type and message (and the align_corners warning before it)."""
    assert assert_parity(fn, *arrays).error is not None


def test_errors_raise_like():
    """The same through raises_like (typed tensors): 5-D bicubic and a short grid."""
    raises_like(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="bicubic",
                                                                align_corners=False), X, G)
    raises_like(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, align_corners=False),
                X, G[..., :1])


def test_affine_grid_3d_errors():
    """affine_grid's 5-D size checks and the align_corners=None warning."""
    theta = np.zeros((2, 3, 4))
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 1, 3, 3, 3)), theta)
    for t, size in [(theta, (2, 1, 0, 3, 3)), (theta[:, :2, :3], (2, 1, 3, 3, 3)),
                    (theta, (2, 1, 3, 3)), (np.zeros((3, 3, 4)), (2, 1, 3, 3, 3))]:
        assert assert_parity(lambda lib, a, size=size: lib.nn.functional.affine_grid(
            a, size, align_corners=False), t, where=str(size)).error is not None
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t.int(), (2, 1, 3, 3, 3),
                                                               align_corners=False), theta)
