"""PyTorch-parity sweep of nn.functional, nn modules and nn.init: the same inputs (and seeds) in
jitgrad and PyTorch give the same values, dtypes, grad_fn names, gradients and error types;
gradients are also checked against float64 central differences."""
import warnings

import numpy as np
import pytest
from nn_gradcheck import check_grads

import jitgrad as jt

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _both(build, arrays, grad=(), rtol=1e-7, atol=1e-10):
    """Run ``build(lib, *tensors)`` in both libraries (float64 inputs; ``grad`` indices require
    grad), backward with the same random weights; compare value, dtype, node, gradients."""
    outs = []
    for lib in (torch, jt):
        ts = []
        for i, a in enumerate(arrays):
            t = lib.tensor(a) if isinstance(a, np.ndarray) else a
            if i in grad:
                t.requires_grad_(True)
            ts.append(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = build(lib, *ts)
        grads = []
        if grad:
            w = np.random.default_rng(3).standard_normal(tuple(out.shape))
            (out * lib.tensor(w, dtype=out.dtype)).sum().backward()
            grads = [ts[i].grad for i in grad]
        outs.append((out, grads))
    (to, tg), (jo, jg) = outs
    assert str(jo.dtype) == str(to.dtype) and tuple(jo.shape) == tuple(to.shape)
    assert _node(jo) == _node(to)
    np.testing.assert_allclose(_np(jo), _np(to), rtol=rtol, atol=atol)
    for a, b in zip(jg, tg):
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)
    return jo


def _same_error(build):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(lib)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]), (errs[0], errs[1])
    return errs


def randn(*s):
    return R.standard_normal(s)


# ----------------------------------------------------------------------------- activations

ACTS = [("silu", {}), ("logsigmoid", {}), ("elu", {"alpha": 0.6}), ("hardtanh", {}),
        ("hardtanh", {"min_val": -0.4, "max_val": 0.7}), ("relu6", {}), ("leaky_relu", {}),
        ("gelu", {"approximate": "tanh"}), ("gelu", {}), ("softplus", {"beta": 2.0})]


@pytest.mark.parametrize("name,kw", ACTS)
def test_activation_values_nodes_grads(name, kw):
    x = randn(4, 6) * 3
    _both(lambda lib, t: getattr(lib.nn.functional, name)(t, **kw), [x], grad=(0,))
    check_grads(lambda t: getattr(jt.nn.functional, name)(t, **kw), [x], wrt=(0,))


@pytest.mark.parametrize("name,kw", [a for a in ACTS if a[0] in
                                     ("silu", "elu", "hardtanh", "relu6", "leaky_relu")])
def test_activation_inplace_like_torch(name, kw):
    x = randn(3, 5)

    def build(lib, t):
        y = t * 2
        r = getattr(lib.nn.functional, name)(y, inplace=True, **kw)
        assert r is y
        return y
    _both(build, [x], grad=(0,))


@pytest.mark.parametrize("name,kernel", [("silu", "silu_cpu"), ("elu", "elu_cpu"),
                                         ("logsigmoid", "log_sigmoid_cpu")])
def test_activation_integer_input_raises(name, kernel):
    errs = _same_error(lambda lib: getattr(lib.nn.functional, name)(lib.arange(3)))
    assert kernel in str(errs[1])


@pytest.mark.parametrize("name", ["hardtanh", "relu6"])
def test_hardtanh_integer_input_keeps_dtype(name):
    x = np.array([-3, 0, 2, 9])
    _both(lambda lib, t: getattr(lib.nn.functional, name)(t), [x])


def test_hardtanh_bad_bounds():
    _same_error(lambda lib: lib.nn.functional.hardtanh(lib.ones(2), 1.0, -1.0))


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
def test_bilinear_nodes(shape):
    x2 = randn(*shape[:-1], 2)
    _both(lambda lib, a, b, w, c: lib.nn.functional.bilinear(a, b, w, c),
          [randn(*shape), x2, randn(4, 3, 2), randn(4)], grad=(0, 1, 2, 3))
    _both(lambda lib, a, b, w: lib.nn.functional.bilinear(a, b, w),
          [randn(*shape), x2, randn(4, 3, 2)], grad=(0, 1, 2))


# ----------------------------------------------------------------------------- dropout / ln


