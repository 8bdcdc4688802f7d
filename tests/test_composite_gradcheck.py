"""Non-elementwise ops (reductions, linear algebra, shape, indexing, softmax): forward against
NumPy, gradients against float64 finite differences, second derivatives where users need them."""
import numpy as np
import pytest
import scipy.special as sp

import jitgrad as jg
from jitgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)


def r(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    """Values with no ties (max/min/sort-like ops are not differentiable at ties)."""
    n = int(np.prod(shape)) if shape else 1
    return (RNG.permutation(n).astype(np.float64) / n * 4 - 2 + 0.01).reshape(shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


IDX = np.array([2, 0, 2, 1])
GATHER_IDX = np.array([[0, 2, 1, 0], [3, 3, 0, 1], [1, 0, 2, 2]])
MASK = RNG.random((3, 4)) > 0.5

# name -> (jitgrad fn, numpy reference, input arrays)
CASES = {
    "sum": (lambda x: x.sum(), np.sum, [r(3, 4)]),
    "sum_dim": (lambda x: x.sum(1), lambda x: x.sum(1), [r(3, 4)]),
    "sum_dims_keepdim": (lambda x: x.sum((0, 2), keepdim=True),
                         lambda x: x.sum((0, 2), keepdims=True), [r(2, 3, 4)]),
    "mean": (lambda x: x.mean(), np.mean, [r(3, 4)]),
    "mean_dim": (lambda x: x.mean(-1, keepdim=True), lambda x: x.mean(-1, keepdims=True),
                 [r(3, 4)]),
    "var": (lambda x: x.var(), lambda x: x.var(ddof=1), [r(3, 4)]),
    "var_dim_biased": (lambda x: x.var(0, unbiased=False), lambda x: x.var(0), [r(3, 4)]),
    "std": (lambda x: x.std(), lambda x: x.std(ddof=1), [r(3, 4)]),
    "std_dim": (lambda x: x.std(dim=1, keepdim=True), lambda x: x.std(1, ddof=1, keepdims=True),
                [r(3, 4)]),
    "prod": (lambda x: x.prod(), np.prod, [positive(2, 3)]),
    "prod_dim": (lambda x: x.prod(1), lambda x: x.prod(1), [r(3, 4)]),
    "prod_with_zero": (lambda x: x.prod(1), lambda x: x.prod(1),
                       [np.array([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0], [1.0, 2.0, -1.0]])]),
    "max": (lambda x: x.max(), np.max, [distinct(3, 4)]),
    "max_dim": (lambda x: x.max(dim=1).values, lambda x: x.max(1), [distinct(3, 4)]),
    "min_dim_keepdim": (lambda x: x.min(0, keepdim=True)[0], lambda x: x.min(0, keepdims=True),
                        [distinct(3, 4)]),
    "amax": (lambda x: x.amax(1), lambda x: x.max(1), [distinct(3, 4)]),
    "amin": (lambda x: x.amin((0, 1)), lambda x: x.min((0, 1)), [distinct(2, 3, 2)]),
    "norm": (lambda x: x.norm(), np.linalg.norm, [r(3, 4)]),
    "norm_dim": (lambda x: x.norm(dim=1), lambda x: np.linalg.norm(x, axis=1), [r(3, 4)]),
    "norm_p1": (lambda x: x.norm(p=1), lambda x: np.abs(x).sum(), [distinct(3, 4)]),
    "logsumexp": (lambda x: x.logsumexp(1), lambda x: sp.logsumexp(x, 1), [r(3, 4)]),
    "softmax": (lambda x: x.softmax(-1), lambda x: sp.softmax(x, -1), [r(3, 4)]),
    "softmax_dim0": (lambda x: jg.softmax(x, 0), lambda x: sp.softmax(x, 0), [r(3, 4)]),
    "log_softmax": (lambda x: x.log_softmax(1), lambda x: sp.log_softmax(x, 1), [r(3, 4)]),
    "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1), [r(3, 4)]),
    "mm": (jg.mm, np.matmul, [r(3, 4), r(4, 5)]),
    "matmul_1d_1d": (jg.matmul, np.matmul, [r(4), r(4)]),
    "matmul_1d_2d": (jg.matmul, np.matmul, [r(4), r(4, 5)]),
    "matmul_2d_1d": (jg.matmul, np.matmul, [r(3, 4), r(4)]),
    "matmul_batched": (jg.matmul, np.matmul, [r(2, 3, 4), r(2, 4, 5)]),
    "matmul_broadcast": (jg.matmul, np.matmul, [r(3, 1, 2, 4), r(2, 4, 3)]),
    "matmul_3d_2d": (jg.matmul, np.matmul, [r(2, 3, 4), r(4, 5)]),
    "matmul_1d_3d": (jg.matmul, np.matmul, [r(4), r(2, 4, 5)]),
    "matmul_3d_1d": (jg.matmul, np.matmul, [r(2, 3, 4), r(4)]),
    "bmm": (jg.bmm, np.matmul, [r(2, 3, 4), r(2, 4, 5)]),
    "mv": (jg.mv, np.matmul, [r(3, 4), r(4)]),
    "dot": (jg.dot, np.dot, [r(5), r(5)]),
    "outer": (jg.outer, np.outer, [r(3), r(4)]),
    "addmm": (jg.addmm, lambda b, x, y: b + x @ y, [r(5), r(3, 4), r(4, 5)]),
    "addmm_weight_transposed": (lambda b, x, w: jg.addmm(b, x, w.t()),
                                lambda b, x, w: b + x @ w.T, [r(5), r(3, 4), r(5, 4)]),
    "mm_transposed": (lambda x, w: x.mm(w.t()), lambda x, w: x @ w.T, [r(3, 4), r(5, 4)]),
    "addmm_scaled": (lambda b, x, y: jg.addmm(b, x, y, beta=0.5, alpha=2.0),
                     lambda b, x, y: 0.5 * b + 2.0 * (x @ y), [r(3, 5), r(3, 4), r(4, 5)]),
    "t": (lambda x: x.t() * 1, lambda x: x.T, [r(3, 4)]),
    "transpose": (lambda x: x.transpose(0, 2) * 1, lambda x: x.swapaxes(0, 2), [r(2, 3, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1) * 1, lambda x: x.transpose(2, 0, 1), [r(2, 3, 4)]),
    "reshape": (lambda x: x.reshape(4, -1) * 1, lambda x: x.reshape(4, -1), [r(2, 3, 2)]),
    "view_of_transpose_reshape": (lambda x: x.t().reshape(-1), lambda x: x.T.reshape(-1),
                                  [r(3, 4)]),
    "flatten": (lambda x: x.flatten(1) * 1, lambda x: x.reshape(2, -1), [r(2, 3, 4)]),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(1).squeeze() * 1,
                          lambda x: x.reshape(3, 4), [r(3, 1, 4)]),
    "expand": (lambda x: x.expand(2, 3, 4) * 1, lambda x: np.broadcast_to(x, (2, 3, 4)),
               [r(3, 1)]),
    "repeat": (lambda x: x.repeat(2, 3), lambda x: np.tile(x, (2, 3)), [r(2, 3)]),
    "flip": (lambda x: x.flip(1), lambda x: x[:, ::-1], [r(3, 4)]),
    "roll": (lambda x: x.roll((1, -3), (0, 1)), lambda x: np.roll(x, (1, -3), (0, 1)),
             [r(3, 4)]),
    "roll_flat": (lambda x: jg.roll(x, 5), lambda x: np.roll(x, 5), [r(3, 4)]),
    "cat": (lambda a, b: jg.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1),
            [r(3, 2), r(3, 4)]),
    "stack": (lambda a, b: jg.stack([a, b], 1), lambda a, b: np.stack([a, b], 1),
              [r(3, 4), r(3, 4)]),
    "split_first": (lambda x: x.split(2, 1)[0] * x.split(2, 1)[1],
                    lambda x: x[:, :2] * x[:, 2:], [r(3, 4)]),
    "chunk_last": (lambda x: x.chunk(3)[2], lambda x: x[4:], [r(6, 2)]),
    "unbind": (lambda x: x.unbind(1)[1] * 3, lambda x: x[:, 1] * 3, [r(3, 4)]),
    "getitem_int": (lambda x: x[1], lambda x: x[1], [r(3, 4)]),
    "getitem_slice_step": (lambda x: x[::2, 1:], lambda x: x[::2, 1:], [r(5, 4)]),
    "getitem_neg_int": (lambda x: x[-1, 2], lambda x: x[-1, 2], [r(3, 4)]),
    "getitem_none_ellipsis": (lambda x: x[None, ..., 1], lambda x: x[None, ..., 1], [r(3, 4)]),
    "getitem_int_tensor": (lambda x: x[jg.tensor(IDX)], lambda x: x[IDX], [r(3, 4)]),
    "getitem_list": (lambda x: x[:, [0, 3, 3]], lambda x: x[:, [0, 3, 3]], [r(3, 4)]),
    "getitem_mask": (lambda x: x[jg.tensor(MASK)], lambda x: x[MASK], [r(3, 4)]),
    "gather": (lambda x: x.gather(1, jg.tensor(GATHER_IDX)),
               lambda x: np.take_along_axis(x, GATHER_IDX, 1), [r(3, 4)]),
    "index_select": (lambda x: x.index_select(0, jg.tensor(IDX)), lambda x: x[IDX], [r(3, 4)]),
    "masked_fill": (lambda x: x.masked_fill(jg.tensor(MASK), 0.5),
                    lambda x: np.where(MASK, 0.5, x), [r(3, 4)]),
    "scatter_add": (lambda x, s: x.scatter_add(1, jg.tensor(GATHER_IDX[:, :2]), s),
                    None, [r(3, 4), r(3, 2)]),
    "index_add": (lambda x, s: x.index_add(0, jg.tensor(IDX), s), None, [r(3, 4), r(4, 4)]),
    "where_broadcast": (lambda a, b: jg.where(jg.tensor(MASK), a, b),
                        lambda a, b: np.where(MASK, a, b), [r(3, 4), r(4)]),
    "clamp_tensor_bounds": (lambda x, lo: jg.clamp(x, min=lo), lambda x, lo: np.maximum(x, lo),
                            [distinct(3, 4), distinct(4) / 10]),
}


