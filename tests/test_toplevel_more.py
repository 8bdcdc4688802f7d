"""torch.gradient, index_reduce (+ methods), vander, frobenius_norm, nuclear_norm, matrix_rank,
empty_permuted, is_storage, is_distributed, set_default_tensor_type, set_anomaly_enabled,
init_num_threads and the Tensor methods dist/matrix_exp/hardshrink/prelu/new_empty_strided
(jitgrad/ops/gradient.py, index_reduce.py, toplevel_more.py) against PyTorch."""
import warnings

import numpy as np
import pytest

import jitgrad
from tests._parity import agree, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

R = np.random.default_rng(5)
X = R.standard_normal((4, 5))
S = R.standard_normal((3, 5))
S[0, 1] = 0.0  # a zero in the product's source
X[2, 3] = 0.0
COORD0 = np.array([0.0, 0.5, 1.7, 3.0])
COORD1 = np.array([0.0, 1.0, 1.5, 2.5, 4.5])

# ----------------------------------------------------------------------------- gradient

GRADIENT = {
    "default": lambda T, x, c0, c1: T.gradient(x),
    "scalar_dim": lambda T, x, c0, c1: T.gradient(x, spacing=2.0, dim=1),
    "scalar_dim_order2": lambda T, x, c0, c1: T.gradient(x, spacing=0.5, dim=-1, edge_order=2),
    "int_spacing": lambda T, x, c0, c1: T.gradient(x, spacing=3),
    "scalar_list": lambda T, x, c0, c1: T.gradient(x, spacing=[2.0, 3.0], edge_order=2),
    "dims": lambda T, x, c0, c1: T.gradient(x, dim=[1, 0]),
    "scalar_list_dims": lambda T, x, c0, c1: T.gradient(x, spacing=[2.0], dim=[0]),
    "coordinates": lambda T, x, c0, c1: T.gradient(x, spacing=[c0, c1]),
    "coordinates_order2": lambda T, x, c0, c1: T.gradient(x, spacing=(c0, c1), edge_order=2),
    "coordinates_dim": lambda T, x, c0, c1: T.gradient(x, spacing=[c1], dim=1),
    "integer_input": lambda T, x, c0, c1: T.gradient((x * 10).long(), edge_order=2),
    "float32": lambda T, x, c0, c1: T.gradient(x.float(), spacing=0.1),
}


@pytest.mark.parametrize("name", sorted(GRADIENT))
def test_gradient(name):
    # ATen's own slice/arithmetic/cat sequence: bit for bit
    # ATen's own slice/arithmetic/cat sequence: values bit for bit (rtol 1e-15 leaves the
    # gradients' accumulation order a last bit)
    compare(GRADIENT[name], [X, COORD0, COORD1], grad=True, rtol=1e-15, atol=0)


@pytest.mark.parametrize("call", [
    "T.gradient(x, dim=5)", "T.gradient(x, spacing=[1.0, 2.0, 3.0])",
    "T.gradient(x, spacing=[1.0, 2.0], dim=1)", "T.gradient(x, edge_order=3)",
    "T.gradient(x[:, :2], edge_order=2)", "T.gradient(x.byte())", "T.gradient(x, dim=[0, 0])",
    "T.gradient(x, spacing=[x, x])", "T.gradient(x, spacing=(x[0],))",
    "T.gradient(x, spacing=x[0], dim=0)",
])
def test_gradient_errors(call):
    raises_like(lambda T, x: eval(call), X)


# ----------------------------------------------------------------------------- index_reduce

