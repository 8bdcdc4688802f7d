"""``x[key] = v``, masked_fill, clamp with tensor bounds and the in-place samplers against
PyTorch. Each scenario runs on jitgrad and on torch; the observations (values, dtype, grad_fn
name, ``_version``, requires_grad/is_leaf, gradients, and the error type + text) must agree."""

import numpy as np
import pytest
from _parity import check_observations

import jitgrad
from jitgrad.autograd import gradcheck

torch = pytest.importorskip("torch")


def _next(T, t):
    return [type(f).__name__ if f is not None else None for f, _ in t.grad_fn.next_functions]


# ------------------------------------------------------------------- x[key] = v: the matrix

def _set(key, value):
    def op(T, v, w):
        v[key] = value(T, v, w) if callable(value) else value
    return op


KEYS = {
    "int": _set(0, 9.0),
    "neg_int": _set(-1, 9.0),
    "slice": _set(slice(1, None), 9.0),
    "neg_slice": _set(slice(-1, None), 9.0),
    "full_slice": _set(slice(None), 9.0),
    "big_slice": _set(slice(0, 10), 9.0),
    "ellipsis": _set(Ellipsis, 9.0),
    "ellipsis_last": _set((Ellipsis, 0), 9.0),
    "none": _set(None, 9.0),
    "true": _set(True, 9.0),
    "false": _set(False, 9.0),
    "list": _set([0], 9.0),
    "int_list": _set((0, [0]), 9.0),
    "mask": lambda T, v, w: v.__setitem__(v > 3, 0.5),
    "same_shape": _set(Ellipsis, lambda T, v, w: T.full(tuple(v.shape), 2.5)),
    "broadcast_row": _set(Ellipsis, lambda T, v, w: T.full(tuple(v.shape)[-1:], 2.5)),
    "value_rg": _set(0, lambda T, v, w: w),
    "value_rg_all": _set(Ellipsis, lambda T, v, w: w),
    "value_rg_list": _set([0], lambda T, v, w: w),
    "value_rg_mask": lambda T, v, w: v.__setitem__(v > 3, w),
    "value_f64": _set([0], lambda T, v, w: w.double()),
}

VIEWS = {
    "self": lambda y: y,
    "select": lambda y: y[1],
    "slice": lambda y: y[:, 1:],
    "view": lambda y: y.view(6),
    "t": lambda y: y.t(),
    "unsqueeze": lambda y: y.unsqueeze(0),
    "expand_overlap": lambda y: y.unsqueeze(0).expand(2, 2, 3),
    "expand_row": lambda y: y[0].expand(2, 3),
    "expand_lead1": lambda y: y.expand(1, 2, 3),
    "detach": lambda y: y.detach(),
    "data": lambda y: y.data,
    "split": lambda y: y.split(1)[1],
    "unbind": lambda y: y.unbind(1)[2],
    "split_slice": lambda y: y.split(1)[0][:, 1:],
}

# PyTorch raises these only at backward (its CopySlices copies into the overlapping view)
KNOWN = {("nonleaf", v, k, "grad") for v in ("expand_overlap", "expand_row")
         for k in ("list", "mask", "value_rg_mask", "value_f64")}


def _matrix_case(base, view, key, mode):
    def f(T, r):
        x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=(base != "leaf"))
        w = T.tensor(4.0, requires_grad=True)
        y = x * 2 if base == "nonleaf" else x
        if mode == "nograd":
            with T.no_grad():
                v = VIEWS[view](y)
                KEYS[key](T, v, w)
        elif mode == "view_nograd":
            with T.no_grad():
                v = VIEWS[view](y)
            KEYS[key](T, v, w)
        else:
            v = VIEWS[view](y)
            KEYS[key](T, v, w)
        r("base", y)
        r("view", v)
        if y.requires_grad or v.requires_grad:
            gw = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
            ins = [t for t in (x, w) if t.requires_grad]
            r("grads", list(T.autograd.grad((y * gw).sum() + (v * 1.5).sum(), ins,
                                            allow_unused=True)))
    return f


