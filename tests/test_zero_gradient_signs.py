"""Zero gradients carry PyTorch's sign, and a NaN or infinite upstream gradient reaches an input
only where PyTorch lets it.

Where PyTorch's formula masks (``where(mask, grad, 0)``, ``masked_fill``, ``zeros_like(grad)``,
``threshold_backward``: relu, clamp, maximum, where, floor, sign, ...) the gradient is exactly +0
whatever the upstream gradient is, NaN included; where it multiplies (``grad * self.sgn()`` for
abs, ``grad * isfinite(self)`` for nan_to_num, ...) a negative upstream gradient gives -0 and a NaN
one NaN. This sweeps every differentiable registry op (and the public calls that reach them)
over inputs that hit the masked / zero-derivative regions (signed zeros, ties, bounds, +-inf,
NaN) with upstream gradients -1, 1, NaN, inf and -inf, float32 and float64, and compares with
PyTorch: NaN-ness, sign bit, zero-ness and infinity of every element (nonzero finite values are
the other suites' business: test_elementwise_parity, test_registry_gradcheck). The same sweep runs through the fused backward path (the op followed by ``* ones``, so
the fusion engine emits one kernel holding the op's VJP body).
"""
import itertools

import numpy as np
import pytest

import jitgrad as jt
from jitgrad.autograd import is_fusion_enabled, profile, set_fusion_enabled
from jitgrad.ops.registry import OPS

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
VALUES = [-5.0, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0, INF, -INF, NAN]
UPSTREAM = [-1.0, 1.0, NAN, INF, -INF]
DTYPES = ["float32", "float64"]


def _f(lib):
    return lib.nn.functional


def _registry_f(lib):
    """F for torch; for jitgrad the registry ops F.gelu/F.softplus wrap: on CPU float tensors F
    runs ATen's exact kernels (nn/functional/activation_kernels.py), which do not join backward
    fusion, and this file checks the registry op's fused VJP."""
    if lib is jt:
        from jitgrad.ops import functional_math
        return functional_math
    return lib.nn.functional


