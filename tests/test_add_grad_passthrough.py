"""AddBackward0 (and SubBackward0's ``self``) hand the incoming gradient on *itself*, as
PyTorch's formulas do (``self: grad``): a leaf's ``.grad`` is then a copy when something else
still holds that tensor (the other operand's edge, a hook, the user's ``grad_tensors``) or when
it is laid out unlike the leaf (``sum()``'s expanded gradient), and stolen otherwise; gradients
meeting in a buffer add in place only into a tensor nothing else holds. Each scenario runs on
both libraries: strides, ``_version``, values, grad_fn names and storage sharing compared.
Backward fusion groups most of these adds with their neighbours; the fused node hands out the
same objects (jitgrad/fusion/handoff.py; more cases in tests/fusion/test_fused_handoff.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from _parity import check_observations

pytest.importorskip("torch", reason="needs PyTorch")

_A = np.arange(12.0).reshape(3, 4) / 7 - 0.5
_B = np.arange(12.0).reshape(3, 4)[::-1].copy() / 5 - 1
_ROW = np.linspace(-1.0, 1.0, 4)


def _record_grad(rec, label, t):
    rec(label, t)
    rec(label + " strides", list(t.stride()))


def _leaves(lib, other="same", dtype=None):
    x = lib.tensor(_A, requires_grad=True, dtype=dtype)
    b = lib.tensor(_B if other == "same" else _ROW, requires_grad=True)
    return x, b


_TAILS = {"sum": lambda y: y.sum(), "exp_sum": lambda y: y.exp().sum(),
          "mul_sum": lambda y: (y * 3.0).sum()}


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("other", ["same", "broadcast"])
@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_operand_gradients(op, other, tail):
    def run(lib, rec):
        x, b = _leaves(lib, other)
        y = x + b if op == "add" else x - b
        _TAILS[tail](y).backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        rec("grads share storage", x.grad.data_ptr() == b.grad.data_ptr())
    check_observations(run, f"{op} {other} {tail}")


@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_non_leaf_operand_gradient_is_the_incoming_one(tail):
    def run(lib, rec):
        x, b = _leaves(lib)
        h = x * 1.0
        y = h + b
        g, gy = lib.autograd.grad(_TAILS[tail](y), [h, y])
        _record_grad(rec, "h grad", g)
        rec("h grad is y's", g.data_ptr() == gy.data_ptr())
    check_observations(run, tail)


def test_promoted_operand_gradient_is_cast():
    def run(lib, rec):
        x = lib.tensor(_A, requires_grad=True, dtype=lib.float32)
        b = lib.tensor(_B, requires_grad=True)  # float64: the sum is float64
        (x + b).exp().sum().backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        i = lib.tensor(np.arange(12).reshape(3, 4))
        c = lib.tensor(_A, requires_grad=True, dtype=lib.float32)
        (i + c).sum().backward()
        _record_grad(rec, "c.grad", c.grad)
    check_observations(run)


def test_autograd_grad_hands_back_the_users_gradient():
    def run(lib, rec):
        x, b = _leaves(lib)
        go = lib.tensor(_B * 2)
        gx, gb = lib.autograd.grad(x + b, [x, b], go)
        _record_grad(rec, "gx", gx)
        _record_grad(rec, "gb", gb)
        rec("gx is go", gx.data_ptr() == go.data_ptr())
        rec("gb is go", gb.data_ptr() == go.data_ptr())
    check_observations(run)


def test_backward_with_users_gradient_copies_it():
    def run(lib, rec):
        x, b = _leaves(lib)
        go = lib.tensor(_B * 2)
        (x + b).backward(go)
        go.mul_(10.0)  # the user's tensor changes: the leaves' gradients must not
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        rec("x.grad is go", x.grad.data_ptr() == go.data_ptr())
    check_observations(run)


@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_same_operand_twice(tail):
    def run(lib, rec):
        x = lib.tensor(_A, requires_grad=True)
        _TAILS[tail](x + x).backward()
        _record_grad(rec, "x.grad", x.grad)
    check_observations(run, tail)


@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_gradient_used_by_two_paths(tail):
    """``z``'s gradient reaches ``a`` and ``b`` through AddBackward0 after ``z*2 + z`` summed
    two gradients into z's buffer; the in-place add there must not touch what was handed on."""
    def run(lib, rec):
        a, b = _leaves(lib)
        z = a + b
        _TAILS[tail](z * 2 + z).backward()
        _record_grad(rec, "a.grad", a.grad)
        _record_grad(rec, "b.grad", b.grad)
        rec("a, b share", a.grad.data_ptr() == b.grad.data_ptr())
    check_observations(run, tail)


