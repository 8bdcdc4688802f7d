"""The nn modules and functions added after dir(torch.nn) vs dir(jitgrad.nn): SmoothL1Loss /
HuberLoss / MultiMarginLoss / MultiLabelMarginLoss / TripletMarginWithDistanceLoss / NLLLoss2d,
the padding modules, Softmax2d, ChannelShuffle, the in-place functional spellings, pdist,
RReLU and gumbel_softmax. Values and gradients against PyTorch in float32 and float64 (and
float64 finite differences), node names, errors, module reprs, and seeded random draws bit for
bit."""
import warnings

import numpy as np
import pytest

import jitgrad as jt
from tests._parity import agree, compare, raises_like, torch

if torch is None:  # pragma: no cover
    pytest.skip("PyTorch is the reference", allow_module_level=True)

R = np.random.default_rng(11)
DTYPES = ("float32", "float64")


def _tol(dtype):
    return (2e-6, 2e-6) if dtype == "float32" else (1e-12, 1e-12)


def _check(fn, arrays, dtype):
    rtol, atol = _tol(dtype)
    compare(fn, arrays, dtype=dtype, grad=True, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- margin losses

X = R.standard_normal((5, 4))
TARGET = np.array([0, 3, 1, 1, 2])
LABELS = np.array([[0, 3, -1, 1], [1, -1, 0, 0], [-1, 0, 0, 0], [2, 2, 1, -1], [0, 1, 2, 3]])
WEIGHT = np.array([0.5, 1.5, 2.0, 0.25])

MULTI_MARGIN = {
    "default": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(TARGET)),
    "p2_weight_none": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET), p=2, margin=0.7, weight=T.tensor(WEIGHT, dtype=x.dtype),
        reduction="none"),
    "sum": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(TARGET), margin=2.0,
                                                          reduction="sum"),
    "vector_1d_target": lambda T, x: T.nn.functional.multi_margin_loss(
        x[0], T.tensor([2]), reduction="none"),
    "vector_0d_target": lambda T, x: T.nn.functional.multi_margin_loss(
        x[1], T.tensor(3), weight=T.tensor(WEIGHT, dtype=x.dtype), reduction="none"),
    "scalar": lambda T, x: T.nn.functional.multi_margin_loss(x[0, 0], T.tensor(0),
                                                             reduction="none"),
    "legacy": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(TARGET),
                                                             size_average=False),
    "module": lambda T, x: T.nn.MultiMarginLoss(p=2, weight=T.tensor(WEIGHT, dtype=x.dtype))(
        x, T.tensor(TARGET)),
}

MULTILABEL = {
    "default": lambda T, x: T.nn.functional.multilabel_margin_loss(x, T.tensor(LABELS)),
    "none": lambda T, x: T.nn.functional.multilabel_margin_loss(x, T.tensor(LABELS),
                                                                reduction="none"),
    "vector": lambda T, x: T.nn.functional.multilabel_margin_loss(x[1], T.tensor(LABELS[3]),
                                                                  reduction="none"),
    "scalar": lambda T, x: T.nn.functional.multilabel_margin_loss(x[0, 0], T.tensor(0)),
    "module_sum": lambda T, x: T.nn.MultiLabelMarginLoss(reduction="sum")(x, T.tensor(LABELS)),
}


def _cos_distance(T):
    return lambda a, b: 1.0 - T.nn.functional.cosine_similarity(a, b)


TRIPLET = {
    "default": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[3:5]),
    "swap_none": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[3:5], swap=True, margin=3.0, reduction="none"),
    "cosine_sum": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[3:5], distance_function=_cos_distance(T), reduction="sum"),
    "module": lambda T, x: T.nn.TripletMarginWithDistanceLoss(margin=2.5, swap=True)(
        x[:2], x[2:4], x[3:5]),
    "module_cosine": lambda T, x: T.nn.TripletMarginWithDistanceLoss(
        distance_function=_cos_distance(T))(x[:2], x[2:4], x[3:5]),
}

