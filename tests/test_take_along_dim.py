"""take_along_dim: PyTorch's signature, broadcasting, dim=None, nodes and errors (against torch),
gradients against float64 finite differences."""
import numpy as np
import pytest

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck

CASES = [  # (input shape, indices, dim)
    ((3, 4), [[0], [2], [1]], 1),
    ((3, 4), [[0], [2], [1]], -1),
    ((3, 4), [[0, 1, 2, 0]], 0),      # indices broadcast along the other dim
    ((1, 4), [[0], [0], [0]], 1),     # input broadcast too
    ((3, 4), [0, 5, 11, 5], None),    # flattened
    ((2, 3, 4), [[[3, 0]], [[1, 1]]], 2),
]


@pytest.mark.parametrize("shape,idx,dim", CASES)
def test_matches_torch(shape, idx, dim):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape)
    j = jitgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    jo = jitgrad.take_along_dim(j, jitgrad.tensor(idx), dim=dim)
    to = torch.take_along_dim(t, torch.tensor(idx), dim=dim)
    np.testing.assert_array_equal(jo.detach().numpy(), to.detach().numpy())
    assert type(jo.grad_fn).__name__ == type(to.grad_fn).__name__
    g = np.random.default_rng(1).standard_normal(tuple(to.shape))
    jo.backward(jitgrad.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(j.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    if dim is not None:
        m = j.take_along_dim(jitgrad.tensor(idx), dim)
        np.testing.assert_array_equal(m.detach().numpy(), to.detach().numpy())


@pytest.mark.parametrize("shape,idx,dim", CASES)
def test_gradients_finite_differences(shape, idx, dim):
    x = jitgrad.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    i = jitgrad.tensor(idx)

    def f(a):
        return jitgrad.take_along_dim(a, i, dim=dim) ** 2

    assert gradcheck(f, [x])
    assert gradgradcheck(f, [x])


@pytest.mark.parametrize("idx,dim", [
    ([[0.5]], 0),        # float indices
    ([0], 0),            # rank mismatch
    ([[0, 1]], 0),       # shapes do not broadcast
])
def test_errors_match_torch(idx, dim):
    torch = pytest.importorskip("torch")
    x = np.arange(12.).reshape(3, 4)
    with pytest.raises(RuntimeError) as te:
        torch.take_along_dim(torch.tensor(x), torch.tensor(idx), dim=dim)
    with pytest.raises(RuntimeError) as je:
        jitgrad.take_along_dim(jitgrad.tensor(x), jitgrad.tensor(idx), dim=dim)
    assert str(je.value) == str(te.value)
