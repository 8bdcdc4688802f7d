"""``x[key]`` for the keys ``index_getitem`` takes a shortcut on (Python ints, int slices, None,
one Ellipsis) and for keys next to them that must take the general path: values, shape,
strides, storage offset, version-counter sharing, grad_fn chain, gradients, no_grad views,
in-place writes through the view, and errors (type and message), jitgrad against PyTorch."""

import pytest
from _parity import check_snippet, describe_with_layout

torch = pytest.importorskip("torch")

E = "Ellipsis"
FAST_KEYS = [
    "0", "3", "-1", "-4", "slice(1, 3)", "slice(None)", "slice(None, None, 2)", "slice(-2, None)",
    "slice(0, 100)", "slice(5, 1)", "slice(2, 2)", "None", E, "()", "(1,)", "(None,)",
    "(slice(None), 3)", "(slice(None), -1)", "(2, 3)", "(-1, -1)", "(1, slice(1, 4))",
    "(slice(1, 3), 2)", "(slice(1, 3), slice(0, 5, 2))", "(slice(0, 100), 2)",
    "(slice(0, 4), slice(0, 5))", f"({E}, 0)", f"({E}, -1)", f"(0, {E})", f"({E}, None)",
    f"(None, {E})", f"(None, {E}, None)", f"(slice(None), {E}, 1)", f"({E}, slice(1, 3))",
    "(None, 0)", "(0, None)", "(1, None, 2)", "(None, None)", "(slice(None), None)",
    "(slice(1, 3), None)", "(None, slice(1, 3), None, 2)", "(slice(1, 3), None, slice(0, 5, 2))",
    f"(0, {E}, None)", f"({E}, None, 1)", "(None, slice(0, 0), 1)", "(0, slice(2, 2))",
    f"({E}, slice(3, 1))",
]
# next to the fast keys, but each takes the general path (and its errors)
GENERAL_KEYS = [
    "True", "False", "(True, 0)", "(0, True)", "1.5", "(0, 1.5)", "np.int64(1)", "(np.int64(1), 0)",
    "torch.tensor(1)", "(slice(None), torch.tensor(2))", "[0, 1]", "(0, [1, 2])",
    "slice(None, None, -1)", "slice(None, None, 0)", "slice(1.0, 2)", "slice(np.int64(1), 3)",
    f"({E}, {E})", f"({E}, 0, {E})", "(0, 1, 2)",
]
OUT_OF_RANGE_KEYS = [
    "4", "-5", "(0, 5)", "(slice(None), -6)", "(None, 0, 5)", "(None, 7)", "(0, None, 5)",
    "(None, None, 1, 9)", f"(None, {E}, 5)", f"({E}, None, 5)", f"({E}, 9)", "(None, slice(1, 2), 5)",
    "(True, 0, 7)", "(None, [0], 7)", "(torch.tensor(0), None, 7)", f"(0, {E}, None, 5)",
]
BASES = {
    "2d": "x = torch.arange(20.).reshape(4, 5).clone().requires_grad_()\nleaf = x\n",
    "2d_nograd": "x = torch.arange(20.).reshape(4, 5)\n",
    "transposed": "x = torch.arange(20.).reshape(5, 4).t().requires_grad_()\nleaf = x\n",
    "view": "b = torch.arange(30.).reshape(6, 5).clone().requires_grad_()\nx = b[1:5]\nleaf = b\n",
    "view_nograd": "b = torch.arange(30.).reshape(6, 5)\nx = b[1:5]\n",
    "3d": "x = torch.arange(60.).reshape(4, 5, 3).clone().requires_grad_()\nleaf = x\n",
    "1d": "x = torch.arange(5.).requires_grad_()\nleaf = x\n",
    "0d": "x = torch.tensor(3.).requires_grad_()\nleaf = x\n",
    "empty": "x = torch.zeros(0, 5).requires_grad_()\nleaf = x\n",
    "expanded": "x = torch.arange(5.).expand(4, 5)\n",
    "unit_dims": "x = torch.arange(20.).reshape(4, 1, 5).clone().requires_grad_()\nleaf = x\n",
    "strided": "b = torch.arange(40.).reshape(4, 10).clone().requires_grad_()\nx = b[:, 1::2]\n"
               "leaf = b\n",
}


def _describe(v, lib):
    if isinstance(v, (tuple, list)):
        return [_describe(u, lib) for u in v]
    return describe_with_layout(v, lib)


def _check(code):
    check_snippet(PRELUDE + code, _describe)