POINTWISE = {
    "smooth_l1": lambda T, x: T.nn.SmoothL1Loss(beta=0.5)(x[:2], x[2:4]),
    "smooth_l1_none": lambda T, x: T.nn.SmoothL1Loss(reduction="none")(x[:2], x[2:4]),
    "smooth_l1_legacy": lambda T, x: T.nn.SmoothL1Loss(reduce=False)(x[:2], x[2:4]),
    "huber": lambda T, x: T.nn.HuberLoss(delta=0.3)(x[:2], x[2:4]),
    "huber_sum": lambda T, x: T.nn.HuberLoss(reduction="sum", delta=2)(x[:2], x[2:4]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(MULTI_MARGIN))
def test_multi_margin_loss(case, dtype):
    _check(MULTI_MARGIN[case], [X], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(MULTILABEL))
def test_multilabel_margin_loss(case, dtype):
    _check(MULTILABEL[case], [X], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(TRIPLET))
def test_triplet_margin_with_distance_loss(case, dtype):
    _check(TRIPLET[case], [X], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(POINTWISE))
def test_smooth_l1_and_huber_modules(case, dtype):
    _check(POINTWISE[case], [X], dtype)


def _numpy_multi_margin(x, y, p, margin, w):
    """Independent reference: the definition, one sample at a time."""
    out = []
    for xi, yi in zip(x, y):
        terms = [max(0.0, margin - xi[yi] + xi[i]) ** p * (1 if w is None else w[yi])
                 for i in range(len(xi)) if i != yi]
        out.append(sum(terms) / len(xi))
    return np.array(out)


def _numpy_multilabel(x, y):
    out = []
    for xi, yi in zip(x, y):
        listed = []
        for j in yi:
            if j < 0:
                break
            listed.append(j)
        others = [i for i in range(len(xi)) if i not in listed]
        out.append(sum(max(0.0, 1 - (xi[j] - xi[i])) for j in listed for i in others) / len(xi))
    return np.array(out)


def test_margin_losses_match_numpy_definition():
    x = jt.tensor(X)
    got = jt.nn.functional.multi_margin_loss(x, jt.tensor(TARGET), p=2, margin=0.7,
                                             weight=jt.tensor(WEIGHT), reduction="none")
    np.testing.assert_allclose(got.numpy(), _numpy_multi_margin(X, TARGET, 2, 0.7, WEIGHT),
                               rtol=1e-12)
    got = jt.nn.functional.multilabel_margin_loss(x, jt.tensor(LABELS), reduction="none")
    np.testing.assert_allclose(got.numpy(), _numpy_multilabel(X, LABELS), rtol=1e-12)


def test_margin_losses_finite_differences():
    # away from the hinges' kinks, float64 central differences of jitgrad's own forward
    x = jt.tensor(X, requires_grad=True)
    t, lab, w = jt.tensor(TARGET), jt.tensor(LABELS), jt.tensor(WEIGHT)
    assert jt.autograd.gradcheck(
        lambda a: jt.nn.functional.multi_margin_loss(a, t, p=2, weight=w), (x,))
    assert jt.autograd.gradcheck(lambda a: jt.nn.functional.multilabel_margin_loss(a, lab), (x,))
    assert jt.autograd.gradgradcheck(
        lambda a: jt.nn.functional.multi_margin_loss(a, t, p=2), (x,))


LOSS_ERRORS = {
    "mm_target_range": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 1, 5, 0, 0])),
    "mm_target_negative": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor([0, 1, -1, 0, 0])),
    "mm_target_size": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 1])),
    "mm_target_2d": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET).reshape(5, 1)),
    "mm_target_float": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET).double()),
    "mm_weight_size": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET), weight=T.ones(3, dtype=x.dtype)),
    "mm_weight_2d": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET), weight=T.ones(2, 2, dtype=x.dtype)),
    "mm_weight_grad": lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor(TARGET), weight=T.ones(4, dtype=x.dtype, requires_grad=True)),
    "mm_p3": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(TARGET), p=3),
    "mm_reduction": lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(TARGET),
                                                                   reduction="avg"),
    "mm_3d": lambda T, x: T.nn.functional.multi_margin_loss(x.reshape(5, 2, 2),
                                                            T.tensor(TARGET)),
    "mm_empty_classes": lambda T, x: T.nn.functional.multi_margin_loss(
        x[:, :0], T.tensor(TARGET)),
    "mm_long": lambda T, x: T.nn.functional.multi_margin_loss(x.long(), T.tensor(TARGET)),
    "ml_target_shape": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor(LABELS[:2])),
    "ml_vector_target": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x[0], T.tensor(LABELS[0, :2])),
    "ml_out_of_range": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor(LABELS + 3)),
    "ml_below_minus_one": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor(LABELS - 1)),
    "ml_float_target": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor(LABELS).double()),
    "ml_3d": lambda T, x: T.nn.functional.multilabel_margin_loss(
        x[:4].reshape(2, 2, 4), T.tensor(LABELS[:4]).reshape(2, 2, 4)),
    "tw_dims": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[4]),
    "tw_margin": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[3:5], margin=0),
    "tw_reduction": lambda T, x: T.nn.functional.triplet_margin_with_distance_loss(
        x[:2], x[2:4], x[3:5], reduction="batchmean"),
    "ctor_huber_delta": lambda T, x: T.nn.HuberLoss(delta="1"),
    "ctor_mm_p": lambda T, x: T.nn.MultiMarginLoss(p=3),
    "ctor_mm_weight": lambda T, x: T.nn.MultiMarginLoss(weight=T.ones(2, 2)),
    "ctor_tw_margin": lambda T, x: T.nn.TripletMarginWithDistanceLoss(margin=-1.0),
}