@pytest.mark.parametrize("base", ["leaf", "leaf_rg", "nonleaf"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_setitem_matrix_matches_torch(base, view):
    for key in KEYS:
        for mode in ("grad", "nograd", "view_nograd"):
            if (base, view, key, mode) in KNOWN:
                continue
            check_observations(_matrix_case(base, view, key, mode), where=f"{key} {mode}")


# ------------------------------------------------------------------------- single scenarios

S = {}


def scenario(f):
    S[f.__name__] = f
    return f


@scenario
def unbind_output_written(T, r):
    x = T.ones(2, 2, requires_grad=True)
    a, b = (x * 2).unbind()
    a[0] = 5


@scenario
def unbind_of_plain_tensor_value_requires_grad(T, r):
    x = T.ones(2, 2)
    a, b = x.unbind()
    a[0] = T.tensor(5.0, requires_grad=True)


@scenario
def no_grad_view_written_with_grad(T, r):
    y = T.ones(4, requires_grad=True) * 2
    with T.no_grad():
        v = y[0:2]
    v[0] = 3


@scenario
def no_grad_view_of_leaf_written_with_grad(T, r):
    x = T.ones(4, requires_grad=True)
    with T.no_grad():
        v = x[0:2]
    v[0] = 3


@scenario
def no_grad_view_written_in_no_grad(T, r):
    y = T.ones(4, requires_grad=True) * 2
    with T.no_grad():
        v = y[0:2]
        v[0] = 3
    r("y", y)


@scenario
def leaf_select_written(T, r):
    x = T.ones(3, requires_grad=True)
    x[0] = 2


@scenario
def leaf_full_write(T, r):
    x = T.ones(3, 2, requires_grad=True)
    x[0:3] = 2


@scenario
def leaf_index_write(T, r):
    x = T.ones(3, 2, requires_grad=True)
    x[0, [1]] = 2


@scenario
def leaf_false_key_is_a_no_op(T, r):
    x = T.ones(3, requires_grad=True)
    x[False] = 2
    r("x", x)


@scenario
def expand_row_write(T, r):
    x = T.ones(3)
    x.expand(2, 3)[0] = 1
    r("x", x)


@scenario
def expand_row_write_tensor(T, r):
    x = T.ones(1, 3)
    e = x.expand(2, 3)
    e[0] = T.tensor([[4.0, 5.0, 6.0]])
    r("x", x)


@scenario
def expand_overlapping_write(T, r):
    x = T.ones(3)
    x.expand(2, 3)[...] = 9.0


@scenario
def expand_overlapping_column(T, r):
    x = T.ones(3)
    x.expand(2, 3)[:, 1] = 9.0


@scenario
def expand_element_write(T, r):
    x = T.ones(3)
    x.expand(2, 3)[0, 1] = 5.0
    r("x", x)


@scenario
def expand_index_write(T, r):
    x = T.ones(3)
    x.expand(2, 3)[[0, 1], [0, 1]] = 5.0
    r("x", x)


@scenario
def expand_in_graph_value_requires_grad(T, r):
    x = T.ones(3)
    w = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
    e = x.expand(2, 3)
    e[0] = w
    r("x", x)
    r("e", e)
    (x * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    r("w.grad", w.grad)


@scenario
def expand_of_nonleaf_in_graph(T, r):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    e = y.expand(2, 3)
    e[1] = 7.0
    r("y", y)
    r("next", _next(T, y))
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    r("x.grad", x.grad)


@scenario
def expand_of_nonleaf_overlapping_in_graph(T, r):
    y = T.ones(3, requires_grad=True) * 1
    y.expand(2, 3)[...] = 7.0


@scenario
def fill_and_copy_nodes(T, r):
    for key, value in ((Ellipsis, 9.0), (slice(None), 9.0), ((slice(None), slice(None)), 9.0),
                       (Ellipsis, T.ones(2)), (Ellipsis, T.ones(3, 2)), ([0], 9.0),
                       (slice(1, None), 9.0), ((Ellipsis, [0]), 9.0), ((slice(1, None), [0]),
                                                                       9.0)):
        y = T.ones(3, 2, requires_grad=True) * 1
        y[key] = value
        r("node", (type(y.grad_fn).__name__, _next(T, y)))
    y = T.tensor(1.0, requires_grad=True) * 1
    y[...] = 5.0
    r("0-d", (type(y.grad_fn).__name__, _next(T, y)))


@scenario
def fill_with_tensor_requiring_grad(T, r):
    y = T.ones(3, 2)
    v = T.tensor(2.0, requires_grad=True)
    y[...] = v
    r("node", (type(y.grad_fn).__name__, _next(T, y)))
    (y * T.arange(6.0).reshape(3, 2)).sum().backward()
    r("v.grad", v.grad)


@scenario
def index_put_gradients(T, r):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    v = T.tensor([10.0, 20.0], requires_grad=True)
    y = x * 1
    y[[0, 2]] = v
    r("node", (type(y.grad_fn).__name__, _next(T, y)))
    (y * T.arange(6.0).reshape(3, 2)).sum().backward()
    r("x.grad", x.grad)
    r("v.grad", v.grad)


@pytest.mark.parametrize("name", sorted(S))
def test_setitem_scenario_matches_torch(name):
    check_observations(S[name])


def test_setitem_gradcheck_through_expand_and_index():
    x = jitgrad.tensor([0.3, -1.2, 0.7], dtype=jitgrad.float64, requires_grad=True)
    v = jitgrad.tensor([1.5, 2.5], dtype=jitgrad.float64, requires_grad=True)
    s = jitgrad.tensor(0.25, dtype=jitgrad.float64, requires_grad=True)

    def f(x, v, s):
        y = x * x
        y.expand(2, 3)[1, 1:] = v * v
        z = (x * 3).unsqueeze(0).repeat(2, 1)
        z[[0, 1], [2, 0]] = v  # IndexPutBackward0
        u = z * 1
        u[...] = s * 3  # FillBackward3
        w = z * 1
        w[...] = x * s  # CopyBackwards (broadcast)
        return y.sum() + (z * z).sum() + (u * z).sum() + (w * w).sum()
    assert gradcheck(f, [x, v, s])


# ------------------------------------------------------------------------------- masked_fill

M = {}


def mscenario(f):
    M[f.__name__] = f
    return f


@mscenario
def masked_fill_tensor_value(T, r):
    x = T.arange(4.0, requires_grad=True)
    v = T.tensor(3.0, requires_grad=True)
    y = x.masked_fill(x > 1, v)
    r("y", y)
    r("next", _next(T, y))
    y.sum().backward()
    r("grads", [x.grad, v.grad])


@mscenario
def masked_fill_tensor_value_not_requiring_grad(T, r):
    x = T.arange(4.0, requires_grad=True)
    y = x.masked_fill(x > 1, T.tensor(3.0))
    r("y", y)
    r("next", _next(T, y))
    z = x.masked_fill(x > 1, 3.0)
    r("z", z)
    r("next", _next(T, z))


@mscenario
def masked_fill_only_value_requires_grad(T, r):
    x = T.arange(4.0)
    v = T.tensor(3.0, dtype=T.float64, requires_grad=True)
    y = x.masked_fill(x > 1, v)
    r("y", y)
    r("next", _next(T, y))
    (y * T.arange(4.0)).sum().backward()
    r("v.grad", v.grad)


@mscenario
def masked_fill_mask_broadcasts_result(T, r):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    m = T.tensor([[True, False, False], [False, True, True]])
    v = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    y = x.masked_fill(m, v)
    r("y", y)
    (y * T.arange(6.0, dtype=T.float64).reshape(2, 3)).sum().backward()
    r("grads", [x.grad, v.grad])
    r("plain", T.ones(3).masked_fill(T.ones(2, 3, dtype=T.bool), 0))


@mscenario
def masked_fill_inplace_mask_broadcasts(T, r):
    T.ones(3).masked_fill_(T.ones(2, 3, dtype=T.bool), 0)


@mscenario
def masked_fill_inplace_mask_broadcasts_in_graph(T, r):
    x = T.ones(3, requires_grad=True) * 1
    x.masked_fill_(T.ones(2, 3, dtype=T.bool), 0)


@mscenario
def masked_fill_incompatible_mask(T, r):
    T.ones(2, 3).masked_fill(T.ones(2, dtype=T.bool), 0)


@mscenario
def masked_fill_inplace_value_requires_grad(T, r):
    x = T.ones(3) * 1
    v = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    y = x.masked_fill_(T.tensor([True, False, True]), v)
    r("y", y)
    r("same", y is x)
    r("next", _next(T, y))
    y.sum().backward()
    r("v.grad", v.grad)


@mscenario
def masked_fill_value_not_0d(T, r):
    T.ones(3).masked_fill(T.ones(3, dtype=T.bool), T.tensor([2.5]))


@mscenario
def masked_fill_int_input_float_value(T, r):
    r("y", T.ones(3, dtype=T.int64).masked_fill(T.tensor([True, False, True]), T.tensor(2.5)))


@pytest.mark.parametrize("name", sorted(M))
def test_masked_fill_matches_torch(name):
    check_observations(M[name])


def test_masked_fill_value_gradcheck():
    x = jitgrad.tensor([0.3, -1.2, 0.7], dtype=jitgrad.float64, requires_grad=True)
    v = jitgrad.tensor(0.4, dtype=jitgrad.float64, requires_grad=True)
    m = jitgrad.tensor([[True, False, True], [False, False, True]])
    assert gradcheck(lambda x, v: x.masked_fill(m, v) * x, [x, v])
    assert jitgrad.autograd.gradgradcheck(lambda x, v: x.masked_fill(m, v) * x, [x, v])


# ------------------------------------------------------------------- clamp with tensor bounds

C = {}


def cscenario(f):
    C[f.__name__] = f
    return f


def _clamp_case(T, r, fn):
    y = T.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], dtype=T.float64, requires_grad=True)
    lo = T.tensor([3.0, 1.0, 2.0, 3.0, 4.0, 5.0], dtype=T.float64, requires_grad=True)
    hi = T.tensor([2.0, 1.0, 2.0, 4.0, 3.0, 4.5], dtype=T.float64, requires_grad=True)
    z = fn(T, y, lo, hi)
    r("z", z)
    r("next", _next(T, z))
    z.backward(T.arange(1.0, 7.0, dtype=T.float64))
    r("grads", [y.grad, lo.grad, hi.grad])


@cscenario
def clamp_both_tensors(T, r):
    _clamp_case(T, r, lambda T, y, lo, hi: y.clamp(lo, hi))


@cscenario
def clamp_min_tensor(T, r):
    _clamp_case(T, r, lambda T, y, lo, hi: T.clamp(y, min=lo))


@cscenario
def clamp_max_tensor(T, r):
    _clamp_case(T, r, lambda T, y, lo, hi: y.clamp(max=hi))


@cscenario
def clamp_min_fn_tensor(T, r):
    _clamp_case(T, r, lambda T, y, lo, hi: T.clamp_min(y, lo))


@cscenario
def clamp_max_method_tensor(T, r):
    _clamp_case(T, r, lambda T, y, lo, hi: y.clamp_max(hi))


@cscenario
def clamp_0d_bounds(T, r):
    y = T.arange(5.0, requires_grad=True) * 1
    lo = T.tensor(1.0, requires_grad=True)
    z = y.clamp(lo, T.tensor(3.0))
    r("z", z)
    r("next", _next(T, z))
    z.sum().backward()
    r("lo.grad", lo.grad)
    r("clip", type(T.clip(y, T.tensor(1.0), T.tensor(3.0)).grad_fn).__name__)
    r("only max", type(y.clamp(None, T.tensor(3.0)).grad_fn).__name__)
    r("0-d and number", type(y.clamp(T.tensor(1.0), 3.0).grad_fn).__name__)


@cscenario
def clamp_scalar_node_names(T, r):
    y = T.arange(5.0, requires_grad=True) * 1
    for z in (y.clamp(1.0), y.clamp(1.0, 3.0), y.clamp_min(1.0), y.clamp_max(3.0),
              T.clamp_min(y, 1.0), T.clamp_max(y, 3.0)):
        r("z", z)
        r("next", _next(T, z))


@cscenario
def clamp_scalar_min_grad(T, r):
    x = T.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True)
    y = x.clamp_min(1.0) * x.clamp_max(2.0)
    y.sum().backward()
    r("x.grad", [x.grad])


