"""nn.AdaptiveLogSoftmaxWithLoss against PyTorch: seeded weights, forward's output/loss and
their nodes, gradients of the input and of every parameter, log_prob, predict's three
branches, the constructor's and forward's errors."""
import warnings

import numpy as np
import pytest

import jitgrad
from tests._parity import torch

R = np.random.default_rng(5)


def build(lib, *args, dtype="float32", **kw):
    lib.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a zero-width cluster warns at init in both
        return lib.nn.AdaptiveLogSoftmaxWithLoss(*args, dtype=getattr(lib, dtype), **kw)


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)


def pair(*args, dtype="float32", **kw):
    mj, mt = build(jitgrad, *args, dtype=dtype, **kw), build(torch, *args, dtype=dtype, **kw)
    for (nj, pj), (nt, pt) in zip(mj.named_parameters(), mt.named_parameters(), strict=True):
        assert nj == nt
        np.testing.assert_array_equal(pj.detach().numpy(), pt.detach().numpy(), err_msg=nj)
    return mj, mt


CONFIGS = [
    ((32, 20, [4, 10, 15]), {}),
    ((16, 12, [5]), dict(div_value=2.0, head_bias=True)),
    ((16, 20, [4, 10, 15]), {}),  # the last cluster has 16 // 64 = 0 hidden units
]
TARGETS = {
    "mixed": [0, 5, 19, 3, 11, 12, 9, 4],
    "head_only": [0, 1, 2, 3, 1, 0, 3, 2],
    "one_cluster": [5, 6, 7, 8, 9, 5, 6, 7],
    "last_class": [11, 11, 11, 11, 11, 11, 11, 11],
}


def grads_of(out, x, m):
    out.loss.backward()
    return [x.grad.numpy()] + [p.grad.numpy() if p.grad is not None else None
                               for p in m.parameters()]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", range(len(CONFIGS)))
@pytest.mark.parametrize("targets", list(TARGETS))
def test_forward_and_gradients_match_torch(dtype, config, targets):
    args, kw = CONFIGS[config]
    mj, mt = pair(*args, dtype=dtype, **kw)
    t = np.array(TARGETS[targets]) % args[1]
    x = R.standard_normal((len(t), args[0])).astype(dtype)
    xj, xt = jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oj, ot = mj(xj, jitgrad.tensor(t)), mt(xt, torch.tensor(t))
    assert type(oj).__name__ == "_ASMoutput" and oj._fields == ("output", "loss")
    for a, b in ((oj.output, ot.output), (oj.loss, ot.loss)):
        assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__
        assert str(a.dtype)[-7:] == str(b.dtype)[-7:] and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol(dtype))
    for gj, gt in zip(grads_of(oj, xj, mj), grads_of(ot, xt, mt), strict=True):
        assert (gj is None) == (gt is None)
        if gt is not None:
            np.testing.assert_allclose(gj, gt, **tol(dtype))


def test_unbatched_input():
    mj, mt = pair(8, 10, [3, 6], div_value=2.0)
    x = R.standard_normal(8).astype(np.float32)
    for target in (1, 4, 9):
        xj, xt = jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        oj, ot = mj(xj, jitgrad.tensor(target)), mt(xt, torch.tensor(target))
        assert tuple(oj.output.shape) == tuple(ot.output.shape) == ()
        assert type(oj.output.grad_fn).__name__ == type(ot.output.grad_fn).__name__
        np.testing.assert_allclose(oj.output.detach().numpy(), ot.output.detach().numpy(),
                                   rtol=1e-6)
        np.testing.assert_allclose(oj.loss.item(), ot.loss.item(), rtol=1e-6)
        oj.loss.backward()
        ot.loss.backward()
        np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_prob_matches_torch_and_normalises(dtype):
    mj, mt = pair(32, 20, [4, 10, 15], dtype=dtype)
    x = R.standard_normal((6, 32)).astype(dtype)
    xj, xt = jitgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lj, lt = mj.log_prob(xj), mt.log_prob(xt)
    assert type(lj.grad_fn).__name__ == type(lt.grad_fn).__name__
    np.testing.assert_allclose(lj.detach().numpy(), lt.detach().numpy(), **tol(dtype))
    np.testing.assert_allclose(np.exp(lj.detach().numpy().astype(np.float64)).sum(1), 1,
                               rtol=1e-5)
    w = R.standard_normal((6, 20)).astype(dtype)
    (lj * jitgrad.tensor(w)).sum().backward()
    (lt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), **tol(dtype))


