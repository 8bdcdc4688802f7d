"""Convolutions, transposed convolutions, unfold/fold and their modules against PyTorch:
forward (float32, float64) and gradients on a grid of arguments, finite differences and
second derivatives in float64, node names, PyTorch's errors, module init draws and reprs.

    python -m pytest tests/nn/test_conv.py
"""
from __future__ import annotations

import functools
import re
import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck, gradgradcheck

TF = torch.nn.functional
RNG = np.random.default_rng(11)
TOL = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=1e-4, atol=1e-4)}


def _randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def _both(arrays, grad=True):
    j = [None if a is None else jg.tensor(a, requires_grad=grad) for a in arrays]
    t = [None if a is None else torch.tensor(a, requires_grad=grad) for a in arrays]
    return j, t


def _compare(fname, arrays, dt=np.float64, **kw):
    """Forward and every gradient of ``fname(*arrays, **kw)`` against PyTorch."""
    arrays = [None if a is None else a.astype(dt) for a in arrays]
    (jx, t) = _both(arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # padding="same" with even kernels warns in both
        jo = getattr(F, fname)(*jx, **kw)
        to = getattr(TF, fname)(*t, **kw)
    assert tuple(jo.shape) == tuple(to.shape)
    assert jo.dtype.name == str(to.dtype).replace("torch.", "")
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), **TOL[dt])
    assert jo.grad_fn.name() == to.grad_fn.name()
    g = RNG.standard_normal(tuple(to.shape)).astype(dt)
    jo.backward(jg.tensor(g))
    to.backward(torch.tensor(g))
    for a, b in zip(jx, t):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dt])
    return jo


# (input shape, weight shape, kwargs): strides, paddings (ints, tuples, strings), dilations,
# groups (depthwise too), odd sizes, 1x1 kernels, kernels as large as the padded input
CONV = [
    ((2, 3, 7), (4, 3, 3), {}),
    ((2, 4, 9), (6, 2, 4), dict(stride=2, padding=2, dilation=2, groups=2)),
    ((3, 5), (2, 3, 5), dict(padding="same")),
    ((2, 3, 7, 6), (4, 3, 3, 2), {}),
    ((2, 3, 7, 6), (5, 3, 3, 3), dict(stride=(2, 1), padding=(1, 2))),
    ((1, 4, 9, 8), (8, 1, 3, 3), dict(padding=1, groups=4)),          # channel multiplier 2
    ((2, 6, 5, 7), (6, 1, 3, 3), dict(padding=1, groups=6, stride=2)),  # depthwise
    ((2, 4, 6, 6), (4, 2, 2, 2), dict(padding="same", dilation=(1, 2), groups=2)),
    ((2, 3, 8, 5), (4, 3, 3, 3), dict(padding="valid", dilation=(2, 1), stride=(3, 2))),
    ((2, 3, 5, 5), (2, 3, 1, 1), {}),
    ((2, 3, 3, 4), (2, 3, 5, 6), dict(padding=1)),                   # kernel == padded input
    ((3, 6, 5), (4, 3, 3, 2), dict(padding=1)),                      # unbatched
    ((0, 3, 5, 5), (4, 3, 3, 3), dict(padding=1)),                   # empty batch
    ((2, 2, 4, 5, 3), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
    ((1, 4, 3, 4, 5), (4, 2, 3, 1, 3), dict(dilation=(1, 2, 2), groups=2, padding="same")),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("xs,ws,kw", CONV, ids=[str(i) for i in range(len(CONV))])
def test_conv_matches_torch(xs, ws, kw, dt):
    fname = f"conv{len(ws) - 2}d"
    bias = _randn(ws[0])
    _compare(fname, [_randn(*xs), _randn(*ws), bias], dt, **kw)


CONV_T = [
    ((2, 3, 5), (3, 4, 3), {}),
    ((2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2)),
    ((2, 4, 5, 6), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 6), (4, 3, 3, 3), dict(stride=(2, 1), padding=(0, 2), groups=2, dilation=2,
                                      output_padding=(1, 1))),
    ((1, 6, 4, 4), (6, 1, 3, 3), dict(stride=2, groups=6)),          # depthwise
    ((4, 3, 3), (4, 2, 2, 2), dict(stride=2)),                       # unbatched
    ((0, 4, 3, 3), (4, 2, 2, 2), {}),                                # empty batch
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), dict(stride=2, padding=(1, 0, 0))),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("xs,ws,kw", CONV_T, ids=[str(i) for i in range(len(CONV_T))])
def test_conv_transpose_matches_torch(xs, ws, kw, dt):
    fname = f"conv_transpose{len(ws) - 2}d"
    bias = _randn(ws[1] * kw.get("groups", 1))
    _compare(fname, [_randn(*xs), _randn(*ws), bias], dt, **kw)


def test_no_bias_and_integer_conv():
    _compare("conv2d", [_randn(2, 3, 5, 5), _randn(4, 3, 3, 3), None], padding=1)
    x = RNG.integers(-5, 5, (2, 3, 5, 5))
    w = RNG.integers(-5, 5, (4, 3, 3, 3))
    jo = F.conv2d(jg.tensor(x), jg.tensor(w), stride=2)
    to = TF.conv2d(torch.tensor(x), torch.tensor(w), stride=2)
    assert jo.dtype == jg.int64
    np.testing.assert_array_equal(jo.numpy(), to.numpy())


