"""In-place ops against PyTorch: leaves, non-leaves and views of every kind (indexing, view/
reshape, transpose/permute, unsqueeze, expand, detach, split/chunk/unbind, .data), with grad and
under no_grad. Each scenario runs on jitgrad and on torch; the observations (values, dtype,
grad_fn name, ``_version``, requires_grad/is_leaf of base and view, gradients, and the error
type + text) must agree."""

import numpy as np
import pytest
from _parity import check_observations

import jitgrad

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------------- the matrix

OPS = {
    "add_t": lambda T, v: v.add_(T.ones(v.shape, dtype=v.dtype) * 0.5),
    "add_alpha": lambda T, v: v.add_(T.ones(v.shape, dtype=v.dtype), alpha=3),
    "mul_": lambda T, v: v.mul_(3),
    "div_": lambda T, v: v.div_(4),
    "pow_": lambda T, v: v.pow_(2),
    "zero_": lambda T, v: v.zero_(),
    "fill_": lambda T, v: v.fill_(7),
    "copy_": lambda T, v: v.copy_(T.full(v.shape, 2.5, dtype=v.dtype)),
    "clamp_": lambda T, v: v.clamp_(2, 5),
    "relu_": lambda T, v: v.sub_(4).relu_(),
    "exp_": lambda T, v: v.exp_(),
    "masked_fill_": lambda T, v: v.masked_fill_(v > 3, 0.5),
    "iadd": lambda T, v: v.__iadd__(2),
}

VIEWS = {
    "self": lambda y: y,
    "select": lambda y: y[1],
    "slice": lambda y: y[:, 1:],
    "view": lambda y: y.view(6),
    "reshape": lambda y: y.reshape(3, 2),
    "t": lambda y: y.t(),
    "transpose": lambda y: y.transpose(0, 1),
    "permute": lambda y: y.permute(1, 0),
    "unsqueeze": lambda y: y.unsqueeze(0),
    "narrow": lambda y: y.narrow(1, 0, 2),
    "expand_overlap": lambda y: y.unsqueeze(0).expand(2, 2, 3),
    "expand_lead1": lambda y: y.expand(1, 2, 3),
    "detach": lambda y: y.detach(),
    "detach_slice": lambda y: y.detach()[0],
    "data": lambda y: y.data,
    "split": lambda y: y.split(1)[1],
    "chunk": lambda y: y.chunk(3, 1)[0],
    "unbind": lambda y: y.unbind(1)[2],
    "split_slice": lambda y: y.split(1)[0][:, 1:],
}

# PyTorch raises these only at backward (its CopySlices copies into the overlapping view)
KNOWN = {("nonleaf", "expand_overlap", op, "grad") for op in ("zero_", "fill_", "masked_fill_")}


def _matrix_case(base, view, op, mode):
    def f(T, r):
        x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=(base != "leaf"))
        y = x * 2 if base == "nonleaf" else x
        if mode == "nograd":
            with T.no_grad():
                v = VIEWS[view](y)
                out = OPS[op](T, v)
        elif mode == "view_nograd":
            with T.no_grad():
                v = VIEWS[view](y)
            out = OPS[op](T, v)
        else:
            v = VIEWS[view](y)
            out = OPS[op](T, v)
        r("returns self", out is v)
        r("base", y)
        r("view", v)
        if y.requires_grad:
            w = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
            (g,) = T.autograd.grad((y * w).sum(), x, allow_unused=True)
            r("grad", g)
    return f


