"""The extra nn functions and modules (softsign ... pairwise_distance, PReLU, the extra losses,
orthogonal_/dirac_/sparse_): the same inputs in jitgrad and PyTorch give the same values
(float32 and float64), dtypes, grad_fn names, gradients and errors; float64 gradients and second
derivatives are also checked by finite differences (jitgrad.autograd.gradcheck/gradgradcheck)."""
import math
import warnings

import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")

R = np.random.default_rng(2024)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _node(t):
    return None if t.grad_fn is None else t.grad_fn.name()


def _run(lib, build, arrays, grad, dtype):
    ts = []
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            t = lib.tensor(a, dtype=getattr(lib, dtype) if a.dtype.kind == "f" else None)
            if i in grad:
                t.requires_grad_(True)
        else:
            t = a
        ts.append(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = build(lib, *ts)
    grads = []
    if grad:
        w = np.random.default_rng(3).standard_normal(tuple(out.shape))
        gs = lib.autograd.grad(out, [ts[i] for i in grad], lib.tensor(w, dtype=out.dtype))
        grads = list(gs)
    return out, grads


def _both(build, arrays, grad=(), dtypes=("float32", "float64"), next_nodes=False):
    """Compare value, dtype, shape, grad_fn name (and its next_functions' names) and the
    gradients of ``build(lib, *tensors)`` between PyTorch and jitgrad."""
    for dtype in dtypes:
        rtol, atol = (2e-5, 2e-6) if dtype == "float32" else (1e-10, 1e-12)
        (to, tg), (jo, jg) = (_run(lib, build, arrays, grad, dtype) for lib in (torch, jt))
        assert str(jo.dtype) == str(to.dtype)
        assert tuple(jo.shape) == tuple(to.shape)
        assert _node(jo) == _node(to)
        if next_nodes and to.grad_fn is not None:
            names = [[None if f is None else f.name().split("::")[-1]
                      for f, _ in g.grad_fn.next_functions]
                     for g in (to, jo)]
            assert names[1] == names[0]
        np.testing.assert_allclose(_np(jo), _np(to), rtol=rtol, atol=atol)
        for a, b in zip(jg, tg):
            np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


def _same_error(build):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(lib)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]), (errs[0], errs[1])
    assert str(errs[1]) == str(errs[0])


def _fd_checks(build, arrays, grad):
    """float64 gradcheck + gradgradcheck of ``build`` w.r.t. the ``grad`` inputs."""
    others = {i: (jt.tensor(a) if isinstance(a, np.ndarray) else a)
              for i, a in enumerate(arrays) if i not in grad}
    leaves = [jt.tensor(arrays[i], requires_grad=True) for i in grad]

    def fn(*xs):
        it = iter(xs)
        args = [next(it) if i in grad else others[i] for i in range(len(arrays))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build(jt, *args)

    assert jt.autograd.gradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert jt.autograd.gradgradcheck(fn, leaves, eps=1e-6, atol=1e-4, rtol=1e-3)


def away(shape, kinks, scale=2.0, gap=0.05):
    """Random values at least ``gap`` away from each kink (finite differences are exact there)."""
    x = np.asarray(R.standard_normal(shape) * scale)
    for k in kinks:
        close = np.abs(x - k) < gap
        x[close] += 4 * gap
    return x


def F(lib):
    return lib.nn.functional


# ----------------------------------------------------------------------------- activations

# (name, call, kinks the finite differences must avoid)
ACTS = [
    ("softsign", lambda lib, t: F(lib).softsign(t), [0.0]),
    ("hardswish", lambda lib, t: F(lib).hardswish(t), [-3.0, 3.0]),
    ("hardsigmoid", lambda lib, t: F(lib).hardsigmoid(t), [-3.0, 3.0]),
    ("mish", lambda lib, t: F(lib).mish(t), []),
    ("selu", lambda lib, t: F(lib).selu(t), [0.0]),
    ("celu", lambda lib, t: F(lib).celu(t), [0.0]),
    ("celu_alpha", lambda lib, t: F(lib).celu(t, 0.7), [0.0]),
    ("threshold", lambda lib, t: F(lib).threshold(t, 0.3, -2.0), [0.3]),
    ("softshrink", lambda lib, t: F(lib).softshrink(t), [-0.5, 0.5]),
    ("softshrink_l", lambda lib, t: F(lib).softshrink(t, 1.3), [-1.3, 1.3]),
    ("hardshrink", lambda lib, t: F(lib).hardshrink(t), [-0.5, 0.5]),
    ("hardshrink_l", lambda lib, t: F(lib).hardshrink(t, 0.2), [-0.2, 0.2]),
    ("tanhshrink", lambda lib, t: F(lib).tanhshrink(t), []),
    ("softmin", lambda lib, t: F(lib).softmin(t, 1), []),
    ("softmin_dtype", lambda lib, t: F(lib).softmin(t, 0, dtype=lib.float64), []),
    ("glu", lambda lib, t: F(lib).glu(t), []),
    ("glu_dim0", lambda lib, t: F(lib).glu(t, 0), []),
]


@pytest.mark.parametrize("name,build,kinks", ACTS, ids=[a[0] for a in ACTS])
def test_activation_matches_torch(name, build, kinks):
    _both(build, [away((4, 6), kinks, 3.0)], grad=(0,), next_nodes=True)


@pytest.mark.parametrize("name,build,kinks", ACTS, ids=[a[0] for a in ACTS])
def test_activation_finite_differences(name, build, kinks):
    _fd_checks(build, [away((2, 4), kinks, 3.0, gap=0.01)], grad=(0,))


@pytest.mark.parametrize("name,build,kinks", ACTS, ids=[a[0] for a in ACTS])
def test_activation_at_kinks_and_specials(name, build, kinks):
    """Values and gradients exactly at the kinks follow ATen's conventions."""
    pts = sorted(set(kinks) | {0.0, -3.0, 3.0, -0.5, 0.5, 25.0, -25.0, 100.0, -100.0, 1e-8})
    x = np.array(pts * 2, dtype=np.float64).reshape(2, -1)
    _both(build, [x], grad=(0,))


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "mish", "selu", "celu",
                                  "threshold"])
