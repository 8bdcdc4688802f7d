"""nn.functional: outputs against NumPy references, gradients against float64 central
differences, PyTorch's node names and error messages."""
import math
import warnings

import numpy as np
import pytest
from nn_gradcheck import check_double_grads, check_grads
from scipy.special import erf

import jitgrad as jt
import jitgrad.nn.functional as F

R = np.random.default_rng(7)


def randn(*shape):
    return R.standard_normal(shape)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ----------------------------------------------------------------------------- linear


@pytest.mark.parametrize("xshape", [(5, 7), (2, 3, 7), (7,)])
def test_linear_matches_numpy_and_fd(xshape):
    x, w, b = randn(*xshape), randn(4, 7), randn(4)
    out = check_grads(F.linear, [x, w, b], wrt=(0, 1, 2))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + b, rtol=1e-12, atol=1e-12)


def test_linear_double_backward():
    w, b = randn(4, 7), randn(4)
    check_double_grads(lambda x: F.linear(x, jt.tensor(w), jt.tensor(b)) ** 2, [randn(3, 7)], 0)
    x = randn(3, 7)
    check_double_grads(lambda w: F.linear(jt.tensor(x), w, jt.tensor(b)) ** 2, [w], 0)


def test_linear_weight_grad_is_contiguous():
    lin_w = jt.randn(5, 3, requires_grad=True)
    F.linear(jt.randn(4, 3), lin_w, jt.zeros(5)).sum().backward()
    assert lin_w.grad.is_contiguous()


def test_linear_without_bias():
    x, w = randn(3, 5), randn(2, 5)
    out = check_grads(lambda x, w: F.linear(x, w), [x, w], wrt=(0, 1))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T, rtol=1e-12)


def test_linear_records_addmm_like_torch():
    x = jt.randn(2, 4, requires_grad=True)
    w = jt.randn(3, 4, requires_grad=True)
    b = jt.randn(3, requires_grad=True)
    y = F.linear(x, w, b)
    assert y.grad_fn.name() == "AddmmBackward0"
    names = [type(n).__name__ for n, _ in y.grad_fn.next_functions]
    assert names == ["AccumulateGrad", "AccumulateGrad", "TBackward0"]
    assert F.linear(jt.randn(5, 2, 4), w, b).grad_fn.name() == "ViewBackward0"
    assert F.linear(x, w).grad_fn.name() == "MmBackward0"


def test_linear_shape_error():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x4 and 5x3\)"):
        F.linear(jt.randn(2, 4), jt.randn(3, 5), jt.randn(3))


# ----------------------------------------------------------------------------- activations


ACTIVATIONS = [
    ("relu", F.relu, lambda x: np.maximum(x, 0), "ReluBackward0"),
    ("gelu", F.gelu, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), "GeluBackward0"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
     "GeluBackward0"),
    ("tanh", F.tanh, np.tanh, "TanhBackward0"),
    ("sigmoid", F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "SigmoidBackward0"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
     "LeakyReluBackward0"),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
     lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2), "SoftplusBackward0"),
]


@pytest.mark.parametrize("name,fn,ref,node", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation(name, fn, ref, node):
    x = randn(4, 6)
    x[np.abs(x) < 1e-3] = 0.5  # keep finite differences away from kinks
    x[np.abs(2 * x - 3) < 1e-3] = 0.3
    out = check_grads(fn, [x], wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), ref(x), rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == node


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax(dim):
    x = randn(3, 5)
    out = check_grads(lambda t: F.softmax(t, dim), [x], wrt=(0,))
    ref = np.exp(np_log_softmax(x, dim))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    out = check_grads(lambda t: F.log_softmax(t, dim), [x], wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), np_log_softmax(x, dim), rtol=1e-12)
    assert out.grad_fn.name() == "LogSoftmaxBackward0"


# ----------------------------------------------------------------------------- dropout


def test_dropout_mask_scaling_and_grad():
    jt.manual_seed(0)
    x = jt.tensor(randn(200, 50), requires_grad=True)
    y = F.dropout(x, 0.3)
    assert y.grad_fn.name() == "MulBackward0"
    xd, yd = x.detach().numpy(), y.detach().numpy()
    kept = yd != 0
    np.testing.assert_allclose(yd[kept], xd[kept] / 0.7, rtol=1e-12)
    assert abs(1 - kept.mean() - 0.3) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-12)


