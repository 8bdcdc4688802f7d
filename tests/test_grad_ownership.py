"""Leaves adopt gradient arrays without copying; these tests pin down when that would alias
memory the user holds (and so must copy)."""
import numpy as np
import pytest

import jitgrad as jg


def _identity_paths():
    return {
        "leaf itself": lambda x: x,
        "view": lambda x: x.view(2, 2),
        "reshape": lambda x: x.reshape(4),
        "clone": lambda x: x.clone(),
        "expand of same shape": lambda x: x.expand(4),
        "transpose twice": lambda x: x.view(2, 2).t().t(),
        "add zero (kernel)": lambda x: x + 0.0,
    }


@pytest.mark.parametrize("name", sorted(_identity_paths()))
def test_leaf_grad_never_aliases_the_users_gradient(name):
    x = jg.ones(4, requires_grad=True)
    y = _identity_paths()[name](x)
    v = jg.full(tuple(y.shape), 2.0)
    y.backward(v)
    v.zero_()  # the user reuses their gradient buffer
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0, 2.0])
    x.grad.zero_()  # and the leaf's grad is the leaf's own
    np.testing.assert_array_equal(v.numpy(), np.zeros(tuple(y.shape)))


def test_two_leaves_never_share_one_gradient_array():
    a = jg.ones(3, requires_grad=True)
    b = jg.ones(3, requires_grad=True)
    (a + b).backward(jg.ones(3))
    a.grad.mul_(5)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 1.0])


def test_hook_result_is_not_adopted():
    x = jg.ones(3, requires_grad=True)
    keep = jg.full((3,), 7.0)
    x.register_hook(lambda g: keep)
    (x * 2).sum().backward()
    keep.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0, 7.0])


def test_custom_function_returning_its_input_is_not_adopted():
    class Ident(jg.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            return g

    x = jg.ones(3, requires_grad=True)
    v = jg.full((3,), 3.0)
    Ident.apply(x).backward(v)
    v.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_grad_of_a_view_of_the_users_buffer_is_copied():
    big = jg.full((8,), 4.0)
    x = jg.ones(4, requires_grad=True)
    x.backward(big[2:6])
    big.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0, 4.0])