@pytest.mark.parametrize("branch", ["all_in_shortlist", "none_in_shortlist", "mixed"])
def test_predict_branches(branch):
    mj, mt = pair(16, 12, [4, 8], head_bias=True)
    bias = np.zeros(6, np.float32)  # head: 4 shortlist classes + 2 clusters
    if branch != "all_in_shortlist":
        bias[4:] = 50.0  # every row's head argmax is a cluster
    x = R.standard_normal((10, 16)).astype(np.float32)
    if branch == "mixed":
        x[::2] *= 0  # zero rows: only the bias speaks... then make half of them shortlist
        bias[4:] = 0.0
        bias[0] = 1.0
        x[1::2] = 0
        x[1::2, 0] = 1
    for m, lib in ((mj, jitgrad), (mt, torch)):
        with lib.no_grad():
            m.head.bias.copy_(lib.tensor(bias))
            if branch == "mixed":
                m.head.weight.zero_()
                m.head.weight[4, 0] = 20.0  # rows with x[:, 0] == 1 go to cluster 0
    pj, pt = mj.predict(jitgrad.tensor(x)), mt.predict(torch.tensor(x))
    assert pj.dtype == jitgrad.int64
    np.testing.assert_array_equal(pj.numpy(), pt.numpy())
    np.testing.assert_array_equal(pj.numpy(), mj.log_prob(jitgrad.tensor(x)).argmax(1).numpy())
    shortlisted = pt.numpy() < 4
    want = {"all_in_shortlist": (True, True), "none_in_shortlist": (False, False),
            "mixed": (True, False)}[branch]
    assert (shortlisted.any(), shortlisted.all()) == want


@pytest.mark.parametrize("cutoffs", [[], [5, 3], [0, 4], [4, 12], [4, 4], [2.5, 6], (3, 7)])
def test_cutoff_validation(cutoffs):
    outcomes = []
    for lib in (jitgrad, torch):
        try:
            lib.nn.AdaptiveLogSoftmaxWithLoss(16, 12, cutoffs)
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("shapes", [
    ((5, 8), (4,), "int"),      # batch sizes differ
    ((5, 8, 1), (5,), "int"),   # 1-D target, 3-D input
    ((5, 8), (), "int"),        # 0-D target, 2-D input
    ((5, 8), (5, 1), "int"),    # multi-target
    ((5, 8), (5,), "high"),     # a target >= n_classes
    ((5, 8), (5,), "negative"),
])
def test_forward_errors_match_torch(shapes):
    xs, ts, kind = shapes
    t = np.zeros(ts, np.int64)
    if kind == "high":
        t[:] = [1, 2, 12, 3, 40]
    elif kind == "negative":
        t[:] = [1, -2, 5, 3, 0]
    x = R.standard_normal(xs).astype(np.float32)
    msgs = []
    for lib in (jitgrad, torch):
        m = build(lib, 8, 12, [4, 8])
        with pytest.raises(RuntimeError) as e:
            m(lib.tensor(x), lib.tensor(t))
        msgs.append(str(e.value).replace("torch.Size", "Size"))
    assert msgs[0].replace("jitgrad.Size", "Size") == msgs[1]


def test_repr_state_dict_and_attributes():
    mj, mt = pair(32, 20, [4, 10, 15], div_value=2.0, head_bias=True)
    assert repr(mj) == repr(mt)
    assert list(mj.state_dict()) == list(mt.state_dict())
    for a in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias",
              "shortlist_size", "n_clusters", "head_size"):
        assert getattr(mj, a) == getattr(mt, a), a
    mj.reset_parameters()  # runs, keeps the shapes
    assert [tuple(p.shape) for p in mj.parameters()] == \
        [tuple(p.shape) for p in mt.parameters()]