def test_dropout_integer_input():
    _same_error(lambda lib: lib.nn.functional.dropout(lib.arange(5), 0.5))
    for p, training in [(0.0, True), (0.5, False)]:
        _both(lambda lib, t, p=p, tr=training: lib.nn.functional.dropout(t, p, tr),
              [np.arange(5)])


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_mask_matches_torch(p):
    def build(lib, t):
        lib.manual_seed(5)
        return lib.nn.functional.dropout(t * 1, p)
    _both(build, [np.ones((8, 9))], grad=(0,))


def test_layer_norm_int_normalized_shape_is_type_error():
    _same_error(lambda lib: lib.nn.functional.layer_norm(lib.ones(2, 3), 3))
    _both(lambda lib, t: lib.nn.functional.layer_norm(t, [4, 3]), [randn(2, 4, 3)], grad=(0,))


# ----------------------------------------------------------------------------- pad


PADS = [((2, 3, 4), (1, 2)), ((2, 3, 4), (2, 1, 1, 2)), ((2, 2, 3, 4), (1, 1, 2, 0)),
        ((3, 4), (3, 0)), ((2, 2, 2, 3, 4), (1, 1, 1, 1, 1, 1)), ((2, 3, 4), (-1, 2))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", PADS)
def test_pad_like_torch(mode, shape, pad):
    x = randn(*shape)
    _both(lambda lib, t: lib.nn.functional.pad(t, pad, mode=mode), [x], grad=(0,))
    check_grads(lambda t: jt.nn.functional.pad(t, pad, mode=mode), [x], wrt=(0,))


def test_pad_constant_value_and_int():
    _both(lambda lib, t: lib.nn.functional.pad(t, (1, 1, 0, 2), value=-1.5), [randn(2, 3)],
          grad=(0,))
    _both(lambda lib, t: lib.nn.functional.pad(t, (1, 1), value=2.5), [np.arange(4)])


@pytest.mark.parametrize("pad,mode", [((1,), "constant"), ((1, 1) * 4, "constant"),
                                      ((1, 1), "bad"), ((4, 1), "reflect"),
                                      ((5, 1), "circular"), ((-3, -2), "constant"),
                                      ((1, 1, 1, 1), "reflect")])
def test_pad_errors(pad, mode):
    _same_error(lambda lib: lib.nn.functional.pad(lib.ones(2, 4), pad, mode=mode)
                if mode == "reflect" and len(pad) == 4 else
                lib.nn.functional.pad(lib.ones(2, 3, 4), pad, mode=mode))


def test_pad_value_with_reflect_raises():
    _same_error(lambda lib: lib.nn.functional.pad(lib.ones(2, 3, 4), (1, 1), mode="reflect",
                                                  value=1.0))


# ----------------------------------------------------------------------------- regression losses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", [("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {}),
                                     ("smooth_l1_loss", {"beta": 0.0}),
                                     ("huber_loss", {"delta": 0.7}), ("huber_loss", {})])
def test_smooth_l1_huber(name, kw, reduction):
    x, t = randn(4, 5), randn(4, 5)
    _both(lambda lib, a, b: getattr(lib.nn.functional, name)(a, b, reduction=reduction, **kw),
          [x, t], grad=(0, 1))
    check_grads(lambda a, b: getattr(jt.nn.functional, name)(a, b, reduction=reduction, **kw),
                [x, t], wrt=(0, 1))


def test_smooth_l1_huber_bad_parameters():
    _same_error(lambda lib: lib.nn.functional.smooth_l1_loss(lib.ones(2), lib.ones(2), beta=-1))
    _same_error(lambda lib: lib.nn.functional.huber_loss(lib.ones(2), lib.ones(2), delta=0.0))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_and_huber(reduction):
    w = np.abs(randn(4, 5))
    for name in ("mse_loss", "huber_loss"):
        _both(lambda lib, a, b, c, name=name: getattr(lib.nn.functional, name)(
                  a, b, reduction=reduction, weight=c),
              [randn(4, 5), randn(4, 5), w], grad=(0, 1))
    _same_error(lambda lib: lib.nn.functional.mse_loss(lib.ones(2, 2), lib.ones(2, 2),
                                                       weight=lib.ones(2)))