@cscenario
def clamp_inplace_tensor_bounds(T, r):
    y = T.arange(5.0, requires_grad=True) * 1
    lo = T.tensor(1.0, requires_grad=True)
    y.clamp_(lo, T.tensor(3.0))
    r("y", y)
    y.sum().backward()
    r("lo.grad", lo.grad)
    w = T.arange(5.0, requires_grad=True) * 1
    w.clamp_min_(T.tensor(2.0))
    r("w", w)


@cscenario
def clamp_nan_and_broadcast(T, r):
    y = T.tensor([1.0, float("nan"), 3.0], dtype=T.float64, requires_grad=True)
    lo = T.tensor([2.0, 0.0, float("nan")], dtype=T.float64, requires_grad=True)
    z = y.clamp(lo)
    z.sum().backward()
    r("z", z)
    r("grads", [y.grad, lo.grad])
    c = T.arange(3.0, dtype=T.float64).reshape(3, 1).clamp(T.tensor([1.0, 2.0]), T.tensor(3.0))
    r("c", c)
    r("int", T.arange(3).clamp(T.tensor(1.5), T.tensor(3.0)))
    r("int/int", T.arange(5).clamp(T.tensor(1), T.tensor(3)))


@cscenario
def clamp_bad_broadcast(T, r):
    T.arange(5.0).clamp(T.tensor([1.0, 2.0]), T.tensor(3.0))