# defines, in each snippet, _chain(y): the grad_fn names from y back to the leaf (first edge
# at each step)
PRELUDE = ("def _chain(y):\n    names, fn = [], y.grad_fn\n    while fn is not None:\n"
           "        names.append(type(fn).__name__)\n"
           "        fn = fn.next_functions[0][0] if fn.next_functions else None\n"
           "    return names\n")


def _view_snippet(base, key, chain):
    # y's value and layout, whether it aliases x (a write into x shows in y and bumps the
    # version both share), its node chain (read before the write: PyTorch then regenerates a
    # view's grad_fn as AsStridedBackward0)
    bump = "" if base == "expanded" else "with torch.no_grad():\n    x.detach()[...] = -1.\n"
    return (BASES[base] + f"y = x[{key}]\nchain = _chain(y){chain}\nleaf = y.is_leaf\n"
            "v0 = y._version\ny0 = y.clone()\n" + bump + "(y0, y.detach(), y._version - v0, "
            "x._version, y._base is x or y._base is x._base, leaf, chain)")


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("key", FAST_KEYS + OUT_OF_RANGE_KEYS)
def test_view_layout_version_and_nodes(base, key):
    _check(_view_snippet(base, key, ""))


@pytest.mark.parametrize("base", ["2d", "2d_nograd", "transposed", "view", "3d", "expanded"])
@pytest.mark.parametrize("key", GENERAL_KEYS)
def test_general_path_keys_beside_the_fast_ones(base, key):
    # the whole node chain: a bool is an unsqueeze then an index on the new unit dim
    # (x[True] is IndexBackward0 <- UnsqueezeBackward0, with that view's strides)
    _check(_view_snippet(base, key, ""))


@pytest.mark.parametrize("base", ["2d", "transposed", "view", "3d", "1d", "0d", "empty",
                                  "unit_dims", "strided"])
@pytest.mark.parametrize("key", FAST_KEYS + [k for k in GENERAL_KEYS if "1.5" not in k])
def test_gradient(base, key):
    _check(BASES[base] + f"y = x[{key}]\nw = torch.arange(1., y.numel() + 1).reshape(y.shape)\n"
           "(y * w).sum().backward()\nleaf.grad")


@pytest.mark.parametrize("base", ["2d", "view", "3d", "0d", "unit_dims"])
@pytest.mark.parametrize("key", FAST_KEYS)
def test_no_grad_view_of_a_tensor_requiring_grad(base, key):
    _check(BASES[base] + f"with torch.no_grad():\n    y = x[{key}]\n"
           "(y, y.requires_grad, y.grad_fn is None, y.is_leaf, y._base is not None)")


@pytest.mark.parametrize("base", ["2d_nograd", "view_nograd"])
@pytest.mark.parametrize("key", ["(1, slice(1, 4))", "(2, 3)", f"({E}, 1)", "(None, 0)",
                                 "(slice(1, 3), None, slice(0, 5, 2))", "(0, slice(2, 2))"])
def test_inplace_write_through_a_view_of_a_tensor_without_grad(base, key):
    # the view is written in place with a value requiring grad: recorded on the base
    # (CopySlices), so x and the leaf w get gradients as in PyTorch
    _check(BASES[base] + f"y = x[{key}]\nw = torch.full(y.shape, 2., requires_grad=True)\n"
           "y.mul_(w)\nroot = x._base if x._base is not None else x\n"
           "(root * torch.arange(1., root.numel() + 1).reshape(root.shape)).sum().backward()\n"
           "(x, y, _chain(y), _chain(x), w.grad)")


@pytest.mark.parametrize("key", ["(2, 3)", "(1, None, 2)", "(None, 0)", f"({E}, 1)"])
def test_double_backward_through_the_key(key):
    _check("x = torch.arange(20.).reshape(4, 5).requires_grad_()\n"
           f"y = (x ** 2)[{key}]\ng, = torch.autograd.grad(y.sum(), x, create_graph=True)\n"
           "g.sum().backward()\n(g, x.grad)")


@pytest.mark.parametrize("code", [
    # an out-of-range int after None names its position in the key, as ATen's applySelect does
    "torch.zeros(2, 3)[None, 0, 5]", "torch.zeros(2, 3)[0, None, None, 9]",
    "torch.zeros(2, 3, 4)[..., 9]", "torch.zeros(2, 3, 4)[None, ..., None, 9]",
    "torch.zeros(2, 3)[True, 0, 7]", "torch.zeros(2, 3)[None, 5]",
    "x = torch.zeros(2, 3)\nx[None, 0, 5] = 1.", "torch.zeros(())[None, 0]",
    "torch.zeros(())[0]", "torch.zeros(())[:]", "torch.zeros(2, 3)[0, 0, 0]",
])
def test_errors(code):
    _check(code if "\n" in code else "_ = 0\n" + code)