def test_float16_rounds_like_torch():
    x, w = _randn(2, 3, 6, 6, dt=np.float16), _randn(4, 3, 3, 3, dt=np.float16)
    jo = F.conv2d(jg.tensor(x), jg.tensor(w), padding=1)
    to = TF.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    assert jo.dtype == jg.float16
    np.testing.assert_allclose(jo.numpy().astype(np.float64), to.numpy().astype(np.float64),
                               rtol=2e-3, atol=2e-3)


# ----------------------------------------------------------------------------- finite differences


FD = [
    ("conv1d", (2, 2, 6), (3, 2, 3), (3,), dict(stride=2, padding=1)),
    ("conv2d", (1, 4, 5, 4), (4, 2, 3, 2), (4,), dict(padding=(1, 0), dilation=(1, 2),
                                                      groups=2)),
    ("conv2d", (1, 2, 4, 4), (2, 2, 2, 2), None, dict(padding="same")),
    ("conv3d", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,), dict(padding=1, stride=2)),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 3, 3, 2), (3,), dict(stride=2, output_padding=1)),
    ("conv_transpose1d", (2, 4, 3), (4, 1, 2), (2,), dict(stride=3, groups=2)),
]


@pytest.mark.parametrize("fname,xs,ws,bs,kw", FD, ids=[f[0] + str(i) for i, f in enumerate(FD)])
def test_gradcheck_and_gradgradcheck(fname, xs, ws, bs, kw):
    arrays = [_randn(*xs), _randn(*ws)] + ([_randn(*bs)] if bs else [])
    ts = [jg.tensor(a, requires_grad=True) for a in arrays]
    fn = getattr(F, fname)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda *a: fn(*a, **kw), ts)
        assert gradgradcheck(lambda *a: fn(*a, **kw), ts)


