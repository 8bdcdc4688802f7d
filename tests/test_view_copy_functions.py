"""torch.*_copy (view copies), unsafe_split/chunk/split_with_sizes, narrow_copy and
as_strided_scatter (jitgrad/ops/view_copies.py, ops/view_scatter.py) against PyTorch: values
(exact), dtypes, grad_fn names (TBackward0_copy & co.), fresh contiguous memory, gradients and
errors."""
import numpy as np
import pytest

from tests._parity import agree, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

R = np.random.default_rng(11)
X = R.standard_normal((3, 4))
X1 = R.standard_normal((1, 4, 1))

CASES = {
    "alias_copy": lambda T, x: T.alias_copy(x),
    "as_strided_copy": lambda T, x: T.as_strided_copy(x, (2, 2), (1, 2), 1),
    "diagonal_copy": lambda T, x: T.diagonal_copy(x, 1),
    "expand_copy": lambda T, x: T.expand_copy(x[:1], (2, 3, 4)),
    "narrow_copy": lambda T, x: T.narrow_copy(x, 1, -3, 2),
    "narrow_copy_method": lambda T, x: x.narrow_copy(0, 1, 2),
    "permute_copy": lambda T, x: T.permute_copy(x, (1, 0)),
    "select_copy": lambda T, x: T.select_copy(x, 1, -1),
    "slice_copy": lambda T, x: T.slice_copy(x, 1, 0, 3, 2),
    "slice_copy_default": lambda T, x: T.slice_copy(x),
    "split_copy": lambda T, x: T.split_copy(x, 3, 1),
    "split_with_sizes_copy": lambda T, x: T.split_with_sizes_copy(x, [1, 3], 1),
    "squeeze_copy": lambda T, x: T.squeeze_copy(x.reshape(1, 3, 1, 4)),
    "squeeze_copy_dim": lambda T, x: T.squeeze_copy(x.reshape(1, 3, 1, 4), 2),
    "squeeze_copy_dims": lambda T, x: T.squeeze_copy(x.reshape(1, 3, 1, 4), (0, 2)),
    "t_copy": lambda T, x: T.t_copy(x),
    "transpose_copy": lambda T, x: T.transpose_copy(x, 0, -1),
    "unbind_copy": lambda T, x: T.unbind_copy(x, 1),
    "unfold_copy": lambda T, x: T.unfold_copy(x, 1, 2, 1),
    "unsqueeze_copy": lambda T, x: T.unsqueeze_copy(x, -1),
    "view_copy": lambda T, x: T.view_copy(x, (2, 6)),
    "view_copy_dtype": lambda T, x: T.view_copy(x, T.int64),
    "unsafe_chunk": lambda T, x: T.unsafe_chunk(x, 3, 1),
    "unsafe_chunk_method": lambda T, x: x.unsafe_chunk(2),
    "unsafe_split": lambda T, x: T.unsafe_split(x, 3, 1),
    "unsafe_split_method": lambda T, x: x.unsafe_split(2, 0),
    "unsafe_split_with_sizes": lambda T, x: T.unsafe_split_with_sizes(x, [2, 2], 1),
    "unsafe_split_with_sizes_method": lambda T, x: x.unsafe_split_with_sizes([1, 2]),
}


