"""Pooling (nn/functional/pooling.py, ops/pool.py) against PyTorch: values (float32/float64),
indices (ties and NaN choose PyTorch's), gradients, grad_fn names, errors and module reprs;
float64 gradients and second derivatives by finite differences (gradcheck/gradgradcheck).

    python -m pytest -q tests/nn/test_pooling.py
"""
import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn as jnn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional

R = np.random.default_rng(7)
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def _np(t):
    return t.detach().numpy()


def both(name, x, *args, grad=True, **kwargs):
    """``F.name`` on jitgrad and PyTorch with the same input; backward of ``sum(out * w)``.
    Returns ((jitgrad out, grad), (torch out, grad)); outputs are tuples when the op returns
    one."""
    res = []
    w = None
    for lib, fns in ((jt, F), (torch, TF)):
        rg = grad and x.dtype.kind == "f"
        t = lib.tensor(x, requires_grad=rg)
        out = getattr(fns, name)(t, *args, **kwargs)
        first = out[0] if isinstance(out, tuple) else out
        g = None
        if rg:
            if w is None:
                w = R.standard_normal(tuple(first.shape)).astype(x.dtype)
            (first * lib.tensor(w)).sum().backward()
            g = t.grad
        res.append((out, g))
    return res


def compare(name, x, *args, indices=False, grad=True, **kwargs):
    (jo, jg), (to, tg) = both(name, x, *args, grad=grad, **kwargs)
    tol = TOL.get(x.dtype.type, dict(rtol=0, atol=0))
    jv, tv = (jo[0], to[0]) if indices else (jo, to)
    assert tuple(jv.shape) == tuple(tv.shape)
    assert str(jv.dtype) == str(tv.dtype)
    np.testing.assert_allclose(_np(jv), _np(tv), **tol)
    if indices:
        np.testing.assert_array_equal(jo[1].numpy(), to[1].numpy())
        assert str(jo[1].dtype) == "torch.int64"
    if tg is not None:
        np.testing.assert_allclose(jg.numpy(), tg.numpy(), **tol)
        assert jv.grad_fn.name() == tv.grad_fn.name()
    return jo


# ----------------------------------------------------------------------------- max pools

MAX2D = [  # (input spatial, kernel, stride, padding, dilation, ceil_mode)
    ((8, 8), 2, None, 0, 1, False),
    ((7, 9), 3, 2, 1, 1, False),
    ((7, 9), 3, 2, 1, 1, True),
    ((9, 7), (2, 3), (1, 2), (1, 1), 2, True),
    ((10, 6), (3, 2), (3, 1), (1, 0), (2, 1), False),
    ((5, 5), 5, 1, 2, 1, False),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("sp,k,s,p,d,ceil", MAX2D)
def test_max_pool2d(sp, k, s, p, d, ceil, dt):
    x = R.standard_normal((2, 3) + sp).astype(dt)
    compare("max_pool2d", x, k, s, p, d, ceil, True, indices=True)


@pytest.mark.parametrize("sp,k,s,p,d,ceil", [((6, 7, 5), 2, None, 0, 1, False),
                                            ((5, 6, 7), (3, 2, 3), (2, 1, 2), 1, (1, 2, 1),
                                             True)])
def test_max_pool3d(sp, k, s, p, d, ceil):
    x = R.standard_normal((2, 2) + sp)
    compare("max_pool3d", x, k, s, p, d, ceil, True, indices=True)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,s,p,d,ceil", [(8, 2, None, 0, 1, False), (11, 3, 2, 1, 2, True),
                                            (9, 4, 3, 2, 1, True)])
def test_max_pool1d(n, k, s, p, d, ceil, dt):
    x = R.standard_normal((2, 3, n)).astype(dt)
    compare("max_pool1d", x, k, s, p, d, ceil, True, indices=True)
    compare("max_pool1d", x, k, s, p, d, ceil)