def test_double_backward_matches_torch_and_node_names():
    x0, w0, b0 = _randn(2, 3, 5, 5), _randn(4, 3, 3, 3), _randn(4)
    out = {}
    for lib, mod, f in (("jg", jg, F), ("torch", torch, TF)):
        x, w, b = (mod.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        y = f.conv2d(x, w, b, stride=2, padding=1)
        gx, gw, gb = mod.autograd.grad((y * y).sum(), [x, w, b], create_graph=True)
        names = tuple(type(t.grad_fn).__name__ for t in (gx, gw, gb))
        ((gx * gx).sum() + (gw ** 3).sum() + (gb ** 3).sum()).backward()
        out[lib] = [gx.detach().numpy(), gw.detach().numpy(), x.grad.numpy(), w.grad.numpy(),
                    b.grad.numpy(), names]
    assert out["jg"][5] == out["torch"][5] == ("ConvolutionBackwardBackward0",) * 3
    for a, b in zip(out["jg"][:5], out["torch"][:5]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fname,ws,need", [
    ("conv2d", (4, 3, 3, 3), (True, True, True)),
    ("conv2d", (4, 3, 3, 3), (True, False, False)),
    ("conv2d", (4, 3, 3, 3), (False, True, True)),
    ("conv_transpose2d", (3, 4, 3, 3), (True, True, True)),
    ("conv_transpose2d", (3, 4, 3, 3), (True, False, False)),
])
def test_gradients_of_a_constant_upstream_are_recorded_like_torch(fname, ws, need):
    """o.sum()'s upstream gradient is a constant: PyTorch still records the gradients as
    ConvolutionBackwardBackward0 (over grad_output, input, weight) because the saved input and
    weight require grad; second derivatives through them match."""
    arrays = (_randn(2, 3, 5, 5), _randn(*ws), _randn(ws[1] if "transpose" in fname else ws[0]))
    out = {}
    for lib, mod, f in (("jg", jg, F), ("torch", torch, TF)):
        x, w, b = (mod.tensor(a, requires_grad=r) for a, r in zip(arrays, need))
        wanted = [t for t, r in zip((x, w, b), need) if r]
        grads = mod.autograd.grad(getattr(f, fname)(x, w, b).sum(), wanted, create_graph=True)
        info = [(type(g.grad_fn).__name__, g.requires_grad) for g in grads]
        second = []
        if need[0] and need[1]:
            second = [t.detach().numpy() for t in mod.autograd.grad(
                (grads[0] * grads[0]).sum(), (w,), create_graph=True)]
            second.append(mod.autograd.grad((grads[1] ** 2).sum(), x)[0].numpy())
        out[lib] = info, [g.detach().numpy() for g in grads], second
    assert out["jg"][0] == out["torch"][0]
    assert all(name == "ConvolutionBackwardBackward0" for name, _ in out["jg"][0])
    for a, b in zip(out["jg"][1] + out["jg"][2], out["torch"][1] + out["torch"][2]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- unfold / fold


UNFOLD = [
    ((2, 3, 5, 5), dict(kernel_size=3)),
    ((2, 3, 5, 6), dict(kernel_size=(2, 3), dilation=(1, 2), padding=(1, 0), stride=(2, 1))),
    ((3, 4, 4), dict(kernel_size=2, stride=2)),
    ((0, 2, 4, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("xs,kw", UNFOLD, ids=[str(i) for i in range(len(UNFOLD))])
def test_unfold_fold_match_torch(xs, kw):
    x = _randn(*xs)
    cols = _compare("unfold", [x], **kw)
    c = _randn(*tuple(cols.shape))
    _compare("fold", [c], output_size=xs[-2:], **kw)
    assert gradcheck(lambda t: F.unfold(t, **kw), [jg.tensor(x, requires_grad=True)]) if \
        xs[0] else True
    assert gradgradcheck(lambda t: F.fold(t, xs[-2:], **kw), [jg.tensor(c, requires_grad=True)])


# ----------------------------------------------------------------------------- errors


def _set_order_free(msg):
    """Messages that print a Python set (valid padding modes) list it in an order that depends
    on the hash seed of the process that compiled each module's .pyc: compare sorted."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", ")))
                  + "}", msg)


def _raises_like(fn_j, fn_t):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(type(et.value)) as ej:
        fn_j()
    assert _set_order_free(str(ej.value)) == _set_order_free(str(et.value)), \
        (str(ej.value), str(et.value))


X = _randn(2, 3, 5, 5).astype(np.float32)
W = _randn(4, 3, 3, 3).astype(np.float32)
ERRORS = [
    ("conv2d", (X, _randn(4, 2, 3, 3)), {}),                     # wrong channel count
    ("conv2d", (X, _randn(4, 3, 7, 7)), {}),                     # kernel > input, dtype
    ("conv2d", (X, _randn(4, 3, 7, 7).astype(np.float32)), {}),  # kernel > input
    ("conv2d", (X, W), dict(padding=-1)),
    ("conv2d", (X, W), dict(padding=(1, -1))),
    ("conv2d", (X, W), dict(groups=2)),
    ("conv2d", (X, _randn(4, 1, 3, 3)), dict(groups=3)),          # weight not divisible
    ("conv2d", (X, W), dict(groups=0)),
    ("conv2d", (X, W), dict(stride=0)),
    ("conv2d", (X, W), dict(stride=-1)),
    ("conv2d", (X, W), dict(dilation=0)),
    ("conv2d", (X, W), dict(dilation=-1)),
    # a zero dilation is the kernel's to reject, after the shape checks, before the type checks,
    # in the words of the kernel PyTorch picks (oneDNN for this float32 batch, else the slow one)
    ("conv2d", (X, _randn(4, 2, 3, 3).astype(np.float32)), dict(dilation=0)),  # channels first
    ("conv2d", (X, W, _randn(3).astype(np.float32)), dict(dilation=0)),          # bias size first
    ("conv2d", (X[:1].astype(np.float64), _randn(4, 3, 3, 3)), dict(dilation=(1, 0))),
    ("conv2d", (X[:1], W), dict(dilation=0)),                   # float32 the slow kernel takes
    ("conv2d", (X[:1].astype(np.float64), W), dict(dilation=0)),  # before the dtype check
    ("conv1d", (_randn(2, 3, 6), _randn(4, 3, 2)), dict(dilation=0)),  # seen as 2-D: [1, 0]
    ("conv3d", (_randn(1, 2, 4, 4, 4), _randn(2, 2, 2, 2, 2)), dict(dilation=(1, 0, 1))),
    ("conv_transpose2d", (_randn(1, 3, 4, 4), _randn(3, 2, 3, 3)), dict(dilation=0)),
    ("conv_transpose2d", (_randn(1, 4, 4, 4), _randn(3, 2, 3, 3)), dict(dilation=0)),
    ("conv_transpose2d", (_randn(1, 3, 4, 4), _randn(3, 2, 3, 3)),
     dict(dilation=0, output_padding=1)),
    ("conv_transpose1d", (_randn(2, 3, 4), _randn(3, 2, 3)), dict(dilation=0)),
    ("conv_transpose3d", (_randn(1, 2, 3, 3, 3), _randn(2, 2, 2, 2, 2)), dict(dilation=(1, 0, 1))),
    # output too small: the 2-D kernel reports a 1-D one with a unit height
    ("conv_transpose1d", (_randn(1, 2, 3), _randn(2, 1, 2)), dict(padding=4)),
    ("conv_transpose1d", (_randn(2, 3), _randn(2, 1, 2)), dict(padding=4)),
    ("conv_transpose1d", (_randn(1, 2, 3), _randn(2, 2, 3)), dict(padding=5, dilation=2, stride=2)),
    ("conv2d", (X, W), dict(padding="same", stride=2)),
    ("conv2d", (X, W), dict(padding="foo")),
    ("conv2d", (X, W, _randn(3).astype(np.float32)), {}),       # bias size
    ("conv2d", (X[0, 0], W), {}),                                # rank
    ("conv2d", (X, W.astype(np.float64)), {}),                   # dtype
    ("conv2d", (X, W, _randn(4)), {}),                           # bias dtype
    ("conv2d", (X, W), dict(stride=(1, 1, 1))),
    ("conv2d", (X, W), dict(stride=2.0)),                        # TypeErrors, PyTorch's text
    ("conv2d", (X, W), dict(groups=1.5)),
    ("conv2d", (X, W), dict(padding=[1.0, 1])),
    ("conv_transpose2d", (X, _randn(3, 4, 3, 3).astype(np.float32)), dict(stride=2.0)),
    ("conv2d", (X, _randn(0, 3, 3, 3)), {}),
    ("conv2d", (X, _randn(4, 3, 3)), {}),
    ("conv1d", (X, _randn(4, 3, 3)), {}),
    ("conv2d", (_randn(2, 3, 0, 5), _randn(4, 3, 3, 3)), {}),
    ("conv2d", (X > 0, W > 0), {}),
    ("conv_transpose2d", (X, _randn(3, 4, 3, 3)), dict(output_padding=1)),
    ("conv_transpose3d", (_randn(1, 3, 3, 3, 3), _randn(3, 4, 3, 3, 3)), dict(output_padding=1)),
    ("conv_transpose2d", (X, _randn(2, 4, 3, 3)), {}),
    ("conv_transpose2d", (X, _randn(3, 4, 3, 3)), dict(groups=2)),
    ("conv_transpose2d", (X, _randn(3, 4, 3, 3)), dict(output_padding=-1, stride=2)),
    ("conv_transpose2d", (_randn(6, 6, 5, 5), _randn(6, 4, 3, 3), _randn(4)), dict(groups=3)),
    ("conv_transpose2d", (X[0, 0], _randn(3, 4, 3, 3)), {}),
    ("conv_transpose2d", (X.astype(np.int32), _randn(3, 4, 3, 3).astype(np.int32)), {}),
    ("unfold", (X, 7), {}),
    ("unfold", (X, 3), dict(padding=-1)),
    ("unfold", (X, 3), dict(stride=0)),
    ("unfold", (X, 0), {}),
    ("unfold", (X, (2, 3, 1)), {}),
    ("unfold", (X[0, 0], 3), {}),
    ("unfold", (X.astype(np.int32), 3), {}),
    ("fold", (_randn(2, 27, 9), (5, 5), 2), {}),
    ("fold", (_randn(2, 27, 9), (6, 5), 3), {}),
    ("fold", (_randn(2, 27, 9), (5, 5, 5), 3), {}),
    ("fold", (_randn(2, 3, 4, 5), (5, 5), 3), {}),
]


@pytest.mark.parametrize("fname,args,kw", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_match_torch(fname, args, kw):
    ja = [jg.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    ta = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    _raises_like(lambda: getattr(F, fname)(*ja, **kw), lambda: getattr(TF, fname)(*ta, **kw))


def test_transposed_output_too_small():
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose2d(jg.tensor(X), jg.tensor(_randn(3, 4, 3, 3).astype(np.float32)),
                           padding=5)


# ----------------------------------------------------------------------------- modules


MODULES = [
    ("Conv1d", (4, 6, 5), dict(stride=2, padding=1, groups=2), (2, 4, 11)),
    ("Conv2d", (3, 8, 3), dict(padding=1, padding_mode="circular"), (2, 3, 6, 7)),
    ("Conv2d", (3, 4, (3, 2)), dict(padding=(1, 2), padding_mode="reflect", bias=False),
     (2, 3, 6, 7)),
    ("Conv2d", (4, 4, 3), dict(padding="same", padding_mode="replicate", dilation=2, groups=4),
     (1, 4, 7, 7)),
    ("Conv2d", (3, 4, 4), dict(padding="same"), (1, 3, 6, 5)),
    ("Conv3d", (2, 4, (2, 3, 1)), dict(padding="valid"), (1, 2, 4, 5, 3)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, output_padding=1), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, groups=2, dilation=2),
     (2, 4, 4, 5)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=(1, 2, 2), bias=False), (1, 2, 3, 3, 2)),
]


@pytest.mark.parametrize("name,args,kw,xs", MODULES, ids=[m[0] + str(i) for i, m in
                                                          enumerate(MODULES)])
def test_modules_match_torch(name, args, kw, xs):
    for seed in (0, 7):
        torch.manual_seed(seed)
        jg.manual_seed(seed)
        tm = getattr(torch.nn, name)(*args, **kw)
        jm = getattr(nn, name)(*args, **kw)
        # PyTorch's init draws in PyTorch's order: equal bit for bit under the same seed
        np.testing.assert_array_equal(jm.weight.detach().numpy(), tm.weight.detach().numpy())
        if tm.bias is not None:
            np.testing.assert_array_equal(jm.bias.detach().numpy(), tm.bias.detach().numpy())
        assert repr(jm) == repr(tm)
    x = _randn(*xs, dt=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jo, to = jm(jg.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert jo.grad_fn.name() == to.grad_fn.name()
    jo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(jm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


def test_conv_transpose_output_size():
    tm = torch.nn.ConvTranspose2d(3, 4, 3, stride=2)
    jm = nn.ConvTranspose2d(3, 4, 3, stride=2)
    jm.load_state_dict({k: jg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _randn(2, 3, 6, 7, dt=np.float32)
    for size in ((14, 16), [2, 4, 13, 15]):
        np.testing.assert_allclose(jm(jg.tensor(x), output_size=size).detach().numpy(),
                                   tm(torch.tensor(x), output_size=size).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
    _raises_like(lambda: jm(jg.tensor(x), output_size=(20, 16)),
                 lambda: tm(torch.tensor(x), output_size=(20, 16)))


MODULE_ERRORS = [
    ("Conv2d", (3, 4, 3), dict(groups=2)),
    ("Conv2d", (4, 3, 3), dict(groups=2)),
    ("Conv2d", (4, 4, 3), dict(groups=0)),
    ("Conv2d", (4, 4, 3), dict(padding_mode="foo")),
    ("Conv2d", (4, 4, 3), dict(padding="same", stride=2)),
    ("Conv2d", (4, 4, 3), dict(padding="bad")),
    ("ConvTranspose2d", (4, 4, 3), dict(padding_mode="reflect")),
]


@pytest.mark.parametrize("name,args,kw", MODULE_ERRORS, ids=[str(i) for i in
                                                             range(len(MODULE_ERRORS))])
def test_module_errors_match_torch(name, args, kw):
    _raises_like(lambda: getattr(nn, name)(*args, **kw),
                 lambda: getattr(torch.nn, name)(*args, **kw))


def test_fold_unfold_modules():
    x = _randn(2, 3, 5, 5)
    for jm, tm in ((nn.Unfold(3, padding=1), torch.nn.Unfold(3, padding=1)),):
        assert repr(jm) == repr(tm)
        np.testing.assert_allclose(jm(jg.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())
    c = _randn(2, 12, 12)
    jm, tm = nn.Fold((4, 5), 2), torch.nn.Fold((4, 5), 2)
    assert repr(jm) == repr(tm)
    np.testing.assert_allclose(jm(jg.tensor(c)).numpy(), tm(torch.tensor(c)).numpy())


# ----------------------------------------------------------------------------- internal paths


@pytest.mark.parametrize("path", ["per-tap copies", "col2im for stride 1", "flip for stride 1"])
def test_other_cpu_paths_match_torch(monkeypatch, path):
    """im2col/col2im are compiled kernels for the dtypes they serve, with strided copies per
    kernel tap for the rest (complex128, float16 sums); stride-1 input gradients are
    convolutions with the flipped weight when that moves less data, else (and strided ones)
    GEMM + col2im. Force each branch and check a grid of cases against PyTorch."""
    from jitgrad.nn.functional import _conv_arrays as A
    from jitgrad.nn.functional import _conv_cols
    if path == "per-tap copies":
        monkeypatch.setattr(_conv_cols, "im2col_applies", lambda dtype: False)
        monkeypatch.setattr(_conv_cols, "col2im_applies", lambda dtype: False)
    else:
        monkeypatch.setattr(A, "_flips", lambda geo, cz, cy: path.startswith("flip"))
    for i in (0, 1, 4, 6, 7, 8, 10, 11, 13, 14):
        xs, ws, kw = CONV[i]
        _compare(f"conv{len(ws) - 2}d", [_randn(*xs), _randn(*ws), _randn(ws[0])], **kw)
    for xs, ws, kw in CONV_T[:5]:
        _compare(f"conv_transpose{len(ws) - 2}d",
                 [_randn(*xs), _randn(*ws), _randn(ws[1] * kw.get("groups", 1))], **kw)
    x = _randn(2, 3, 5, 6)
    _compare("unfold", [x], kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))


def test_non_contiguous_inputs():
    x = _randn(2, 6, 5, 3).transpose(0, 3, 1, 2)[:, :, ::2]   # permuted and strided
    w = _randn(4, 3, 3, 3).transpose(0, 1, 3, 2)
    _compare("conv2d", [x, w, _randn(4)], padding=1)
    jx = jg.tensor(_randn(2, 5, 6, 3), requires_grad=True)
    tx = torch.tensor(jx.detach().numpy(), requires_grad=True)
    jw, tw = jg.tensor(w), torch.tensor(w)
    jo = F.conv2d(jx.permute(0, 3, 1, 2), jw, stride=2)
    to = TF.conv2d(tx.permute(0, 3, 1, 2), tw, stride=2)
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-9)
    jo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-9)


def test_top_level_aliases():
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d"):
        assert getattr(jg, name) is getattr(F, name)
        assert hasattr(torch, name)


def test_im2col_table_cache_is_bounded_and_results_hold_across_batch_sizes():
    """The im2col/col2im index tables are kept per geometry (64 at most, none above
    ``_TABLE_CACHE_ENTRIES``); the batch size is not part of a table, and results (forward and
    both gradients, which use col2im) stay PyTorch's."""
    from jitgrad.nn.functional import _conv_cols as C
    C._tables.clear()
    w0 = _randn(8, 4, 3, 3)
    entries = []
    for n in (16, 5, 16):  # a full batch, the last partial one, the next epoch's full one
        _compare("conv2d", (_randn(n, 4, 12, 12), w0, None), padding=1, stride=2)
        entries.append(len(C._tables))
    assert entries[0] == entries[1] == entries[2] >= 1
    for side in range(8, 90):  # 82 geometries
        x = jg.tensor(_randn(1, 2, side, side).astype(np.float32))
        F.conv2d(x, jg.tensor(_randn(2, 2, 3, 3).astype(np.float32)), padding=1, stride=2)
    assert len(C._tables) <= 64
    x = jg.tensor(_randn(1, 1, 300, 300).astype(np.float32))
    _compare("conv2d", (_randn(1, 1, 300, 300), _randn(1, 1, 7, 7), None), padding=3, stride=2)
    assert all(t.size <= C._TABLE_CACHE_ENTRIES for t in C._tables.values())


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "float16", "bool"])
def test_im2col_of_every_item_size_matches_torch(dtype):
    """im2col moves bits through an unsigned view of the item size: negative integers
    (convolutions), float16 and bool (unfold, fold) come out exactly as PyTorch's."""
    raw = RNG.integers(-100, 100, (2, 3, 7, 6))
    x = raw > 0 if dtype == "bool" else raw.astype(dtype)
    for kw in (dict(padding=1), dict(dilation=(2, 1), padding=(1, 2), stride=(2, 3))):
        if dtype.startswith("int"):
            kw.pop("dilation", None)  # PyTorch's dilated integer kernel takes only int64
            w = RNG.integers(-3, 3, (4, 3, 3, 3)).astype(dtype)
            jo = F.conv2d(jg.tensor(x), jg.tensor(w), **kw)
            to = TF.conv2d(torch.tensor(x), torch.tensor(w), **kw)
        else:
            jo = F.unfold(jg.tensor(x), 3, **kw)
            to = TF.unfold(torch.tensor(x), 3, **kw)
            jf = F.fold(jo, (7, 6), 3, **kw)  # col2im: overlapping taps summed (bool: or)
            tf = TF.fold(to, (7, 6), 3, **kw)
            assert str(jf.dtype) == str(tf.dtype)
            np.testing.assert_array_equal(jf.numpy(), tf.numpy())
        assert str(jo.dtype) == str(to.dtype)
        np.testing.assert_array_equal(jo.numpy(), to.numpy())


# ----------------------------------------------------------------------------- the row path


@pytest.fixture
def rows_taken(monkeypatch):
    """Counts the CPU row path's (implicit GEMM over channels-last rows) forward and
    gradient calls."""
    from jitgrad.nn.functional import _conv_rows as R
    from jitgrad.nn.functional import _conv_winograd
    monkeypatch.setattr(_conv_winograd, "applies", lambda *a: False)  # its own tests below
    calls = []
    for name in ("forward", "input_grad", "weight_grad", "grads"):
        fn = getattr(R, name)
        monkeypatch.setattr(R, name, lambda *a, _fn=fn, _n=name: calls.append(_n) or _fn(*a))
    return calls


@pytest.fixture
def rows_forced(monkeypatch, rows_taken):
    """The row path for every stride-1, one-group float convolution, however few channels
    and however many of its rows fall off the output grid, in small chunks on the pool."""
    from jitgrad.nn.functional import _conv_rows as R
    monkeypatch.setattr(R, "_MIN_CHANNELS", 1)
    monkeypatch.setattr(R, "_MIN_USEFUL", 0.0)
    monkeypatch.setattr(R, "_CHUNK_BYTES", 256)  # several chunks even for the small cases
    monkeypatch.setattr(R, "_THREADED_WORK", 0)  # and the pool threads
    return rows_taken


ROWS = [  # stride 1, one group: the row path's cases, beyond CONV's
    ((3, 16, 10, 9), (24, 16, 3, 3), dict(padding=1)),
    ((2, 32, 20), (16, 32, 5), dict(padding=2, dilation=2)),
    ((2, 16, 10, 10, 10), (16, 16, 3, 2, 3), dict(padding=(1, 0, 1))),
    ((2, 16, 7, 8), (17, 16, 3, 3), dict(padding=(4, 3))),            # padding past d (k - 1)
    ((2, 16, 12, 12), (16, 16, 2, 2), dict(padding="same", dilation=(1, 3))),
    ((0, 16, 6, 6), (16, 16, 3, 3), dict(padding=1)),                 # empty batch
]


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
def test_row_path_matches_torch(rows_taken, dt):
    for xs, ws, kw in ROWS:
        _compare(f"conv{len(ws) - 2}d", [_randn(*xs), _randn(*ws), _randn(ws[0])], dt, **kw)
    assert rows_taken.count("forward") == len(ROWS)  # taken by default for these sizes
    assert rows_taken.count("grads") == len(ROWS)


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
def test_row_path_forced_on_every_grid_case(rows_forced, dt):
    for xs, ws, kw in CONV:
        _compare(f"conv{len(ws) - 2}d", [_randn(*xs), _randn(*ws), _randn(ws[0])], dt, **kw)
    for xs, ws, kw in CONV_T:
        _compare(f"conv_transpose{len(ws) - 2}d",
                 [_randn(*xs), _randn(*ws), _randn(ws[1] * kw.get("groups", 1))], dt, **kw)
    for xs, ws, kw in ROWS:
        _compare(f"conv{len(ws) - 2}d", [_randn(*xs), _randn(*ws), None], dt, **kw)
    assert {"forward", "input_grad", "grads"} <= set(rows_forced)


def test_row_path_gradcheck_and_gradgradcheck(rows_forced):
    for fname, xs, ws, kw in (("conv2d", (2, 3, 4, 5), (2, 3, 3, 2), dict(padding=(2, 1))),
                              ("conv1d", (1, 2, 6), (3, 2, 3), dict(dilation=2, padding=3)),
                              ("conv_transpose2d", (1, 2, 3, 3), (2, 3, 2, 2), {})):
        ts = [jg.tensor(a, requires_grad=True) for a in (_randn(*xs), _randn(*ws))]
        fn = functools.partial(getattr(F, fname), **kw)
        assert gradcheck(fn, ts)
        assert gradgradcheck(fn, ts)
    assert "weight_grad" in rows_forced  # gradgradcheck's maps, one at a time


def test_row_path_non_finite_input(rows_taken):
    """Rows off the output grid (zero in the output gradient) meet input values; with an inf
    there, 0 * inf would give NaN where im2col (and PyTorch) give a number: the weight
    gradient then takes im2col. Compared with PyTorch's float64 (im2col) kernel."""
    x = _randn(2, 16, 6, 7)
    x[0, 3, 0, 2] = np.inf   # first row: read by the bottom tap row only off the grid
    x[1, 5, 5, 6] = -np.inf  # last row and column
    x[1, 0, 2, 3] = np.nan
    with np.errstate(invalid="ignore"):
        _compare("conv2d", [x, _randn(16, 16, 3, 3), _randn(16)], padding=1)
    assert "grads" in rows_taken


def test_row_path_weight_gradient_is_the_same_every_run(rows_forced):
    """Pool threads take the chunks in no set order; the weight gradient's partial sums are
    per run of chunks, not per thread, so repeated runs agree bit for bit."""
    x = jg.tensor(_randn(4, 8, 9, 9).astype(np.float32))
    gy = jg.tensor(_randn(4, 8, 9, 9).astype(np.float32))
    w = jg.tensor(_randn(8, 8, 3, 3).astype(np.float32), requires_grad=True)
    runs = []
    for _ in range(6):
        (g,) = jg.autograd.grad(F.conv2d(x, w, padding=1), w, gy)
        runs.append(g.numpy())
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


@pytest.mark.parametrize("channels,kept", [(16, "NoneType"), (3, "Columns")])
def test_backward_reuses_the_forward_work_on_the_input(monkeypatch, channels, kept):
    """The forward keeps its columns of the input (im2col path, small) for the weight
    gradient, nothing on the row path; the backward gets them whether or not the input needs
    a gradient, and ignores them once the input holds other data (``x.data = ...``: PyTorch's
    backward then reads the new values)."""
    from jitgrad.nn.functional import _conv_arrays as A
    got = []
    grads = A.grads
    monkeypatch.setattr(A, "grads", lambda *a: got.append(a[-1]) or grads(*a))
    c = channels
    xa, xb, wa = _randn(2, c, 6, 7), _randn(2, c, 6, 7), _randn(c, c, 3, 3)
    _compare("conv2d", [xa, wa, None], padding=1)  # the work reused
    jx, jw = jg.tensor(xa), jg.tensor(wa, requires_grad=True)  # only the weight needs a gradient
    (gw,) = jg.autograd.grad(F.conv2d(jx, jw, padding=1).sum(), jw)
    tw = torch.tensor(wa, requires_grad=True)
    TF.conv2d(torch.tensor(xa), tw, padding=1).sum().backward()
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), **TOL[np.float64])
    for x_grad in (True, False):  # the input's data replaced: the work is stale
        jx = jg.tensor(xa, requires_grad=x_grad)
        tx = torch.tensor(xa, requires_grad=x_grad)
        jw, tw = jg.tensor(wa, requires_grad=True), torch.tensor(wa, requires_grad=True)
        jo, to = F.conv2d(jx, jw, padding=1), TF.conv2d(tx, tw, padding=1)
        jx.data, tx.data = jg.tensor(xb), torch.tensor(xb)
        jo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(jw.grad.numpy(), tw.grad.numpy(), **TOL[np.float64])
    assert [type(r).__name__ for r in got] == [kept, kept, "NoneType", "NoneType"]


