"""The engine sums gradients flowing into one input in place (NumPy) when nothing else holds the
buffered tensor: these tests check that a tensor the user kept (hook results, grad_inputs seen
by a node hook, the user's own gradient) is never changed by a later sum, and that the sums
give PyTorch's bits. Expected values come from PyTorch."""
import numpy as np
import pytest
import torch

import jitgrad as jg
from jitgrad import fusion


@pytest.fixture(params=[True, False], ids=["fused", "unfused"])
def fusion_mode(request):
    prev = fusion.is_fusion_enabled()
    fusion.set_fusion_enabled(request.param)
    yield
    fusion.set_fusion_enabled(prev)


def _stash_tensor_hook(lib, x0):
    # b's gradient passes on to a before t1's does: a hook keeping it must see it unchanged
    x = lib.tensor(x0, requires_grad=True)
    a = x * 2
    t1 = a * 5
    b = a + 1
    kept = []
    b.register_hook(lambda g: kept.append(g))
    t2 = b * 3
    loss = t1.sum() + t2.sum()
    loss.backward()
    return [k.detach().numpy().copy() for k in kept], x.grad.numpy().copy()


def _stash_node_hook(lib, x0):
    x = lib.tensor(x0, requires_grad=True)
    a = x.exp()
    t1 = a * a
    b = a.sin()  # runs before t1's node: its grad_inputs reach a's buffer first
    kept = []
    b.grad_fn.register_hook(lambda gi, go: kept.append(gi))
    loss = t1.sum() + (b * 3).sum()
    loss.backward()
    return [t.detach().numpy().copy() for gi in kept for t in gi if t is not None], \
        x.grad.numpy().copy()


@pytest.mark.parametrize("case", [_stash_tensor_hook, _stash_node_hook])
def test_kept_gradients_are_not_summed_into(case, fusion_mode):
    x0 = np.linspace(-1.0, 1.0, 5)
    got_kept, got_grad = case(jg, x0)
    want_kept, want_grad = case(torch, x0)
    assert len(got_kept) == len(want_kept) > 0
    for g, w in zip(got_kept, want_kept):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_grad, want_grad)


def test_users_gradient_is_not_summed_into():
    x = jg.ones(4, requires_grad=True)
    y = x.view(4)
    v = jg.full((4,), 2.0)
    (y * 1).backward(v, retain_graph=True)
    z = x.view(4)
    jg.autograd.backward([z, z * 3], [v, v])
    np.testing.assert_array_equal(v.numpy(), [2.0] * 4)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0 + 2.0 + 6.0] * 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rnn_like_sums_match_pytorch_bits(dtype):
    # one weight used at every step: its gradients from 20 steps are summed in the engine's
    # buffer (most recent step first), so the order of the float additions shows in the bits
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((6, 6))
    xs = rng.standard_normal((20, 3, 6))

    def run(lib):
        dt = getattr(lib, dtype)
        w = lib.tensor(w0, dtype=dt, requires_grad=True)
        h = lib.zeros(3, 6, dtype=dt)
        for x in xs:
            h = lib.tanh(lib.tensor(x, dtype=dt) @ w + h @ w)
        (h * h).sum().backward()
        return w.grad.numpy()

    np.testing.assert_array_equal(run(jg), run(torch))