def test_inplace_activation(name):
    args = {"threshold": (0.1, 5.0), "celu": (1.5,)}.get(name, ())

    def build(lib, t):
        y = t * 1
        return getattr(F(lib), name)(y, *args, inplace=True)
    _both(build, [away((3, 5), [0.0, 0.1, -3.0, 3.0])], grad=(0,))
    for lib in (torch, jt):  # the input itself is modified and returned
        t = lib.tensor(away((3, 5), [0.0]))
        assert getattr(F(lib), name)(t, *args, inplace=True) is t
    a, b = (getattr(F(lib), name)(lib.tensor([[-1.0, 0.5, 4.0]]), *args) for lib in (torch, jt))
    np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)


@pytest.mark.parametrize("name,args", [("selu_", ()), ("celu_", (0.8,)),
                                       ("threshold_", (0.2, -1.0))])
def test_underscore_inplace_functions(name, args):
    _both(lambda lib, t: getattr(F(lib), name)(t * 1, *args), [away((3, 4), [0.0, 0.2])],
          grad=(0,))


def test_inplace_activation_double_backward():
    for name in ("hardswish", "mish", "selu", "celu", "threshold"):
        args = (0.1, 5.0) if name == "threshold" else ()
        _fd_checks(lambda lib, t, name=name, args=args: getattr(F(lib), name)(
            t * 1, *args, inplace=True),
                   [away((2, 3), [0.0, 0.1, -3.0, 3.0], gap=0.01)], grad=(0,))


@pytest.mark.parametrize("wshape,xshape", [((1,), (4, 3, 5)), ((3,), (4, 3, 5)),
                                           ((3,), (2, 3)), ((), (2, 3)), ((1,), (5,)),
                                           ((), ()), ((1,), ()), ((3,), (2, 3, 2, 2))])
def test_prelu(wshape, xshape):
    x, w = away(xshape, [0.0]), R.uniform(-0.5, 0.8, wshape)
    _both(lambda lib, a, b: F(lib).prelu(a, b), [x, w], grad=(0, 1), next_nodes=True)
    _fd_checks(lambda lib, a, b: F(lib).prelu(a, b), [x, w], grad=(0, 1))


def test_glu_shapes_and_double_backward():
    x = R.standard_normal((2, 4, 3))
    _both(lambda lib, t: F(lib).glu(t, 1), [x], grad=(0,))
    _both(lambda lib, t: F(lib).glu(t, -2), [x], grad=(0,))
    _fd_checks(lambda lib, t: F(lib).glu(t, 1), [x], grad=(0,))


