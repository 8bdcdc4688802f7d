"""Corner cases of the statistics normalizations and the top-level ATen spellings
(``torch.batch_norm``, ``torch.native_batch_norm``, ``torch.dropout``, ...), against PyTorch."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg

RNG = np.random.default_rng(5)


def _np(t):
    return t.detach().numpy()


# ----------------------------------------------------------------------------- eps == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_instance_norm_of_constant_channels_with_zero_eps(weighted):
    """ATen's InvStd is 0 when var == 0 and eps == 0: output and gradients 0, not NaN (and no
    NumPy warning leaks); the double backward too."""
    x0 = np.ones((2, 3, 2))
    x0[1, 2] = [1.0, 3.0]  # one channel that does vary
    w0 = RNG.standard_normal(3)
    res = {}
    for lib in (jg, torch):
        x = lib.tensor(x0, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True) if weighted else None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = lib.nn.functional.instance_norm(x, weight=w, bias=w, eps=0.0)
            wanted = (x, w) if weighted else (x,)
            g = lib.autograd.grad((y * y + y).sum(), wanted, create_graph=True)
            gg = lib.autograd.grad(sum((t * t).sum() for t in g), wanted, allow_unused=True)
        res[lib] = [_np(y)] + [_np(t) for t in g] + [_np(t) if t is not None else 0 for t in gg]
    for a, b in zip(res[jg], res[torch]):
        assert not np.isnan(a).any()
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_native_batch_norm_zero_eps_and_eval_nan_match_torch():
    x0 = np.ones((4, 3))
    for lib in (jg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out, _, invstd = lib.native_batch_norm(lib.tensor(x0), None, None, None, None, True,
                                                   0.1, 0.0)
            assert (_np(out) == 0).all() and (_np(invstd) == 0).all()
            # evaluation and group norm keep 1/sqrt(0): NaN, as ATen (silently)
            ev = lib.nn.functional.batch_norm(lib.tensor(x0), lib.tensor(np.ones(3)),
                                              lib.tensor(np.zeros(3)), eps=0.0)
            gn = lib.nn.functional.group_norm(lib.tensor(x0), 3, eps=0.0)
            assert np.isnan(_np(ev)).all() and np.isnan(_np(gn)).all()


# ----------------------------------------------------------------------------- running stats


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("which", ["running_mean", "running_var"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("op", ["batch_norm", "instance_norm"])
def test_running_stats_that_require_grad_are_refused(which, training, op):
    def run(lib):
        stats = {"running_mean": lib.zeros(3), "running_var": lib.ones(3)}
        stats[which].requires_grad_(True)
        x = lib.tensor(RNG.standard_normal((4, 3, 5)), dtype=lib.float32)
        if op == "batch_norm":
            return lib.nn.functional.batch_norm(x, stats["running_mean"], stats["running_var"],
                                                training=training)
        return lib.nn.functional.instance_norm(x, stats["running_mean"], stats["running_var"],
                                               use_input_stats=training)

    expected = _error(lambda: run(torch))
    assert expected is not None and which in expected[1]
    assert _error(lambda: run(jg)) == expected
    for lib in (jg, torch):  # without grad mode there is nothing to refuse
        with lib.no_grad():
            run(lib)


# ----------------------------------------------------------------------------- top-level names

NAMES = ["batch_norm", "native_batch_norm", "instance_norm", "group_norm", "layer_norm",
         "native_layer_norm", "rms_norm", "dropout", "alpha_dropout", "feature_alpha_dropout"]


@pytest.mark.parametrize("name", NAMES)
def test_top_level_signatures_are_atens(name):
    schema = getattr(torch.ops.aten, name).default._schema
    params = inspect.signature(getattr(jg, name)).parameters
    assert [a.name for a in schema.arguments] == list(params)
    for a in schema.arguments:
        p = params[a.name]
        assert p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
        if a.has_default_value():
            assert p.default == pytest.approx(a.default_value) or p.default == a.default_value
        else:
            assert p.default is inspect.Parameter.empty


def _both(fn, arrays, grad=()):
    res = {}
    for lib in (jg, torch):
        ts = [lib.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
        out = fn(lib, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        names = [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]
        grads = []
        if grad:
            outs[0].pow(2).sum().backward()
            grads = [_np(ts[i].grad) for i in grad]
        res[lib] = ([_np(o) for o in outs], names, grads)
    (o1, n1, g1), (o2, n2, g2) = res[jg], res[torch]
    assert n1 == n2
    for a, b in zip(o1 + g1, o2 + g2):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_torch_batch_norm_positional_order_and_running_stats():
    x, w, b = RNG.standard_normal((4, 3, 2)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.5
    arrays = [x, w, b, rm, rv]
    for training in (True, False):
        def bn(lib, x, w, b, rm, rv, training=training):
            return lib.batch_norm(x, w, b, rm, rv, training, 0.3, 1e-3, True)

        def inorm(lib, x, w, b, rm, rv, training=training):
            return lib.instance_norm(x, w, b, rm, rv, training, 0.3, 1e-3, False)

        def native(lib, x, w, b, rm, rv, training=training):
            return lib.native_batch_norm(x, w, b, rm, rv, training, 0.3, 1e-3)

        for fn in (bn, inorm, native):
            _both(fn, arrays, grad=(0, 1, 2))
    # running statistics updated alike
    got = []
    for lib in (jg, torch):
        rm_t, rv_t = lib.tensor(rm), lib.tensor(rv)
        lib.batch_norm(lib.tensor(x), None, None, rm_t, rv_t, True, 0.3, 1e-5, True)
        got.append((_np(rm_t), _np(rv_t)))
    np.testing.assert_allclose(np.array(got[0]), np.array(got[1]), rtol=1e-12)


def test_native_batch_norm_saved_statistics_dtype():
    x = RNG.standard_normal((5, 3, 2)).astype(np.float32)
    for lib in (jg, torch):
        out = lib.native_batch_norm(lib.tensor(x), None, None, None, None, True, 0.1, 1e-5)
        assert [o.dtype for o in out] == [lib.float32] * 3
    _both(lambda lib, x: lib.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[1:],
          [x.astype(np.float64)])


def test_top_level_group_layer_rms_norm():
    x, w, b = RNG.standard_normal((2, 4, 3)), RNG.standard_normal(4), RNG.standard_normal(4)
    _both(lambda lib, x, w, b: lib.group_norm(x, 2, w, b, 1e-3, True), [x, w, b], grad=(0, 1, 2))
    _both(lambda lib, x, w, b: lib.group_norm(x, 2), [x, w, b], grad=(0,))
    _both(lambda lib, x, w: lib.layer_norm(x, [3], w[:3], None, 1e-4, False), [x, w],
          grad=(0, 1))
    _both(lambda lib, x: lib.native_layer_norm(x, [4, 3], None, None, 1e-4), [x], grad=(0,))
    _both(lambda lib, x, w: lib.rms_norm(x, [3], w[:3], 1e-3), [x, w], grad=(0, 1))


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout"])
def test_top_level_dropouts(name):
    x0 = RNG.standard_normal((3, 4, 5))
    outs = []
    for lib in (jg, torch):
        fn = getattr(lib, name)
        np.testing.assert_array_equal(_np(fn(lib.tensor(x0), 0.4, False)), x0)
        lib.manual_seed(3)
        outs.append(_np(fn(lib.tensor(x0), 0.4, True)))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)
    for p in (-0.1, 1.5):
        assert _error(lambda p=p: getattr(jg, name)(jg.ones(3), p, True)) == \
            _error(lambda p=p: getattr(torch, name)(torch.ones(3), p, True))
    with pytest.raises(TypeError):
        getattr(jg, name)(jg.ones(3), p=0.5)  # train is required, as in torch


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward_is_one_node(training):
    x0, w0, b0 = RNG.standard_normal((3, 2, 4)), RNG.standard_normal(2), RNG.standard_normal(2)
    res = {}
    for lib in (jg, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        y = lib.nn.functional.batch_norm(x, lib.tensor(np.zeros(2)), lib.tensor(np.ones(2)),
                                         w, b, training=training)
        g = lib.autograd.grad((y ** 3).sum(), (x, w, b), create_graph=True)
        gg = lib.autograd.grad(sum((t * t).sum() for t in g), (x, w, b))
        res[lib] = ([type(t.grad_fn).__name__ for t in g], [_np(t) for t in g + gg])
    assert res[jg][0] == res[torch][0] == ["NativeBatchNormBackwardBackward0"] * 3
    for a, b in zip(res[jg][1], res[torch][1]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
