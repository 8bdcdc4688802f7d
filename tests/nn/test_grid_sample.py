"""affine_grid / grid_sample (nn/functional/sampling.py, _sampling_kernels.py) against PyTorch:
values, grad_fn names and gradients (input and grid) over modes x padding modes x
align_corners in float32/float64, grids with out-of-range, border-exact, NaN and inf
coordinates; float64 finite-difference gradients; errors and warnings word for word.

    python -m pytest -q tests/nn/test_grid_sample.py
"""
import warnings

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn.functional as F
from tests._parity import assert_parity
from tests.nn.nn_gradcheck import check_grads

torch = pytest.importorskip("torch")

MODES = ("bilinear", "nearest", "bicubic")
PADS = ("zeros", "border", "reflection")
CASES = [(m, p, ac) for m in MODES for p in PADS for ac in (False, True)]
IDS = [f"{m}-{p}-{'ac' if ac else 'noac'}" for m, p, ac in CASES]
# float32: ATen sums its eight-point vectors' corners in another order; grid gradients are
# sums of 16 * C products that cancel, so their error is absolute
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-11)}


def _grid(dt, seed=0, special=True, nan=True):
    """(2, 3, 4, 2): uniform over [-1.4, 1.4] (so out of range too), exact borders, exact pixel
    centres/corners and +-1e10; with ``special`` also inf and (with ``nan``) NaN entries."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-1.4, 1.4, (2, 3, 4, 2))
    g[0, 0, 0] = [-1.0, 1.0]
    g[0, 0, 1] = [1.0, -1.0]
    g[0, 0, 2] = [0.0, 0.5]
    g[1, 0, 0] = [-0.75, 0.25]  # a pixel centre of W=4 with align_corners=False
    g[1, 0, 1] = [1.25, -1.25]
    g[0, 1, 0] = [1e10, -1e10]
    if special:
        g[1, 1, 1] = [np.inf, 0.1]
        if nan:
            g[0, 2, 3] = [np.nan, 0.2]
            g[1, 2, 0] = [0.3, np.nan]
    return g.astype(dt)


def _input(dt, seed=1):
    return np.random.default_rng(seed).standard_normal((2, 3, 5, 4)).astype(dt)


def _sample(mode, pad, ac):
    def fn(lib, x, g):
        return lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad,
                                             align_corners=ac)
    return fn


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mode,pad,ac", CASES, ids=IDS)
def test_values_and_gradients(mode, pad, ac, dt):
    """Finite grids (out of range, borders, pixel centres, 1e10): values, node name and both
    gradients."""
    assert_parity(_sample(mode, pad, ac), _input(dt), _grid(dt, special=False), grad=True,
                  **TOL[dt], where=f"{mode} {pad} {ac}")


@pytest.mark.parametrize("mode,pad,ac", CASES, ids=IDS)
def test_nan_and_inf_coordinates(mode, pad, ac):
    """Forward: NaN/inf coordinates as ATen's CPU kernel (NaN under zeros padding, clipped to
    0 under border/reflection, nearest reads 0). Gradients too where PyTorch defines them: its
    bilinear backward with border/reflection padding reads out of bounds at a NaN coordinate
    (reflection turns inf into one; PyTorch crashes), so those run forward only."""
    grad = not (mode == "bilinear" and pad != "zeros")
    for dt in (np.float32, np.float64):
        assert_parity(_sample(mode, pad, ac), _input(dt), _grid(dt, seed=3), grad=grad,
                      **TOL[dt], where=f"{mode} {pad} {ac} {dt.__name__}")


@pytest.mark.parametrize("mode", MODES)
def test_shapes_and_one_pixel_inputs(mode):
    """An output of another size than the input, a 1x1 input (reflection's empty span with
    align_corners=True), one channel."""
    rng = np.random.default_rng(4)
    for shape, gshape in (((1, 1, 1, 1), (1, 2, 3, 2)), ((3, 1, 2, 6), (3, 1, 5, 2))):
        x = rng.standard_normal(shape)
        g = rng.uniform(-1.5, 1.5, gshape)
        for pad in PADS:
            for ac in (False, True):
                assert_parity(_sample(mode, pad, ac), x, g, grad=True, **TOL[np.float64],
                              where=f"{shape} {pad} {ac}")


def test_one_gradient_at_a_time():
    """Only the input, or only the grid, requiring grad: PyTorch's node still records."""
    x, g = _input(np.float64), _grid(np.float64, special=False)
    for want in ("input", "grid"):
        res = {}
        for lib in (jt, torch):
            xt = lib.tensor(x, requires_grad=want == "input")
            gt = lib.tensor(g, requires_grad=want == "grid")
            out = lib.nn.functional.grid_sample(xt, gt, mode="bicubic", align_corners=True)
            out.sum().backward()
            res[lib.__name__] = (type(out.grad_fn).__name__,
                                 (xt if want == "input" else gt).grad.numpy(),
                                 (gt if want == "input" else xt).grad)
        (jn, jg, jo), (tn, tg, to) = res["jitgrad"], res["torch"]
        assert jn == tn and jo is None and to is None
        np.testing.assert_allclose(jg, tg, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("pad", PADS)
def test_finite_difference_gradients(mode, pad):
    """float64 central differences of jitgrad's forward, away from the kinks (pixel edges,
    borders): gradients w.r.t. input and grid."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 4, 5))
    g = rng.uniform(-0.9, 0.9, (1, 2, 3, 2))
    for ac in (False, True):
        check_grads(lambda a, b, ac=ac: F.grid_sample(a, b, mode=mode, padding_mode=pad,
                                                      align_corners=ac), [x, g], wrt=(0, 1),
                    atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("size,ac", [((2, 3, 4, 5), False), ((2, 1, 3, 3), True),
                                     ((2, 2, 1, 4), True), ((2, 1, 1, 1), False),
                                     ((2, 3, 2, 3, 4), False), ((2, 1, 3, 2, 2), True)])
def test_affine_grid(size, ac, dt):
    """Values, AffineGridGeneratorBackward0 and theta's gradient (2-D and 3-D), including
    the unit-size warning."""
    rng = np.random.default_rng(8)
    theta = rng.standard_normal((2, 2, 3) if len(size) == 4 else (2, 3, 4)).astype(dt)
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners=ac),
                  theta, grad=True, rtol=1e-6, atol=1e-6)


def test_spatial_transformer_step():
    """The tutorial's pattern: affine_grid then grid_sample, gradients back to theta."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    theta = (np.array([[1, 0, 0], [0, 1, 0]], np.float32) +
             0.1 * rng.standard_normal((2, 2, 3))).astype(np.float32)

    def fn(lib, x, t):
        F_ = lib.nn.functional
        grid = F_.affine_grid(t, (2, 3, 4, 4), align_corners=False)
        return F_.grid_sample(x, grid, align_corners=False)
    assert_parity(fn, x, theta, grad=True, rtol=2e-5, atol=2e-6)