def test_threshold_integer_tensors_keep_dtype():
    for args in ((0, 5), (0.5, 5.5), (-0.5, 7), (1.5, -2)):
        a, b = (F(lib).threshold(lib.arange(-3, 4), *args) for lib in (torch, jt))
        assert str(b.dtype) == str(a.dtype)
        np.testing.assert_array_equal(_np(b), _np(a))


ACT_ERRORS = [
    lambda lib: F(lib).hardswish(lib.arange(3)),
    lambda lib: F(lib).hardsigmoid(lib.arange(3)),
    lambda lib: F(lib).mish(lib.arange(3)),
    lambda lib: F(lib).selu(lib.arange(3)),
    lambda lib: F(lib).celu(lib.arange(3)),
    lambda lib: F(lib).celu(lib.ones(3), 0.0),
    lambda lib: F(lib).glu(lib.arange(4)),
    lambda lib: F(lib).glu(lib.ones(3, 5)),
    lambda lib: F(lib).glu(lib.ones(3, 4), 0),
    lambda lib: F(lib).glu(lib.tensor(1.0)),
    lambda lib: F(lib).glu(lib.ones(3, 4), 2),
    lambda lib: F(lib).softshrink(lib.ones(3), -0.5),
    lambda lib: F(lib).softshrink(lib.ones(3, dtype=lib.float64), -1.0),
    lambda lib: F(lib).softshrink(lib.arange(3)),
    lambda lib: F(lib).hardshrink(lib.arange(3)),
    lambda lib: F(lib).threshold(lib.arange(3) > 0, 0, 1),
    lambda lib: F(lib).threshold(1.0, 0, 1),
    lambda lib: F(lib).hardswish(1.0),
    lambda lib: F(lib).prelu(lib.ones(3, 4), lib.ones(3)),
    lambda lib: F(lib).prelu(lib.ones(3, 4), lib.ones(4, 1)),
    lambda lib: F(lib).prelu(lib.tensor(1.0), lib.ones(2)),
    lambda lib: F(lib).prelu(lib.ones(3), lib.ones(3)),
    lambda lib: F(lib).prelu(lib.ones(3, 4), lib.ones(4, dtype=lib.float64)),
    lambda lib: F(lib).prelu(lib.ones(3, 4), 0.5),
    lambda lib: F(lib).prelu(lib.arange(3), lib.tensor([2])),
    lambda lib: F(lib).softmin(lib.arange(3), 0),
]


@pytest.mark.parametrize("i", range(len(ACT_ERRORS)))
def test_activation_errors(i):
    _same_error(ACT_ERRORS[i])


def test_hardshrink_negative_lambda_is_identity():
    x = R.standard_normal((3, 4))
    _both(lambda lib, t: F(lib).hardshrink(t, -0.5), [x], grad=(0,))


def test_softmin_implicit_dim_warning():
    for lib in (torch, jt):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
            F(lib).softmin(lib.ones(2, 3))


@pytest.mark.parametrize("name", ["softmin", "softmax", "log_softmax"])
def test_implicit_dim_warning_points_at_the_caller(name):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        getattr(F(jt), name)(jt.ones(2, 3))
    assert len(w) == 1 and w[0].filename == __file__


# ----------------------------------------------------------------------------- losses

def pos(*shape):
    return R.uniform(0.1, 2.0, shape)


def sign(*shape):
    return np.where(R.standard_normal(shape) > 0, 1.0, -1.0)


REDS = ["mean", "sum", "none"]

