"""interpolate / Upsample / pixel_shuffle (nn/functional/upsampling.py) against PyTorch: values
(float32/float64) over modes x sizes x scale factors x align_corners, gradients, grad_fn names,
errors, module reprs; float64 gradients and second derivatives by finite differences.

    python -m pytest -q tests/nn/test_upsampling.py
"""
import warnings

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn as jnn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional

R = np.random.default_rng(11)
# float32 bicubic: PyTorch's compiled weights/sums may contract to FMAs: a few ulps of the sum
TOL = {np.float32: dict(rtol=1e-5, atol=5e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}

MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
         2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
         3: ["nearest", "nearest-exact", "trilinear", "area"]}
SHAPES = {1: (5,), 2: (5, 7), 3: (3, 5, 4)}
SIZES = [dict(scale_factor=2), dict(scale_factor=0.7), dict(scale_factor=1 / 3),
         dict(scale_factor=1.5, recompute_scale_factor=True), dict(size=(9, 3, 5)),
         dict(size="same")]
CASES = [(nd, mode, i, ac) for nd in (1, 2, 3) for mode in MODES[nd] for i in range(len(SIZES))
         for ac in ([None] if mode in ("nearest", "nearest-exact", "area") else [False, True])]


def _kwargs(nd, i):
    kw = dict(SIZES[i])
    if "size" in kw:
        kw["size"] = SHAPES[nd] if kw["size"] == "same" else kw["size"][:nd]
    return kw


def _run(lib, fns, x, grad, w=None, **kw):
    t = lib.tensor(x, requires_grad=grad)
    out = fns.interpolate(t, **kw)
    if grad:
        (out * lib.tensor(w)).sum().backward()
    return out, t.grad


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("nd,mode,i,ac", CASES,
                         ids=[f"{nd}d-{m}-{i}-{ac}" for nd, m, i, ac in CASES])
def test_interpolate_matches_pytorch(nd, mode, i, ac, dt):
    x = R.standard_normal((2, 3) + SHAPES[nd]).astype(dt)
    kw = dict(_kwargs(nd, i), mode=mode, align_corners=ac)
    to, _ = _run(torch, TF, x, False, **kw)
    w = R.standard_normal(tuple(to.shape)).astype(dt)
    to, tg = _run(torch, TF, x, True, w, **kw)
    jo, jg = _run(jt, F, x, True, w, **kw)
    assert tuple(jo.shape) == tuple(to.shape) and str(jo.dtype) == str(to.dtype)
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), **TOL[dt])
    np.testing.assert_allclose(jg.numpy(), tg.numpy(), **TOL[dt])
    assert jo.grad_fn.name() == to.grad_fn.name()


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 2, 3, 4), dict(scale_factor=(2, 1.5))),
    ("nearest-exact", (1, 2, 5), dict(size=3)),
    ("linear", (1, 2, 4), dict(scale_factor=2.5, align_corners=False)),
    ("bilinear", (1, 2, 3, 4), dict(size=(5, 3), align_corners=True)),
    ("bicubic", (1, 2, 3, 4), dict(scale_factor=1.7)),
    ("trilinear", (1, 1, 2, 3, 3), dict(size=(3, 2, 4))),
    ("area", (1, 2, 5, 4), dict(size=(3, 3))),
])
def test_interpolate_gradcheck(mode, shape, kw):
    x = jt.tensor(R.standard_normal(shape), requires_grad=True)

    def fn(t):
        return F.interpolate(t, mode=mode, **kw)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_double_backward_node():
    x = jt.tensor(R.standard_normal((2, 3, 4, 4)), requires_grad=True)
    out = F.interpolate(x, scale_factor=2, mode="bilinear")
    (g,) = jt.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "UpsampleBilinear2DBackwardBackward0"


def test_non_finite_values_stay_in_their_taps():
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 2] = np.inf
    x[0, 0, 3, 0] = np.nan
    for mode, ac in (("nearest", None), ("bilinear", False), ("bilinear", True),
                     ("bicubic", False)):
        jo = F.interpolate(jt.tensor(x), scale_factor=2, mode=mode, align_corners=ac).numpy()
        to = TF.interpolate(torch.tensor(x), scale_factor=2, mode=mode,
                            align_corners=ac).numpy()
        np.testing.assert_array_equal(np.isnan(jo), np.isnan(to))
        np.testing.assert_array_equal(np.isinf(jo), np.isinf(to))