@cscenario
def clamp_saved_bound_modified(T, r):
    y = T.arange(5.0, requires_grad=True) * 1
    lo = T.tensor([1.0, 1, 1, 1, 1], requires_grad=True) * 1
    z = y.clamp(lo)
    lo.add_(1)
    z.sum().backward()


@pytest.mark.parametrize("name", sorted(C))
def test_clamp_matches_torch(name):
    check_observations(C[name])


@pytest.mark.parametrize("call", [
    lambda T, y: y.clamp(T.tensor(1.0, requires_grad=True), 3.0),
    lambda T, y: y.clamp(T.ones(5), 3.0),
    lambda T, y: T.clamp(y, 1.0, T.ones(5)),
])
def test_clamp_mixed_overload_is_a_type_error(call):
    # PyTorch's arg parser: a Tensor bound with a number is the Scalar overload, which takes
    # only a 0-d tensor not requiring grad (the message's layout differs between the forms)
    for T in (jitgrad, torch):
        with pytest.raises(TypeError, match=r"clamp\(\) received an invalid combination of "
                                            r"arguments - got \(Tensor, "):
            call(T, T.arange(5.0))


def test_clamp_tensor_bounds_gradcheck():
    x = jitgrad.tensor([0.3, -1.2, 0.7, 2.0], dtype=jitgrad.float64, requires_grad=True)
    lo = jitgrad.tensor([0.0, -1.0, 0.9, 0.5], dtype=jitgrad.float64, requires_grad=True)
    hi = jitgrad.tensor(1.5, dtype=jitgrad.float64, requires_grad=True)
    assert gradcheck(lambda x, lo, hi: x.clamp(lo, hi) * x, [x, lo, hi])
    assert gradcheck(lambda x, lo: jitgrad.clamp_min(x, lo) * lo, [x, lo])
    assert jitgrad.autograd.gradgradcheck(lambda x, lo, hi: x.clamp(lo, hi) * x, [x, lo, hi])