# (name, call(lib, *tensors, reduction), arrays, differentiable input indices)
LOSSES = [
    ("kl_div", lambda lib, x, t, r: F(lib).kl_div(x, t, reduction=r),
     lambda: [R.standard_normal((4, 5)), pos(4, 5)], (0, 1)),
    ("kl_div_log_target", lambda lib, x, t, r: F(lib).kl_div(x, t, reduction=r, log_target=True),
     lambda: [R.standard_normal((4, 5)), R.standard_normal((4, 5))], (0, 1)),
    ("kl_div_bcast", lambda lib, x, t, r: F(lib).kl_div(x, t, reduction=r),
     lambda: [R.standard_normal((4, 5)), pos(5)], (0,)),
    ("poisson_nll", lambda lib, x, t, r: F(lib).poisson_nll_loss(x, t, reduction=r),
     lambda: [R.standard_normal((4, 5)), pos(4, 5) * 2], (0, 1)),
    ("poisson_nll_nolog", lambda lib, x, t, r: F(lib).poisson_nll_loss(
        x, t, log_input=False, reduction=r), lambda: [pos(4, 5), pos(4, 5) * 2], (0, 1)),
    ("poisson_nll_full", lambda lib, x, t, r: F(lib).poisson_nll_loss(
        x, t, full=True, reduction=r), lambda: [R.standard_normal((4, 5)), pos(4, 5) * 2], (0,)),
    ("gaussian_nll", lambda lib, x, t, v, r: F(lib).gaussian_nll_loss(x, t, v, reduction=r),
     lambda: [R.standard_normal((4, 3)), R.standard_normal((4, 3)), pos(4, 3)], (0, 1, 2)),
    ("gaussian_nll_full_homo", lambda lib, x, t, v, r: F(lib).gaussian_nll_loss(
        x, t, v, full=True, reduction=r),
     lambda: [R.standard_normal((4, 3)), R.standard_normal((4, 3)), pos(4)], (0, 1, 2)),
    ("gaussian_nll_bcast_var", lambda lib, x, t, v, r: F(lib).gaussian_nll_loss(
        x, t, v, reduction=r),
     lambda: [R.standard_normal((4, 3)), R.standard_normal((4, 3)), pos(4, 1)], (0, 2)),
    ("gaussian_nll_float_var", lambda lib, x, t, r: F(lib).gaussian_nll_loss(
        x, t, 0.7, reduction=r), lambda: [R.standard_normal((4, 3)), R.standard_normal((4, 3))],
     (0, 1)),
    ("margin_ranking", lambda lib, a, b, t, r: F(lib).margin_ranking_loss(
        a, b, t, margin=0.3, reduction=r),
     lambda: [R.standard_normal(6), R.standard_normal(6), sign(6)], (0, 1, 2)),
    ("hinge_embedding", lambda lib, x, t, r: F(lib).hinge_embedding_loss(
        x, t, margin=1.5, reduction=r), lambda: [away((4, 5), [1.5]), sign(4, 5)], (0,)),
    ("soft_margin", lambda lib, x, t, r: F(lib).soft_margin_loss(x, t, reduction=r),
     lambda: [R.standard_normal((4, 5)), sign(4, 5)], (0,)),
    ("soft_margin_bcast", lambda lib, x, t, r: F(lib).soft_margin_loss(x, t, reduction=r),
     lambda: [R.standard_normal((4, 5)), sign(5)], (0,)),
    ("multilabel_soft_margin", lambda lib, x, t, r: F(lib).multilabel_soft_margin_loss(
        x, t, reduction=r), lambda: [R.standard_normal((4, 5)), R.uniform(0, 1, (4, 5))],
     (0, 1)),
    ("multilabel_soft_margin_w", lambda lib, x, t, w, r: F(lib).multilabel_soft_margin_loss(
        x, t, w, reduction=r),
     lambda: [R.standard_normal((4, 5)), (R.uniform(0, 1, (4, 5)) > 0.5) * 1.0, pos(5)], (0, 2)),
    ("cosine_embedding", lambda lib, a, b, t, r: F(lib).cosine_embedding_loss(
        a, b, t, margin=0.1, reduction=r),
     lambda: [R.standard_normal((5, 4)), R.standard_normal((5, 4)), sign(5)], (0, 1)),
    ("cosine_embedding_1d", lambda lib, a, b, t, r: F(lib).cosine_embedding_loss(
        a, b, t, reduction=r), lambda: [R.standard_normal(4), R.standard_normal(4),
                                        np.array(-1.0)], (0, 1)),
    ("triplet", lambda lib, a, p, n, r: F(lib).triplet_margin_loss(a, p, n, reduction=r),
     lambda: [R.standard_normal((5, 4)), R.standard_normal((5, 4)),
              R.standard_normal((5, 4))], (0, 1, 2)),
    ("triplet_swap_p1", lambda lib, a, p, n, r: F(lib).triplet_margin_loss(
        a, p, n, margin=2.0, p=1, swap=True, reduction=r),
     lambda: [R.standard_normal((5, 4)), R.standard_normal((5, 4)),
              R.standard_normal((5, 4))], (0, 1, 2)),
]