def _np_scatter_add(x, s):
    out = x.copy()
    for i in range(3):
        for j in range(2):
            out[i, GATHER_IDX[i, j]] += s[i, j]
    return out


def _np_index_add(x, s):
    out = x.copy()
    for k, i in enumerate(IDX):
        out[i] += s[k]
    return out


REFS = {"scatter_add": _np_scatter_add, "index_add": _np_index_add}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_matches_numpy(name):
    fn, ref, arrays = CASES[name]
    ref = ref or REFS[name]
    out = fn(*[jg.tensor(a) for a in arrays])
    expected = np.asarray(ref(*arrays))
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6 if "float32" in name else 1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    fn, _, arrays = CASES[name]
    tensors = [jg.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(fn, tensors)


SECOND_ORDER = ["sum_dim", "mean", "var", "std", "prod", "max", "norm", "logsumexp", "softmax",
                "log_softmax", "mm", "matmul_batched", "matmul_1d_2d", "addmm", "permute",
                "expand", "cat", "getitem_slice_step", "getitem_int_tensor", "gather",
                "masked_fill", "index_select", "cumsum"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivative_matches_finite_differences(name):
    fn, _, arrays = CASES[name]
    tensors = [jg.tensor(a, requires_grad=True) for a in arrays]
    assert gradgradcheck(fn, tensors, atol=1e-4)


def test_setitem_records_copy_slices():
    x = jg.tensor([1.0, 2.0], dtype=jg.float64, requires_grad=True)

    def f(x):
        y = jg.zeros(3, dtype=jg.float64)
        y[0] = x[0] ** 2
        y[1] = x[0] ** 2 + 5 * x[1] ** 2
        y[2] = 3 * x[1]
        return y
    assert type(f(x).grad_fn).__name__ == "CopySlices"
    assert gradcheck(f, [x])


def test_setitem_overwrite_blocks_gradient_to_old_values():
    x = jg.tensor(r(4), requires_grad=True)

    def f(x):
        y = x * 2
        y[1:3] = 0.0
        return y
    assert gradcheck(f, [x])
    g = jg.autograd.grad(f(x).sum(), x)[0].numpy()
    np.testing.assert_array_equal(g, [2.0, 0.0, 0.0, 2.0])


def test_repeated_index_accumulates():
    x = jg.tensor(r(3), requires_grad=True)
    x[jg.tensor([0, 0, 2])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 1.0])


def test_max_ties_share_the_gradient_like_pytorch():
    x = jg.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5])
    y = jg.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    y.max(dim=1).values.sum().backward()  # max(dim) picks one index (the first, like torch)
    np.testing.assert_array_equal(y.grad.numpy(), [[0.0, 1.0, 0.0]])


