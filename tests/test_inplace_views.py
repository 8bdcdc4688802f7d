"""In-place ops and writes through views made by reshape/view/flatten, squeeze/unsqueeze,
transpose/permute/t and indexing — chained in any order — inside a recorded graph: values and
gradients as PyTorch computes them (the view is replayed on the base, CopySlices)."""
import numpy as np
import pytest

import jitgrad

CASES = {
    "t_mul": lambda T, y: y.t().mul_(3),
    "view_add": lambda T, y: y.view(-1).add_(T.arange(6.0).double()),
    "unsqueeze_transpose_mul": lambda T, y: y.unsqueeze(0).transpose(1, 2).mul_(
        T.tensor([[[1.0], [2.0], [3.0]]], dtype=T.float64)),
    "permute_exp": lambda T, y: y.unsqueeze(2).permute(2, 1, 0).exp_(),
    "flatten_setitem": lambda T, y: y.flatten().__setitem__(slice(1, 4), 7.0),
    "t_then_index": lambda T, y: y.t()[1].mul_(5),
    "index_then_t": lambda T, y: y[:, 1:].t().mul_(4),
    "reshape_t_reshape_sigmoid": lambda T, y: y.reshape(3, 2).t().reshape(6).sigmoid_(),  # copy
    "reshape_t_sigmoid": lambda T, y: y.reshape(3, 2).t().sigmoid_(),
    "squeeze_div": lambda T, y: y.unsqueeze(1).squeeze(1).div_(2),
    "t_setitem_tensor": lambda T, y: y.t().__setitem__((0, slice(None)), y[:, 2] * 3),
    # views made before a sibling's write: the second write must see the first's history
    "siblings_view_view": lambda T, y: _siblings(y, lambda y: y.view(3, 2), lambda y: y.view(6),
                                                 lambda u: u.mul_(2), lambda t: t.mul_(3)),
    "siblings_view_slice": lambda T, y: _siblings(y, lambda y: y.t(), lambda y: y[:, 1:],
                                                  lambda u: u.mul_(2), lambda t: t.exp_()),
    "siblings_then_base": lambda T, y: _siblings(y, lambda y: y.view(6), lambda y: y[1],
                                                 lambda u: u.add_(1), lambda t: (t.mul_(3),
                                                                                y.pow_(2),
                                                                                t.sin_())),
}


def _siblings(y, make_u, make_t, write_u, write_t):
    u, t = make_u(y), make_t(y)
    write_u(u)
    write_t(t)


def _run(T, make, create_graph=False):
    x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), dtype=T.float64, requires_grad=True)
    w = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=T.float64)
    y = x * 2
    make(T, y)
    out = (y * w).sum() + (y * y).sum()
    (g,) = T.autograd.grad(out, x, create_graph=create_graph)
    gg = None
    if create_graph:
        (gg,) = T.autograd.grad((g * g).sum(), x)
        gg = gg.detach().numpy()
    return y.detach().numpy(), g.detach().numpy(), type(y.grad_fn).__name__, gg


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_through_views_matches_torch(name):
    torch = pytest.importorskip("torch")
    mine = _run(jitgrad, CASES[name])
    ref = _run(torch, CASES[name])
    np.testing.assert_allclose(mine[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(mine[1], ref[1], rtol=1e-12)
    assert mine[2] == ref[2]  # CopySlices, except where a reshape had to copy (no view)


@pytest.mark.parametrize("name", ["t_mul", "permute_exp", "reshape_t_sigmoid",
                                  "t_setitem_tensor", "siblings_view_slice"])
def test_double_backward_through_views_matches_torch(name):
    torch = pytest.importorskip("torch")
    mine = _run(jitgrad, CASES[name], create_graph=True)
    ref = _run(torch, CASES[name], create_graph=True)
    np.testing.assert_allclose(mine[3], ref[3], rtol=1e-10)


def test_inplace_through_a_view_bumps_the_shared_version():
    x = jitgrad.ones(2, 3, requires_grad=True)
    y = x * 2
    z = y.exp()  # saves its output, not y
    s = y * y  # saves y
    y.t().mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()
    z.sum().backward()  # z's saved output was not touched


def test_expanded_views_as_torch():
    """An expanded view whose elements overlap refuses in-place arithmetic (PyTorch's error);
    one that does not (a new leading dim of size 1) is written through its base."""
    torch = pytest.importorskip("torch")
    errors = []
    for T in (jitgrad, torch):
        y = T.ones(3, requires_grad=True) * 2
        with pytest.raises(RuntimeError) as e:
            y.unsqueeze(0).expand(2, 3).mul_(2)
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    res = []
    for T in (jitgrad, torch):
        x = T.arange(1.0, 4.0, dtype=T.float64, requires_grad=True)
        y = x * 2
        e = y.expand(1, 3)
        e.mul_(T.tensor([[1.0, 2.0, 3.0]], dtype=T.float64))
        (g,) = T.autograd.grad((y * y).sum(), x)
        res.append((y.detach().numpy().copy(), g.numpy().copy(), type(y.grad_fn).__name__,
                    type(e.grad_fn).__name__))
    np.testing.assert_allclose(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1])
    assert res[0][2:] == res[1][2:]
