"""Views and grad mode, jitgrad against PyTorch (recorded scenarios, ``check_observations``):

* a view made under ``no_grad`` requires grad when its *base* (the root it shares storage
  with) does, not when the tensor it was cut from does (PyTorch's DifferentiableViewMeta reads
  ``base.requires_grad()``): a leaf view given ``requires_grad_()`` passes nothing on;
* a write into the base under ``no_grad``, the view then used with grad: its grad_fn is
  regenerated (AsStridedBackward0) and the gradient reaches the base's history;
* a view made before its base requires grad (``requires_grad_``, or a write with grad giving
  the base a grad_fn) requires grad then (PyTorch reads the base's flag live; more cases in
  test_view_requires_grad_live.py);
* a 0-dim bool in a key (``x[True]``, ``x[None, False]``, a 0-dim bool tensor) is an unsqueeze
  then an index on the new unit dim: IndexBackward0 <- UnsqueezeBackward0, with that layout.
"""
import numpy as np
import pytest
from _parity import check_observations

torch = pytest.importorskip("torch")


def _chain(y):
    """grad_fn names from y to the leaves, every edge (nested lists)."""
    def walk(fn):
        if fn is None:
            return None
        return [type(fn).__name__, [walk(f) for f, _ in fn.next_functions]]
    return walk(y.grad_fn)


def _base(T, kind):
    x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=(kind != "no_grad_leaf"))
    return x, (x * 2 if kind == "non_leaf" else x)


# the tensor the no_grad view is cut from: a view or not, of the root
MIDDLE = {
    "view": lambda a: a.view(6), "slice": lambda a: a[0:1], "t": lambda a: a.t(),
    "select": lambda a: a[1], "unsqueeze": lambda a: a[None], "detach": lambda a: a.detach(),
    "product": lambda a: a * 1,
}


@pytest.mark.parametrize("root", ["leaf", "non_leaf", "no_grad_leaf"])
@pytest.mark.parametrize("middle", sorted(MIDDLE))
@pytest.mark.parametrize("own_flag", [False, True])
def test_no_grad_view_takes_requires_grad_from_the_root(root, middle, own_flag):
    def f(T, r):
        x, a = _base(T, root)
        b = MIDDLE[middle](a)
        if own_flag:
            if b.grad_fn is not None:
                return  # (requires_grad_ of a non-leaf: nothing to compare)
            b.requires_grad_()
        r("b", b)
        with T.no_grad():
            c = b[0]
            r("c in no_grad", c)
        r("c", c)
        y = (c * T.arange(1.0, c.numel() + 1).reshape(c.shape)).sum()
        r("y", y)
        y.backward()
        r("x.grad", [x.grad])
        r("b.grad", [b.grad if b.is_leaf else None])
    check_observations(f)


VIEWS = {
    "select": lambda b: b[0], "slice": lambda b: b[:, 1:], "view": lambda b: b.view(3, 2),
    "t": lambda b: b.t(), "select_of_view": lambda b: b.view(3, 2)[1],
    "unsqueeze": lambda b: b[None], "ellipsis": lambda b: b[..., 0],
    "expand": lambda b: b[0].expand(2, 3), "diagonal": lambda b: b.diagonal(),
}
WRITES = {
    "add_": lambda T, b: b.add_(1.0), "setitem": lambda T, b: b.__setitem__(0, 7.0),
    "mask_setitem": lambda T, b: b.__setitem__(b > 3, 7.0), "copy_": lambda T, b: b.copy_(
        T.ones(2, 3)), "zero_": lambda T, b: b.zero_(), "through_a_sibling":
    lambda T, b: b[1].mul_(2.0), "out=": lambda T, b: T.add(b, 1.0, out=b),
}


@pytest.mark.parametrize("root", ["leaf", "non_leaf"])
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("read_grad_fn_first", [False, True])
def test_base_written_under_no_grad_then_view_used_with_grad(root, view, read_grad_fn_first):
    for write in WRITES:
        def f(T, r, write=write):
            x, b = _base(T, root)
            v = VIEWS[view](b)
            r("v", v)
            with T.no_grad():
                WRITES[write](T, b)
            if read_grad_fn_first:
                r("v after the write", v)
            y = (v.reshape(-1) * T.arange(1.0, v.numel() + 1)).sum()
            r("y", y)
            r("v", v)
            y.backward()
            r("x.grad", [x.grad])
        check_observations(f, where=write)


@pytest.mark.parametrize("change", ["requires_grad_", "write_with_grad"])
def test_view_made_before_its_base_requires_grad(change):
    def f(T, r):
        x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3))
        w = T.tensor(2.0, requires_grad=True)
        v = x[0]
        if change == "requires_grad_":
            x.requires_grad_()
        else:
            x.mul_(w)
        y = (v * T.arange(1.0, 4.0)).sum()
        r("y", y)
        r("v", v)
    check_observations(f)


BOOL_KEYS = [
    "True", "False", "(None, True)", "(True, None)", "(True, 0)", "(0, True)", "(True, True)",
    "(Ellipsis, True)", "(True, Ellipsis)", "(slice(1, None), True)", "(True, [0, 1])",
    "([0, 1], True)", "T.tensor(True)", "T.tensor(False)", "(None, T.tensor(True))",
    "(0, T.tensor(True))", "np.bool_(True)", "np.array(False)", "T.tensor(1, dtype=T.uint8)",
]
BOOL_BASES = {
    "contiguous": lambda x: x, "transposed": lambda x: x.t(),
    "expanded": lambda x: x[0].expand(4, 3), "sliced": lambda x: x[:, 1:],
}


@pytest.mark.parametrize("base", sorted(BOOL_BASES))
@pytest.mark.parametrize("key", BOOL_KEYS)
def test_bool_key_is_an_unsqueeze_then_an_index(base, key):
    def f(T, r):
        x0 = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        x = BOOL_BASES[base](x0)
        y = x[eval(key, {"T": T, "np": np})]
        r("y", y)
        r("stride", y.stride())
        r("chain", _chain(y))
        (y * T.arange(1.0, y.numel() + 1).reshape(y.shape)).sum().backward()
        r("grad", [x0.grad])
        with T.no_grad():
            z = BOOL_BASES[base](x0.detach())[eval(key, {"T": T, "np": np})]
        r("no_grad stride", z.stride())
    check_observations(f, where=key)