def test_softmax_is_stable_for_large_inputs():
    x = jg.tensor([[1000.0, 1001.0, 1002.0]])
    np.testing.assert_allclose(x.softmax(1).numpy(), sp.softmax([[0.0, 1.0, 2.0]], 1),
                               rtol=1e-6)
    assert np.isfinite(x.log_softmax(1).numpy()).all()


def test_dtype_round_trip_casts_the_gradient_back():
    x = jg.tensor(r(3), requires_grad=True)
    y = x.float()
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y.double() * 2).sum().backward()
    assert x.grad.dtype is jg.float64
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_inplace_on_an_indexed_view_is_recorded_on_the_base():
    x = jg.tensor(r(4), requires_grad=True)

    def f(x):
        y = x * 2
        y[1:3].mul_(x[:2])  # in place on a view of a non-leaf: CopySlices on y
        return y
    assert type(f(x).grad_fn).__name__ == "CopySlices"
    assert gradcheck(f, [x])


def test_write_into_a_view_of_a_plain_tensor_reaches_the_base_graph():
    x = jg.tensor(r(3), requires_grad=True)

    def f(x):
        out = jg.zeros(2, 3, dtype=jg.float64)
        out[0][1] = x[0] * 5
        out[1] = x * x
        return out
    assert gradcheck(f, [x])


def test_inplace_on_a_reshaped_view_is_recorded_on_the_base():
    x = jg.tensor([1.0, 2.0, 3.0, 4.0], dtype=jg.float64, requires_grad=True)
    y = x * 1
    y.reshape(2, 2)[1].mul_(3)  # the second half of y, tripled in place
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 9.0, 12.0])
    (y * y).sum().backward()  # d/dx of x0^2 + x1^2 + 9 x2^2 + 9 x3^2
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 54.0, 72.0])