def test_passed_gradient_meets_another_in_a_buffer():
    """``h``'s buffer first gets the gradient AddBackward0 also handed to ``b``, then another:
    adding in place into it would change ``b``'s."""
    def run(lib, rec):
        x, b = _leaves(lib)
        h = x * 1.0
        w = (h + b).exp()  # h and b: the same tensor handed on
        (w + h * 3.0).sum().backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        x2, b2 = _leaves(lib)
        y = x2 + b2
        (y.exp() + x2.sin()).sum().backward()  # x2's buffer: the passed gradient, then cos
        _record_grad(rec, "x2.grad", x2.grad)
        _record_grad(rec, "b2.grad", b2.grad)
    check_observations(run)


def test_retained_gradients_are_their_own():
    def run(lib, rec):
        x, b = _leaves(lib)
        h = x * 1.0
        h.retain_grad()
        y = h + b
        y.retain_grad()
        (y.exp() + h * 3.0).sum().backward(retain_graph=True)
        for name, t in (("h.grad", h.grad), ("y.grad", y.grad), ("x.grad", x.grad),
                        ("b.grad", b.grad)):
            _record_grad(rec, name, t)
        first_h, first_b = h.grad, b.grad
        (y * 2.0).sum().backward()  # both add into what the first pass left
        _record_grad(rec, "h.grad again", h.grad)
        _record_grad(rec, "y.grad again", y.grad)
        _record_grad(rec, "b.grad again", b.grad)
        rec("first h.grad", first_h)
        rec("first b.grad", first_b)
    check_observations(run)


@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_grad_accumulates_across_passes(tail):
    """``.grad`` after a pass-through, then a second pass adding into it: the first pass's
    ``.grad`` tensors must not alias each other or a buffer of the graph."""
    def run(lib, rec):
        x, b = _leaves(lib)
        y = x + b
        _TAILS[tail](y).backward(retain_graph=True)
        gx, gb = x.grad, b.grad
        rec("gx first", gx.clone())
        rec("gb first", gb.clone())
        _TAILS[tail](y * 2.0).backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        rec("gx kept", gx)
        rec("gb kept", gb)
        rec("same objects", [x.grad is gx, b.grad is gb])
    check_observations(run, tail)


@pytest.mark.parametrize("tail", sorted(_TAILS))
def test_hooks_see_the_passed_gradient(tail):
    def run(lib, rec):
        x, b = _leaves(lib)
        seen = {}
        y = x + b
        y.register_hook(lambda g: seen.__setitem__("y", g))
        x.register_hook(lambda g: seen.__setitem__("x", g))
        b.register_hook(lambda g: g * 2.0)
        _TAILS[tail](y).backward()
        _record_grad(rec, "hook y", seen["y"])
        _record_grad(rec, "hook x", seen["x"])
        rec("x's hook got y's", seen["x"].data_ptr() == seen["y"].data_ptr())
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
        rec("x.grad is the hooked one", x.grad.data_ptr() == seen["x"].data_ptr())
    check_observations(run, tail)


@pytest.mark.parametrize("other", ["same", "broadcast"])
def test_create_graph(other):
    def run(lib, rec):
        x, b = _leaves(lib, other)
        y = (x + b).exp()
        gx, gb = lib.autograd.grad(y.sum(), [x, b], create_graph=True)
        _record_grad(rec, "gx", gx)
        _record_grad(rec, "gb", gb)
        (gx.sum() + gb.sum()).backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
    check_observations(run, other)


_CHAINS = {
    # an add heading what backward fusion would group: its operand gradient is the incoming one
    "add_heads": lambda lib, x, b: (x * 1.5 + b).sum(),
    "add_inside": lambda lib, x, b: (x.exp() + b).sin().sum(),
    "sub_then_add": lambda lib, x, b: ((x - 0.5) + b).sum(),
    "sub_inside": lambda lib, x, b: (x.exp() - b).sin().sum(),
    "residual": lambda lib, x, b: ((x * b).tanh() + x).exp().sum(),
}


@pytest.mark.parametrize("chain", sorted(_CHAINS))
def test_chains_backward_fusion_could_group(chain):
    def run(lib, rec):
        x, b = _leaves(lib)
        _CHAINS[chain](lib, x, b).backward()
        _record_grad(rec, "x.grad", x.grad)
        _record_grad(rec, "b.grad", b.grad)
    check_observations(run, chain)