def test_max_pool_ties_and_nan_choose_pytorchs_index():
    x = R.integers(0, 3, (2, 3, 9, 8)).astype(np.float64)  # many ties
    compare("max_pool2d", x, 3, 1, 1, 1, False, True, indices=True)
    compare("max_pool2d", x, (3, 2), 2, (1, 1), 2, True, True, indices=True)
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = x[1, 2, 5, 5] = np.nan
    x[1, 1, :, :] = -np.inf
    for lib, fns in ((jt, F), (torch, TF)):
        out, idx = fns.max_pool2d(lib.tensor(x), 3, 1, 1, return_indices=True)
        if lib is jt:
            jo, ji = out.numpy(), idx.numpy()
        else:
            np.testing.assert_array_equal(jo, out.numpy())  # NaN where PyTorch has NaN
            np.testing.assert_array_equal(ji, idx.numpy())


def test_max_pool_integers_and_float16():
    x = R.integers(-50, 50, (2, 3, 7, 7))
    compare("max_pool2d", x, 3, 2, 1, 1, True, True, indices=True)
    compare("max_pool3d", x.reshape(2, 3, 7, 7, 1), (2, 2, 1), indices=False)
    h = R.standard_normal((2, 3, 6, 6)).astype(np.float16)
    jo = F.max_pool2d(jt.tensor(h), 2)
    np.testing.assert_array_equal(jo.numpy(), TF.max_pool2d(torch.tensor(h), 2).numpy())
    assert jo.dtype == jt.float16


def test_no_batch_and_empty_batch():
    x = R.standard_normal((3, 7, 6))
    compare("max_pool2d", x, 2, 1, 1, 1, True, True, indices=True)
    compare("avg_pool2d", x, 3, 2, 1)
    compare("max_pool1d", x[0], 2)
    compare("max_pool3d", x.reshape(1, 3, 7, 6), 2)
    compare("adaptive_avg_pool2d", x, (2, 4))
    e = np.zeros((0, 3, 6, 6))
    for name, args in (("max_pool2d", (2,)), ("avg_pool2d", (3, 2, 1)),
                       ("adaptive_avg_pool2d", (3,)), ("adaptive_max_pool2d", (3,))):
        jo = getattr(F, name)(jt.tensor(e, requires_grad=True), *args)
        to = getattr(TF, name)(torch.tensor(e), *args)
        assert tuple(jo.shape) == tuple(to.shape)
        jo.sum().backward()


