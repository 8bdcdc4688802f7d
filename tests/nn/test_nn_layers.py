"""Layer modules: outputs vs NumPy, gradients vs finite differences, and a tiny training run."""
import numpy as np
import pytest
from nn_gradcheck import check_grads

import jitgrad as jt
import jitgrad.nn as nn
import jitgrad.nn.functional as F

R = np.random.default_rng(3)


def test_linear_module_forward_backward():
    lin = nn.Linear(4, 3).double()
    x = R.standard_normal((5, 4))
    w = lin.weight.detach().numpy().copy()
    b = lin.bias.detach().numpy().copy()
    out = lin(jt.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + b, rtol=1e-12)

    # gradients w.r.t. the input through the module, and w.r.t. its parameters
    xt = jt.tensor(x, requires_grad=True)
    g = R.standard_normal((5, 3))
    lin.zero_grad()
    lin(xt).backward(jt.tensor(g))
    np.testing.assert_allclose(xt.grad.numpy(), g @ w, rtol=1e-12)
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ x, rtol=1e-12)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-12)
    assert nn.Linear(3, 2, dtype=jt.float64).weight.dtype is jt.float64


def test_activation_modules_equal_functional():
    x = jt.tensor(R.standard_normal((3, 4)))
    pairs = [(nn.ReLU(), F.relu(x)), (nn.GELU(), F.gelu(x)), (nn.Tanh(), F.tanh(x)),
             (nn.Sigmoid(), F.sigmoid(x)), (nn.Softmax(dim=1), F.softmax(x, 1)),
             (nn.LogSoftmax(dim=0), F.log_softmax(x, 0)), (nn.LeakyReLU(0.3),
                                                            F.leaky_relu(x, 0.3)),
             (nn.Softplus(2.0), F.softplus(x, 2.0)), (nn.Identity(), x),
             (nn.Flatten(0), x.reshape(-1)), (nn.SiLU(), x * F.sigmoid(x))]
    for mod, ref in pairs:
        np.testing.assert_allclose(mod(x).numpy(), ref.numpy(), rtol=1e-12, err_msg=repr(mod))


def test_relu_inplace_module():
    x = jt.tensor([-1.0, 2.0])
    y = nn.ReLU(inplace=True)(x)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])


def test_flatten_gradient():
    x = R.standard_normal((2, 3, 4))
    out = check_grads(lambda t: nn.Flatten()(t), [x], wrt=(0,))
    assert tuple(out.shape) == (2, 12)


def test_layer_norm_module():
    ln = nn.LayerNorm(5).double()
    assert ln.weight.detach().numpy().tolist() == [1.0] * 5
    x = R.standard_normal((4, 5))
    with jt.no_grad():
        ln.weight.copy_(jt.tensor(R.standard_normal(5)))
        ln.bias.copy_(jt.tensor(R.standard_normal(5)))
    y = ln(jt.tensor(x)).detach().numpy()
    m, v = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    ref = (x - m) / np.sqrt(v + 1e-5) * ln.weight.detach().numpy() + ln.bias.detach().numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-10)
    ln2 = nn.LayerNorm((5,), elementwise_affine=False)
    assert ln2.weight is None and len(list(ln2.parameters())) == 0


def test_embedding_module_padding_idx():
    jt.manual_seed(0)
    emb = nn.Embedding(6, 3, padding_idx=-1)
    assert emb.padding_idx == 5
    np.testing.assert_array_equal(emb.weight.detach().numpy()[5], np.zeros(3))
    idx = jt.tensor([[5, 1], [1, 2]])
    out = emb(idx)
    assert tuple(out.shape) == (2, 2, 3)
    out.sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[:, 0], [0, 2, 1, 0, 0, 0])
    pre = nn.Embedding.from_pretrained(jt.eye(3))
    assert not pre.weight.requires_grad
    np.testing.assert_array_equal(pre(jt.tensor([2])).numpy(), [[0, 0, 1]])


def test_dropout_module_train_eval():
    d = nn.Dropout(0.5)
    x = jt.ones(1000)
    jt.manual_seed(0)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(2.0)


def test_loss_modules_equal_functional():
    x = jt.tensor(R.standard_normal((4, 3)))
    t = jt.tensor([0, 2, 1, 2])
    w = jt.tensor([1.0, 2.0, 0.5], dtype=jt.float64)
    pairs = [
        (nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, t),
         F.cross_entropy(x, t, weight=w, label_smoothing=0.1)),
        (nn.CrossEntropyLoss(reduction="none")(x, t), F.cross_entropy(x, t, reduction="none")),
        (nn.NLLLoss(ignore_index=2)(x, t), F.nll_loss(x, t, ignore_index=2)),
        (nn.MSELoss(reduction="sum")(x, x * 2), F.mse_loss(x, x * 2, reduction="sum")),
        (nn.BCELoss()(F.sigmoid(x), F.sigmoid(-x)),
         F.binary_cross_entropy(F.sigmoid(x), F.sigmoid(-x))),
        (nn.BCEWithLogitsLoss(pos_weight=jt.tensor([2.0], dtype=jt.float64))(x, F.sigmoid(x)),
         F.binary_cross_entropy_with_logits(x, F.sigmoid(x),
                                            pos_weight=jt.tensor([2.0], dtype=jt.float64))),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    ce = nn.CrossEntropyLoss(weight=w)
    assert "weight" in dict(ce.named_buffers())
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


def test_tiny_training_run_reaches_threshold():
    """XOR-like two-moons problem: a small MLP must fit it."""
    jt.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 256
    X = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = ((X[:, 0] * X[:, 1]) > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 2))
    opt = jt.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = jt.tensor(X), jt.tensor(y)
    first = None
    for _ in range(300):
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.1 < first
    acc = (model(xt).argmax(1) == yt).float().mean().item()
    assert acc > 0.97


def test_regression_training_with_sgd_momentum_and_mse():
    jt.manual_seed(1)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((128, 3)).astype(np.float32)
    true_w = np.array([[1.5], [-2.0], [0.5]], dtype=np.float32)
    Y = X @ true_w + 0.3
    lin = nn.Linear(3, 1)
    opt = jt.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    for _ in range(200):
        opt.zero_grad()
        loss = F.mse_loss(lin(jt.tensor(X)), jt.tensor(Y))
        loss.backward()
        opt.step()
    assert loss.item() < 1e-6
    np.testing.assert_allclose(lin.weight.detach().numpy(), true_w.T, atol=1e-3)
    np.testing.assert_allclose(lin.bias.detach().numpy(), [0.3], atol=1e-3)
