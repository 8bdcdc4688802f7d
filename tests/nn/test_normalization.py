"""batch_norm / group_norm / instance_norm / rms_norm / local_response_norm, the channel
dropouts and their modules, against PyTorch (values, gradients, node names, errors, running
statistics, state dicts) and float64 finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-11)}


def randn(*shape, dt=np.float64, scale=1.0, shift=0.0):
    return (RNG.standard_normal(shape) * scale + shift).astype(dt)


def both(fn, arrays, grad=(), dt=np.float64, weight_seed=0):
    """Run ``fn(lib, *tensors)`` with jitgrad and torch; compare outputs, node names and the
    gradients of ``sum(out * R)`` for the inputs in ``grad``."""
    res = {}
    for lib in (jg, torch):
        ts = [lib.tensor(a, requires_grad=i in grad) if isinstance(a, np.ndarray) else a
              for i, a in enumerate(arrays)]
        out = fn(lib, *ts)
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        grads = []
        if grad:
            r = np.random.default_rng(weight_seed).standard_normal(tuple(out.shape))
            (out * lib.tensor(r.astype(np.dtype(dt)))).sum().backward()
            grads = [ts[i].grad.numpy() for i in grad]
        res[lib] = (out.detach().numpy(), name, grads)
    (o1, n1, g1), (o2, n2, g2) = res[jg], res[torch]
    assert o1.dtype == o2.dtype and o1.shape == o2.shape
    np.testing.assert_allclose(o1, o2, **TOL[dt])
    assert n1 == n2
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, **TOL[dt])
    return res


def FF(lib):
    return F if lib is jg else torch.nn.functional


# ----------------------------------------------------------------------------- batch_norm


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 3), (5, 3, 7), (2, 4, 3, 5), (2, 2, 2, 3, 2)])
@pytest.mark.parametrize("training,affine", [(True, True), (False, True), (True, False)])
def test_batch_norm_matches_torch(dt, shape, training, affine):
    c = shape[1]
    arrays = [randn(*shape, dt=dt, scale=2.0, shift=1.0), randn(c, dt=dt), randn(c, dt=dt)]
    rm0, rv0 = randn(c, dt=dt), np.abs(randn(c, dt=dt)) + 0.5
    stats = {}

    def run(lib, x, w, b):
        rm, rv = lib.tensor(rm0.copy()), lib.tensor(rv0.copy())
        out = FF(lib).batch_norm(x, rm, rv, w if affine else None, b if affine else None,
                                 training=training, momentum=0.3, eps=1e-4)
        stats[lib] = (rm.numpy(), rv.numpy())
        return out

    both(run, arrays, grad=(0, 1, 2) if affine else (0,), dt=dt)
    for a, b in zip(stats[jg], stats[torch]):
        np.testing.assert_allclose(a, b, **TOL[dt])


def test_batch_norm_without_running_stats_and_node_edges():
    x = randn(6, 3, 4)
    both(lambda lib, t: FF(lib).batch_norm(t, None, None, training=True), [x], grad=(0,))
    w = jg.ones(3, dtype=jg.float64, requires_grad=True)
    y = F.batch_norm(jg.tensor(x, requires_grad=True), None, None, w, None, training=True)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    assert len(y.grad_fn.next_functions) == 3 and y.grad_fn.next_functions[2] == (None, 0)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck_and_double_backward(training):
    x = jg.tensor(randn(3, 2, 4, scale=2.0), requires_grad=True)
    w = jg.tensor(randn(2), requires_grad=True)
    b = jg.tensor(randn(2), requires_grad=True)
    rm, rv = jg.tensor(randn(2)), jg.tensor(np.abs(randn(2)) + 1.0)

    def fn(x, w, b):
        return F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_double_backward_matches_torch():
    x0, w0 = randn(4, 3, 5, scale=2.0), randn(3)
    res = []
    for lib in (jg, torch):
        x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
        y = FF(lib).batch_norm(x, None, None, w, None, training=True)
        (gx,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        gg = lib.autograd.grad((gx * gx).sum(), [x, w])
        res.append([gx.detach().numpy()] + [g.numpy() for g in gg])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_batch_norm_errors():
    x = jg.randn(4, 3, 5)

    def msg(fn, lib=jg):
        with pytest.raises(Exception) as e:
            fn(lib)
        return type(e.value), str(e.value)

    cases = [
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3, 5), lib.zeros(4), lib.ones(4),
                                       training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3, 5), lib.zeros(3), lib.ones(3),
                                       lib.ones(4), training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3, 5), lib.zeros(3), lib.ones(3), None,
                                       lib.ones(4), training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3, 5), None, None, training=False),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3, 5), lib.zeros(3), None, training=False),
        lambda lib: FF(lib).batch_norm(lib.randn(1, 3), None, None, training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3), None, None, training=True, eps=0.0),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3).long(), None, None, training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3).double(), lib.zeros(3), lib.ones(3),
                                       training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(4, 3), None, None, lib.ones(3).double(),
                                       training=True),
        lambda lib: lib.nn.BatchNorm1d(4)(lib.randn(4, 3, 5)),
        lambda lib: lib.nn.BatchNorm2d(3)(lib.randn(4, 3, 5)),
        lambda lib: lib.nn.BatchNorm3d(3)(lib.randn(4, 3, 5, 2)),
        lambda lib: lib.nn.BatchNorm1d(3)(lib.randn(1, 3)),
        lambda lib: FF(lib).batch_norm(lib.randn(3), lib.zeros(3), lib.ones(3)),
        lambda lib: FF(lib).batch_norm(lib.randn(3), None, None, training=True),
        lambda lib: FF(lib).batch_norm(lib.randn(3), None, None),
    ]
    del x
    for case in cases:
        assert msg(case) == msg(case, torch)


def test_batch_norm_empty_batch():
    both(lambda lib, t: FF(lib).batch_norm(t, lib.zeros(3), lib.ones(3), training=True),
         [randn(0, 3, 2)])


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_batchnorm_module_running_stats_over_steps(momentum, cls):
    shape = (6, 3, 4) if cls == "BatchNorm1d" else (5, 3, 4, 2)
    batches = [randn(*shape, dt=np.float32, scale=3.0, shift=2.0) for _ in range(4)]
    mods = {lib: getattr(lib.nn, cls)(3, momentum=momentum) for lib in (jg, torch)}
    for step, xb in enumerate(batches):
        outs = {}
        for lib, m in mods.items():
            m.train(step < 3)  # the last batch in eval mode
            x = lib.tensor(xb, requires_grad=True)
            y = m(x)
            (y * y).sum().backward()
            outs[lib] = (y.detach().numpy(), x.grad.numpy(), m.weight.grad.numpy())
        for a, b in zip(outs[jg], outs[torch]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            a, b = getattr(mods[jg], name), getattr(mods[torch], name)
            assert a.dtype == jg.int64 if name == "num_batches_tracked" else True
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_batchnorm_module_options_and_state_dict():
    for kw in (dict(), dict(affine=False), dict(track_running_stats=False), dict(bias=False),
               dict(momentum=None, eps=1e-3)):
        a, b = nn.BatchNorm2d(4, **kw), torch.nn.BatchNorm2d(4, **kw)
        assert repr(a) == repr(b)
        assert list(a.state_dict()) == list(b.state_dict())
        x0 = randn(3, 4, 2, 2, dt=np.float32)
        for train in (True, False):
            a.train(train)
            b.train(train)
            np.testing.assert_allclose(a(jg.tensor(x0)).detach().numpy(),
                                       b(torch.tensor(x0)).detach().numpy(), rtol=1e-5,
                                       atol=1e-5)
    # a torch state dict (values as NumPy arrays) loads and gives torch's eval output
    tb = torch.nn.BatchNorm2d(4)
    tb.train()
    for _ in range(3):
        tb(torch.randn(8, 4, 3, 3) * 2 + 1)
    tb.weight.data.uniform_()
    ja = nn.BatchNorm2d(4)
    ja.load_state_dict({k: jg.tensor(v.numpy()) for k, v in tb.state_dict().items()})
    assert int(ja.num_batches_tracked) == 3 and ja.num_batches_tracked.dtype == jg.int64
    ja.eval()
    tb.eval()
    x0 = randn(2, 4, 3, 3, dt=np.float32)
    np.testing.assert_allclose(ja(jg.tensor(x0)).detach().numpy(),
                               tb(torch.tensor(x0)).detach().numpy(), rtol=1e-5, atol=1e-6)
    sd = ja.state_dict()
    assert sd._metadata[""]["version"] == 2
    # a version-1 checkpoint without num_batches_tracked still loads
    old = {k: v for k, v in sd.items() if k != "num_batches_tracked"}
    nn.BatchNorm2d(4).load_state_dict(old)


# ----------------------------------------------------------------------------- group_norm


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,groups", [((2, 6), 3), ((3, 4, 5), 2), ((2, 6, 3, 4), 3),
                                          ((2, 4, 3, 4), 4), ((1, 4, 7), 1), ((0, 4, 3), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(dt, shape, groups, affine):
    c = shape[1]
    arrays = [randn(*shape, dt=dt, scale=2.0, shift=-1.0), randn(c, dt=dt), randn(c, dt=dt)]
    both(lambda lib, x, w, b: FF(lib).group_norm(x, groups, w if affine else None,
                                                 b if affine else None, eps=1e-4),
         arrays, grad=(0, 1, 2) if affine else (0,), dt=dt)


def test_group_norm_gradcheck_and_errors():
    x = jg.tensor(randn(2, 4, 3), requires_grad=True)
    w = jg.tensor(randn(4), requires_grad=True)
    b = jg.tensor(randn(4), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    cases = [lambda lib: FF(lib).group_norm(lib.randn(4, 3, 5), 2),
             lambda lib: FF(lib).group_norm(lib.randn(4, 3, 5), 3, lib.ones(4)),
             lambda lib: FF(lib).group_norm(lib.randn(3), 3),
             lambda lib: FF(lib).group_norm(lib.randn(1, 3, 1), 3),
             lambda lib: lib.nn.GroupNorm(2, 3)]
    for case in cases:
        with pytest.raises(Exception) as e1:
            case(jg)
        with pytest.raises(Exception) as e2:
            case(torch)
        assert (type(e1.value), str(e1.value)) == (type(e2.value), str(e2.value))


def test_group_norm_module():
    for kw in (dict(), dict(affine=False), dict(bias=False, eps=1e-3)):
        a, b = nn.GroupNorm(2, 4, **kw), torch.nn.GroupNorm(2, 4, **kw)
        assert repr(a) == repr(b) and list(a.state_dict()) == list(b.state_dict())
        x0 = randn(3, 4, 5, dt=np.float32)
        np.testing.assert_allclose(a(jg.tensor(x0)).detach().numpy(),
                                   b(torch.tensor(x0)).detach().numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- instance_norm


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_matches_torch(dt, use_input_stats):
    arrays = [randn(3, 2, 4, 5, dt=dt, scale=2.0), randn(2, dt=dt), randn(2, dt=dt)]
    rm0, rv0 = randn(2, dt=dt), np.abs(randn(2, dt=dt)) + 0.5
    stats = {}

    def run(lib, x, w, b):
        rm, rv = lib.tensor(rm0.copy()), lib.tensor(rv0.copy())
        out = FF(lib).instance_norm(x, rm, rv, w, b, use_input_stats=use_input_stats,
                                    momentum=0.2)
        stats[lib] = (rm.numpy(), rv.numpy())
        return out

    res = both(run, arrays, grad=(0, 1, 2), dt=dt)
    assert res[jg][1] == "ViewBackward0"
    for a, b in zip(stats[jg], stats[torch]):
        np.testing.assert_allclose(a, b, **TOL[dt])


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 4, 4)),
                                       ("InstanceNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("kw", [dict(), dict(affine=True, track_running_stats=True)])
def test_instance_norm_modules(cls, shape, kw):
    a, b = getattr(nn, cls)(3, **kw), getattr(torch.nn, cls)(3, **kw)
    assert repr(a) == repr(b) and list(a.state_dict()) == list(b.state_dict())
    x0 = randn(*shape, dt=np.float32, scale=2.0)
    for train in (True, False):
        a.train(train)
        b.train(train)
        np.testing.assert_allclose(a(jg.tensor(x0)).detach().numpy(),
                                   b(torch.tensor(x0)).detach().numpy(), rtol=1e-5, atol=1e-5)
        if kw:
            np.testing.assert_allclose(a.running_var.numpy(), b.running_var.numpy(), rtol=1e-6)


def test_instance_norm_errors():
    cases = [lambda lib: FF(lib).instance_norm(lib.randn(2, 3, 1)),
             lambda lib: FF(lib).instance_norm(lib.randn(2, 3, 4), lib.zeros(4), lib.ones(4)),
             lambda lib: lib.nn.InstanceNorm1d(4, affine=True)(lib.randn(2, 3, 5)),
             lambda lib: lib.nn.InstanceNorm2d(3)(lib.randn(2, 3))]
    for case in cases:
        with pytest.raises(Exception) as e1:
            case(jg)
        with pytest.raises(Exception) as e2:
            case(torch)
        assert (type(e1.value), str(e1.value)) == (type(e2.value), str(e2.value))


# ----------------------------------------------------------------------------- rms_norm, lrn


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("norm,with_weight,eps", [((5,), True, None), ((3, 5), False, None),
                                                  ((5,), True, 1e-2)])
def test_rms_norm_matches_torch(dt, norm, with_weight, eps):
    arrays = [randn(2, 3, 5, dt=dt), randn(*norm, dt=dt)]
    both(lambda lib, x, w: FF(lib).rms_norm(x, norm, w if with_weight else None, eps),
         arrays, grad=(0, 1) if with_weight else (0,), dt=dt)
    a, b = nn.RMSNorm(norm, eps=eps), torch.nn.RMSNorm(norm, eps=eps)
    assert repr(a) == repr(b) and list(a.state_dict()) == list(b.state_dict())


def test_rms_norm_errors_and_gradcheck():
    x = jg.tensor(randn(3, 4), requires_grad=True)
    assert gradcheck(lambda x: F.rms_norm(x, (4,)), (x,))
    cases = [lambda lib: FF(lib).rms_norm(lib.randn(4, 3, 5), (4,)),
             lambda lib: FF(lib).rms_norm(lib.randn(4, 3, 5), (5,), lib.ones(4)),
             lambda lib: FF(lib).rms_norm(lib.randn(4, 3, 5), 5)]
    for case in cases:
        with pytest.raises(Exception) as e1:
            case(jg)
        with pytest.raises(Exception) as e2:
            case(torch)
        assert (type(e1.value), str(e1.value)) == (type(e2.value), str(e2.value))


@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 3), 2), ((1, 4, 2, 2, 2), 5)])
def test_local_response_norm(shape, size):
    both(lambda lib, x: FF(lib).local_response_norm(x, size, alpha=0.1, beta=0.6, k=2.0),
         [randn(*shape)], grad=(0,))
    assert repr(nn.LocalResponseNorm(3)) == repr(torch.nn.LocalResponseNorm(3))


# ----------------------------------------------------------------------------- channel dropout


@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)),
                                      ("dropout2d", (3, 5, 2, 2)), ("dropout3d", (2, 4, 2, 2, 2)),
                                      ("dropout3d", (4, 2, 2, 2))])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_channel_dropout_draws_like_torch(fn, shape, dt):
    x0 = randn(*shape, dt=dt) + 3.0
    outs = []
    for lib in (jg, torch):
        lib.manual_seed(11)
        x = lib.tensor(x0, requires_grad=True)
        y = getattr(FF(lib), fn)(x, p=0.4, training=True)
        y.sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__,
                     lib.rand(3).numpy()))  # the generator advanced by the same draws
    for a, b in zip(outs[0], outs[1]):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)
    batched = len(shape) == {"dropout1d": 3, "dropout2d": 4, "dropout3d": 5}[fn]
    y = outs[0][0]
    flat = y.reshape(int(np.prod(shape[:2 if batched else 1])), -1)
    dropped = (flat == 0).all(-1)
    assert (dropped | (flat != 0).all(-1)).all() and dropped.any()  # whole channels dropped


def test_channel_dropout_modules_and_errors():
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d"):
        m, t = getattr(nn, cls)(0.3), getattr(torch.nn, cls)(0.3)
        assert repr(m) == repr(t)
        m.eval()
        x = jg.randn(2, 3, 4, 4, 4)[..., 0, 0] if cls == "Dropout1d" else jg.randn(2, 3, 4, 4)
        if cls == "Dropout3d":
            x = jg.randn(2, 3, 2, 2, 2)
        assert m(x) is x
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(jg.randn(3), 0.5)
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout2d(1.5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        F.dropout2d(jg.randn(2, 3, 4), 0.5)
    assert "Received a 3D input to dropout2d" in str(w[-1].message)
    x = jg.randn(2, 3, 4, 4)
    assert (F.dropout2d(x, 1.0) == 0).all()
    jg.manual_seed(3)
    torch.manual_seed(3)
    a = jg.ones(2, 3, 4, 4)
    b = torch.ones(2, 3, 4, 4)
    F.dropout2d(a, 0.5, inplace=True)
    torch.nn.functional.dropout2d(b, 0.5, inplace=True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_alpha_dropout_draws_like_torch(fn, dt):
    x0 = randn(3, 4, 5, dt=dt)
    outs = []
    for lib in (jg, torch):
        lib.manual_seed(3)
        x = lib.tensor(x0, requires_grad=True)
        y = getattr(FF(lib), fn)(x, 0.3, True)
        (y * y).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    for a, b in zip(outs[0], outs[1]):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6 if dt == np.float32 else 1e-14)
    for cls in ("AlphaDropout", "FeatureAlphaDropout"):
        m = getattr(nn, cls)(0.2)
        assert repr(m) == repr(getattr(torch.nn, cls)(0.2))
        x = jg.randn(2, 3)
        assert m.eval()(x) is x


def test_norms_of_non_contiguous_inputs():
    x0 = randn(4, 5, 6, scale=2.0)
    both(lambda lib, x: FF(lib).batch_norm(x.permute(0, 2, 1), None, None, training=True),
         [x0], grad=(0,))
    both(lambda lib, x: FF(lib).group_norm(x.transpose(1, 2), 3), [x0], grad=(0,))
    both(lambda lib, x: FF(lib).instance_norm(x[:, ::2]), [x0], grad=(0,))


def test_instance_norm_and_lrn_gradcheck():
    x = jg.tensor(randn(2, 3, 4, scale=2.0), requires_grad=True)
    w = jg.tensor(randn(3), requires_grad=True)
    assert gradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))
    assert gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5), (x,))
    assert gradgradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))


@pytest.mark.parametrize("view", ["transpose01", "permute", "slice", "transpose12"])
@pytest.mark.parametrize("fn", ["dropout", "alpha_dropout"])
def test_dropout_of_strided_inputs_draws_in_memory_order(view, fn):
    """PyTorch's noise is ``empty_like(x)`` (a permuted input's layout kept), filled in memory
    order: a transposed input drops other elements than its contiguous copy would."""
    x0 = randn(3, 4, 5)
    views = {"transpose01": lambda t: t.transpose(0, 1), "permute": lambda t: t.permute(2, 0, 1),
             "slice": lambda t: t[:, ::2], "transpose12": lambda t: t.transpose(1, 2)}
    res = []
    for lib in (jg, torch):
        lib.manual_seed(1)
        res.append(getattr(FF(lib), fn)(views[view](lib.tensor(x0)), 0.4, True).numpy())
    np.testing.assert_array_equal(res[0], res[1])