# case name -> (registry op it reaches, arity, the call written once for jitgrad and torch)
CASES = {
    "abs": ("abs", 1, lambda L, a: L.abs(a)),
    "acos": ("acos", 1, lambda L, a: L.acos(a)),
    "acosh": ("acosh", 1, lambda L, a: L.acosh(a)),
    "add": ("add", 2, lambda L, a, b: a + b),
    "add_alpha": ("add_alpha", 2, lambda L, a, b: L.add(a, b, alpha=-0.5)),
    "sub_alpha": ("sub_alpha", 2, lambda L, a, b: L.sub(a, b, alpha=2.5)),
    "addcdiv": ("addcdiv", 3, lambda L, a, b, c: L.addcdiv(a, b, c, value=0.5)),
    "addcmul": ("addcmul", 3, lambda L, a, b, c: L.addcmul(a, b, c, value=0.5)),
    "asin": ("asin", 1, lambda L, a: L.asin(a)),
    "asinh": ("asinh", 1, lambda L, a: L.asinh(a)),
    "atan": ("atan", 1, lambda L, a: L.atan(a)),
    "atan2": ("atan2", 2, lambda L, a, b: L.atan2(a, b)),
    "atanh": ("atanh", 1, lambda L, a: L.atanh(a)),
    "ceil": ("ceil", 1, lambda L, a: L.ceil(a)),
    "clamp": ("clamp", 1, lambda L, a: L.clamp(a, -1.0, 1.0)),
    "clamp_min": ("clamp", 1, lambda L, a: L.clamp(a, min=0.5)),
    "clamp_max": ("clamp", 1, lambda L, a: L.clamp_max(a, 0.5)),
    "copysign": ("copysign", 2, lambda L, a, b: L.copysign(a, b)),
    "copysign_scalar": ("copysign_scalar", 1, lambda L, a: L.copysign(a, -2.0)),
    "copysign_scalar0": ("copysign_scalar", 1, lambda L, a: L.copysign(a, 0.0)),
    "cos": ("cos", 1, lambda L, a: L.cos(a)),
    "cosh": ("cosh", 1, lambda L, a: L.cosh(a)),
    "deg2rad": ("deg2rad", 1, lambda L, a: L.deg2rad(a)),
    "digamma": ("digamma", 1, lambda L, a: L.digamma(a)),
    "div": ("div", 2, lambda L, a, b: a / b),
    "erf": ("erf", 1, lambda L, a: L.erf(a)),
    "erfc": ("erfc", 1, lambda L, a: L.erfc(a)),
    "erfinv": ("erfinv", 1, lambda L, a: L.erfinv(a)),
    "exp": ("exp", 1, lambda L, a: L.exp(a)),
    "exp2": ("exp2", 1, lambda L, a: L.exp2(a)),
    "expm1": ("expm1", 1, lambda L, a: L.expm1(a)),
    "floor": ("floor", 1, lambda L, a: L.floor(a)),
    "fmax": ("fmax", 2, lambda L, a, b: L.fmax(a, b)),
    "fmin": ("fmin", 2, lambda L, a, b: L.fmin(a, b)),
    "fmod": ("fmod", 2, lambda L, a, b: L.fmod(a, b)),
    "fmod_scalar": ("fmod_scalar", 1, lambda L, a: L.fmod(a, 1.5)),
    "frac": ("frac", 1, lambda L, a: L.frac(a)),
    "gelu": ("gelu", 1, lambda L, a: _registry_f(L).gelu(a)),
    "gelu_tanh": ("gelu_tanh", 1, lambda L, a: _registry_f(L).gelu(a, approximate="tanh")),
    "hypot": ("hypot", 2, lambda L, a, b: L.hypot(a, b)),
    "i0": ("i0", 1, lambda L, a: L.i0(a)),
    "leaky_relu": ("leaky_relu", 1, lambda L, a: _f(L).leaky_relu(a, 0.1)),
    "leaky_relu0": ("leaky_relu", 1, lambda L, a: _f(L).leaky_relu(a, 0.0)),
    "lerp": ("lerp", 2, lambda L, a, b: L.lerp(a, b, 0.3)),
    "lerp_tensor": ("lerp_tensor", 3, lambda L, a, b, c: L.lerp(a, b, c)),
    "lgamma": ("lgamma", 1, lambda L, a: L.lgamma(a)),
    "log": ("log", 1, lambda L, a: L.log(a)),
    "log10": ("log10", 1, lambda L, a: L.log10(a)),
    "log1p": ("log1p", 1, lambda L, a: L.log1p(a)),
    "log2": ("log2", 1, lambda L, a: L.log2(a)),
    "logaddexp": ("logaddexp", 2, lambda L, a, b: L.logaddexp(a, b)),
    "logaddexp2": ("logaddexp2", 2, lambda L, a, b: L.logaddexp2(a, b)),
    "logit": ("logit", 1, lambda L, a: L.logit(a)),
    "logit_eps": ("logit", 1, lambda L, a: L.logit(a, eps=0.25)),
    "maximum": ("maximum", 2, lambda L, a, b: L.maximum(a, b)),
    "maximum_0d": ("maximum", 1, lambda L, a: L.maximum(a, L.tensor(1.0, dtype=a.dtype))),
    "minimum": ("minimum", 2, lambda L, a, b: L.minimum(a, b)),
    "mul": ("mul", 2, lambda L, a, b: a * b),
    "nan_to_num": ("nan_to_num", 1, lambda L, a: L.nan_to_num(a)),
    "neg": ("neg", 1, lambda L, a: -a),
    "nextafter": ("nextafter", 2, lambda L, a, b: L.nextafter(a, b)),
    "polygamma": ("polygamma", 1, lambda L, a: L.polygamma(1, a)),
    "pow": ("pow", 1, lambda L, a: L.pow(a, 2.5)),
    "pow0": ("pow", 1, lambda L, a: L.pow(a, 0.0)),
    "pow_neg": ("pow", 1, lambda L, a: L.pow(a, -3.0)),
    "pow4": ("pow", 1, lambda L, a: L.pow(a, 4.0)),
    "pow_cube": ("pow_cube", 1, lambda L, a: L.pow(a, 3.0)),
    "pow_inverse_square": ("pow_inverse_square", 1, lambda L, a: L.pow(a, -2.0)),
    "pow_reciprocal": ("pow_reciprocal", 1, lambda L, a: L.pow(a, -1)),
    "pow_rsqrt": ("pow_rsqrt", 1, lambda L, a: L.pow(a, -0.5)),
    "pow_sqrt": ("pow_sqrt", 1, lambda L, a: L.pow(a, 0.5)),
    "pow_tensor": ("pow_tensor", 2, lambda L, a, b: L.pow(a, b)),
    "rad2deg": ("rad2deg", 1, lambda L, a: L.rad2deg(a)),
    "reciprocal": ("reciprocal", 1, lambda L, a: L.reciprocal(a)),
    "relu": ("relu", 1, lambda L, a: L.relu(a)),
    "remainder": ("remainder", 2, lambda L, a, b: L.remainder(a, b)),
    "remainder_scalar": ("remainder_scalar", 1, lambda L, a: L.remainder(a, 1.5)),
    "round": ("round", 1, lambda L, a: L.round(a)),
    "round_decimals": ("round_decimals", 1, lambda L, a: L.round(a, decimals=1)),
    "rpow": ("rpow", 1, lambda L, b: L.pow(2.0, b)),
    "rpow0": ("rpow", 1, lambda L, b: L.pow(0.0, b)),
    "rsqrt": ("rsqrt", 1, lambda L, a: L.rsqrt(a)),
    "rsub": ("rsub", 1, lambda L, a: L.rsub(a, 1.5)),
    "rsub_tensor": ("rsub_tensor", 2, lambda L, a, b: L.rsub(a, b)),
    "rxlogy": ("rxlogy", 1, lambda L, b: L.xlogy(2.0, b)),
    "rxlogy0": ("rxlogy", 1, lambda L, b: L.xlogy(0.0, b)),
    "sigmoid": ("sigmoid", 1, lambda L, a: L.sigmoid(a)),
    "sign": ("sign", 1, lambda L, a: L.sign(a)),
    "sin": ("sin", 1, lambda L, a: L.sin(a)),
    "sinc": ("sinc", 1, lambda L, a: L.sinc(a)),
    "sinh": ("sinh", 1, lambda L, a: L.sinh(a)),
    "softplus": ("softplus", 1, lambda L, a: _registry_f(L).softplus(a, beta=1.5,
                                                                 threshold=1.5)),
    "special_entr": ("special_entr", 1, lambda L, a: L.special.entr(a)),
    "special_erfcx": ("special_erfcx", 1, lambda L, a: L.special.erfcx(a)),
    "special_i0e": ("special_i0e", 1, lambda L, a: L.special.i0e(a)),
    "special_i1": ("special_i1", 1, lambda L, a: L.special.i1(a)),
    "special_i1e": ("special_i1e", 1, lambda L, a: L.special.i1e(a)),
    "special_log_ndtr": ("special_log_ndtr", 1, lambda L, a: L.special.log_ndtr(a)),
    "special_ndtri": ("special_ndtri", 1, lambda L, a: L.special.ndtri(a)),
    "special_rxlog1py": ("special_rxlog1py", 1, lambda L, b: L.special.xlog1py(2.0, b)),
    "special_xlog1py": ("special_xlog1py", 2, lambda L, a, b: L.special.xlog1py(a, b)),
    "special_xlog1py_scalar": ("special_xlog1py_scalar", 1,
                               lambda L, a: L.special.xlog1py(a, 2.0)),
    "special_xlog1py_scalar_m1": ("special_xlog1py_scalar", 1,
                                  lambda L, a: L.special.xlog1py(a, -1.0)),
    "sqrt": ("sqrt", 1, lambda L, a: L.sqrt(a)),
    "square": ("square", 1, lambda L, a: L.square(a)),
    "sub": ("sub", 2, lambda L, a, b: a - b),
    "tan": ("tan", 1, lambda L, a: L.tan(a)),
    "tanh": ("tanh", 1, lambda L, a: L.tanh(a)),
    "trunc": ("trunc", 1, lambda L, a: L.trunc(a)),
    "where": ("where", 2, lambda L, a, b: L.where(a > b, a, b)),
    "where_scalar": ("where", 1, lambda L, a: L.where(a > 0, a, 0.0)),
    "xlogy": ("xlogy", 2, lambda L, a, b: L.xlogy(a, b)),
    "xlogy_scalar": ("xlogy_scalar", 1, lambda L, a: L.xlogy(a, 2.0)),
    "xlogy_scalar0": ("xlogy_scalar", 1, lambda L, a: L.xlogy(a, 0.0)),
    "xlogy_scalar_neg": ("xlogy_scalar", 1, lambda L, a: L.xlogy(a, -2.0)),
}
# composite ops whose PyTorch backward masks (their own nodes here, written with recorded ops):
# name -> the call (one input)
COMPOSITE = {
    "hardtanh": lambda L, a: _f(L).hardtanh(a),
    "hardtanh_bounds": lambda L, a: _f(L).hardtanh(a, -2.0, 0.5),
    "hardtanh_inplace": lambda L, a: _f(L).hardtanh(a * 1, inplace=True),
    "relu6": lambda L, a: _f(L).relu6(a),
    "hardswish": lambda L, a: _f(L).hardswish(a),
    "hardswish_inplace": lambda L, a: _f(L).hardswish(a * 1, inplace=True),
    "hardsigmoid": lambda L, a: _f(L).hardsigmoid(a),
    "softshrink": lambda L, a: _f(L).softshrink(a, 0.5),
    "hardshrink": lambda L, a: _f(L).hardshrink(a, 0.5),
    "threshold": lambda L, a: _f(L).threshold(a, 0.5, -3.0),
    "elu": lambda L, a: _f(L).elu(a),
    "elu_inplace": lambda L, a: _f(L).elu(a * 1, inplace=True),
    "selu": lambda L, a: _f(L).selu(a),
    "selu_inplace": lambda L, a: _f(L).selu(a * 1, inplace=True),
    "celu": lambda L, a: _f(L).celu(a, 0.7),
    "celu_inplace": lambda L, a: _f(L).celu(a * 1, 0.7, inplace=True),
    "relu_inplace": lambda L, a: (a * 1).relu_(),
    "trunc_div": lambda L, a: L.div(a, 2.0, rounding_mode="trunc"),
    "floor_div": lambda L, a: L.div(a, 2.0, rounding_mode="floor"),
}
# reductions and selections (PyTorch writes the gradient into zeros): name -> the call on the
# VALUES tensor; the upstream gradient is each UPSTREAM value in turn
REDUCING = {
    "max_all": lambda L, a: a.max(),
    "min_all": lambda L, a: a.min(),
    "max_all_no_nan": lambda L, a: a[:-1].max(),
    "max_dim": lambda L, a: a.reshape(1, -1).max(1)[0],
    "amax": lambda L, a: a.reshape(1, -1).amax(1),
    "median": lambda L, a: a.median(),
    "median_no_nan": lambda L, a: a[:-1].median(),
    "nanmedian": lambda L, a: a.nanmedian(),
    "kthvalue": lambda L, a: a.reshape(1, -1).kthvalue(3, 1)[0],
    "topk": lambda L, a: a.topk(3)[0],
    "sort": lambda L, a: a.sort()[0][:4],
    "gather": lambda L, a: a.gather(0, L.tensor([0, 2, 2, 5])),
    "index": lambda L, a: a[L.tensor([1, 3, 3])],
    "max_pool1d": lambda L, a: _f(L).max_pool1d(a[:12].reshape(1, 1, -1), 3),
}
# registry ops with no public elementwise call of their own: the LSTM/GRU cells' fused gate
# arithmetic (reached through nn.LSTMCell/GRUCell, whose own tests compare with PyTorch)
NOT_SWEPT = {"lstm_cell_hidden", "lstm_cell_state", "gru_cell"}
# inputs where PyTorch's own CPU kernel answers differently in its vectorized lanes and in its
# scalar tail (so by the element's position): logit's gradient at -0.0 is dy * inf (scalar) or
# dy / (x * (1 - x)) = -inf * sign(dy) (vectorized); logit(eps)'s at NaN is NaN or 0
UNSTABLE_IN_TORCH = {"logit": ["-0.0"], "logit_eps": ["nan"]}


