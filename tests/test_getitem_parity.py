"""Reading by index (``x[key]``): values, views vs copies, grad_fn names, gradients, warnings
and errors, jitgrad against PyTorch, for every kind of key."""

import pytest
from _parity import check_snippet, tensor_description

torch = pytest.importorskip("torch")


def _describe(v, lib):
    if isinstance(v, lib.Tensor):
        return tensor_description(v)
    if isinstance(v, (tuple, list)):
        return tuple(_describe(x, lib) for x in v)
    return (type(v).__name__, v)


def _check(code):
    check_snippet(code, _describe)


KEYS = [
    "0", "-1", "1", "2", "-3", "5", "-6", "slice(None)", "slice(1, None)", "slice(None, None, 2)",
    "slice(None, None, -1)", "slice(None, None, 0)", "slice(5, 1)", "slice(-100, 100)",
    "slice(None, 2.0)", "slice(torch.tensor(1), None)", "None", "Ellipsis", "True", "False",
    "(0, 1)", "(0, 1, 2)", "(0, 1, 2, 0)", "(0, slice(None), 1)", "(Ellipsis, 0)",
    "(Ellipsis, None)", "(None, Ellipsis, None)", "(0, None, 1)", "(slice(None), None)",
    "(0, Ellipsis, 0)", "(None,)", "()", "(slice(None), slice(None))", "(slice(0, 10), 1)",
    "(slice(0, 2), slice(0, 3))", "(slice(-2, None), 1)",
    "torch.tensor(1)", "torch.tensor(-1)", "torch.tensor(5)", "torch.tensor([0, 1])",
    "torch.tensor([[0, 1], [1, 0]])", "torch.tensor([0, 1], dtype=torch.int32)",
    "torch.tensor([0, 1], dtype=torch.int16)", "torch.tensor([0, 1], dtype=torch.int8)",
    "torch.tensor([1, 0], dtype=torch.uint8)", "torch.tensor([0, 1], dtype=torch.float32)",
    "torch.tensor(1.)", "torch.tensor(True)", "torch.tensor(False)",
    "torch.tensor([True, False])", "torch.tensor([[True, False, True], [False, False, True]])",
    "torch.ones(2, 3, 4, dtype=torch.bool)", "torch.tensor([True, False, True])",
    "torch.tensor([0, 5])", "torch.tensor([-3, 1])", "torch.tensor([], dtype=torch.int64)",
    "torch.zeros(0, 2, dtype=torch.int64)", "torch.tensor([[True, False, True]])",
    "torch.tensor([True, False, True, False, True, True])",
    "[0, 1]", "[[0, 1], [1, 0]]", "[0]", "[]", "[True, False]", "(0, [0, 2])",
    "([0, 1], [1, 2])", "([0, 1], slice(None), [1, 2])", "(slice(None), [0, 1], [1, 2])",
    "([0, 1], 1, [1, 2])", "(0, slice(None), [1, 2])", "([0, 1], slice(None), 0)",
    "(torch.tensor([0, 1]), slice(1, 3), torch.tensor([[0], [1]]))",
    "(None, [0, 1], None, [1, 2])", "([[0, 1]], Ellipsis, [[1], [2]])",
    "(slice(None), [[0, 1], [1, 2]])", "(torch.tensor([True, False]), 0)",
    "(torch.tensor([True, False]), [0, 2])", "([0, 1], torch.tensor([True, False, True]))",
    "(0, torch.tensor([True, False, True]))", "(slice(1, None), [0, 1], 0)",
    "(torch.tensor([True, False]), slice(None), torch.tensor([1, 2]))",
    "(slice(None), torch.tensor([True, False, True]), slice(None))",
    "(Ellipsis, torch.tensor([True, False, True, False]))", "(0, 0, torch.tensor(True))",
    "(torch.tensor([[True, False, True]]), slice(None))", "1.5", "{0}", "(0, 1, 2, 3, 4)",
    "np.array([0, 1])", "np.array([True, False])", "np.int64(1)", "np.bool_(True)",
    "(0, np.array(1))", "[[0, 1], [1, 2]]", "([0, 1], [1, 2, 0])", "[0, slice(None)]",
    "[0, None]", "(0, [[1]])", "[torch.tensor([0, 1]), torch.tensor([1, 2])]",
    "(torch.tensor(0), torch.tensor(1))", "(slice(None), torch.tensor(1))",
    "(slice(None), torch.tensor([1]))", "torch.tensor([[[0]]])", "(0, [0, 5])", "([0, 1], 5)",
    "(slice(None), slice(None), [0, 9])", "([0, 5], slice(1, None), [0, 3])",
]
BASES = {"3d": "x = torch.arange(24.).reshape(2, 3, 4).requires_grad_()\n",
         "1d": "x = torch.arange(5.).requires_grad_()\n"}


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("key", KEYS)
def test_getitem_value_view_and_node(base, key):
    _check(BASES[base] + f"y = x[{key}]\n(y, y._version, y._base is x, "
                         "y.data_ptr() == x.data_ptr() if y.numel() else None)")


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("key", KEYS)
def test_getitem_gradient(base, key):
    _check(BASES[base] + f"y = x[{key}]\n(y * 1.5)"
           ".sum().backward()\nx.grad")


