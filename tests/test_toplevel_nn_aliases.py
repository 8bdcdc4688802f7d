"""torch.selu, torch.kl_div, torch.embedding, torch.dropout_, ...: the top-level ATen spellings of
nn.functional (nn/functional/_aten_extra.py and F's own) against PyTorch: values, grad_fn names,
gradients, int reductions and argument errors."""
import numpy as np
import pytest

from tests._parity import agree, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

R = np.random.default_rng(7)
X = R.standard_normal((3, 4))
Y = R.standard_normal((3, 4))
T3 = np.array([1.0, -1.0, 1.0])

CASES = {
    "selu": lambda T, x, y: T.selu(x),
    "selu_": lambda T, x, y: T.selu_(x * 1),
    "celu": lambda T, x, y: T.celu(x, 0.5),
    "celu_": lambda T, x, y: T.celu_(x * 1, 0.5),
    "threshold": lambda T, x, y: T.threshold(x, 0.1, 2.0),
    "threshold_": lambda T, x, y: T.threshold_(x * 1, 0.1, 2.0),
    "rrelu_eval": lambda T, x, y: T.rrelu(x),
    "rrelu_eval_": lambda T, x, y: T.rrelu_(x * 1, 0.1, 0.3),
    "hardshrink": lambda T, x, y: T.hardshrink(x, 0.3),
    "prelu": lambda T, x, y: T.prelu(x, T.tensor([0.25], dtype=T.float64)),
    "bilinear": lambda T, x, y: T.bilinear(x, y, T.ones(2, 4, 4, dtype=T.float64),
                                           T.ones(2, dtype=T.float64)),
    "cosine_similarity": lambda T, x, y: T.cosine_similarity(x, y),
    "pairwise_distance": lambda T, x, y: T.pairwise_distance(x, y, 3.0),
    "channel_shuffle": lambda T, x, y: T.channel_shuffle(x.reshape(1, 4, 3), 2),
    "constant_pad_nd": lambda T, x, y: T.constant_pad_nd(x, (1, 2), 0.5),
    "constant_pad_nd_neg": lambda T, x, y: T.constant_pad_nd(x, [-1, 1, 1, 0]),
    "embedding": lambda T, x, y: T.embedding(x, T.tensor([0, 2, 1, 2])),
    "embedding_pad": lambda T, x, y: T.embedding(x, T.tensor([0, 2, 1, 2]), 2),
    "embedding_neg_pad": lambda T, x, y: T.embedding(x, T.tensor([0, 2, 1, 2]), -1),
    "dropout_eval_": lambda T, x, y: T.dropout_(x * 1, 0.5, False),
    "feature_dropout_eval": lambda T, x, y: T.feature_dropout(x, 0.5, False),
}
for _r in (None, 0, 1, 2, 5):
    _kw = {} if _r is None else {"reduction": _r}
    CASES.update({
        f"kl_div_{_r}": lambda T, x, y, kw=_kw: T.kl_div(x, y.exp(), **kw),
        f"kl_div_log_{_r}": lambda T, x, y, kw=_kw: T.kl_div(x, y, **kw, log_target=True),
        f"margin_ranking_{_r}": lambda T, x, y, kw=_kw: T.margin_ranking_loss(
            x[:, 0], y[:, 0], T.tensor([1.0, -1.0, 1.0], dtype=T.float64), 0.1, **kw),
        f"hinge_{_r}": lambda T, x, y, kw=_kw: T.hinge_embedding_loss(
            x, (y > 0).double() * 2 - 1, 0.5, **kw),
        f"triplet_{_r}": lambda T, x, y, kw=_kw: T.triplet_margin_loss(x, y, x * 2, **kw),
        f"cosine_embedding_{_r}": lambda T, x, y, kw=_kw: T.cosine_embedding_loss(
            x, y, T.tensor([1.0, -1.0, 1.0], dtype=T.float64), **kw),
        f"bce_logits_{_r}": lambda T, x, y, kw=_kw: T.binary_cross_entropy_with_logits(
            x, y.sigmoid(), None, T.full((4,), 2.0, dtype=T.float64), **kw),
    })
for _r in (0, 1, 2):
    CASES[f"poisson_nll_{_r}"] = lambda T, x, y, r=_r: T.poisson_nll_loss(
        x, y.exp(), True, True, 1e-8, r)
    CASES[f"poisson_nll_nolog_{_r}"] = lambda T, x, y, r=_r: T.poisson_nll_loss(
        x.exp(), y.exp(), False, False, 1e-8, r)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_nodes_and_gradients(name):
    compare(CASES[name], [X, Y], grad=True)


def test_dropouts_in_training_draw_as_pytorch():
    for name in ("dropout_", "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_",
                 "feature_dropout"):
        def fn(T, name=name):
            T.manual_seed(3)
            x = T.ones(2, 3, 4)
            y = getattr(T, name)(x, 0.4, True)
            return y, y is x
        agree(fn)


def test_native_channel_shuffle():
    # no derivative in PyTorch: a NotImplemented node (compare() reads torch's node by name())
    def fn(T):
        x = T.tensor(X, requires_grad=True)
        r = T.native_channel_shuffle(x.reshape(1, 4, 3), 2)
        return r, type(r.grad_fn).__name__
    agree(fn)
    raises_like(lambda T, x: T.native_channel_shuffle(x.requires_grad_().reshape(1, 4, 3), 2)
                .sum().backward(), X)


def test_rrelu_training_draws():
    def fn(T):
        T.manual_seed(5)
        x = T.tensor(X) * 1
        return T.rrelu(x, 0.1, 0.3, True), T.rrelu_(x, 0.1, 0.3, True), x
    agree(fn)


@pytest.mark.parametrize("call", [
    "selu(1)", "celu_([1.0])", "threshold(1, 0, 0)", "kl_div(x, x, 'mean')",
    "kl_div(x.long(), x.long())", "margin_ranking_loss(x, x, x, 0.0, 1.5)",
    "embedding(T.tensor([0]), x)", "dropout_(x, 1.5, True)", "feature_dropout(x, -1.0, True)",
    "rrelu(x, 0.5, 0.1)", "constant_pad_nd(x, (1, 2, 3))", "selu(x.long())",
])
def test_errors(call):
    raises_like(lambda T, x: eval("T." + call), X)