def test_uint8_nearest_and_integer_errors():
    x = R.integers(0, 255, (1, 3, 4, 5)).astype(np.uint8)
    jo = F.interpolate(jt.tensor(x), scale_factor=1.5)
    to = TF.interpolate(torch.tensor(x), scale_factor=1.5)
    assert jo.dtype == jt.uint8
    np.testing.assert_array_equal(jo.numpy(), to.numpy())
    y = R.integers(0, 5, (1, 2, 5))
    for mode in ("linear", "nearest"):
        with pytest.raises(NotImplementedError) as je:
            F.interpolate(jt.tensor(y), scale_factor=2, mode=mode)
        with pytest.raises(NotImplementedError) as te:
            TF.interpolate(torch.tensor(y), scale_factor=2, mode=mode)
        assert str(je.value) == str(te.value)


def test_no_batch_rank_is_the_mode_rank():
    # interpolate has no "unbatched" form: a 3-D tensor is (N, C, W)
    x = R.standard_normal((3, 4, 6))
    jo = F.interpolate(jt.tensor(x), scale_factor=2, mode="linear")
    to = TF.interpolate(torch.tensor(x), scale_factor=2, mode="linear")
    np.testing.assert_allclose(jo.numpy(), to.numpy(), rtol=1e-12)
    e = np.zeros((0, 3, 4, 4))
    jo = F.interpolate(jt.tensor(e, requires_grad=True), scale_factor=2, mode="bilinear")
    assert tuple(jo.shape) == (0, 3, 8, 8)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e), str(e)
    return None


ERRORS = [
    ((2, 3, 8, 8), dict(size=3, scale_factor=2)),
    ((2, 3, 8, 8), dict()),
    ((2, 3, 8, 8), dict(size=3, mode="foo")),
    ((2, 3, 8, 8), dict(size=3, mode="linear")),
    ((2, 3, 8), dict(size=3, mode="bilinear")),
    ((2, 3, 8, 8, 8), dict(size=3, mode="bicubic")),
    ((2, 3, 8, 8), dict(size=3, mode="nearest", align_corners=True)),
    ((3, 4), dict(size=3)),
    ((2, 3, 8, 8), dict(size=(3, 3, 3))),
    ((2, 3, 8, 8), dict(scale_factor=(2, 3, 4))),
    ((2, 3, 8, 8), dict(size=(2.5, 2))),
    ((2, 3, 8, 8), dict(size=0)),
    ((2, 3, 8), dict(scale_factor=0.1)),
    ((2, 3, 4, 4, 4), dict(scale_factor=0.1, mode="trilinear")),
    ((2, 3, 8, 8), dict(size=(2, 3), recompute_scale_factor=True)),
]


@pytest.mark.parametrize("shape,kw", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_pytorch(shape, kw):
    x = R.standard_normal(shape)
    want = _error(lambda: TF.interpolate(torch.tensor(x), **kw))
    assert want is not None
    assert _error(lambda: F.interpolate(jt.tensor(x), **kw)) == want


# ----------------------------------------------------------------------------- pixel shuffle


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 1, 4, 1, 1), 1)])
def test_pixel_shuffle(shape, r):
    x = R.standard_normal(shape)
    for lib, fns in ((jt, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        out = fns.pixel_shuffle(t, r)
        back = fns.pixel_unshuffle(out, r)
        (out * lib.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape)))).sum() \
            .backward()
        if lib is jt:
            jr = out.detach().numpy(), back.detach().numpy(), t.grad.numpy(), \
                out.grad_fn.name(), back.grad_fn.name()
    np.testing.assert_array_equal(jr[0], out.detach().numpy())
    np.testing.assert_array_equal(jr[1], back.detach().numpy())
    np.testing.assert_array_equal(jr[2], t.grad.numpy())
    assert jr[3:] == (out.grad_fn.name(), back.grad_fn.name())


@pytest.mark.parametrize("fn,shape,r", [("pixel_shuffle", (1, 3, 2, 2), 2),
                                        ("pixel_shuffle", (3, 2), 2),
                                        ("pixel_shuffle", (1, 4, 2, 2), 0),
                                        ("pixel_unshuffle", (1, 1, 3, 4), 2),
                                        ("pixel_unshuffle", (1, 1, 4, 3), 2)])
def test_pixel_shuffle_errors(fn, shape, r):
    x = R.standard_normal(shape)
    want = _error(lambda: getattr(TF, fn)(torch.tensor(x), r))
    assert want is not None
    assert _error(lambda: getattr(F, fn)(jt.tensor(x), r)) == want


# ----------------------------------------------------------------------------- modules


@pytest.mark.parametrize("name,args,kwargs", [
    ("Upsample", (), dict(scale_factor=2)), ("Upsample", (), dict(size=(3, 4), mode="bilinear")),
    ("Upsample", (), dict(scale_factor=(2, 3), mode="bicubic", align_corners=True)),
    ("UpsamplingBilinear2d", (), dict(scale_factor=2)), ("UpsamplingNearest2d", (3,), {}),
    ("PixelShuffle", (2,), {}), ("PixelUnshuffle", (2,), {})])