# ------------------------------------------------------------------------ in-place samplers

SAMPLERS = {
    "uniform_": lambda T, v: v.uniform_(),
    "normal_": lambda T, v: v.normal_(),
    "bernoulli_": lambda T, v: v.bernoulli_(0.3),
    "bernoulli_t": lambda T, v: v.bernoulli_(T.tensor(0.3)),
    "exponential_": lambda T, v: v.exponential_(),
    "random_to": lambda T, v: v.random_(5),
    "random_from_to": lambda T, v: v.random_(1, 5),
}

SAMPLER_VIEWS = {k: VIEWS[k] for k in ("self", "select", "slice", "t", "expand_overlap",
                                        "expand_row", "expand_lead1", "detach", "split",
                                        "unbind")}


def _sampler_case(base, view, op, mode):
    def f(T, r):
        T.manual_seed(0)
        x = T.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=(base != "leaf"))
        y = x * 2 if base == "nonleaf" else x
        if mode == "view_nograd":
            with T.no_grad():
                v = SAMPLER_VIEWS[view](y)
            out = SAMPLERS[op](T, v)
        else:
            v = SAMPLER_VIEWS[view](y)
            out = SAMPLERS[op](T, v)
        r("returns self", out is v)
        r("base", y)
        r("view", v)
        if y.requires_grad:
            if view == "self":  # (through a view: CopySlices, whose next_functions differ)
                r("next", _next(T, y) if y.grad_fn is not None else None)
            w = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
            r("grad", T.autograd.grad((y * w).sum(), x, allow_unused=True))
    return f