def test_dropout_eval_p0_p1_and_errors():
    x = jt.randn(4, 4)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        F.dropout(x, 1.5)


def test_dropout_matches_torch_mask():
    torch = pytest.importorskip("torch")
    torch.manual_seed(5)
    jt.manual_seed(5)
    a = torch.nn.functional.dropout(torch.ones(30, 40), 0.25).numpy()
    b = F.dropout(jt.ones(30, 40), 0.25).numpy()
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- embedding


def test_embedding_forward_and_grad_with_padding():
    w = randn(10, 3)
    idx = np.array([[1, 2, 2], [9, 0, 2]])
    out = F.embedding(jt.tensor(idx), jt.tensor(w))
    np.testing.assert_array_equal(out.numpy(), w[idx])
    wt = jt.tensor(w, requires_grad=True)
    y = F.embedding(jt.tensor(idx), wt, padding_idx=2)
    assert y.grad_fn.name() == "EmbeddingBackward0"
    g = randn(2, 3, 3)
    y.backward(jt.tensor(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx.reshape(-1), g.reshape(-1, 3))
    ref[2] = 0
    np.testing.assert_allclose(wt.grad.numpy(), ref, rtol=1e-12)


def test_embedding_fd_and_scale_grad_by_freq():
    w = randn(6, 2)
    idx = jt.tensor([[0, 1, 1, 5]])
    check_grads(lambda w: F.embedding(idx, w), [w], wrt=(0,))
    wt = jt.tensor(w, requires_grad=True)
    F.embedding(idx, wt, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(wt.grad.numpy()[:, 0], [1, 1, 0, 0, 0, 1])


def test_embedding_errors():
    w = jt.randn(3, 2)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(jt.tensor([5]), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have "
                                           "one of the following scalar types: Long, Int; but "
                                           "got torch.FloatTensor instead"):
        F.embedding(jt.tensor([1.0]), w)


# ----------------------------------------------------------------------------- layer_norm


def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    return y * (w if w is not None else 1) + (b if b is not None else 0)


def test_layer_norm_matches_numpy_and_fd():
    x, w, b = randn(2, 3, 5), randn(5), randn(5)
    out = check_grads(lambda x, w, b: F.layer_norm(x, (5,), w, b), [x, w, b], wrt=(0, 1, 2))
    np.testing.assert_allclose(out.detach().numpy(), np_layer_norm(x, 1, w, b), rtol=1e-10)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    out = check_grads(lambda x: F.layer_norm(x, (3, 5)), [x], wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), np_layer_norm(x, 2), rtol=1e-10)


def test_layer_norm_float32_close_to_float64():
    x = randn(8, 16)
    y32 = F.layer_norm(jt.tensor(x.astype(np.float32)), (16,)).numpy()
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32, np_layer_norm(x, 1), atol=2e-6)


def test_layer_norm_double_backward():
    x, w, b = randn(3, 4), randn(4), randn(4)
    check_double_grads(lambda x: F.layer_norm(x, (4,), jt.tensor(w), jt.tensor(b)), [x], 0)


def test_layer_norm_shape_error():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with "
                                           r"shape \[\*, 3\], but got input of size\[2, 4\]"):
        F.layer_norm(jt.randn(2, 4), (3,))


# ----------------------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    x, t = randn(4, 3), randn(4, 3)
    out = check_grads(lambda a, b: F.mse_loss(a, b, reduction=reduction), [x, t], wrt=(0, 1))
    ref = (x - t) ** 2
    ref = ref.mean() if reduction == "mean" else ref.sum() if reduction == "sum" else ref
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    assert out.grad_fn.name() == "MseLossBackward0"