def test_modules(name, args, kwargs):
    jm, tm = getattr(jnn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(jm) == repr(tm)
    x = R.standard_normal((2, 4, 4, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(jm(jt.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(),
                                   rtol=1e-12, atol=1e-13)


def test_legacy_upsample_functions_warn():
    x = R.standard_normal((1, 2, 3, 3))
    for name, kw in (("upsample", dict(scale_factor=2, mode="bilinear")),
                     ("upsample_nearest", dict(scale_factor=2)),
                     ("upsample_bilinear", dict(size=5))):
        with pytest.warns(UserWarning, match="deprecated"):
            jo = getattr(F, name)(jt.tensor(x), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            to = getattr(TF, name)(torch.tensor(x), **kw)
        np.testing.assert_allclose(jo.numpy(), to.numpy(), rtol=1e-12, atol=1e-13)


# PyTorch's 2-D CPU nearest kernel (ATen ``nearest_idx``) copies a dim whose output length
# equals the input's and reads ``o >> 1`` where it is exactly twice, whatever scale_factor
# produced that length; 1-D / 3-D nearest and every nearest-exact use the scale.
NEAREST_SCALES = [1.03, 1.2, 2.1, 2.2, (1.528, 2.131), (2.1, 1.03, 1.2)]
NEAREST_CASES = [(nd, mode, s) for nd in (1, 2, 3) for mode in ("nearest", "nearest-exact")
                 for s in NEAREST_SCALES if not isinstance(s, tuple) or len(s) == nd]


@pytest.mark.parametrize("nd,mode,scale", NEAREST_CASES,
                         ids=[f"{nd}d-{m}-{s}" for nd, m, s in NEAREST_CASES])
def test_nearest_scale_factor_rounding_to_same_or_double_size(nd, mode, scale):
    shape = {1: (1, 2, 4), 2: (1, 2, 5, 7), 3: (1, 1, 3, 4, 5)}[nd]
    x = R.standard_normal(shape)
    kw = dict(scale_factor=scale, mode=mode)
    to, _ = _run(torch, TF, x, False, **kw)
    w = R.standard_normal(tuple(to.shape))
    to, tg = _run(torch, TF, x, True, w, **kw)
    jo, jg = _run(jt, F, x, True, w, **kw)
    assert tuple(jo.shape) == tuple(to.shape)
    np.testing.assert_array_equal(jo.detach().numpy(), to.detach().numpy())
    np.testing.assert_allclose(jg.numpy(), tg.numpy(), rtol=1e-12, atol=1e-13)


def test_nearest_2d_examples_from_review():
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(
        F.interpolate(jt.tensor(x), scale_factor=1.2).numpy(),
        TF.interpolate(torch.tensor(x), scale_factor=1.2).numpy())
    x = R.standard_normal((1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(jnn.Upsample(scale_factor=2.1)(jt.tensor(x)).numpy(),
                                  torch.nn.Upsample(scale_factor=2.1)(torch.tensor(x)).numpy())


def test_upsample_backward_records_only_through_the_gradient():
    # PyTorch's upsample backward takes grad_output alone: with a constant upstream gradient
    # the input gradient is a constant, unlike a pool's (see test_pooling)
    for lib, fns in ((jt, F), (torch, TF)):
        x = lib.tensor(R.standard_normal((1, 1, 3, 3)), requires_grad=True)
        (g,) = lib.autograd.grad(fns.interpolate(x, scale_factor=2).sum(), x, create_graph=True)
        assert g.grad_fn is None and not g.requires_grad


@pytest.mark.parametrize("shape,scale", [((1, 2, 4), 1.2), ((1, 2, 4), 2.1),
                                         ((1, 1, 2, 3, 4), (1.03, 2.1, 1.2)),
                                         ((1, 1, 4, 5), (1.2, 2.1))])
def test_nearest_double_backward_matches_pytorch(shape, scale):
    # 1-D/3-D: PyTorch's backward uses the same/double-size shortcut, its forward (and the
    # backward's backward) the scale: all three compared
    x0 = R.standard_normal(shape)
    res = []
    for lib, fns in ((jt, F), (torch, TF)):
        x = lib.tensor(x0, requires_grad=True)
        y = fns.interpolate(x, scale_factor=scale)
        g = lib.tensor(np.arange(float(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)),
                       requires_grad=True)
        (gx,) = lib.autograd.grad(y, x, g, create_graph=True)
        (gg,) = lib.autograd.grad(gx, g, lib.tensor(np.arange(float(x0.size)).reshape(shape)))
        res.append((y.detach().numpy(), gx.detach().numpy(), gg.numpy(), gx.grad_fn.name()))
    for j, t in zip(*res):
        np.testing.assert_array_equal(j, t)