@pytest.mark.parametrize("base", ["leaf", "leaf_rg", "nonleaf"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_inplace_matrix_matches_torch(base, view):
    for op in OPS:
        for mode in ("grad", "nograd", "view_nograd"):
            if (base, view, op, mode) in KNOWN:
                continue
            check_observations(_matrix_case(base, view, op, mode), where=f"{op} {mode}")


# ------------------------------------------------------------------------- single scenarios

S = {}


def scenario(f):
    S[f.__name__] = f
    return f


@scenario
def detach_of_leaf_zero_(T, r):
    x = T.ones(3, requires_grad=True)
    d = x.detach()
    d.zero_()
    r("x", x)
    r("d", d)
    r("d has no _base", d._base is None)


@scenario
def detach_of_nonleaf_then_saved_backward(T, r):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.detach().add_(1)
    r("y", y)
    z.sum().backward()


@scenario
def detach_mul_by_value_requiring_grad(T, r):
    x = T.ones(3, requires_grad=True)
    w = T.full((3,), 2.0, requires_grad=True)
    d = x.detach()
    d.mul_(w)
    r("d", d)
    d.sum().backward()
    r("w.grad", w.grad)


@scenario
def data_write_is_not_tracked(T, r):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.data.add_(1)
    r("y", y)
    z.sum().backward()
    r("x.grad", x.grad)


@scenario
def leaf_requiring_grad(T, r):
    x = T.ones(3, requires_grad=True)
    x.add_(1)


@scenario
def view_of_leaf_requiring_grad(T, r):
    x = T.ones(3, requires_grad=True)
    x[0:2].mul_(2)


@scenario
def leaf_under_no_grad(T, r):
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        x.add_(1)
        x[0:2].mul_(3)
        x.zero_()
    r("x", x)


@scenario
def saved_input_modified(T, r):
    x = T.ones(3, requires_grad=True)
    y = x + 1
    z = y * y
    y.mul_(2)
    z.sum().backward()


@scenario
def saved_output_modified(T, r):
    x = T.ones(3, requires_grad=True)
    y = x.exp()
    z = y * 1
    y.add_(1)
    z.sum().backward()


@scenario
def saved_modified_under_no_grad(T, r):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    with T.no_grad():
        y.add_(1)
    z.sum().backward()


@scenario
def cast_float_result_into_long(T, r):
    T.ones(3, dtype=T.int64).mul_(1.5)


@scenario
def cast_float_tensor_into_long(T, r):
    T.ones(3, dtype=T.int64).add_(T.ones(3))


@scenario
def cast_complex_into_float(T, r):
    T.ones(3).add_(1j)


@scenario
def cast_int_true_divide(T, r):
    T.ones(3, dtype=T.int64).div_(2)


@scenario
def cast_int_exp(T, r):
    T.arange(3).exp_()


@scenario
def cast_clamp_float_bounds_into_long(T, r):
    T.arange(5).clamp_(0.5, 2.5)


@scenario
def cast_double_into_float_ok(T, r):
    x = T.ones(3)
    x.add_(T.ones(3, dtype=T.float64))
    r("x", x)


@scenario
def cast_fill_and_copy_into_long(T, r):
    x = T.arange(3)
    x.fill_(2.7)
    r("fill", x)
    x.copy_(T.tensor([1.7, -2.7, 3.5]))
    r("copy", x)


@scenario
def broadcast_would_grow(T, r):
    T.ones(3).add_(T.ones(2, 3))


@scenario
def broadcast_would_grow_in_graph(T, r):
    (T.ones(3, requires_grad=True) * 1).mul_(T.ones(2, 3))


@scenario
def broadcast_mismatch(T, r):
    T.ones(3).add_(T.ones(4))


@scenario
def copy_broadcast_would_grow(T, r):
    T.ones(3).copy_(T.ones(2, 3))


@scenario
def copy_broadcast_mismatch(T, r):
    T.ones(2, 3).copy_(T.ones(2))


@scenario
def copy_broadcasts_src_with_grad(T, r):
    w = T.arange(3.0, requires_grad=True)
    y = T.zeros(2, 3) * 1
    y.copy_(w)
    r("y", y)
    (y * T.arange(6.0).view(2, 3)).sum().backward()
    r("w.grad", w.grad)


@scenario
def copy_casts_src_with_grad(T, r):
    w = T.arange(3.0, dtype=T.float64, requires_grad=True)
    y = T.zeros(3)
    y.copy_(w)
    r("y", y)
    (y * 2).sum().backward()
    r("w.grad", w.grad)


@scenario
def fill_with_tensor_requiring_grad(T, r):
    w = T.tensor(2.0, requires_grad=True)
    y = T.zeros(3) * 1
    y.fill_(w)
    r("y", y)
    (y * T.arange(3.0)).sum().backward()
    r("w.grad", w.grad)


@scenario
def zero_fill_copy_nodes(T, r):
    x = T.arange(3.0, requires_grad=True)
    for name, f in (("zero", lambda y: y.zero_()), ("fill", lambda y: y.fill_(2)),
                    ("copy", lambda y: y.copy_(T.ones(3)))):
        y = x * 2
        f(y)
        r(name, y)
        (y * y).sum().backward()
        r(name + " grad", x.grad)
        x.grad = None


@scenario
def versions(T, r):
    x = T.ones(2, 3)
    v = x[0]
    x.add_(1)
    v.mul_(2)
    x[1] = 3
    r("after 3", (x._version, v._version))
    x.zero_()
    x.fill_(1)
    x.copy_(T.ones(2, 3))
    x.clamp_(0, 1)
    x.relu_()
    x += 1
    x *= 2
    x -= 1
    x /= 2
    x.masked_fill_(x > 0, 1)
    x.exp_()
    x.neg_()
    x.pow_(2)
    r("after 16", (x._version, v._version))
    y, z, d, dd = x.t(), x.view(6), x.detach(), x.data
    y.add_(1)
    r("views", (x._version, y._version, z._version, d._version, dd._version))
    dd.add_(1)
    r(".data has its own counter", (x._version, dd._version))


@scenario
def versions_in_graph(T, r):
    x = T.ones(2, 3, requires_grad=True)
    y = x * 2
    y.add_(1)
    y[0].mul_(2)
    y.t().sub_(1)
    y.clamp_(0, 4)
    y.relu_()
    y.copy_(T.ones(2, 3))
    r("y", y)


@scenario
def stale_view_after_base_write(T, r):
    x = T.ones(4, requires_grad=True)
    y = x * 2
    v = y[0:2]
    y.mul_(3)
    r("v", v)
    v.sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_view_after_sibling_write(T, r):
    x = T.ones(4, requires_grad=True)
    y = x * 2
    v, w = y[0:2], y[1:3]
    v.mul_(3)
    r("w", w)
    w.sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_reshaped_view(T, r):
    x = T.arange(6.0, requires_grad=True)
    y = x * 2
    v = y.view(2, 3)
    y.exp_()
    r("v", v)
    (v * v).sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_expanded_view(T, r):
    x = T.arange(3.0, requires_grad=True)
    y = x * 2
    v = y.expand(2, 3)
    y.mul_(3)
    r("v", v)
    (v * T.arange(6.0).view(2, 3)).sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_chained_view(T, r):
    x = T.arange(6.0, requires_grad=True)
    y = x * 2
    v = y.view(2, 3)[1]
    y.mul_(3)
    r("v", v)
    v.sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_view_after_no_grad_write(T, r):
    x = T.ones(4, requires_grad=True)
    y = x * 2
    v = y[0:2]
    with T.no_grad():
        y.mul_(3)
    r("v", v)
    v.sum().backward()
    r("x.grad", x.grad)


@scenario
def stale_split_output(T, r):
    x = T.ones(4, requires_grad=True)
    y = x * 2
    a, _ = y.split(2)
    y.mul_(3)
    (a * 2).sum().backward()


@scenario
def split_output_written_through_detach(T, r):
    x = T.ones(4, requires_grad=True)
    a, _ = (x * 2).split(2)
    a.detach().add_(1)
    r("a", a)


@scenario
def split_in_graph(T, r):
    (T.ones(4, requires_grad=True) * 2).split(2)[1].add_(1)


@scenario
def split_with_sizes_in_graph(T, r):
    (T.ones(4, requires_grad=True) * 2).split([1, 3])[1].mul_(2)


@scenario
def chunk_copy_in_graph(T, r):
    (T.ones(4, requires_grad=True) * 2).chunk(2)[1].copy_(T.zeros(2))


@scenario
def unbind_in_graph(T, r):
    (T.ones(2, 2, requires_grad=True) * 2).unbind()[1].zero_()


@scenario
def unbind_of_leaf_requiring_grad(T, r):
    T.ones(2, 2, requires_grad=True).unbind()[0].add_(1)


@scenario
def view_of_split_output_in_graph(T, r):
    (T.ones(2, 3, requires_grad=True) * 2).split(1)[0].t().mul_(2)


@scenario
def split_without_grad_is_allowed(T, r):
    x = T.ones(4)
    a, b = x.split(2)
    a.add_(1)
    b.zero_()
    r("x", x)
    r("a", a)


@scenario
def split_under_no_grad_is_allowed(T, r):
    x = T.ones(4, requires_grad=True)
    with T.no_grad():
        a, _ = (x * 2).split(2)
        a.add_(1)
        c, _ = x.split(2)
        c.add_(1)
    r("x", x)
    r("a", a)


@scenario
def split_written_with_value_requiring_grad(T, r):
    w = T.ones(2, requires_grad=True)
    T.ones(4).split(2)[0].mul_(w)


@scenario
def expand_overlap_add_(T, r):
    T.ones(3).expand(2, 3).add_(1)


@scenario
def expand_overlap_ops(T, r):
    x = T.ones(3, 1)
    for name, f in (("mul_", lambda e: e.mul_(2)), ("div_", lambda e: e.div_(2)),
                    ("exp_", lambda e: e.exp_()), ("clamp_", lambda e: e.clamp_(0, 1)),
                    ("copy_", lambda e: e.copy_(T.zeros(3, 2)))):
        try:
            f(x.expand(3, 2))
            r(name, "ok")
        except RuntimeError as e:
            r(name, str(e))


@scenario
def expand_overlap_fills(T, r):
    x = T.ones(3)
    x.expand(2, 3).fill_(4)
    r("fill_", x)
    x.expand(2, 3).zero_()
    r("zero_", x)
    x.expand(2, 3).masked_fill_(T.ones(2, 3, dtype=T.bool), 5)
    r("masked_fill_", x)


@scenario
def expand_overlap_in_graph(T, r):
    (T.ones(3, requires_grad=True) * 2).expand(2, 3).mul_(2)


@scenario
def expand_without_overlap(T, r):
    x = T.ones(3)
    e = x.expand(1, 3)
    e.add_(1)
    r("x", x)
    r("e", e)


@scenario
def expand_without_overlap_in_graph(T, r):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    e = y.expand(1, 3)
    e.mul_(T.tensor([[1.0, 2.0, 3.0]]))
    r("y", y)
    r("e", e)
    y.sum().backward()
    r("x.grad", x.grad)


@scenario
def no_grad_view_written_with_grad(T, r):
    x = T.ones(4, requires_grad=True)
    y = x * 2
    with T.no_grad():
        v = y[0:2]
    v.mul_(3)


@scenario
def no_grad_view_of_leaf_written_with_grad(T, r):
    x = T.ones(4, requires_grad=True)
    with T.no_grad():
        v = x[0:2]
    v.mul_(3)


@scenario
def no_grad_view_without_grad_is_allowed(T, r):
    x = T.ones(4)
    with T.no_grad():
        v = x[0:2]
    v.mul_(3)
    r("x", x)


@scenario
def no_grad_view_written_with_value_requiring_grad(T, r):
    x = T.ones(4)
    w = T.ones(2, requires_grad=True)
    with T.no_grad():
        v = x[0:2]
    v.mul_(w)


@scenario
def write_value_requiring_grad_into_view(T, r):
    w = T.arange(1.0, 3.0, requires_grad=True)
    y = T.ones(2, 2)
    v = y[0]
    v.mul_(w)
    r("y", y)
    r("v", v)
    y.sum().backward()
    r("w.grad", w.grad)


@scenario
def inplace_chain_on_nonleaf(T, r):
    x = T.arange(1.0, 4.0, requires_grad=True)
    y = x * 2
    y.mul_(y)
    y.exp_()
    y.sum().backward()
    r("x.grad", x.grad)


@scenario
def augmented_assignment_returns_self(T, r):
    x = T.ones(3)
    y = x
    y += 1
    r("+=", y is x)
    y *= T.ones(3)
    r("*=", y is x)


@pytest.mark.parametrize("name", sorted(S))
def test_inplace_scenario_matches_torch(name):
    check_observations(S[name])


def test_stale_view_double_backward_matches_torch():
    out = []
    for T in (jitgrad, torch):
        x = T.arange(1.0, 5.0, dtype=T.float64, requires_grad=True)
        y = x * x
        v = y.view(2, 2)[1]
        y.mul_(x)
        (g,) = T.autograd.grad((v * v).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        out.append((g.detach().numpy().copy(), gg.numpy().copy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


def test_in_place_on_a_self_overlapping_view_in_a_graph_is_refused():
    """unfold(step < size) aliases elements: recording an in-place write there would count each
    shared element once per alias in the base's gradient, so jitgrad refuses it clearly;
    non-overlapping unfold views are recorded like any view (values and gradient vs torch)."""
    x = jitgrad.tensor(np.arange(12.).reshape(2, 6), requires_grad=True)
    with pytest.raises(RuntimeError, match="share memory"):
        (x * 1).unfold(1, 3, 1).add_(1)
    grads = []
    for T in (jitgrad, torch):
        x = T.tensor(np.arange(12.).reshape(2, 6), requires_grad=True)
        y = x * 1
        y.unfold(1, 3, 3).mul_(3)
        (y * T.tensor(np.arange(12.).reshape(2, 6))).sum().backward()
        grads.append((y.detach().numpy().copy(), x.grad.numpy().copy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])