def _loss_case(name):
    case = next(c for c in LOSSES if c[0] == name)
    _, call, arrays, grad = case
    return call, arrays(), grad


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("name", [c[0] for c in LOSSES])
def test_loss_matches_torch(name, reduction):
    call, arrays, grad = _loss_case(name)
    _both(lambda lib, *ts: call(lib, *ts, reduction), arrays, grad=grad,
          next_nodes=reduction != "none")


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("name", [c[0] for c in LOSSES])
def test_loss_finite_differences(name, reduction):
    call, arrays, grad = _loss_case(name)
    _fd_checks(lambda lib, *ts: call(lib, *ts, reduction), arrays, grad=grad)


def test_kl_div_batchmean_and_legacy():
    x, t = R.standard_normal((4, 5)), pos(4, 5)
    for kw in ({"reduction": "batchmean"}, {"reduction": "batchmean", "log_target": True},
               {"size_average": False}, {"reduce": False}):
        _both(lambda lib, a, b, kw=kw: F(lib).kl_div(a, b, **kw), [x, t], grad=(0, 1),
              next_nodes=True)
    _both(lambda lib, a, b: F(lib).kl_div(a, b, reduction="batchmean"),
          [np.array(0.5), np.array(0.3)], grad=(0,))
    for lib in (torch, jt):
        with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
            F(lib).kl_div(lib.zeros(2), lib.ones(2))


def test_kl_div_zero_target():
    _both(lambda lib, a, b: F(lib).kl_div(a, b, reduction="sum"),
          [R.standard_normal(4), np.array([0.0, 0.5, 0.0, 2.0])], grad=(0,))


def test_poisson_full_small_targets_masked():
    t = np.array([0.0, 0.5, 1.0, 1.5, 3.0, 10.0])
    _both(lambda lib, a, b: F(lib).poisson_nll_loss(a, b, full=True, reduction="none"),
          [R.standard_normal(6), t], grad=(0,))


def test_gaussian_nll_clamped_var_keeps_gradient():
    v = np.array([[1e-9, 0.5, 2.0]])
    _both(lambda lib, x, t, var: F(lib).gaussian_nll_loss(x, t, var, reduction="sum"),
          [R.standard_normal((1, 3)), R.standard_normal((1, 3)), v], grad=(0, 2))


def test_losses_with_integer_targets():
    x = R.standard_normal((4, 5))
    tgt = np.where(R.standard_normal((4, 5)) > 0, 1, -1).astype(np.int64)
    _both(lambda lib, a, t: F(lib).soft_margin_loss(a, t), [x, tgt], grad=(0,))
    _both(lambda lib, a, t: F(lib).hinge_embedding_loss(a, t), [x, tgt], grad=(0,))
    _both(lambda lib, a, t: F(lib).poisson_nll_loss(a, t), [x, np.abs(tgt)], grad=(0,))
    _both(lambda lib, a, b, t: F(lib).margin_ranking_loss(a, b, t),
          [x[0], x[1], tgt[0]], grad=(0, 1))