def test_mse_loss_broadcast_warning_and_double_backward():
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(jt.randn(2, 3), jt.randn(1, 3))
    with pytest.raises(RuntimeError, match="must match the size"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F.mse_loss(jt.randn(2, 3), jt.randn(4, 3))
    t = randn(3, 2)
    check_double_grads(lambda x: F.mse_loss(x, jt.tensor(t)), [randn(3, 2)], 0)


def np_nll(logp, t, w=None, ignore_index=-100, reduction="mean"):
    n = logp.shape[0]
    w = np.ones(logp.shape[1]) if w is None else w
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    wt = w[ts] * valid
    losses = -logp[np.arange(n), ts] * wt
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / wt.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_indices(reduction):
    x, t = randn(6, 5), np.array([0, 4, 2, 2, 1, 3])
    out = check_grads(lambda a: F.cross_entropy(a, jt.tensor(t), reduction=reduction), [x],
                      wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(),
                               np_nll(np_log_softmax(x, 1), t, reduction=reduction), rtol=1e-12)
    assert out.grad_fn.name() == "NllLossBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"


def test_cross_entropy_weight_ignore_index():
    x, t = randn(6, 5), np.array([0, 4, -100, 2, 1, 3])
    w = np.array([0.5, 1.0, 2.0, 1.5, 0.25])
    out = check_grads(lambda a: F.cross_entropy(a, jt.tensor(t), weight=jt.tensor(w)), [x],
                      wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), np_nll(np_log_softmax(x, 1), t, w),
                               rtol=1e-12)


def test_cross_entropy_label_smoothing():
    x, t = randn(6, 5), np.array([0, 4, -100, 2, 1, 3])
    eps = 0.2
    logp = np_log_softmax(x, 1)
    valid = t != -100
    smooth = -(logp.sum(1)) * valid
    ref = (1 - eps) * np_nll(logp, t) + eps / 5 * smooth.sum() / valid.sum()
    out = check_grads(lambda a: F.cross_entropy(a, jt.tensor(t), label_smoothing=eps), [x],
                      wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)


def test_cross_entropy_probabilities_and_kdim():
    x = randn(4, 3)
    p = np.abs(randn(4, 3))
    p /= p.sum(1, keepdims=True)
    out = check_grads(lambda a: F.cross_entropy(a, jt.tensor(p)), [x], wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(),
                               -(np_log_softmax(x, 1) * p).sum(1).mean(), rtol=1e-12)
    x3 = randn(2, 4, 3)
    t3 = np.array([[0, 3, 1], [2, 2, 0]])
    out = check_grads(lambda a: F.cross_entropy(a, jt.tensor(t3)), [x3], wrt=(0,))
    lp = np_log_softmax(x3, 1)
    ref = -np.mean([lp[i, t3[i, j], j] for i in range(2) for j in range(3)])
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    assert out.grad_fn.name() == "NllLoss2DBackward0"


def test_cross_entropy_double_backward():
    t = jt.tensor([1, 0, 2])
    check_double_grads(lambda a: F.cross_entropy(a, t), [randn(3, 4)], 0)


def test_cross_entropy_errors():
    x = jt.randn(2, 4, requires_grad=True)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(x, jt.tensor([1, 4]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.cross_entropy(x, jt.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Float"):
        F.cross_entropy(x, jt.tensor([1.0, 0.0]))
    with pytest.raises(RuntimeError, match="but got Int"):
        F.cross_entropy(x, jt.tensor([1, 0], dtype=jt.int32))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                         r"batch_size \(3\)."):
        F.cross_entropy(x, jt.tensor([1, 0, 2]))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.cross_entropy(x, jt.tensor([1, 0]), reduction="foo")
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 "
                                           "classes or no classes"):
        F.cross_entropy(x, jt.tensor([1, 0]), weight=jt.ones(3))


def test_nll_loss():
    x, t = randn(5, 3), np.array([2, 0, 1, 1, 2])
    out = check_grads(lambda a: F.nll_loss(a, jt.tensor(t)), [x], wrt=(0,))
    np.testing.assert_allclose(out.detach().numpy(), np_nll(x, t), rtol=1e-12)
    assert out.grad_fn.name() == "NllLossBackward0"
    nan = F.nll_loss(jt.tensor(x), jt.tensor([-100] * 5))
    assert math.isnan(nan.item())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction):
    p = R.uniform(0.05, 0.95, (3, 4))
    t = R.uniform(0, 1, (3, 4))
    w = R.uniform(0.5, 2, (4,))
    out = check_grads(lambda a, b: F.binary_cross_entropy(a, b, jt.tensor(w),
                                                          reduction=reduction),
                      [p, t], wrt=(0, 1))
    ref = -w * (t * np.log(p) + (1 - t) * np.log(1 - p))
    ref = ref.mean() if reduction == "mean" else ref.sum() if reduction == "sum" else ref
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    assert out.grad_fn.name() == "BinaryCrossEntropyBackward0"