SCATTERS = {
    "as_strided_scatter": lambda T, x, s: T.as_strided_scatter(x, s, (2, 2), (1, 2), 1),
    "as_strided_scatter_method": lambda T, x, s: x.as_strided_scatter(s.reshape(4)[:2] * 2,
                                                                      (2,), (3,)),
    "as_strided_scatter_offset_view": lambda T, x, s: T.as_strided_scatter(x[1:], s[0], (2,),
                                                                           (3,), 5),
}
CASES["as_strided_scatter"] = lambda T, x: SCATTERS["as_strided_scatter"](T, x, x[:2, :2] * 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_nodes_and_gradients(name):
    # values exact; expand_copy's gradient is a sum (its order may differ in the last bit)
    compare(CASES[name], [X], grad=name != "as_strided_scatter", rtol=1e-15, atol=0)


def _fd_grad(fn, arrays, k, w, eps=1e-6):
    """Central differences of sum(fn(*arrays) * w) with respect to arrays[k] (float64)."""
    g = np.zeros_like(arrays[k])
    for i in np.ndindex(g.shape):
        hi, lo = [a.copy() for a in arrays], [a.copy() for a in arrays]
        hi[k][i] += eps
        lo[k][i] -= eps
        g[i] = ((fn(*hi) - fn(*lo)) * w).sum() / (2 * eps)
    return g


@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_as_strided_scatter_gradients(name):
    """Values and node as PyTorch's; gradients against finite differences, and src's against
    PyTorch's where PyTorch computes one: PyTorch 2.13's as_strided_scatter_backward gives the
    input the scattered slice of grad (those elements were overwritten: their derivative is
    0), and fails for an input with a storage offset."""
    import jitgrad
    fn = SCATTERS[name]
    s = X[:2, :2].copy()
    compare(lambda T, x, src: fn(T, x, src), [X, s], rtol=0, atol=0)
    w = R.standard_normal(tuple(fn(jitgrad, jitgrad.tensor(X), jitgrad.tensor(s)).shape))
    x, src = jitgrad.tensor(X, requires_grad=True), jitgrad.tensor(s, requires_grad=True)
    (fn(jitgrad, x, src) * jitgrad.tensor(w)).sum().backward()
    plain = lambda a, b: fn(jitgrad, jitgrad.tensor(a), jitgrad.tensor(b)).numpy()  # noqa: E731
    for k, t in enumerate((x, src)):
        np.testing.assert_allclose(t.grad.numpy(), _fd_grad(plain, [X, s], k, w), rtol=1e-6,
                                   atol=1e-8)
    if "offset" not in name:
        xt, st = torch.tensor(X, requires_grad=True), torch.tensor(s, requires_grad=True)
        (fn(torch, xt, st) * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(src.grad.numpy(), st.grad.numpy())


@pytest.mark.parametrize("view", ["x.t()", "x[:, ::2]", "x[1:].t()", "x[:1].expand(3, 4)"])
def test_as_strided_scatter_positions_are_storage_positions(view):
    """ATen copies the whole storage (clone_preserve_strides): the result keeps the input's
    strides and the scattered positions are storage positions, inside the view or not."""
    def fn(T):
        x = T.tensor(X)  # noqa: F841 - read by eval(view)
        v = eval(view)
        out = T.as_strided_scatter(v, T.tensor([100.0, 200.0], dtype=T.float64), (2,), (4,), 1)
        return out, out.stride()
    agree(fn)


def test_as_strided_scatter_needs_contiguous_input_with_grad():
    def fn(T, x):
        return T.as_strided_scatter(x.t(), x[0, :2], (2,), (4,))
    with pytest.raises(RuntimeError, match="only supported for contiguous inputs"):
        fn(torch, torch.tensor(X, requires_grad=True))
    import jitgrad
    with pytest.raises(RuntimeError, match="only supported for contiguous inputs"):
        fn(jitgrad, jitgrad.tensor(X, requires_grad=True))


def test_detach_copy_not_implemented_node():
    def fn(T):
        x = T.tensor(X, requires_grad=True)
        y = T.detach_copy(x)
        return y, y.requires_grad, type(y.grad_fn).__name__, y.is_contiguous()
    agree(fn)
    raises_like(lambda T, x: T.detach_copy(x.requires_grad_()).sum().backward(), X)


def test_integer_inputs_keep_dtype():
    xi = (X * 10).astype(np.int64)
    for name in ("t_copy", "select_copy", "unbind_copy", "unsafe_split", "narrow_copy",
                 "as_strided_scatter"):
        compare(CASES[name], [xi], rtol=0, atol=0)


def test_double_backward_through_copy():
    def fn(T, x):
        y = T.t_copy(x * x)
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        return g, g.grad_fn is not None
    compare(fn, [X], grad=True)


@pytest.mark.parametrize("call", [
    "T.t_copy(x.reshape(1, 3, 4))", "T.select_copy(x, 0, 5)", "T.slice_copy(x, 0, 0, 2, 0)",
    "T.split_copy(x, -1)", "T.split_with_sizes_copy(x, [1, 1], 1)", "T.narrow_copy(x, 1, 3, 2)",
    "T.narrow_copy(x, 2, 0, 1)", "T.narrow_copy(x, 1, -5, 2)",
    "T.narrow_copy(x, 1, 1, -1)", "T.view_copy(x, (5, 2))", "T.expand_copy(x, (2, 3))",
    "T.unsafe_split(x, -1)", "T.unsafe_chunk(x, 0)", "T.unsafe_split_with_sizes(x, [2, 2])",
    "T.permute_copy(x, (0, 0))", "T.unsqueeze_copy(x, 3)", "T.transpose_copy(x, 0, 2)",
    "T.as_strided_scatter(x, x[:2, :2], (2, 3), (1, 2))", "T.t_copy(1)", "T.values_copy(x)",
])
def test_errors(call):
    raises_like(lambda T, x: eval(call), X)