def _grid(name, arity):
    """Every input combination (a third operand from a short list), each repeated once per
    upstream value, padded with plain elements to a multiple of 64 so that every one of them
    lands in a vector lane of PyTorch's CPU kernels (a few of those answer differently in the
    scalar tail at a NaN input; the vector lanes' answer is the one jitgrad gives); returns
    (operand arrays, upstream array)."""
    values = [v for v in VALUES if repr(v) not in UNSTABLE_IN_TORCH.get(name, ())]
    third = [[-1.0, 0.0, 0.5, NAN]] if arity == 3 else []
    combos = list(itertools.product(*([values] * min(arity, 2) + third)))
    rows = [c for c in combos for _ in UPSTREAM]
    g = [u for _ in combos for u in UPSTREAM]
    pad = -len(rows) % 64
    rows += [(0.25,) * len(combos[0])] * pad
    g += [1.0] * pad
    cols = list(zip(*rows))
    return [np.array(c) for c in cols], np.array(g)


def _grads(lib, fn, xs, g, dtype, times_ones=False):
    dt = getattr(lib, dtype)
    ts = [lib.tensor(x, dtype=dt, requires_grad=True) for x in xs]
    out = fn(lib, *ts)
    if times_ones:  # a second node after the op: its backward and the op's fuse into one kernel
        out = out * lib.ones(tuple(out.shape), dtype=out.dtype)
    out.backward(lib.tensor(g, dtype=out.dtype))
    return [t.grad.numpy() for t in ts]