V = "x = torch.arange(5.).requires_grad_()\n"
M = "x = torch.ones(3, 4, requires_grad=True)\n"
SCENARIOS = [
    V + "y = x[[0, 0, 1, 0]]\n(y * torch.arange(4.)).sum().backward()\nx.grad",
    V + "y = x[torch.tensor([[0, 0], [4, 4]])]\ny.sum().backward()\nx.grad",
    "x = torch.arange(24.).reshape(2, 3, 4).requires_grad_()\ny = x[[0, 0], :, [1, 1]]\n"
    "y.sum().backward()\nx.grad",
    # a view made under no_grad of a tensor requiring grad: requires_grad (its base's), no
    # grad_fn, no accumulator (PyTorch's DifferentiableViewMeta)
    V + "with torch.no_grad():\n    y = x[0:2]\n(y.requires_grad, y.is_leaf, y.grad_fn, "
    "type(y[0].grad_fn).__name__)",
    V + "with torch.no_grad():\n    y = x[[0, 1]]\n(y.requires_grad, y.is_leaf, y.grad_fn)",
    V + "y = x * 2\nwith torch.no_grad():\n    v = y[0:2]\n(v.requires_grad, v.is_leaf, "
    "v.grad_fn, type((v * 2).grad_fn).__name__, (v * 2).grad_fn.next_functions)",
    V + "y = x * 2\nwith torch.no_grad():\n    v = y[0:2]\n(v * 3).sum().backward()\n(x.grad, v.grad)",
    V + "with torch.no_grad():\n    v = x[0:2]\nv.sum().backward()\n(x.grad, v.grad)",
    V + "with torch.no_grad():\n    v = x.view(5)\n(v.requires_grad, v.is_leaf, v.grad_fn)",
    V + "with torch.no_grad():\n    v = x[1:]\nw = v[1:]\n(w.requires_grad, "
    "type(w.grad_fn).__name__, w.is_leaf)",
    V + "with torch.no_grad():\n    v = x[1:]\nv.requires_grad_(False)\nv.requires_grad",
    V + "with torch.no_grad():\n    v = x[1:]\nv.requires_grad = False\nv.requires_grad",
    V + "with torch.no_grad():\n    v = x[1:]\nv.retain_grad()\nv.retains_grad",
    V + "with torch.no_grad():\n    v = x[1:]\nv.requires_grad_()\n(v * 3).sum().backward()\n"
    "(x.grad, v.grad)",
    V + "with torch.no_grad():\n    v = x[1:]\nv",
    V + "with torch.no_grad():\n    v = x[1:]\ntorch.autograd.grad((v*2).sum(), x)",
    V + "with torch.no_grad():\n    v = x[1:]\nv.detach().requires_grad",
    V + "with torch.no_grad():\n    v = x[1:]\nv.mul_(2)",
    V + "with torch.no_grad():\n    v = x[1:]\nv[0] = 3.",
    V + "with torch.no_grad():\n    v = x[1:]\nv.detach_()",
    "x = torch.ones(3)\ny = x[0]\ny.add_(1)\n(x, x._version)",
    "x = torch.ones(3)\ny = x[[0]]\ny.add_(1)\n(x, x._version, y._version)",
    "x = torch.ones(3)\ny = x[torch.tensor(0)]\ny.add_(1)\n(x, x._version)",
    "x = torch.ones(3)\ny = x[x > 0]\ny.add_(1)\n(x, y._version)",
    "x = torch.ones(3)\ny = x[None]\ny.add_(1)\n(x, x._version)",
    "x = torch.ones(3)\ny = x[...]\ny.add_(1)\n(x, x._version, y._base is x)",
    "x = torch.ones(3)\ny = x[True]\ny.add_(1)\n(x, x._version, y._base is x)",
    "x = torch.ones((), requires_grad=True)\ntype(x[None].grad_fn).__name__",
    "x = torch.ones((), requires_grad=True)\ntype(x[...].grad_fn).__name__",
    "x = torch.ones((), requires_grad=True)\nx[True]", "x = torch.ones(())\nx[False]",
    "x = torch.ones(())\nx[0]", "x = torch.ones(())\nx[[0]]", "x = torch.ones(())\nx[:]",
    "x = torch.ones(())\nx[torch.tensor(True)]", "x = torch.ones(())\nx[None, None]",
    M + "type(x[0, 1:3].grad_fn.next_functions[0][0]).__name__",
    M + "type(x[None, 1].grad_fn.next_functions[0][0]).__name__",
    M + "type(x[1:, [0, 1]].grad_fn.next_functions[0][0]).__name__",
    M + "type(x[0, [0, 1]].grad_fn.next_functions[0][0]).__name__",
    M + "type(x[:, :].grad_fn).__name__", M + "type(x[0:3].grad_fn).__name__",
    M + "type(x[0:3, 0:4].grad_fn).__name__", M + "type(x[0, :].grad_fn).__name__",
    M + "type(x[0:10, 1].grad_fn).__name__", M + "type(x[..., 1].grad_fn).__name__",
    M + "type(x[:].grad_fn).__name__", M + "type(x[...].grad_fn).__name__",
    "x = torch.arange(10)\nx[torch.tensor([1, 2], dtype=torch.uint8)]",
    "x = torch.arange(12).reshape(3, 4)\nx[[[0]], [1, 2]]",
    "x = torch.ones(3, 4)\nx[torch.tensor([[True]])]",
]


@pytest.mark.parametrize("code", SCENARIOS)
def test_getitem_scenarios(code):
    _check(code)