def test_empty_losses_are_nan():
    for build in (lambda lib: F(lib).kl_div(lib.zeros(0), lib.zeros(0)),
                  lambda lib: F(lib).kl_div(lib.zeros(0, 3), lib.zeros(0, 3),
                                            reduction="batchmean"),
                  lambda lib: F(lib).margin_ranking_loss(lib.zeros(0), lib.zeros(0),
                                                         lib.zeros(0))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a, b = build(torch), build(jt)
        np.testing.assert_array_equal(_np(b), _np(a))


LOSS_ERRORS = [
    lambda lib: F(lib).kl_div(lib.ones(4, 6), lib.ones(4, 5)),
    lambda lib: F(lib).kl_div(lib.ones(4, 6), lib.ones(4, 6), reduction="foo"),
    lambda lib: F(lib).kl_div(lib.arange(3), lib.arange(3)),
    lambda lib: F(lib).kl_div(lib.ones(3), lib.ones(3, dtype=lib.long)),
    lambda lib: F(lib).kl_div(1.0, lib.ones(3)),
    lambda lib: F(lib).poisson_nll_loss(lib.ones(4, 6), lib.ones(4, 5)),
    lambda lib: F(lib).poisson_nll_loss(lib.ones(4, 6), lib.ones(4, 6), reduction="foo"),
    lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(3)),
    lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 6), lib.ones(4, 6), -lib.ones(4, 6)),
    lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 6), lib.ones(4, 6), -0.5),
    lambda lib: F(lib).gaussian_nll_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(4, 6),
                                         reduction="x"),
    lambda lib: F(lib).margin_ranking_loss(lib.ones(4, 6), lib.ones(4), lib.ones(4, 6)),
    lambda lib: F(lib).margin_ranking_loss(lib.ones(4), lib.ones(4), lib.ones(3)),
    lambda lib: F(lib).margin_ranking_loss(lib.ones(4), lib.ones(4), lib.ones(4),
                                           reduction="x"),
    lambda lib: F(lib).hinge_embedding_loss(lib.ones(4, 6), lib.ones(3)),
    lambda lib: F(lib).soft_margin_loss(lib.ones(4, 6), lib.ones(3)),
    lambda lib: F(lib).soft_margin_loss(lib.ones(4, 6), lib.ones(4, 6, requires_grad=True)),
    lambda lib: F(lib).multilabel_soft_margin_loss(lib.ones(4, 6), lib.ones(3)),
    lambda lib: F(lib).multilabel_soft_margin_loss(lib.ones(4, 6), lib.ones(4, 6),
                                                   reduction="x"),
    lambda lib: F(lib).cosine_embedding_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(4, 1)),
    lambda lib: F(lib).cosine_embedding_loss(lib.ones(6), lib.ones(6), lib.ones(4)),
    lambda lib: F(lib).cosine_embedding_loss(lib.ones(4, 6), lib.ones(4, 6), lib.tensor(1.0)),
    lambda lib: F(lib).cosine_embedding_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(3)),
    lambda lib: F(lib).triplet_margin_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(6)),
    lambda lib: F(lib).triplet_margin_loss(lib.ones(4, 6), lib.ones(4, 6), lib.ones(4, 6),
                                           margin=0),
    lambda lib: F(lib).cosine_similarity(lib.ones(4, 6), lib.ones(4, 5)),
    lambda lib: F(lib).cosine_similarity(lib.arange(3), lib.arange(3), dim=0),
    lambda lib: F(lib).cosine_similarity(lib.ones(4, 6), lib.ones(4, 6), dim=2),
    lambda lib: F(lib).pairwise_distance(lib.ones(4, 6), lib.ones(4, 5)),
]


@pytest.mark.parametrize("i", range(len(LOSS_ERRORS)))
def test_loss_errors(i):
    _same_error(LOSS_ERRORS[i])


def test_legacy_reduction_args():
    x, t = R.standard_normal((4, 5)), sign(4, 5)
    for kw in ({"size_average": False}, {"reduce": False}):
        _both(lambda lib, a, b, kw=kw: F(lib).soft_margin_loss(a, b, **kw), [x, t], grad=(0,))
        _both(lambda lib, a, b, kw=kw: F(lib).multilabel_soft_margin_loss(a, b, **kw), [x, t],
              grad=(0,))
        _both(lambda lib, a, b, kw=kw: F(lib).poisson_nll_loss(a, b.__abs__(), **kw), [x, t],
              grad=(0,))


# ----------------------------------------------------------------------------- distances

@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((4, 5), (5,)), 1),
                                        (((3, 4, 2), (3, 4, 2)), 0), (((6,), (6,)), 0),
                                        (((2, 1, 3), (4, 3)), -1)])
def test_cosine_similarity(shapes, dim):
    arrays = [R.standard_normal(s) for s in shapes]
    _both(lambda lib, a, b: F(lib).cosine_similarity(a, b, dim), arrays, grad=(0, 1),
          next_nodes=True)
    _fd_checks(lambda lib, a, b: F(lib).cosine_similarity(a, b, dim), arrays, grad=(0, 1))


def test_cosine_similarity_tiny_norm_and_ints():
    a = np.array([[1e-10, 0.0, 0.0], [1.0, 2.0, 3.0]])
    _both(lambda lib, x, y: F(lib).cosine_similarity(x, y, eps=1e-6), [a, a[::-1].copy()],
          grad=(0, 1))
    _both(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=0),
          [np.arange(3), R.standard_normal(3)], grad=(1,))