@pytest.mark.parametrize("base", ["leaf", "leaf_rg", "nonleaf"])
@pytest.mark.parametrize("view", sorted(SAMPLER_VIEWS))
def test_sampler_inplace_matches_torch(base, view):
    for op in SAMPLERS:
        for mode in ("grad", "view_nograd"):
            check_observations(_sampler_case(base, view, op, mode), where=f"{op} {mode}")


def test_sampler_on_expand_overlap_message():
    for T in (jitgrad, torch):
        with pytest.raises(RuntimeError, match="unsupported operation: more than one element of "
                                               "the written-to tensor refers to a single memory "
                                               "location"):
            T.ones(3).expand(2, 3).uniform_()


MIXED_KEYS = [  # ints / None / slices mixed with index tensors: PyTorch applies the basic part
    "(0, slice(None), [1, 2])",  # first, so the value has its layout (NumPy's differs)
    "(slice(None), 0, [1, 2])",
    "(0, [1, 2], slice(None))",
    "([0, 1], slice(1, 3))",
    "(None, 0, slice(None), [2, 0])",
    "(Ellipsis, [1, 2])",
    "(1, slice(None), T.tensor([[0, 1], [2, 3]]))",
    "(slice(0, 2), slice(None), T.tensor([True, False, True, False]))",
    "(0, T.tensor([[True, False, True, False]] * 3))",
]


@pytest.mark.parametrize("key_src", MIXED_KEYS)
def test_setitem_mixed_basic_and_advanced_keys_match_torch(key_src):
    res = []
    for T in (torch, jitgrad):
        key = eval(key_src, {"T": T})  # noqa: S307 - the test's own key expressions
        ramp = T.arange(24.).reshape(2, 3, 4)
        x = T.zeros(2, 3, 4)
        shape = tuple(x[key].shape)
        v = T.arange(float(np.prod(shape))).reshape(shape)
        x[key] = v
        xl = T.zeros(2, 3, 4, requires_grad=True)
        y = xl * 1
        w = v.clone().requires_grad_(True)
        y[key] = w
        (y * ramp).sum().backward()
        res.append((shape, x.numpy().tolist(), xl.grad.numpy().tolist(), w.grad.numpy().tolist(),
                    type(y.grad_fn).__name__))
    assert res[0] == res[1]