def _check(name, expected, got, xs, g):
    for k, (e, r) in enumerate(zip(expected, got)):
        assert r.dtype == e.dtype, (name, k, r.dtype, e.dtype)
        bad = ((np.isnan(e) != np.isnan(r))
               | (~np.isnan(e) & (np.signbit(e) != np.signbit(r)))
               | ((e == 0) != (r == 0)) | (np.isinf(e) != np.isinf(r)))
        if bad.any():
            i = np.flatnonzero(bad)[:5]
            rows = [(tuple(float(x[j]) for x in xs), float(g[j]), float(e[j]), float(r[j]))
                    for j in i]
            raise AssertionError(f"{name} input {k}: {int(bad.sum())} elements differ from "
                                 f"PyTorch; (inputs, upstream, torch, jitgrad): {rows}")


def test_every_differentiable_op_is_swept():
    swept = {op for op, _, _ in CASES.values()}
    diff = {n for n, op in OPS.items() if op.differentiable}
    assert diff - swept - NOT_SWEPT == set(), "add a case for each new differentiable op"
    assert NOT_SWEPT <= diff


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_zero_gradient_signs_match_torch(name, dtype):
    _, arity, fn = CASES[name]
    xs, g = _grid(name, arity)
    _check(name, _grads(torch, fn, xs, g, dtype), _grads(jt, fn, xs, g, dtype), xs, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(COMPOSITE))