@pytest.mark.parametrize("p", [2.0, 1, 3, float("inf")])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((6,), (6,)), ((), ())])
def test_pairwise_distance(p, shapes):
    arrays = [R.standard_normal(s) for s in shapes]
    _both(lambda lib, a, b: F(lib).pairwise_distance(a, b, p), arrays, grad=(0, 1),
          next_nodes=True)
    _both(lambda lib, a, b: F(lib).pairwise_distance(a, b, p, eps=1e-3, keepdim=True), arrays,
          grad=(0, 1))
    if p != float("inf"):
        _fd_checks(lambda lib, a, b: F(lib).pairwise_distance(a, b, p), arrays, grad=(0, 1))


# ----------------------------------------------------------------------------- modules

MODULES = [
    ("Softsign", (), {}), ("Hardswish", (), {}), ("Hardswish", (), {"inplace": True}),
    ("Hardsigmoid", (True,), {}), ("Mish", (), {}), ("Mish", (), {"inplace": True}),
    ("SELU", (), {}), ("SELU", (True,), {}), ("CELU", (), {}), ("CELU", (2.0, True), {}),
    ("GLU", (), {}), ("GLU", (0,), {}), ("Threshold", (0.1, 20), {}),
    ("Threshold", (0.1, 20.0, True), {}), ("Softshrink", (), {}), ("Softshrink", (1,), {}),
    ("Hardshrink", (), {}), ("Hardshrink", (0.3,), {}), ("Tanhshrink", (), {}),
    ("PReLU", (), {}), ("PReLU", (3, 0.1), {}), ("KLDivLoss", (), {}),
    ("KLDivLoss", (), {"reduction": "batchmean", "log_target": True}),
    ("PoissonNLLLoss", (), {}), ("PoissonNLLLoss", (), {"log_input": False, "full": True}),
    ("GaussianNLLLoss", (), {}), ("GaussianNLLLoss", (), {"full": True, "eps": 1e-3}),
    ("MarginRankingLoss", (), {}), ("MarginRankingLoss", (1.0,), {}),
    ("HingeEmbeddingLoss", (), {}), ("SoftMarginLoss", (), {"reduction": "sum"}),
    ("MultiLabelSoftMarginLoss", (), {}), ("CosineEmbeddingLoss", (), {"margin": 0.2}),
    ("TripletMarginLoss", (), {}), ("TripletMarginLoss", (), {"margin": 2.0, "p": 1,
                                                             "swap": True}),
    ("CosineSimilarity", (), {}), ("CosineSimilarity", (0, 1e-3), {}),
    ("PairwiseDistance", (), {}), ("PairwiseDistance", (1,), {"keepdim": True}),
]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_module_repr_attributes_state(name, args, kw):
    t, j = getattr(torch.nn, name)(*args, **kw), getattr(jt.nn, name)(*args, **kw)
    assert repr(j) == repr(t)
    attrs = {k: v for k, v in vars(t).items() if not k.startswith("_") and k != "training"}
    for k, v in attrs.items():
        assert getattr(j, k) == v, k
    assert list(j.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(_np(j.state_dict()[k]), _np(v))


def test_module_forward_matches_functional():
    x = away((4, 6), [0.0, -3.0, 3.0])
    for name, args in (("Softsign", ()), ("Hardswish", ()), ("Hardsigmoid", ()), ("Mish", ()),
                       ("SELU", ()), ("CELU", (0.5,)), ("GLU", ()), ("Threshold", (0.1, 2.0)),
                       ("Softshrink", ()), ("Hardshrink", ()), ("Tanhshrink", ()),
                       ("PReLU", ()), ("Softmin", (1,))):
        _both(lambda lib, t, name=name, args=args: getattr(lib.nn, name)(*args).to(t.dtype)(t), [x], grad=(0,))
    a, b, c = (R.standard_normal((4, 5)) for _ in range(3))
    for name, arrays in (("KLDivLoss", [a, pos(4, 5)]), ("PoissonNLLLoss", [a, pos(4, 5)]),
                         ("GaussianNLLLoss", [a, b, pos(4, 5)]),
                         ("MarginRankingLoss", [a[0], b[0], sign(5)]),
                         ("HingeEmbeddingLoss", [a, sign(4, 5)]),
                         ("SoftMarginLoss", [a, sign(4, 5)]),
                         ("MultiLabelSoftMarginLoss", [a, (b > 0) * 1.0]),
                         ("CosineEmbeddingLoss", [a, b, sign(4)]),
                         ("TripletMarginLoss", [a, b, c]), ("CosineSimilarity", [a, b]),
                         ("PairwiseDistance", [a, b])):
        _both(lambda lib, *ts, name=name: getattr(lib.nn, name)()(*ts), arrays, grad=(0,))


def test_prelu_module_channels_and_training():
    for lib in (torch, jt):
        lib.manual_seed(0)
    x = away((2, 3, 4), [0.0])
    outs = []
    for lib in (torch, jt):
        m = lib.nn.PReLU(3, init=0.2, dtype=lib.float64)
        y = m(lib.tensor(x))
        assert y.grad_fn.name() == "PreluKernelBackward0"
        (y * y).sum().backward()
        outs.append((_np(y), _np(m.weight.grad), str(m.weight.dtype)))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12)
    assert outs[1][2] == outs[0][2]