# ----------------------------------------------------------------------------- CE / NLL / BCE


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probabilities(reduction, smoothing, weighted):
    w = [np.abs(randn(4)) + 0.1] if weighted else []
    for shape in [(5, 4), (2, 4, 3), (4,)]:
        p = np.abs(randn(*shape))

        def build(lib, x, t, *wt):
            return lib.nn.functional.cross_entropy(
                x, t, weight=wt[0] if wt else None, reduction=reduction,
                label_smoothing=smoothing)
        _both(build, [randn(*shape), p] + w, grad=(0, 1))


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_all_targets_ignored(fn, reduction):
    _both(lambda lib, x, t: getattr(lib.nn.functional, fn)(x, t, reduction=reduction),
          [randn(5, 4), np.full(5, -100)], grad=(0,))


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 4, 3, 2), (2, 4, 3, 2, 2), (4,)])
def test_kdim_and_1d_inputs(fn, reduction, shape):
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = R.integers(0, 4, tshape)
    out = _both(lambda lib, x, tt: getattr(lib.nn.functional, fn)(x, tt, reduction=reduction),
                [randn(*shape), np.asarray(t)], grad=(0,))
    if reduction == "none" and len(shape) >= 3:
        nxt = out.grad_fn.next_functions[0][0]
        assert (_node(out), type(nxt).__name__) == (
            ("ViewBackward0", "NllLoss2DBackward0") if len(shape) != 4 else
            ("NllLoss2DBackward0", "LogSoftmaxBackward0" if fn == "cross_entropy"
             else "AccumulateGrad"))


def test_cross_entropy_error_order_and_negative_smoothing():
    errs = _same_error(lambda lib: lib.nn.functional.cross_entropy(lib.ones(5, 4),
                                                                   lib.ones(5, 3)))
    assert "multi-target" in str(errs[1])
    _same_error(lambda lib: lib.nn.functional.cross_entropy(lib.ones(()), lib.tensor(0)))
    _both(lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=-0.1),
          [randn(5, 4), R.integers(0, 4, 5)], grad=(0,))


def test_bce_errors_like_torch():
    F = "binary_cross_entropy"
    _same_error(lambda lib: getattr(lib.nn.functional, F)(lib.rand(5, 4), lib.ones(5, 4),
                                                          weight=lib.ones(3)))
    _same_error(lambda lib: getattr(lib.nn.functional, F)(lib.rand(3), lib.ones(3).long()))
    _same_error(lambda lib: getattr(lib.nn.functional, F + "_with_logits")(
        lib.rand(3), lib.ones(3).long()))
    _same_error(lambda lib: getattr(lib.nn.functional, F + "_with_logits")(
        lib.rand(5, 4), lib.ones(5, 4), pos_weight=lib.ones(3)))


# ----------------------------------------------------------------------------- modules


def test_module_reprs_like_torch():
    def build(lib):
        nn = lib.nn
        return [nn.LayerNorm(4), nn.LayerNorm((2, 3), elementwise_affine=False),
                nn.LayerNorm(4, bias=False),
                nn.ParameterList([nn.Parameter(lib.ones(2)),
                                  nn.Parameter(lib.zeros(3, dtype=lib.float64))]),
                nn.ParameterDict({"a": nn.Parameter(lib.ones(2)),
                                  "b": nn.Parameter(lib.ones(2, 3, dtype=lib.float64))}),
                nn.ParameterDict({"a": nn.Parameter(lib.ones(2))})]
    for a, b in zip(build(torch), build(jt)):
        assert repr(b) == repr(a)


# ----------------------------------------------------------------------------- init


@pytest.mark.parametrize("args", [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, -0.5, 0.5),
                                  (1.0, 0.1, 0.9, 1.3), (0.0, 1.0, 1.5, 3.0),
                                  (0.0, 0.02, -0.04, 0.04)])
@pytest.mark.parametrize("shape", [(5, 3), (100,), (33, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trunc_normal_matches_torch_draws(args, shape, dtype):
    vals = []
    for lib in (torch, jt):
        lib.manual_seed(0)
        t = lib.empty(*shape, dtype=getattr(lib, dtype))
        lib.nn.init.trunc_normal_(t, *args)
        vals.append(_np(t))
        vals.append(lib.rand(3).numpy())  # the generator is left in the same state
    np.testing.assert_array_equal(vals[2], vals[0])
    np.testing.assert_array_equal(vals[3], vals[1])
    assert args[2] <= vals[2].min() and vals[2].max() <= args[3]