@pytest.mark.parametrize("case", sorted(LOSS_ERRORS))
def test_loss_errors(case):
    raises_like(LOSS_ERRORS[case], X)


def test_empty_batch_losses():
    # only reduction='none': with 'mean'/'sum' PyTorch 2.13's CPU kernels return an
    # uninitialized number for an empty batch (multi_margin_loss gave -6e33), nothing to match
    compare(lambda T, x: T.nn.functional.multi_margin_loss(x, T.zeros(0, dtype=T.int64),
                                                           reduction="none"),
            [np.zeros((0, 4))], grad=True)
    compare(lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.zeros((0, 4), dtype=T.int64), reduction="none"), [np.zeros((0, 4))], grad=True)


def test_nll_loss2d_is_a_deprecated_nll_loss():
    for lib in (torch, jt):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = lib.nn.NLLLoss2d(ignore_index=1)
        assert [w.category for w in caught] == [FutureWarning]
        assert isinstance(m, lib.nn.NLLLoss) and m.ignore_index == 1
    x = R.standard_normal((2, 3, 4, 5))
    t = R.integers(0, 3, (2, 4, 5))

    def fn(T, x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return T.nn.NLLLoss2d(reduction="sum")(T.log_softmax(x, 1), T.tensor(t))

    _check(fn, [x], "float64")


# ----------------------------------------------------------------------------- padding modules

PAD_MODULES = [
    ("ConstantPad1d", (2, 1.5), (2, 3, 4)), ("ConstantPad1d", ((3, -1), -2.0), (3, 4)),
    ("ConstantPad2d", ((1, 0, 2, 1), 3.5), (2, 3, 4)), ("ConstantPad3d", (1, 0.0), (1, 2, 2, 3, 2)),
    ("ZeroPad1d", ((1, 2),), (2, 3, 4)), ("ZeroPad2d", (2,), (1, 2, 3, 3)),
    ("ZeroPad3d", ((1, 0, 0, 1, 2, 0),), (2, 2, 3, 2)),
    ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad1d", ((3, 1),), (3, 4)),
    ("ReflectionPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)), ("ReflectionPad3d", (1,), (1, 2, 2, 3, 2)),
    ("ReplicationPad1d", ((0, 3),), (2, 3, 4)), ("ReplicationPad2d", (2,), (2, 3, 3)),
    ("ReplicationPad3d", ((1, 2, 0, 1, 1, 0),), (1, 1, 2, 3, 2)),
    ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad1d", ((3, -1),), (3, 4)),
    ("CircularPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)), ("CircularPad3d", (1,), (2, 2, 3, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args,shape", PAD_MODULES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(PAD_MODULES)])
def test_padding_modules(name, args, shape, dtype):
    x = R.standard_normal(shape)
    if not name.startswith("Circular"):
        _check(lambda T, a: getattr(T.nn, name)(*args)(a), [x], dtype)
        return
    # PyTorch's circular pad is a CopySlices node, whose name() is the qualified
    # 'torch::autograd::CopySlices' that compare() reads: the values and gradients through a
    # product, the node by its class name
    _check(lambda T, a: getattr(T.nn, name)(*args)(a) * 1.0, [x], dtype)
    names = [type(getattr(T.nn, name)(*args)(T.tensor(x, requires_grad=True)).grad_fn).__name__
             for T in (torch, jt)]
    assert names[0] == names[1] == "CopySlices"


PAD_ERRORS = {
    "circular1d_4d": ("CircularPad1d", (1,), (1, 2, 3, 4)),
    "circular2d_2d": ("CircularPad2d", (1,), (3, 4)),
    "circular3d_3d": ("CircularPad3d", (1,), (2, 3, 4)),
    "circular_wraps_twice": ("CircularPad1d", (5,), (2, 3)),
    "reflection_too_wide": ("ReflectionPad1d", (4,), (2, 4)),
    "reflection2d_on_2d": ("ReflectionPad2d", (1,), (3, 4)),
    "replication3d_on_3d": ("ReplicationPad3d", (1,), (2, 3, 4)),
    "constant_too_long": ("ConstantPad3d", (1, 0.0), (2, 3)),
    "odd_length": ("ReplicationPad1d", ((1, 2, 3),), (2, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(PAD_ERRORS))
def test_padding_module_errors(case):
    name, args, shape = PAD_ERRORS[case]
    raises_like(lambda T, x: getattr(T.nn, name)(*args)(x), R.standard_normal(shape))


REPRS = [
    "nn.ConstantPad1d(2, 1.5)", "nn.ConstantPad2d((1, 2, 3, 4), -1)", "nn.ConstantPad3d(1, 0)",
    "nn.ZeroPad1d(3)", "nn.ZeroPad2d((1, 0, 2, 0))", "nn.ZeroPad3d(2)",
    "nn.ReflectionPad1d(2)", "nn.ReflectionPad2d([1, 2, 3, 4])", "nn.ReflectionPad3d(1)",
    "nn.ReplicationPad1d((1, 2))", "nn.ReplicationPad2d(1)", "nn.ReplicationPad3d(2)",
    "nn.CircularPad1d(1)", "nn.CircularPad2d((1, 1, 2, 2))", "nn.CircularPad3d(3)",
    "nn.SmoothL1Loss(beta=0.5)", "nn.HuberLoss(delta=2)", "nn.MultiMarginLoss(p=2, margin=0.5)",
    "nn.MultiLabelMarginLoss()", "nn.TripletMarginWithDistanceLoss(swap=True)",
    "nn.Softmax2d()", "nn.ChannelShuffle(4)", "nn.RReLU()", "nn.RReLU(0.1, 0.3, inplace=True)",
    "nn.Sequential(nn.ZeroPad2d(1), nn.RReLU(), nn.ChannelShuffle(2))",
]


@pytest.mark.parametrize("expr", REPRS)
def test_module_reprs(expr):
    assert repr(eval(expr, {"nn": jt.nn})) == repr(eval(expr, {"nn": torch.nn}))


def test_padding_attributes():
    for lib in (torch, jt):
        assert lib.nn.ZeroPad2d(2).padding == (2, 2, 2, 2)
        assert lib.nn.ConstantPad3d([1, 2, 3, 4, 5, 6], 1.0).padding == (1, 2, 3, 4, 5, 6)
        assert lib.nn.ZeroPad1d(3).value == 0.0


# ----------------------------------------------------------------------------- small activations

@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax2d(dtype):
    _check(lambda T, x: T.nn.Softmax2d()(x), [R.standard_normal((2, 3, 4, 2))], dtype)
    _check(lambda T, x: T.nn.Softmax2d()(x), [R.standard_normal((3, 4, 2))], dtype)


@pytest.mark.parametrize("shape", [(2, 5), (1, 2, 3, 4, 5)])
def test_softmax2d_errors(shape):
    raises_like(lambda T, x: T.nn.Softmax2d()(x), R.standard_normal(shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((1, 4, 2, 3), 2), ((2, 6, 1, 2, 2), 6),
                                          ((1, 4, 2), 1)])
def test_channel_shuffle(shape, groups, dtype):
    x = R.standard_normal(shape)
    _check(lambda T, a: T.nn.functional.channel_shuffle(a, groups), [x], dtype)
    _check(lambda T, a: T.nn.ChannelShuffle(groups)(a), [x], dtype)


def test_channel_shuffle_integer_and_empty():
    compare(lambda T, a: T.nn.functional.channel_shuffle(a, 2), [np.arange(24).reshape(2, 4, 3)])
    compare(lambda T, a: T.nn.functional.channel_shuffle(a, 3), [np.zeros((0, 6, 2))])


SHUFFLE_ERRORS = {
    "not_divisible": (lambda T, x: T.nn.functional.channel_shuffle(x, 4), (2, 6, 3)),
    "zero_groups": (lambda T, x: T.nn.functional.channel_shuffle(x, 0), (2, 6, 3)),
    "negative_groups": (lambda T, x: T.nn.functional.channel_shuffle(x, -2), (2, 6, 3)),
    "two_dims": (lambda T, x: T.nn.functional.channel_shuffle(x, 3), (2, 6)),
    "dims_before_groups": (lambda T, x: T.nn.functional.channel_shuffle(x, 0), (6,)),
    "float_groups": (lambda T, x: T.nn.functional.channel_shuffle(x, 2.0), (2, 6, 3)),
    "native_two_dims": (lambda T, x: T.nn.functional.native_channel_shuffle(x, 3), (2, 6)),
    "module": (lambda T, x: T.nn.ChannelShuffle(4)(x), (2, 6, 3)),
}


@pytest.mark.parametrize("case", sorted(SHUFFLE_ERRORS))
def test_channel_shuffle_errors(case):
    fn, shape = SHUFFLE_ERRORS[case]
    raises_like(fn, R.standard_normal(shape))


def test_native_channel_shuffle_has_no_derivative():
    x = R.standard_normal((2, 6, 3))
    compare(lambda T, a: T.nn.functional.native_channel_shuffle(a, 3), [x])
    res = []
    for lib in (torch, jt):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.native_channel_shuffle(t, 2)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        res.append((y.grad_fn.name(), str(e.value)))
    assert res[0] == res[1]


INPLACE = {
    "elu_": lambda T, x: T.nn.functional.elu_(x * 1.0, 0.7),
    "elu_default": lambda T, x: T.nn.functional.elu_(x * 1.0),
    "leaky_relu_": lambda T, x: T.nn.functional.leaky_relu_(x * 1.0, 0.2),
    "leaky_relu_default": lambda T, x: T.nn.functional.leaky_relu_(x * 1.0),
    "hardtanh_": lambda T, x: T.nn.functional.hardtanh_(x * 1.0, -0.5, 0.25),
    "hardtanh_default": lambda T, x: T.nn.functional.hardtanh_(x * 1.0),
    "hardtanh_min_above_max": lambda T, x: T.nn.functional.hardtanh_(x * 1.0, 0.5, -0.5),
    "pdist": lambda T, x: T.nn.functional.pdist(x),
    "pdist_p1": lambda T, x: T.nn.functional.pdist(x, 1),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(INPLACE))
def test_inplace_functional_and_pdist(case, dtype):
    _check(INPLACE[case], [R.standard_normal((4, 3))], dtype)


@pytest.mark.parametrize("name", ["elu_", "leaky_relu_", "hardtanh_"])
def test_inplace_functional_integer(name):
    x = np.arange(-2, 3)
    fn = lambda T, a: getattr(T.nn.functional, name)(a)  # noqa: E731
    try:
        torch_out = fn(torch, torch.tensor(x))
    except NotImplementedError:
        raises_like(fn, x)
        return
    compare(fn, [x])
    assert torch_out.dtype == torch.int64


# ----------------------------------------------------------------------------- RReLU

RRELU_X = R.standard_normal((4, 5, 3))
RRELU_X[0, 0, :2] = 0.0
RRELU_X[1, 2, 1] = np.nan


def _rrelu_run(fn, dtype, seed=3):
    """fn(lib, x) after seeding, its gradient for a fixed cotangent, and the generator's next
    draws (the number of numbers consumed must match too), in neutral form."""
    def run(lib):
        lib.manual_seed(seed)
        x = lib.tensor(RRELU_X, dtype=getattr(lib, dtype), requires_grad=True)
        y = fn(lib, x)
        y.backward(lib.tensor(np.arange(60.0).reshape(4, 5, 3) - 30, dtype=x.dtype))
        return y.detach(), type(y.grad_fn).__name__, x.grad, lib.rand(4, dtype=lib.float64)
    return run


RRELU = {
    "train": lambda T, x: T.nn.functional.rrelu(x, training=True),
    "train_bounds": lambda T, x: T.nn.functional.rrelu(x, 0.05, 0.9, training=True),
    "train_equal_bounds": lambda T, x: T.nn.functional.rrelu(x, 0.3, 0.3, training=True),
    "eval": lambda T, x: T.nn.functional.rrelu(x, 0.1, 0.4),
    "train_inplace": lambda T, x: T.nn.functional.rrelu(x * 1.0, training=True, inplace=True),
    "rrelu_": lambda T, x: T.nn.functional.rrelu_(x * 1.0, 0.2, 0.5, True),
    "rrelu_eval": lambda T, x: T.nn.functional.rrelu_(x * 1.0),
    "module_train": lambda T, x: T.nn.RReLU(0.1, 0.5)(x),
    "module_eval": lambda T, x: T.nn.RReLU(0.1, 0.5).eval()(x),
    "module_inplace": lambda T, x: T.nn.RReLU(inplace=True)(x * 1.0),
    "twice": lambda T, x: T.nn.functional.rrelu(x, training=True) + T.nn.functional.rrelu(
        -x, training=True),
    "transposed": lambda T, x: T.nn.functional.rrelu(x.transpose(0, 2), training=True),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(RRELU))
def test_rrelu_seeded_bit_exact(case, dtype):
    agree(_rrelu_run(RRELU[case], dtype))


def test_rrelu_slopes_lie_in_bounds_and_gradient_is_the_slope():
    jt.manual_seed(0)
    x = jt.full((2000,), -1.0, requires_grad=True)
    y = jt.nn.functional.rrelu(x, 0.2, 0.7, training=True)
    y.sum().backward()
    s = -y.detach().numpy()
    assert s.min() >= 0.2 and s.max() < 0.7 and abs(s.mean() - 0.45) < 0.02
    np.testing.assert_array_equal(x.grad.numpy(), s)


RRELU_ERRORS = {
    "bounds": lambda T, x: T.nn.functional.rrelu(x, 0.5, 0.2),
    "bounds_train": lambda T, x: T.nn.functional.rrelu(x, 0.5, 0.2, training=True),
    "long_train": lambda T, x: T.nn.functional.rrelu(x.long(), training=True),
    "long_eval": lambda T, x: T.nn.functional.rrelu(x.long()),
}


@pytest.mark.parametrize("case", sorted(RRELU_ERRORS))
def test_rrelu_errors(case):
    raises_like(RRELU_ERRORS[case], RRELU_X[2:])


# ----------------------------------------------------------------------------- gumbel softmax

GUMBEL = {
    "soft": lambda T, x: T.nn.functional.gumbel_softmax(x),
    "soft_tau_dim": lambda T, x: T.nn.functional.gumbel_softmax(x, tau=0.5, dim=1),
    "hard": lambda T, x: T.nn.functional.gumbel_softmax(x, hard=True),
    "hard_dim0": lambda T, x: T.nn.functional.gumbel_softmax(x, tau=2.0, hard=True, dim=0),
    "transposed": lambda T, x: T.nn.functional.gumbel_softmax(x.transpose(0, 2), dim=1),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(GUMBEL))
def test_gumbel_softmax_seeded(case, dtype):
    x = R.standard_normal((3, 4, 5))
    rtol, atol = _tol(dtype)
    for seed in (0, 7):
        torch.manual_seed(seed)
        jt.manual_seed(seed)
        compare(GUMBEL[case], [x], dtype=dtype, grad=True, rtol=rtol, atol=atol)
        # the same amount of the stream was consumed
        np.testing.assert_array_equal(jt.rand(3).numpy(), torch.rand(3).numpy())


def test_gumbel_softmax_hard_is_one_hot_with_soft_gradient():
    jt.manual_seed(1)
    x = jt.tensor(R.standard_normal((6, 4)), requires_grad=True)
    y = jt.nn.functional.gumbel_softmax(x, tau=0.8, hard=True)
    v = y.detach().numpy()
    assert set(np.unique(v)) == {0.0, 1.0} and (v.sum(1) == 1).all()
    w = jt.tensor(R.standard_normal((6, 4)))
    (gh,) = jt.autograd.grad((y * w).sum(), x)
    jt.manual_seed(1)
    soft = jt.nn.functional.gumbel_softmax(x, tau=0.8)
    (gs,) = jt.autograd.grad((soft * w).sum(), x)
    np.testing.assert_allclose(gh.numpy(), gs.numpy(), rtol=1e-12, atol=1e-14)


def test_gumbel_softmax_eps_warning_and_integer_error():
    for lib in (torch, jt):
        with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
            lib.nn.functional.gumbel_softmax(lib.zeros(2, 3), eps=1e-3)
    raises_like(lambda T, x: T.nn.functional.gumbel_softmax(x), np.arange(6).reshape(2, 3))