def _call(*args, **kw):
    def fn(lib, *tensors):
        return lib.nn.functional.grid_sample(*tensors, *args, **kw)
    return fn


X = np.zeros((1, 2, 3, 4))
G = np.zeros((1, 2, 2, 2))


@pytest.mark.parametrize("fn,arrays", [
    (_call(), (X[0], G)),
    (_call(), (X, G[0])),
    (_call(), (X, G[..., :1])),
    (_call(), (np.zeros((2, 2, 3, 4)), G)),
    (_call(), (X[:, :, :0], G)),
    (_call(), (X[0, 0], G[0, 0])),
    (_call(), (X[0], np.zeros((2, 2, 1)))),
    (_call(), (X[:, :, None], np.zeros((1, 1, 2, 2, 1)))),
    (_call(mode="bicubic"), (X[:, :, None], np.zeros((1, 1, 2, 2, 3)))),
    (_call(mode="area"), (X, G)),
    (_call(padding_mode="circular"), (X, G)),
    (_call(align_corners=False), (X.astype(np.int32), G.astype(np.int32))),
    (_call(align_corners=False), (X.astype(np.int64), G)),
    (_call(align_corners=False), (X, G.astype(np.float32))),
    (_call(align_corners=False), (X.astype(np.float32), G)),
    (_call(align_corners=False), (X, G.astype(np.int64))),
], ids=["3d-input", "3d-grid", "grid-last-dim", "batch", "empty-spatial", "2d", "3d-3d",
        "5d-grid-last-dim", "5d-bicubic", "mode", "padding", "int", "long-input",
        "float-grid", "double-grid", "long-grid"])
def test_errors(fn, arrays):
    """PyTorch's error (type and words) and the warning before it."""
    assert assert_parity(fn, *arrays).error is not None


def test_warnings_and_affine_errors():
    """The align_corners=None warning of both functions, and affine_grid's errors."""
    x = np.random.default_rng(0).standard_normal((1, 1, 3, 3))
    g = np.zeros((1, 2, 2, 2))
    theta = np.zeros((2, 2, 3))
    assert_parity(lambda lib, a, b: lib.nn.functional.grid_sample(a, b), x, g)
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 1, 3, 3)), theta)
    for size in [(2, 1, 3), (2, 1, 3, 4, 5), (2, 1, 0, 4), (3, 1, 2, 4), (2, 1, 3, 4, 5, 6)]:
        assert_parity(lambda lib, t, size=size: lib.nn.functional.affine_grid(
                          t, size, align_corners=False),
                      theta, where=str(size))
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t.int(), (2, 1, 3, 4),
                                                               align_corners=False), theta)
    assert_parity(lambda lib, t: lib.nn.functional.affine_grid(t[0], (2, 1, 3, 4),
                                                               align_corners=False), theta)


def test_second_derivative_is_refused_clearly():
    x = jt.randn(1, 1, 3, 3, requires_grad=True)
    g = jt.zeros(1, 1, 1, 2, requires_grad=True)
    out = F.grid_sample(x, g, align_corners=False)
    gx, gg = jt.autograd.grad(out.sum(), (x, g), create_graph=True)
    assert type(gx.grad_fn).__name__ == "GridSampler2DBackwardBackward0"
    with pytest.raises(NotImplementedError, match="second derivative of grid_sample"):
        gg.sum().backward()


def test_float16_computes_in_float32():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float16)
    g = rng.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g),
                                               align_corners=False).numpy()
    got = F.grid_sample(jt.tensor(x), jt.tensor(g), align_corners=False)
    assert got.dtype == jt.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.astype(np.float32),
                               rtol=2e-3, atol=2e-3)
