"""A view's requires_grad follows its base's, live, jitgrad against PyTorch (recorded scenarios,
``check_observations``): PyTorch's DifferentiableViewMeta answers ``requires_grad`` with its own
flag, its grad_fn, or ``base.requires_grad()`` read now, so a view made before its base
requires grad (``requires_grad_``, the setter, an in-place write with grad giving the base a
grad_fn) requires grad too; one whose base stops requiring grad stops too (unless it has its
own grad_fn or flag). Recorded: values, requires_grad, is_leaf, grad_fn names, gradients, and
PyTorch's errors (views made in no_grad mode then written through the base with grad,
``requires_grad`` flags of non-leaf views)."""
import itertools

import numpy as np
import pytest
from _parity import check_observations

torch = pytest.importorskip("torch")

ROOTS = {
    "tensor": lambda T: T.tensor(np.arange(1.0, 7.0).reshape(2, 3)),
    # x is itself a view (of arange's result): views of x have that root as their base
    "a view itself": lambda T: T.arange(1.0, 7.0, dtype=T.float64).reshape(2, 3),
}
VIEWS = {
    "select": lambda b: b[0], "slice": lambda b: b[:, 1:], "view": lambda b: b.view(3, 2),
    "t": lambda b: b.t(), "select_of_view": lambda b: b.view(3, 2)[1],
    "unsqueeze": lambda b: b[None], "expand": lambda b: b[0].expand(2, 3),
    "diagonal": lambda b: b.diagonal(), "dtype view": lambda b: b.view(b.dtype),
}


def _on_then_off(x):
    x.requires_grad_()
    x.requires_grad_(False)


def _on_then_detach_(x):
    x.requires_grad_()
    x.detach_()


CHANGES = {
    "requires_grad_": lambda T, x, w: x.requires_grad_(),
    "setter": lambda T, x, w: setattr(x, "requires_grad", True),
    "mul_": lambda T, x, w: x.mul_(w),
    "sibling mul_": lambda T, x, w: x[1].mul_(w),
    "setitem": lambda T, x, w: x.__setitem__((0, 1), w * 5),
    "copy_": lambda T, x, w: x.copy_(w.expand(2, 3)),
    "on then off": lambda T, x, w: _on_then_off(x),
    "on then detach_": lambda T, x, w: _on_then_detach_(x),
}


@pytest.mark.parametrize("root", sorted(ROOTS))
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("made", ["grad", "no_grad"])
def test_view_made_before_its_base_changes(root, view, made):
    for change in CHANGES:
        def f(T, r, change=change):
            x = ROOTS[root](T)
            w = T.tensor(2.0, dtype=T.float64, requires_grad=True)
            if made == "no_grad":
                with T.no_grad():
                    v = VIEWS[view](x)
            else:
                v = VIEWS[view](x)
            r("v before", v)
            CHANGES[change](T, x, w)
            r("x", x)
            r("v", v)
            u = v.unsqueeze(0)  # a view of it made now, with grad mode on
            r("u", u)
            y = (v.reshape(-1) * T.arange(1.0, v.numel() + 1)).sum()
            r("y", y)
            y.backward()
            r("grads", [x.grad if x.is_leaf else None, w.grad])
        check_observations(f, where=change)


STEPS = {
    "x on": lambda x, v, w: x.requires_grad_(),
    "x off": lambda x, v, w: x.requires_grad_(False),
    "x mul_": lambda x, v, w: x.mul_(w),
    "v on": lambda x, v, w: v.requires_grad_(),
    "v off": lambda x, v, w: v.requires_grad_(False),
    "v setter on": lambda x, v, w: setattr(v, "requires_grad", True),
    "v setter off": lambda x, v, w: setattr(v, "requires_grad", False),
}


@pytest.mark.parametrize("made", ["grad", "no_grad"])
@pytest.mark.parametrize("first", sorted(STEPS))
def test_view_own_flag_and_its_base(made, first):
    """A view's own requires_grad flag and its base's, set in every order (three steps): what
    the view reports after each, then where a backward through it puts the gradient (its own
    ``.grad`` when it has its own flag, nowhere when it requires grad through its base alone)."""
    for rest in itertools.product(sorted(STEPS), repeat=2):
        steps = (first,) + rest

        def f(T, r, steps=steps):
            x = T.tensor(np.arange(1.0, 5.0))
            w = T.tensor(2.0, dtype=T.float64, requires_grad=True)
            if made == "no_grad":
                with T.no_grad():
                    v = x[1:]
            else:
                v = x[1:]
            for s in steps:
                STEPS[s](x, v, w)
                r(s, v)
            y = (v * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum()
            r("y", y)
            y.backward()
            r("grads", [x.grad if x.is_leaf else None, v.grad if v.is_leaf else None, w.grad])
        check_observations(f, where=" -> ".join(steps))


def test_leaf_stops_requiring_grad_after_its_graph_was_made():
    """AccumulateGrad of a leaf that no longer requires grad accumulates nothing (its hooks
    still run), as PyTorch's."""
    def f(T, r):
        x = T.tensor(np.arange(1.0, 4.0), requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(g.clone()))
        x.register_post_accumulate_grad_hook(lambda t: seen.append("post"))
        y = (x * 2).sum()
        x.requires_grad_(False)
        y.backward()
        r("grad", [x.grad])
        r("seen", [s if isinstance(s, str) else s.tolist() for s in seen])
    check_observations(f)