def test_columns_kept_only_for_a_weight_gradient(monkeypatch):
    from jitgrad.nn.functional import _conv_arrays as A
    kept = []
    forward = A.forward
    monkeypatch.setattr(A, "forward", lambda *a, **k: kept.append(k.get("keep", False)) or
                        forward(*a, **k))
    x, w = jg.tensor(_randn(2, 3, 6, 7), requires_grad=True), jg.tensor(_randn(4, 3, 3, 3))
    F.conv2d(x, w, padding=1)
    w.requires_grad_()
    with jg.no_grad():
        F.conv2d(x, w, padding=1)
    F.conv2d(x, w, padding=1)
    assert kept == [False, False, True]


# ----------------------------------------------------------------------------- Winograd F(2x2, 3x3)


@pytest.fixture
def winograd_taken(monkeypatch):
    """The Winograd path's calls: "forward" (the forward and the input gradient) and
    "weight_grad"."""
    from jitgrad.nn.functional import _conv_winograd as W
    calls = []
    for name in ("forward", "weight_grad"):
        fn = getattr(W, name)
        monkeypatch.setattr(W, name, lambda *a, _fn=fn, _n=name: calls.append(_n) or _fn(*a))
    return calls


@pytest.fixture
def winograd_forced(monkeypatch, winograd_taken):
    """Winograd for every problem it can take, however small."""
    from jitgrad.nn.functional import _conv_winograd as W
    monkeypatch.setattr(W, "_MIN_WORK", 0)
    return winograd_taken