def test_binary_cross_entropy_clamps_log_and_errors():
    out = F.binary_cross_entropy(jt.tensor([0.0, 1.0]), jt.tensor([1.0, 0.0]))
    assert out.item() == pytest.approx(100.0)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(jt.tensor([1.5]), jt.tensor([1.0]))
    with pytest.raises(ValueError, match="Using a target size"):
        F.binary_cross_entropy(jt.tensor([0.5]), jt.tensor([1.0, 0.0]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(reduction):
    x, t = randn(3, 4) * 3, R.uniform(0, 1, (3, 4))
    w, pw = R.uniform(0.5, 2, (4,)), R.uniform(0.5, 3, (4,))
    fn = lambda a, b: F.binary_cross_entropy_with_logits(  # noqa: E731
        a, b, jt.tensor(w), reduction=reduction, pos_weight=jt.tensor(pw))
    out = check_grads(fn, [x, t], wrt=(0, 1))
    sig = 1 / (1 + np.exp(-x))
    ref = -w * (pw * t * np.log(sig) + (1 - t) * np.log(1 - sig))
    ref = ref.mean() if reduction == "mean" else ref.sum() if reduction == "sum" else ref
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10)
    assert out.grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"


def test_bce_with_logits_stable_and_double_backward():
    out = F.binary_cross_entropy_with_logits(jt.tensor([1000.0, -1000.0]),
                                             jt.tensor([1.0, 0.0]))
    assert out.item() == 0.0
    y = jt.randn(2, 3, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(y, jt.rand(2, 3))
    assert [None if n is None else n.name() for n, _ in loss.grad_fn.next_functions] == \
        ["torch::autograd::AccumulateGrad", None]  # PyTorch's name() of its C++ node
    t = R.uniform(0, 1, (2, 3))
    check_double_grads(lambda a: F.binary_cross_entropy_with_logits(a, jt.tensor(t)),
                       [randn(2, 3)], 0)
    with pytest.raises(ValueError, match=r"Target size \(torch.Size\(\[3, 4\]\)\) must be the "
                                         r"same as input size \(torch.Size\(\[2, 4\]\)\)"):
        F.binary_cross_entropy_with_logits(jt.randn(2, 4), jt.rand(3, 4))


# ----------------------------------------------------------------------------- one_hot


def test_one_hot():
    out = F.one_hot(jt.tensor([1, 0, 3]))
    assert out.dtype is jt.int64
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[[1, 0, 3]])
    assert tuple(F.one_hot(jt.tensor([[1], [2]]), 5).shape) == (2, 1, 5)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(jt.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(jt.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(jt.tensor([-1, 1]))


# ----------------------------------------------------------------------------- vs torch


def test_functional_values_match_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = randn(6, 5)
    t = np.array([0, 4, -100, 2, 1, 3])
    w = R.uniform(0.5, 2, 5)
    cases = [
        (lambda m, a: m.cross_entropy(a, lib(m).tensor(t), weight=lib(m).tensor(w),
                                      label_smoothing=0.1)),
        (lambda m, a: m.layer_norm(a, (5,))),
        (lambda m, a: m.binary_cross_entropy_with_logits(a, lib(m).tensor(np.abs(x) / 4))),
        (lambda m, a: m.mse_loss(a, lib(m).tensor(x[::-1].copy()))),
        (lambda m, a: m.gelu(a)),
    ]

    def lib(m):
        return torch if m is tf else jt

    for case in cases:
        xa, xb = torch.tensor(x, requires_grad=True), jt.tensor(x, requires_grad=True)
        ya, yb = case(tf, xa), case(F, xb)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        ya.sum().backward()
        yb.sum().backward()
        np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-9, atol=1e-12)
        assert type(ya.grad_fn).__name__ == yb.grad_fn.name()