def test_triplet_margin_loss_module_margin_check():
    _same_error(lambda lib: lib.nn.TripletMarginLoss(margin=-1.0)(
        lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3)))


# ----------------------------------------------------------------------------- init

@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 2), (6, 2, 2, 1), (30, 20)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_matches_torch(shape, dtype):
    vals = []
    for lib in (torch, jt):
        lib.manual_seed(7)
        t = lib.empty(*shape, dtype=getattr(lib, dtype))
        assert lib.nn.init.orthogonal_(t, gain=1.5) is t
        vals.append(_np(t))
        vals.append(lib.rand(2).numpy())  # the generator is left in the same state
    np.testing.assert_allclose(vals[2], vals[0], rtol=0,
                               atol=1e-5 if dtype == "float32" else 1e-12)
    np.testing.assert_array_equal(vals[3], vals[1])
    rows = shape[0]
    q = vals[2].reshape(rows, -1) / 1.5
    small = min(q.shape)
    gram = q @ q.T if q.shape[0] == small else q.T @ q
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_errors_and_noop():
    _same_error(lambda lib: lib.nn.init.orthogonal_(lib.ones(3)))
    for lib in (torch, jt):
        t = lib.ones(0, 3)
        assert lib.nn.init.orthogonal_(t) is t


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((4, 4, 3, 3), 2),
                                          ((6, 2, 3, 3, 3), 3), ((2, 5, 4, 4), 1)])
def test_dirac_matches_torch(shape, groups):
    a, b = (lib.nn.init.dirac_(lib.empty(*shape), groups) for lib in (torch, jt))
    np.testing.assert_array_equal(_np(b), _np(a))


def test_dirac_errors():
    _same_error(lambda lib: lib.nn.init.dirac_(lib.empty(3, 3)))
    _same_error(lambda lib: lib.nn.init.dirac_(lib.empty(3, 3, 3), 2))


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.9])
def test_sparse_matches_torch(sparsity):
    vals = []
    for lib in (torch, jt):
        lib.manual_seed(3)
        t = lib.nn.init.sparse_(lib.empty(20, 7), sparsity, std=0.02)
        vals += [_np(t), lib.rand(2).numpy()]
    np.testing.assert_array_equal(vals[2], vals[0])
    np.testing.assert_array_equal(vals[3], vals[1])
    _same_error(lambda lib: lib.nn.init.sparse_(lib.empty(3, 3, 3), 0.1))


def test_selu_gain_and_deprecated_aliases():
    assert jt.nn.init.calculate_gain("selu") == torch.nn.init.calculate_gain("selu")
    for name in ("orthogonal", "dirac", "sparse"):
        assert hasattr(jt.nn.init, name)
    with pytest.warns(FutureWarning, match="nn.init.orthogonal_"):
        jt.nn.init.orthogonal(jt.empty(3, 3))


def test_functions_exported():
    names = ["softsign", "hardswish", "hardsigmoid", "mish", "selu", "celu", "glu", "prelu",
             "threshold", "softshrink", "hardshrink", "tanhshrink", "kl_div", "poisson_nll_loss",
             "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
             "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
             "triplet_margin_loss", "cosine_similarity", "pairwise_distance"]
    for n in names:
        assert n in jt.nn.functional.__all__
    assert math.isclose(jt.nn.functional.activation_extra._SELU_SCALE, 1.0507009873554805)
