"""Elementwise outputs take PyTorch's layout (TensorIterator's output strides): strides,
is_contiguous, dtype and values compared with PyTorch run in the test, over transposed,
permuted, channels-last, sliced and expanded inputs, broadcasting, type promotion, ``where``,
comparisons, ``out=`` and in-place ops."""
import itertools

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")
from tests._parity import agree  # noqa: E402 - after the skip: the harness needs PyTorch


def _values(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _stored(L, a):
    """A C-contiguous tensor of ``a``'s values, its size-1 dims' strides C's too (NumPy's
    ascontiguousarray of a transposed view keeps other strides there, which torch.tensor keeps
    and jitgrad.tensor does not)."""
    return L.tensor(np.ascontiguousarray(a).reshape(-1)).reshape(a.shape)


def _layout(L, a, how):
    """A tensor of ``L`` holding ``a``'s values in the layout ``how``."""
    nd = a.ndim
    if how == "contiguous":
        return L.tensor(a)
    if how == "reversed":  # every dim transposed
        return _stored(L, a.transpose()).permute(*range(nd - 1, -1, -1))
    if how == "rotated":  # dims stored in the order (last, first, ...)
        p = (nd - 1, *range(nd - 1))
        inv = tuple(p.index(i) for i in range(nd))
        return _stored(L, a.transpose(p)).permute(*inv)
    if how == "channels_last":
        return L.tensor(a).contiguous(memory_format=L.channels_last)
    if how == "sliced":  # not dense: every other element of the last dim
        big = np.repeat(a, 2, axis=-1)
        return L.tensor(big)[..., ::2]
    if how == "sliced_reversed":
        big = np.repeat(a.transpose(), 2, axis=-1)
        return L.tensor(big)[..., ::2].permute(*range(nd - 1, -1, -1))
    if how == "expanded":  # stride 0 along the first dim
        return L.tensor(np.ascontiguousarray(a[:1])).expand(*a.shape)
    raise AssertionError(how)


def _describe(L, t):
    fmts = [t.is_contiguous()]
    if t.dim() == 4:
        fmts.append(t.is_contiguous(memory_format=L.channels_last))
    return {"shape": tuple(t.shape), "stride": t.stride(), "is_contiguous": fmts,
            "dtype": str(t.dtype).split(".")[-1], "values": t.detach().numpy().tolist()}


def _check(fn):
    """``fn(L)`` returns a tensor or a tuple of them; the same description (or the same error)
    from both (``tests/_parity.agree``)."""
    def run(L):
        out = fn(L)
        return [_describe(L, t) for t in (out if isinstance(out, tuple) else (out,))]
    agree(run)


SHAPES = [(3, 4), (2, 3, 4), (2, 3, 4, 5), (2, 3, 1, 1), (2, 1, 4, 5), (1, 3, 1, 4)]
LAYOUTS = ["contiguous", "reversed", "rotated", "channels_last", "sliced", "sliced_reversed",
           "expanded"]


def _cases(shapes=SHAPES, layouts=LAYOUTS):
    return [(s, h) for s in shapes for h in layouts if h != "channels_last" or len(s) == 4]


UNARY = {
    "exp": lambda t: t.exp(),
    "relu": lambda t: t.relu(),
    "neg": lambda t: -t,
    "sigmoid": lambda t: t.sigmoid(),
    "mul_scalar": lambda t: t * 2,
    "add_scalar": lambda t: t + 1,
    "gt_scalar": lambda t: t > 0,
    "square": lambda t: t * t,
    "add_double_row": lambda t: t + t.new_ones(t.shape[-1:]).double(),
    # ATen allocates these C-contiguous whatever the input's layout
    "rpow": lambda t: 2 ** t.round(),
    "masked_fill": lambda t: t.masked_fill(t > 0, 1.0),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape,how", _cases())
def test_unary_follows_the_input(op, shape, how):
    a = _values(shape, 0)
    _check(lambda L: UNARY[op](_layout(L, a, how)))


BINARY = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "sub_alpha": lambda x, y: x.sub(y, alpha=2),
    "lt": lambda x, y: x < y,
    "maximum": lambda x, y: x.maximum(y),
    "div": lambda x, y: x / y,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("shape,hx,hy", [
    (s, a, b) for s in [(3, 4), (2, 3, 4), (2, 3, 4, 5), (2, 1, 4, 5)]
    for a, b in itertools.product(LAYOUTS, LAYOUTS)
    if ("sliced" not in b or a == "contiguous")
    and ("channels_last" not in (a, b) or len(s) == 4)])
def test_binary_same_shape_mixed_layouts(op, shape, hx, hy):
    a, b = _values(shape, 1), _values(shape, 2)
    _check(lambda L: BINARY[op](_layout(L, a, hx), _layout(L, b, hy)))


BROADCAST_OTHERS = [(), (5,), (1, 4, 5), (2, 1, 1, 1), (1, 3, 1, 1), (3, 1, 5)]


@pytest.mark.parametrize("other_shape", BROADCAST_OTHERS)
@pytest.mark.parametrize("how", ["contiguous", "reversed", "rotated", "channels_last",
                                 "expanded"])
@pytest.mark.parametrize("other_how", ["contiguous", "reversed"])
@pytest.mark.parametrize("swap", [False, True])
def test_broadcasting_mixed_layouts(other_shape, how, other_how, swap):
    a, b = _values((2, 3, 4, 5), 3), _values(other_shape, 4)

    def run(L):
        x = _layout(L, a, how)
        y = _layout(L, b, other_how) if len(other_shape) >= 2 else L.tensor(b)
        return (y * x, y > x) if swap else (x * y, x > y)

    _check(run)


@pytest.mark.parametrize("how", ["contiguous", "reversed", "rotated", "channels_last"])
def test_where_takes_the_condition_first(how):
    a, b = _values((2, 3, 4, 5), 5), _values((2, 3, 4, 5), 6)

    def run(L):
        x, y = _layout(L, a, how), L.tensor(b)
        return (L.where(x > 0, x, y), L.where(y > 0, x, y), L.where(x > 0, x, 0.0),
                L.where(L.tensor(b > 0), x, y))

    _check(run)


@pytest.mark.parametrize("how", ["reversed", "rotated", "channels_last", "sliced"])
def test_type_promotion(how):
    a, b = _values((2, 3, 4, 5), 7), _values((2, 3, 4, 5), 8)

    def run(L):
        x = _layout(L, a, how)
        y = L.tensor(b).double()
        i = (x * 10).int()
        return x + y, y + x, i + 1.5, i * x, x.half() + 1, i < x, x.to(L.float64) + y

    _check(run)


@pytest.mark.parametrize("how", ["reversed", "channels_last"])
def test_out_and_in_place_keep_their_tensor(how):
    a, b = _values((2, 3, 4, 5), 9), _values((2, 3, 4, 5), 10)

    def run(L):
        x, y = _layout(L, a, how), L.tensor(b)
        out = L.empty(2, 3, 4, 5)
        r = L.add(x, y, out=out)
        z = _layout(L, a, how)
        z.add_(y)
        w = L.tensor(b)
        w.mul_(x)
        return r, out, z, w

    _check(run)


def test_view_after_an_op_on_a_transposed_tensor_raises_as_in_pytorch():
    a = _values((3, 4), 11)

    def run(L):
        y = L.tensor(a).t() * 2
        try:
            y.view(12)
        except RuntimeError:
            return "RuntimeError", y.reshape(12).tolist()
        return "viewed"

    assert run(jitgrad) == run(torch)


def test_channels_last_pipeline_stays_channels_last():
    a, b = _values((2, 3, 4, 5), 12), _values((1, 3, 1, 1), 13)

    def run(L):
        x = L.tensor(a).contiguous(memory_format=L.channels_last)
        y = (x * L.tensor(b) + 1).relu().sigmoid()
        return y

    _check(run)


def test_leaf_grad_in_channels_last():
    a = _values((2, 3, 4, 5), 14)

    def run(L):
        leaf = L.tensor(a).contiguous(memory_format=L.channels_last).requires_grad_()
        (leaf * 2).relu().sum().backward()
        return leaf.grad

    _check(run)


@pytest.mark.parametrize("shape,how", _cases(layouts=["sliced", "sliced_reversed", "expanded",
                                                       "reversed", "rotated"]))
def test_dense_strides_like_is_empty_like_of_a_non_dense_tensor(shape, how):
    # the helper preserve_format needs for non-dense inputs (ATen's infer_dense_strides)
    from jitgrad._iter_layout import dense_strides_like
    t = _layout(torch, _values(shape, 15), how)
    assert dense_strides_like(tuple(t.shape), t.stride()) == torch.empty_like(t).stride()


# ---- size-1 dims: no contiguity check reads their strides, but TensorIterator's sort does
# (when a scalar or broadcasting rules out its fast setup) and its dense fast setup copies them


def _unit_dim_cases():
    """(shape, strides) with size-1 dims: every dim order's dense strides, and a size-1 dim
    given another stride (1, or 7: no dense layout's)."""
    cases = set()
    for nd in (2, 3, 4):
        for shape in itertools.product((1, 2, 3), repeat=nd):
            if 1 not in shape or (nd == 4 and shape.count(1) > 2):
                continue
            for perm in itertools.permutations(range(nd)):
                dense, step = [0] * nd, 1
                for d in reversed(perm):
                    dense[d] = step
                    step *= shape[d]
                cases.add((shape, tuple(dense)))
                for d in range(nd):
                    if shape[d] == 1:
                        for odd in (1, 7):
                            cases.add((shape, tuple(odd if k == d else s
                                                    for k, s in enumerate(dense))))
    return sorted(cases)


UNIT_DIM_CASES = _unit_dim_cases()

UNIT_DIM_OPS = {
    "mul_scalar": lambda L, t: t * 2,
    "gt_scalar": lambda L, t: t > 3,
    "add_row": lambda L, t: t + t.new_ones(t.shape[-1:]),
    "add_self": lambda L, t: t + t,
    "exp": lambda L, t: t.exp(),
    "where_scalar": lambda L, t: L.where(t > 3, t, 0.0),
    "empty_like": lambda L, t: L.empty_like(t),
    "contiguous": lambda L, t: t.contiguous(),
    "clone": lambda L, t: t.clone(),
}


@pytest.mark.parametrize("op", sorted(UNIT_DIM_OPS))
def test_size_one_dims_strides(op):
    # x = torch.ones(4, 3); (x.t()[:, :1] * 2).stride() is (1, 3), not (1, 1); a (1, 2, 2)
    # tensor with strides (7, 1, 2) keeps them through exp
    def run(L):
        out = []
        for shape, strides in UNIT_DIM_CASES:
            n = 1 + sum((k - 1) * s for k, s in zip(shape, strides))
            t = L.arange(float(n)).as_strided(shape, strides)
            r = UNIT_DIM_OPS[op](L, t)
            out.append((shape, strides, r.stride(),
                        None if op == "empty_like" else r.tolist()))
        return out

    agree(run)


def test_size_one_dim_of_a_transposed_slice():
    _check(lambda L: (L.ones(4, 3).t()[:, :1] * 2, L.ones(4, 3).t()[:, :1] + 1.5,
                      L.ones(3, 4)[:1].t() * 2))


# ---- activation kernels (nn/functional/activation_kernels): PyTorch's layout, and its bits,
# which depend on each element's position (vector lanes or the scalar tail of each run)

ACTIVATIONS = {
    "gelu": lambda F, t: F.gelu(t),
    "gelu_tanh": lambda F, t: F.gelu(t, approximate="tanh"),
    "silu": lambda F, t: F.silu(t),
    "softplus": lambda F, t: F.softplus(t),
    "elu": lambda F, t: F.elu(t),
    "selu": lambda F, t: F.selu(t),
    "celu": lambda F, t: F.celu(t, 0.7),
    "mish": lambda F, t: F.mish(t),
    "softshrink": lambda F, t: F.softshrink(t, 0.3),
    # ATen computes log_sigmoid on input.contiguous() into a contiguous result
    "logsigmoid": lambda F, t: F.logsigmoid(t),
}


def _bits(t):
    a = t.detach().numpy()
    return {"stride": t.stride(), "bits": a.view(f"i{a.itemsize}").tolist()}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
@pytest.mark.parametrize("how", LAYOUTS)
def test_activation_layout_and_bits(op, how):
    def run(L):
        out = []
        for shape in [(2, 3, 4, 5), (4, 16, 7, 9)]:
            for dt in (np.float32, np.float64):
                a = (_values(shape, 16) * 3).astype(dt)
                out.append(_bits(ACTIVATIONS[op](L.nn.functional, _layout(L, a, how))))
        return out

    agree(run)


@pytest.mark.parametrize("op", ["gelu", "gelu_tanh", "silu", "softplus", "elu", "mish",
                                "logsigmoid"])
@pytest.mark.parametrize("how,grad_how", [("channels_last", "channels_last"),
                                          ("channels_last", "contiguous"),
                                          ("reversed", "contiguous"), ("reversed", "reversed"),
                                          ("sliced", "contiguous"), ("expanded", "expanded")])
def test_activation_gradient_layout_and_bits(op, how, grad_how):
    def run(L):
        out = []
        for dt in (np.float32, np.float64):
            a = (_values((4, 16, 7, 9), 17) * 3).astype(dt)
            x = _layout(L, a, how).detach().requires_grad_()
            g = _layout(L, _values((4, 16, 7, 9), 18).astype(dt), grad_how)
            out.append(_bits(L.autograd.grad(ACTIVATIONS[op](L.nn.functional, x), x, g)[0]))
        return out

    agree(run)