def test_composite_zero_gradient_signs_match_torch(name, dtype):
    fn = COMPOSITE[name]
    xs, g = _grid(name, 1)
    _check(name, _grads(torch, fn, xs, g, dtype), _grads(jt, fn, xs, g, dtype), xs, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCING))
def test_reduction_zero_gradient_signs_match_torch(name, dtype):
    fn = REDUCING[name]
    xs = [np.array(VALUES)]
    for u in UPSTREAM:
        got = []
        for lib in (torch, jt):
            x = lib.tensor(xs[0], dtype=getattr(lib, dtype), requires_grad=True)
            out = fn(lib, x)
            out.backward(lib.full(tuple(out.shape), u, dtype=out.dtype))
            got.append([x.grad.numpy()])
        _check(f"{name} (upstream {u})", got[0], got[1], xs, np.full(len(VALUES), u))


@pytest.fixture
def fused():
    old = is_fusion_enabled()
    set_fusion_enabled(True)
    yield
    set_fusion_enabled(old)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_zero_gradient_signs_through_fused_backward(name, dtype, fused):
    _, arity, fn = CASES[name]
    xs, g = _grid(name, arity)
    expected = _grads(torch, fn, xs, g, dtype, times_ones=True)
    with profile() as p:
        got = _grads(jt, fn, xs, g, dtype, times_ones=True)
    assert p.fused_groups >= 1, f"{name}: the backward did not run fused"
    _check(name, expected, got, xs, g)


def test_examples_from_the_report():
    """The cases users saw (-0.0 and NaN where PyTorch gives +0)."""
    def run(lib):
        out = []
        x = lib.tensor([-5.0, 0.5], requires_grad=True)
        lib.relu(x).backward(lib.tensor([-1.0, 1.0]))
        out.append(x.grad)
        x = lib.tensor([5.0, 0.5, -3.0], requires_grad=True)
        lib.clamp(x, -1, 1).backward(lib.tensor([-1.0, NAN, NAN]))
        out.append(x.grad)
        z = lib.tensor([5.0, 0.5], requires_grad=True)
        lib.maximum(z, lib.tensor(1.0)).backward(lib.tensor([-1.0, NAN]))
        out.append(z.grad)
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        lib.where(lib.tensor([True, False]), w, 0.0).backward(lib.tensor([NAN, -2.0]))
        out.append(w.grad)
        return [t.numpy() for t in out]

    for e, r in zip(run(torch), run(jt)):
        np.testing.assert_array_equal(np.signbit(r), np.signbit(e))
        np.testing.assert_array_equal(r, e)  # NaNs in the same places, values equal


@pytest.mark.parametrize("dtype", DTYPES)
def test_constant_gradient_with_create_graph(dtype):
    """floor/sign/round's VJP is the constant 0 (PyTorch: zeros_like(grad)); evaluated on
    Tensors for create_graph it is a zero Tensor of the gradient's dtype and shape, no graph."""
    for lib in (torch, jt):
        x = lib.tensor([1.5, -2.5, 0.0], dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.floor(x) + lib.sign(x) * 2 + lib.round(x)
        (gx,) = lib.autograd.grad(y, x, lib.tensor([-1.0, NAN, INF], dtype=y.dtype),
                                  create_graph=True)
        assert str(gx.dtype).endswith(dtype)
        assert gx.shape == x.shape
        assert gx.grad_fn is None and not gx.requires_grad
        assert not np.signbit(gx.detach().numpy()).any() and (gx.detach().numpy() == 0).all()