WINOGRAD = [  # 3x3, stride 1, >= 16 channels: odd sizes (partial tiles), every padding
    ((2, 16, 7, 9), (24, 16, 3, 3), dict(padding=1)),
    ((3, 16, 5, 6), (16, 16, 3, 3), {}),
    ((2, 17, 6, 5), (16, 17, 3, 3), dict(padding=2)),
    ((1, 16, 3, 3), (16, 16, 3, 3), dict(padding="same")),
    ((2, 16, 11, 10), (32, 16, 3, 3), dict(padding=(1, 0))),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
def test_winograd_matches_torch(winograd_forced, dt):
    """Forward and both gradients (the input gradient through Winograd too) against PyTorch's
    direct convolution: a few float32 ulps apart, as oneDNN's Winograd is from its direct
    kernel."""
    for xs, ws, kw in WINOGRAD:
        _compare("conv2d", [_randn(*xs), _randn(*ws), _randn(ws[0])], dt, **kw)
    assert winograd_forced.count("forward") == 2 * len(WINOGRAD)  # forward, input gradient
    assert winograd_forced.count("weight_grad") == len(WINOGRAD)
    x = jg.tensor(_randn(0, 16, 5, 5).astype(dt), requires_grad=True)  # empty batch
    out = F.conv2d(x, jg.tensor(_randn(16, 16, 3, 3).astype(dt)), padding=1)
    assert tuple(out.shape) == (0, 16, 5, 5)


def test_winograd_gradcheck_and_gradgradcheck(winograd_forced):
    ts = [jg.tensor(a, requires_grad=True) for a in (_randn(1, 16, 4, 5), _randn(16, 16, 3, 3))]
    fn = functools.partial(F.conv2d, padding=1)
    assert gradcheck(fn, ts)
    assert gradgradcheck(fn, ts)
    assert winograd_forced


def test_winograd_leaves_non_finite_inputs_to_the_direct_paths(winograd_forced):
    """An inf would spread over its whole tile in the transforms (inf - inf): inputs and weights
    holding one take the row path, whose numbers are PyTorch's."""
    x = _randn(2, 16, 6, 7)
    x[0, 3, 2, 2] = np.inf
    x[1, 5, 4, 6] = np.nan
    w = _randn(16, 16, 3, 3)
    with np.errstate(invalid="ignore"):
        _compare("conv2d", [x, w, _randn(16)], padding=1)
        w2 = w.copy()
        w2[3, 2, 1, 1] = -np.inf
        _compare("conv2d", [_randn(2, 16, 6, 7), w2, None], padding=1)
    assert winograd_forced  # tried, then declined


def test_winograd_taken_from_its_work_threshold_on(winograd_taken):
    """Below ``_MIN_WORK`` (the transforms and small GEMMs cost more than they save) the other
    paths run; the first problem past it goes Winograd, and matches PyTorch."""
    _compare("conv2d", [_randn(32, 16, 4, 4), _randn(32, 16, 3, 3), None], np.float32, padding=1)
    assert winograd_taken == []
    _compare("conv2d", [_randn(16, 64, 16, 16), _randn(64, 64, 3, 3) * 0.05, _randn(64)],
             padding=1)  # float64: float32 weight gradients summed over 4096 positions differ
    # from PyTorch's by more than the helper's tolerance for any algorithm (PyTorch's own is
    # 3.5e-4 from the exact sum here, the row path's 0.8e-4, Winograd's 1.4e-4)
    assert winograd_taken.count("forward") == 2 and winograd_taken.count("weight_grad") == 1


def test_winograd_is_as_accurate_as_the_direct_convolution():
    """The ResNet layer's channels in float32, against the float64 direct sum: the forward
    within a few units in the last place of the output's scale, as the direct float32 sum;
    the weight gradient (a sum over every position) about twice as far as the row path's
    direct float32 sum (measured 2.0x: the transforms' 1/2 weights and longer sums), within
    4x of it."""
    from jitgrad.nn.functional import _conv_arrays as A
    from jitgrad.nn.functional import _conv_rows as R
    from jitgrad.nn.functional import _conv_winograd as W
    x = _randn(8, 64, 1, 16, 16).astype(np.float32)
    w = (_randn(64, 64, 1, 3, 3) * 0.05).astype(np.float32)
    g = _randn(8, 64, 1, 16, 16).astype(np.float32)
    geo = A.Geometry((1, 16, 16), (1, 16, 16), (1, 3, 3), (1, 1, 1), (1, 1, 1), (0, 1, 1), 1)
    exact = R.forward(x.astype(np.float64), w.astype(np.float64), geo)
    eps = np.finfo(np.float32).eps * np.abs(exact).max()
    assert np.abs(W.forward(x, w, geo) - exact).max() <= 8 * eps
    assert np.abs(R.forward(x, w, geo) - exact).max() <= 8 * eps
    exact_w = R.grads(x.astype(np.float64), g.astype(np.float64), w.astype(np.float64), geo,
                      False, True)[1]
    wino_err = np.abs(W.weight_grad(x, g, geo, w.shape) - exact_w).max()
    direct_err = np.abs(R.grads(x, g, w, geo, False, True)[1] - exact_w).max()
    assert wino_err <= 4 * direct_err