@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    def fn(T, x, s):
        idx = T.tensor([0, 2, 0])
        a = T.index_reduce(x, 0, idx, s, reduce, include_self=include_self)
        b = x.index_reduce(1, T.tensor([4, 4, 0, 1, 2]), x * 2, reduce,
                           include_self=include_self)
        return a, b
    compare(fn, [X, S], grad=True, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_int32_index(include_self):
    """With include_self=False PyTorch's backward index_fill's the int32 index and raises."""
    def fn(T, x, s):
        return T.index_reduce(x, 0, T.tensor([0, 2, 0], dtype=T.int32), s, "amax",
                              include_self=include_self)
    if include_self:
        compare(fn, [X, S], grad=True, rtol=1e-14, atol=1e-15)
    else:
        compare(fn, [X, S])
        raises_like(lambda T, x, s: fn(T, x.requires_grad_(), s).sum().backward(), X, S)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_integer_and_inplace(reduce):
    xi, si = (X * 10).astype(np.int64), (S * 10).astype(np.int64)

    def fn(T, x, s):
        idx = T.tensor([0, 2, 0])
        y = x.clone()
        r = y.index_reduce_(0, idx, s, reduce, include_self=False)
        return T.index_reduce(x, 0, idx, s, reduce), y, r is y
    compare(fn, [xi, si], rtol=0, atol=0)

    def inplace(T, x, s):
        y = x * 1
        y.index_reduce_(0, T.tensor([1, 1, 3]), s, reduce)
        return y
    compare(inplace, [X, S], grad=True, rtol=1e-14, atol=1e-15)


def test_index_reduce_scalar_and_vector():
    def fn(T, x, s):
        return (T.index_reduce(x[0], 0, T.tensor([1, 3, 1]), s[:, 0], "prod"),
                T.index_reduce(x[0, 0], 0, T.tensor([0]), s[0, 0], "amax"))
    compare(fn, [X, S], grad=True)


@pytest.mark.parametrize("call", [
    "T.index_reduce(x, 0, i, s, 'sum')", "T.index_reduce(x, 0, i.float(), s, 'prod')",
    "T.index_reduce(x, 0, i, s.float(), 'prod')", "T.index_reduce(x, 0, i + 2, s, 'prod')",
    "T.index_reduce(x, 0, i - 1, s, 'prod')", "T.index_reduce(x, 0, i[:2], s, 'prod')",
    "T.index_reduce(x, 0, i, s[:, :4], 'prod')", "T.index_reduce(x, 2, i, s, 'prod')",
    "T.index_reduce(x, 0, i.view(3, 1), s, 'prod')",
])
def test_index_reduce_errors(call):
    raises_like(lambda T, x, s: eval(call, {"T": T, "x": x, "s": s,
                                            "i": T.tensor([0, 2, 0])}), X, S)


def _torch_index_reduce_warnings():
    """PyTorch's warnings for two index_reduce calls, in a fresh process (TORCH_WARN_ONCE)."""
    import subprocess
    import sys
    code = ("import warnings, torch\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    for _ in range(2):\n"
            "        torch.index_reduce(torch.ones(2), 0, torch.tensor([0]), torch.ones(1), 'prod')\n"
            "print(repr([str(x.message) for x in w]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip())


def test_index_reduce_warns_once_as_pytorch():
    import importlib
    pytest.importorskip("torch")
    mod = importlib.import_module("jitgrad.ops.index_reduce")
    mod._warned = False  # a fresh process's state
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        jitgrad.index_reduce(jitgrad.ones(2), 0, jitgrad.tensor([0]), jitgrad.ones(1), "prod")
        jitgrad.index_reduce(jitgrad.ones(2), 0, jitgrad.tensor([0]), jitgrad.ones(1), "prod")
    assert [str(x.message) for x in w] == _torch_index_reduce_warnings()


# ----------------------------------------------------------------------------- vander, norms

VANDER = {
    "default": lambda T, x: T.vander(x[0]),
    "N": lambda T, x: T.vander(x[0], 3),
    "increasing": lambda T, x: T.vander(x[0], N=6, increasing=True),
    "N1": lambda T, x: T.vander(x[0], 1),
    "N0": lambda T, x: T.vander(x[0], 0),
    "int": lambda T, x: T.vander((x[0] * 3).long()),
    "int32": lambda T, x: T.vander((x[0] * 3).int(), increasing=True),
    "bool": lambda T, x: T.vander(x[0] > 0),
    "float32": lambda T, x: T.vander(x[0].float()),
}


@pytest.mark.parametrize("name", sorted(VANDER))
def test_vander(name):
    compare(VANDER[name], [X], rtol=0, atol=0)


@pytest.mark.parametrize("increasing", [False, True])
def test_vander_node_and_failing_backward(increasing):
    """ATen's vander writes cumprod's result over cumprod's own saved input: its backward
    raises the version-counter error; jitgrad's graph is the same, so it raises too."""
    def fn(T):
        x = T.tensor(X[0], requires_grad=True)
        v = T.vander(x, increasing=increasing)
        return v.grad_fn.name()
    agree(fn)
    raises_like(lambda T, x: T.vander(x[0].requires_grad_(), increasing=increasing).sum()
                .backward(), X)


@pytest.mark.parametrize("call", ["T.vander(x)", "T.vander(x[0], -1)", "T.vander(1)"])
def test_vander_errors(call):
    raises_like(lambda T, x: eval(call), X)


NORMS = {
    "frobenius": lambda T, x: T.frobenius_norm(x, [1]),
    "frobenius_keepdim": lambda T, x: T.frobenius_norm(x.reshape(2, 2, 5), (0, 2), True),
    "frobenius_int_dim": lambda T, x: T.frobenius_norm(x, 0),
    "nuclear": lambda T, x: T.nuclear_norm(x),
    "nuclear_keepdim": lambda T, x: T.nuclear_norm(x, True),
    "nuclear_dim": lambda T, x: T.nuclear_norm(x.reshape(2, 2, 5), [1, 2]),
    "nuclear_batch": lambda T, x: T.nuclear_norm(x.reshape(2, 2, 5)),
    "nuclear_dim_keepdim": lambda T, x: T.nuclear_norm(x.reshape(2, 2, 5), (0, 2), True),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_deprecated_norms(name):
    compare(NORMS[name], [X], grad=True, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("call", ["T.frobenius_norm(x)", "T.frobenius_norm(x, [0, 1, 0])",
                                  "T.nuclear_norm(x[0])",
                                  "T.matrix_rank(x)", "T.matrix_rank(x, 0.1, True)"])
def test_norm_errors(call):
    raises_like(lambda T, x: eval(call), X)


def test_deprecation_warnings_once():
    import importlib
    mod = importlib.import_module("jitgrad.ops.toplevel_more")
    mod._warned.discard("frobenius_norm")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = jitgrad.ones(2, 2)
        jitgrad.frobenius_norm(x, [1])
        jitgrad.frobenius_norm(x, [1])
    assert len(w) == 1 and "at::frobenius_norm is deprecated" in str(w[0].message)


# ----------------------------------------------------------------------------- factories, flags

def test_empty_permuted():
    def fn(T):
        a = T.empty_permuted((2, 3, 4), (0, 2, 1))
        b = T.empty_permuted((2, 3), (1, 0), dtype=T.float64, requires_grad=True)
        c = T.empty_permuted((2, 1, 3), (2, 1, 0))
        return [(t.shape, t.stride(), t.dtype, t.requires_grad) for t in (a, b, c)]
    agree(fn)


@pytest.mark.parametrize("call", ["T.empty_permuted((2, 3), (0,))",
                                  "T.empty_permuted((2, 3), (0, 0))"])
def test_empty_permuted_errors(call):
    raises_like(lambda T, x: eval(call), X)


def test_predicates_and_settings():
    def fn(T):
        x = T.ones(2)
        return (T.is_storage(x), T.is_storage([1]), T.is_distributed(x), x.is_distributed(),
                T.init_num_threads())
    agree(fn)


def test_set_anomaly_enabled():
    def fn(T):
        try:
            T.set_anomaly_enabled(True)
            on = (T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled())
            T.set_anomaly_enabled(True, False)
            nan_off = T.is_anomaly_check_nan_enabled()
        finally:
            T.set_anomaly_enabled(False)
        return on, nan_off, T.is_anomaly_enabled()
    agree(fn)
    raises_like(lambda T, x: T.set_anomaly_enabled(1), X)
    raises_like(lambda T, x: T.set_anomaly_enabled(True, "no"), X)


@pytest.mark.parametrize("t", ["T.DoubleTensor", "'torch.DoubleTensor'", "'torch.FloatTensor'"])
def test_set_default_tensor_type(t):
    def fn(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                T.set_default_tensor_type(eval(t))
                return T.get_default_dtype(), T.tensor([1.5]).dtype
            finally:
                T.set_default_dtype(T.float32)
    agree(fn)


@pytest.mark.parametrize("t", ["T.LongTensor", "T.float64", "3"])
def test_set_default_tensor_type_errors(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_like(lambda T, x: T.set_default_tensor_type(eval(t)), X)


# ----------------------------------------------------------------------------- Tensor methods

METHODS = {
    "dist": lambda T, x, s: x[:3].dist(s),
    "dist_p": lambda T, x, s: x[:3].dist(s, 3),
    "matrix_exp": lambda T, x, s: (x[:, :4] * 0.3).matrix_exp(),
    "hardshrink": lambda T, x, s: x.hardshrink(),
    "hardshrink_lambd": lambda T, x, s: x.hardshrink(0.8),
    "prelu": lambda T, x, s: x.prelu(T.tensor([0.25], dtype=T.float64)),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods(name):
    compare(METHODS[name], [X, S], grad=True, rtol=1e-12, atol=1e-14)


def test_new_empty_strided():
    def fn(T):
        x = T.ones(2, dtype=T.float64)
        a = x.new_empty_strided((2, 3), (1, 2))
        b = x.new_empty_strided([3], [2], dtype=T.int32, requires_grad=False)
        return [(t.shape, t.stride(), t.dtype, t.requires_grad) for t in (a, b)]
    agree(fn)


def test_names_present_in_dir():
    for name in ("gradient", "index_reduce", "vander", "t_copy", "conv2d", "lstm", "nn"):
        assert name in dir(jitgrad)