@pytest.mark.parametrize("fn,args", [
    (lambda t: F.max_pool2d(t, 3, 2, 1), ()),
    (lambda t: F.max_pool2d(t, (2, 3), 1, (1, 1), (2, 1), True), ()),
    (lambda t: F.max_pool3d(t.reshape(1, 2, 5, 3, 4), 2, 1, 1), ()),
    (lambda t: F.max_pool1d(t.reshape(2, 3, 20), 4, 3, 2, 1, True), ()),
    (lambda t: F.adaptive_max_pool2d(t, (3, 2)), ()),
])
def test_max_pool_gradcheck(fn, args):
    x = jt.tensor(R.permutation(120).reshape(2, 3, 5, 4) / 7.0, requires_grad=True)  # no ties
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_max_pool_double_backward_node():
    x = jt.tensor(R.standard_normal((2, 3, 6, 6)), requires_grad=True)
    (g,) = jt.autograd.grad(F.max_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "MaxPool2DWithIndicesBackwardBackward0"


# ----------------------------------------------------------------------------- average pools

AVG2D = [  # (spatial, kernel, stride, padding, ceil, count_include_pad, divisor_override)
    ((8, 8), 2, None, 0, False, True, None),
    ((7, 9), 3, 2, 1, False, True, None),
    ((7, 9), 3, 2, 1, True, False, None),
    ((9, 7), (2, 3), (1, 2), (1, 1), True, True, None),
    ((9, 7), (3, 3), (2, 2), (1, 1), True, False, 5),
    ((6, 5), (4, 2), (3, 1), (2, 0), True, True, 3),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("sp,k,s,p,ceil,cip,div", AVG2D)
def test_avg_pool2d(sp, k, s, p, ceil, cip, div, dt):
    x = R.standard_normal((2, 3) + sp).astype(dt)
    compare("avg_pool2d", x, k, s, p, ceil, cip, div)


@pytest.mark.parametrize("sp,k,s,p,ceil,cip,div", [((4, 6, 5), 2, None, 0, False, True, None),
                                                  ((5, 6, 7), (3, 2, 3), (2, 1, 2), 1, True,
                                                   False, None),
                                                  ((5, 5, 5), 3, 2, 1, True, True, 7)])
def test_avg_pool3d(sp, k, s, p, ceil, cip, div):
    x = R.standard_normal((2, 2) + sp)
    compare("avg_pool3d", x, k, s, p, ceil, cip, div)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_avg_pool1d(dt):
    x = R.standard_normal((2, 3, 11)).astype(dt)
    compare("avg_pool1d", x, 3)
    compare("avg_pool1d", x, 4, 3, 2, True, False)
    compare("avg_pool1d", x[0], 2, 1, 1)


def test_avg_pool_integers_truncate_like_pytorch():
    x = R.integers(-40, 40, (2, 3, 7, 7))
    compare("avg_pool2d", x, 3, 2, 1)
    compare("avg_pool2d", x, 2, 1, 1, True, False, 3)
    compare("avg_pool1d", x[0], 3, 2, 1)


@pytest.mark.parametrize("fn", [
    lambda t: F.avg_pool2d(t, 3, 2, 1),
    lambda t: F.avg_pool2d(t, (2, 3), 1, (1, 1), True, False),
    lambda t: F.avg_pool3d(t.reshape(1, 2, 5, 3, 4), 2, 1, 1, divisor_override=3),
    lambda t: F.adaptive_avg_pool2d(t, (3, 3)),
    lambda t: F.adaptive_avg_pool3d(t.reshape(1, 2, 5, 3, 4), (2, 2, 3)),
])
def test_avg_pool_gradcheck(fn):
    x = jt.tensor(R.standard_normal((2, 3, 5, 4)), requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_avg_pool_double_backward_node():
    x = jt.tensor(R.standard_normal((2, 3, 6, 6)), requires_grad=True)
    (g,) = jt.autograd.grad(F.avg_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "AvgPool2DBackwardBackward0"


def test_avg_pool_inf_only_reaches_its_windows():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.inf
    for lib, fns in ((jt, F), (torch, TF)):
        out = fns.avg_pool2d(lib.tensor(x), 2).numpy()
        if lib is jt:
            jo = out
    np.testing.assert_array_equal(jo, out)


# ----------------------------------------------------------------------------- adaptive pools


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("sp,osz", [((8, 8), 3), ((7, 9), (4, 2)), ((5, 6), (None, 4)),
                                    ((5, 6), (7, 9)), ((4, 4), 1), ((5, 3), 0)])
def test_adaptive_pool2d(sp, osz, dt):
    x = R.standard_normal((2, 3) + sp).astype(dt)
    compare("adaptive_avg_pool2d", x, osz, grad=osz != 0)  # PyTorch's backward refuses 0
    if osz != 0:
        compare("adaptive_max_pool2d", x, osz, True, indices=True)


def test_adaptive_pool1d_3d():
    x = R.standard_normal((2, 3, 10))
    compare("adaptive_avg_pool1d", x, 4)
    compare("adaptive_avg_pool1d", x, 1)
    compare("adaptive_max_pool1d", x, 3, True, indices=True)
    compare("adaptive_max_pool1d", x[0], 6)
    y = R.standard_normal((2, 2, 5, 6, 7))
    compare("adaptive_avg_pool3d", y, (2, 3, 4))
    compare("adaptive_avg_pool3d", y[0], (None, 4, 9))
    compare("adaptive_avg_pool3d", y, 1)
    compare("adaptive_max_pool3d", y, (2, 3, 4), True, indices=True)
    compare("adaptive_max_pool3d", y[0], (None, 2, 9), True, indices=True)


def test_max_unpool3d():
    x = R.standard_normal((1, 2, 4, 6, 5))
    for lib, fns in ((jt, F), (torch, TF)):
        out, idx = fns.max_pool3d(lib.tensor(x), 2, return_indices=True)
        leaf = lib.tensor(out.numpy(), requires_grad=True)
        u = fns.max_unpool3d(leaf, idx, 2, output_size=(4, 6, 5))
        (u * u).sum().backward()
        if lib is jt:
            ju, jg, jn = u.detach().numpy(), leaf.grad.numpy(), u.grad_fn.name()
    np.testing.assert_array_equal(ju, u.detach().numpy())
    np.testing.assert_array_equal(jg, leaf.grad.numpy())
    assert jn == u.grad_fn.name()


def test_non_contiguous_input_and_float16():
    x = R.standard_normal((2, 7, 6, 3)).transpose(0, 3, 1, 2)  # a channels-last layout
    compare("max_pool2d", x, 3, 2, 1, 1, False, True, indices=True)
    compare("avg_pool2d", x, 2)
    h = R.standard_normal((2, 3, 6, 7)).astype(np.float16)
    for name, args in (("avg_pool2d", (3, 2, 1)), ("adaptive_avg_pool2d", ((4, 3),))):
        jo = getattr(F, name)(jt.tensor(h), *args)
        to = getattr(TF, name)(torch.tensor(h), *args)
        assert jo.dtype == jt.float16
        np.testing.assert_allclose(jo.numpy().astype(np.float64),
                                   to.numpy().astype(np.float64), rtol=1e-3, atol=1e-3)


def test_top_level_names():
    x = R.standard_normal((2, 3, 8))
    for name, args in (("max_pool1d", (2,)), ("avg_pool1d", (3,)), ("adaptive_avg_pool1d", (3,)),
                       ("max_pool2d", (2,)), ("pixel_shuffle", (1,))):
        jo, to = getattr(jt, name)(jt.tensor(x), *args), getattr(torch, name)(torch.tensor(x),
                                                                               *args)
        np.testing.assert_allclose(jo.numpy(), to.numpy(), rtol=1e-12)
    for name in ("adaptive_max_pool1d", "max_pool1d_with_indices"):
        (jo, ji), (to, ti) = getattr(jt, name)(jt.tensor(x), 3), getattr(torch, name)(
            torch.tensor(x), 3)
        np.testing.assert_array_equal(jo.numpy(), to.numpy())
        np.testing.assert_array_equal(ji.numpy(), ti.numpy())


# ----------------------------------------------------------------------------- unpool, lp


def test_max_unpool():
    x = R.standard_normal((2, 3, 8, 8))
    for k, s, p, osz in ((2, None, 0, None), (3, 2, 1, (8, 8)), (2, 2, 0, (9, 9)),
                         (3, 2, 1, (2, 3, 8, 8))):
        for lib, fns in ((jt, F), (torch, TF)):
            t = lib.tensor(x, requires_grad=True)
            out, idx = fns.max_pool2d(t, k, s, p, return_indices=True)
            leaf = lib.tensor(out.detach().numpy(), requires_grad=True)
            u = fns.max_unpool2d(leaf, idx, k, s, p, osz)
            (u * lib.tensor(np.cos(np.arange(u.numel())).reshape(tuple(u.shape)))).sum() \
                .backward()
            if lib is jt:
                ju, jg, jn = u.detach().numpy(), leaf.grad.numpy(), u.grad_fn.name()
        np.testing.assert_array_equal(ju, u.detach().numpy())
        np.testing.assert_allclose(jg, leaf.grad.numpy(), rtol=1e-12)
        assert jn == u.grad_fn.name()
    y = R.standard_normal((2, 3, 9))
    for lib, fns in ((jt, F), (torch, TF)):
        out, idx = fns.max_pool1d(lib.tensor(y), 3, 2, 1, return_indices=True)
        u = fns.max_unpool1d(out, idx, 3, 2, 1)
        if lib is jt:
            ju = u.numpy()
    np.testing.assert_array_equal(ju, u.numpy())


def test_max_unpool_gradgradcheck():
    x = jt.tensor(R.standard_normal((2, 3, 4, 4)), requires_grad=True)
    _, idx = F.max_pool2d(jt.tensor(R.standard_normal((2, 3, 8, 8))), 2, return_indices=True)
    assert gradcheck(lambda t: F.max_unpool2d(t, idx, 2), (x,))
    assert gradgradcheck(lambda t: F.max_unpool2d(t, idx, 2), (x,))


def test_lp_pool():
    x = np.abs(R.standard_normal((2, 3, 8, 7))) + 0.1
    compare("lp_pool2d", x, 2.0, 2)
    compare("lp_pool2d", x, 3.0, (3, 2), 2, True)
    compare("lp_pool1d", x[0], 2.0, 3)
    compare("lp_pool3d", x.reshape(1, 2, 3, 8, 7), 1.5, (1, 2, 3), (1, 2, 2), True)
    compare("lp_pool2d", x, float("inf"), 3, 2)
    compare("lp_pool1d", x[0], -float("inf"), 2)


# ----------------------------------------------------------------------------- errors


ERRORS = [
    ("max_pool2d", (2, 3, 8, 8), (2,), dict(padding=2)),
    ("max_pool2d", (2, 3, 8, 8), (9,), {}),
    ("max_pool2d", (2, 3, 8, 8), (0,), {}),
    ("max_pool2d", (2, 3, 8, 8), (2,), dict(stride=0)),
    ("max_pool2d", (2, 3, 8, 8), (2,), dict(padding=-1)),
    ("max_pool2d", (2, 3, 8, 8), (2,), dict(dilation=0)),
    ("max_pool2d", (8,), (2,), {}),
    ("max_pool2d", (2, 3, 8, 8), ((2, 2, 2),), {}),
    ("max_pool2d", (2, 0, 4, 4), (2,), {}),
    ("max_pool1d", (2, 3, 8), (2,), dict(padding=2)),
    ("max_pool1d", (2, 3, 8), (9,), {}),
    ("max_pool1d", (2, 3, 8), (0,), {}),
    ("max_pool1d", (2, 3, 8), (2,), dict(stride=0)),
    ("max_pool1d", (2, 3, 8), (2,), dict(dilation=0)),
    ("max_pool1d", (8,), (2,), {}),
    ("max_pool1d", (2, 3, 8), ((2, 2),), {}),
    ("max_pool1d", (2, 3, 8), (2, (1, 1)), {}),
    ("max_pool1d", (2, 3, 8), (2,), dict(padding=(1, 1))),
    ("max_pool1d", (2, 3, 8), (2,), dict(dilation=(1, 1))),
    ("max_pool1d", (8,), (2,), dict(return_indices=True)),
    ("max_pool1d", (2, 3, 8), ((2, 2),), dict(return_indices=True)),
    ("max_pool1d", (2, 3, 8), (2,), dict(stride=(1, 1), return_indices=True)),
    ("max_pool1d", (2, 3, 8), (2,), dict(padding=2, return_indices=True)),
    ("max_pool3d", (2, 3, 6, 6, 6), (2,), dict(padding=2)),
    ("max_pool3d", (2, 3, 6, 6, 6), (7,), {}),
    ("max_pool3d", (3, 6, 6), (2,), {}),
    ("max_pool3d", (2, 3, 6, 6, 6), (2,), dict(dilation=0)),
    ("max_pool2d", (1, 1, 4, 4), ((2, 3), 1, (2, 1), (3, 1)), {}),  # pad > k/2, dilated
    ("max_pool3d", (1, 1, 4, 4, 4), (2, 1, (0, 2, 0), 3), {}),
    ("max_pool1d", (1, 1, 4), (2, 1, 2, 3), dict(return_indices=True)),
    ("avg_pool2d", (2, 3, 8, 8), (2,), dict(padding=2)),
    ("avg_pool2d", (2, 3, 8, 8), (9,), {}),
    ("avg_pool2d", (2, 3, 8, 8), (2,), dict(divisor_override=0)),
    ("avg_pool2d", (2, 3, 6, 6, 6), (2,), {}),
    ("avg_pool2d", (8,), (2,), {}),
    ("avg_pool2d", (2, 3, 8, 8), ((2, 2, 2),), {}),
    ("avg_pool1d", (8,), (2,), {}),
    ("avg_pool1d", (2, 3, 8), (9,), {}),
    ("avg_pool3d", (2, 3, 6, 6, 6), (7,), {}),
    ("avg_pool3d", (3, 6, 6), (2,), {}),
    ("adaptive_avg_pool2d", (2, 3, 8, 8), ((2, 2, 2),), {}),
    ("adaptive_avg_pool2d", (2, 3, 8, 8), (-1,), {}),
    ("adaptive_avg_pool2d", (2, 3, 0, 8), (2,), {}),
    ("adaptive_avg_pool2d", (8, 8), (2,), {}),
    ("adaptive_avg_pool3d", (2, 3, 8), (2,), {}),
    ("adaptive_avg_pool1d", (2, 3, 8, 8), (2,), {}),
    ("adaptive_avg_pool1d", (2, 3, 8), ((2, 2),), {}),
    ("adaptive_max_pool2d", (2, 3, 0, 8), (2,), {}),
    ("adaptive_max_pool2d", (2, 3, 6, 6, 6), (2,), {}),
    ("adaptive_max_pool3d", (2, 3, 6), (2,), {}),
    ("adaptive_max_pool3d", (1, 2, 6, 6, 6), ((2, 2),), {}),
    ("adaptive_max_pool3d", (1, 2, 0, 3, 3), (2,), {}),
]


def _error(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize("name,shape,args,kwargs", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_match_pytorch(name, shape, args, kwargs):
    x = R.standard_normal(shape)
    want = _error(lambda: getattr(TF, name)(torch.tensor(x), *args, **kwargs))
    got = _error(lambda: getattr(F, name)(jt.tensor(x), *args, **kwargs))
    assert want is not None
    assert got == want


def test_dtype_errors():
    x = R.standard_normal((2, 3, 4, 4)) > 0
    for name in ("max_pool2d", "avg_pool2d"):
        want = _error(getattr(TF, name), torch.tensor(x), 2)
        assert _error(getattr(F, name), jt.tensor(x), 2) == want
    y = R.integers(0, 5, (2, 3, 4, 4))
    for name in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        want = _error(getattr(TF, name), torch.tensor(y), 2)
        assert _error(getattr(F, name), jt.tensor(y), 2) == want


def test_unpool_errors():
    x = R.standard_normal((1, 1, 2, 2))
    cases = [(np.array([[[[0, 1], [2, 100]]]]), {}), (np.array([[[[0, 1], [2, 3]]]]),
                                                       dict(output_size=(9, 9))),
             (np.array([[[0, 1, 2]]]), {}), (np.zeros((1, 1, 2, 2), np.float32), {})]
    for idx, kw in cases:
        want = _error(TF.max_unpool2d, torch.tensor(x), torch.tensor(idx), 2, **kw)
        assert want is not None
        assert _error(F.max_unpool2d, jt.tensor(x), jt.tensor(idx), 2, **kw) == want


# ----------------------------------------------------------------------------- modules


MODULES = [
    ("MaxPool1d", (3, 2), {}), ("MaxPool2d", (2,), {}), ("MaxPool2d", (3, 1, 1, 2),
                                                         dict(ceil_mode=True)),
    ("MaxPool3d", (2,), dict(return_indices=True)), ("AvgPool1d", (3,), {}),
    ("AvgPool2d", (2,), dict(count_include_pad=False, padding=1)),
    ("AvgPool3d", (2,), dict(divisor_override=3)), ("AdaptiveAvgPool1d", (3,), {}),
    ("AdaptiveAvgPool2d", ((None, 3),), {}), ("AdaptiveAvgPool3d", (2,), {}),
    ("AdaptiveMaxPool1d", (2,), {}), ("AdaptiveMaxPool2d", (3,), dict(return_indices=True)),
    ("MaxUnpool1d", (2, 1), {}), ("MaxUnpool2d", (2,), {}), ("MaxUnpool3d", (2,), {}),
    ("AdaptiveMaxPool3d", (2,), {}), ("LPPool1d", (2, 3), {}),
    ("LPPool2d", (2, 3), {}), ("LPPool3d", (2, 3), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_module_repr_and_attributes(name, args, kwargs):
    jm, tm = getattr(jnn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(jm) == repr(tm)
    for attr in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "output_size",
                 "return_indices", "count_include_pad", "divisor_override", "norm_type"):
        assert getattr(jm, attr, None) == getattr(tm, attr, None), attr


def test_modules_forward():
    x = R.standard_normal((2, 3, 8, 8))
    for name, args, kwargs in (("MaxPool2d", (3, 2, 1), {}), ("AvgPool2d", (2,), {}),
                               ("AdaptiveAvgPool2d", ((2, 3),), {}),
                               ("AdaptiveMaxPool2d", (3,), {}), ("LPPool2d", (2, 2), {})):
        jo = getattr(jnn, name)(*args, **kwargs)(jt.tensor(x))
        to = getattr(torch.nn, name)(*args, **kwargs)(torch.tensor(x))
        np.testing.assert_allclose(jo.numpy(), to.numpy(), rtol=1e-12, atol=1e-13)
    pool, unpool = jnn.MaxPool2d(2, return_indices=True), jnn.MaxUnpool2d(2)
    out, idx = pool(jt.tensor(x))
    assert tuple(unpool(out, idx).shape) == (2, 3, 8, 8)


@pytest.mark.parametrize("name,args", [("max_pool2d", (2,)), ("avg_pool2d", (2,)),
                                       ("adaptive_avg_pool2d", (3,)),
                                       ("adaptive_max_pool2d", (3,))])
def test_saved_input_version_check_and_second_backward(name, args):
    x = R.standard_normal((1, 2, 6, 6))
    errors = []
    for lib, fns in ((jt, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        y = t * 1
        out = getattr(fns, name)(y, *args)
        y.mul_(2)
        e1 = _error(out.sum().backward)
        out = getattr(fns, name)(t * 1, *args)
        out.sum().backward()
        e2 = _error(out.sum().backward)
        errors.append((e1 and e1[0], e2 and e2[0]))
    assert errors[0] == errors[1] == (RuntimeError, RuntimeError)


def test_chain_second_derivatives_match_pytorch():
    """Pools and interpolation inside one graph: the gradient and the gradient of its norm
    (create_graph) equal PyTorch's."""
    x = R.standard_normal((2, 3, 9, 9))

    def f(fns, t):
        y = (t * 2).tanh()
        y = fns.max_pool2d(y, 3, 2, 1) + 0.5 * fns.avg_pool2d(y, 3, 2, 1)
        y = fns.interpolate(y.relu(), scale_factor=2, mode="bilinear").sigmoid()
        y = fns.adaptive_avg_pool2d(y, (2, 3)) * fns.adaptive_max_pool2d(y, 3)[..., :2, :3]
        return (y * y).sum()
    res = []
    for lib, fns in ((jt, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        out = f(fns, t)
        (g,) = lib.autograd.grad(out, t, create_graph=True)
        (g * g).sum().backward()
        res.append((out.item(), g.detach().numpy(), t.grad.numpy()))
    assert res[0][0] == pytest.approx(res[1][0], rel=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-10, atol=1e-14)


POOL_BACKWARDS = [  # (call, PyTorch's create_graph node of the input gradient)
    (lambda f, x: f.max_pool2d(x, 2), "MaxPool2DWithIndicesBackwardBackward0"),
    (lambda f, x: f.max_pool3d(x.unsqueeze(2), (1, 2, 2)), "SqueezeBackward1"),
    (lambda f, x: f.avg_pool2d(x, 3, 1, 1), "AvgPool2DBackwardBackward0"),
    (lambda f, x: f.adaptive_avg_pool2d(x, 3), "AdaptiveAvgPool2DBackwardBackward0"),
    (lambda f, x: f.adaptive_max_pool2d(x, (2, 3)), "AdaptiveMaxPool2DBackwardBackward0"),
    (lambda f, x: f.adaptive_avg_pool1d(x[0], 4), "SelectBackwardBackward0"),
]


@pytest.mark.parametrize("case", range(len(POOL_BACKWARDS)))
def test_pool_backward_records_through_the_input_with_constant_upstream(case):
    """PyTorch's pool backwards take (grad_output, self): under create_graph the input gradient
    is recorded even when the upstream gradient is a constant, and differentiating it gives
    zeros (its derivative in ``self`` is zeros_like)."""
    call, node = POOL_BACKWARDS[case]
    x0 = R.standard_normal((1, 2, 6, 6))
    res = []
    for lib, fns in ((jt, F), (torch, TF)):
        x = lib.tensor(x0, requires_grad=True)
        (g,) = lib.autograd.grad(call(fns, x).sum(), x, create_graph=True)
        assert g.requires_grad
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        res.append((g.grad_fn.name(), gg.numpy()))
    if node != "SelectBackwardBackward0":  # jitgrad's select backward is an index_put
        assert res[0][0] == res[1][0] == node
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert not res[0][1].any()


@pytest.mark.parametrize("name", ["adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d",
                                  "avg_pool1d"])
def test_pool1d_create_graph_nodes(name):
    # the 1-d pools are the 2-d ones between unsqueeze/squeeze: their double-backward graph
    # goes through SqueezeBackward1 (unsqueeze's backward is a squeeze), as PyTorch's
    names = []
    for lib, fns in ((jt, F), (torch, TF)):
        x = lib.tensor(R.standard_normal((2, 3, 8)), requires_grad=True)
        (g,) = lib.autograd.grad(getattr(fns, name)(x, 3).sum(), x, create_graph=True)
        names.append(g.grad_fn.name())
    assert names[0] == names[1] == "SqueezeBackward1"


def test_squeeze_unsqueeze_backward_nodes():
    for lib in (jt, torch):
        x = lib.tensor(R.standard_normal((2, 1, 6, 1)), requires_grad=True)
        for fn, node in ((lambda t: t.squeeze(1), "UnsqueezeBackward0"),
                         (lambda t: t.squeeze(), "UnsqueezeBackward0"),
                         (lambda t: t.squeeze((1, 3)), "UnsqueezeBackward0"),
                         (lambda t: t.unsqueeze(-1), "SqueezeBackward1")):
            y = fn(x)
            (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
            assert g.grad_fn.name() == node and tuple(g.shape) == (2, 1, 6, 1)
            np.testing.assert_allclose(g.detach().numpy(), 2 * x.detach().numpy())


@pytest.mark.parametrize("call", [
    "max_pool2d(x, 3, return_indices=True)", "max_pool1d(x[0], 3, return_indices=True)",
    "max_pool3d(x.unsqueeze(0), 1, return_indices=True)", "max_pool2d(x, 3, (), 0, 1, False, True)",
    "avg_pool1d(x[0], 3, divisor_override=2)", "adaptive_max_pool1d(x[0], 3, True)",
    "max_pool1d_with_indices(x[0], 3, return_indices=True)"])
def test_top_level_pools_have_atens_signature(call):
    errors = []
    for lib in (jt, torch):
        x = lib.tensor(R.standard_normal((1, 2, 6, 6)))
        with pytest.raises(TypeError) as e:
            eval("lib." + call, {"lib": lib, "x": x})
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_top_level_pools_empty_stride_is_the_kernel():
    x = R.standard_normal((1, 2, 6, 6))
    for name, arg in (("max_pool2d", x), ("max_pool1d", x[0]), ("avg_pool1d", x[0]),
                      ("max_pool3d", x[None])):
        jo = getattr(jt, name)(jt.tensor(arg), 2, ())
        to = getattr(torch, name)(torch.tensor(arg), 2, ())
        np.testing.assert_array_equal(jo.numpy(), to.numpy())
