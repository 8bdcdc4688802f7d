"""Every elementwise op of the registry: forward against an independent NumPy/SciPy reference
(float32 and float64), gradients against central finite differences in float64 (first and
second order), on shapes that exercise broadcasting.

The table below must name every op in the registry: a new op without a reference fails
``test_every_op_has_a_reference``.
"""
import numpy as np
import pytest
import scipy.special as sp

import jitgrad as jg
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.ops.elementwise_call import call
from jitgrad.ops.registry import OPS

RNG = np.random.default_rng(1234)


def away_from(values, points, margin):
    """Push values at least ``margin`` away from the kinks in ``points``."""
    v = values.copy()
    for p in points:
        close = np.abs(v - p) < margin
        v[close] = p + np.where(v[close] >= p, margin, -margin) * 2
    return v


def uniform(lo, hi, kinks=(), margin=0.05):
    def make(shape):
        return away_from(RNG.uniform(lo, hi, size=shape), kinks, margin)
    return make


ANY = uniform(-2.0, 2.0)
POS = uniform(0.2, 3.0)
NONZERO = uniform(-2.0, 2.0, kinks=(0.0,), margin=0.2)
UNIT = uniform(-1.3, 1.3)
INSIDE = uniform(-0.9, 0.9)  # asin/acos: inside the domain, away from the poles at +-1
NOT_INT = uniform(-2.0, 2.0, kinks=(-2.0, -1.0, 0.0, 1.0, 2.0))  # floor/ceil/trunc/frac jumps
NOT_HALF = uniform(-2.0, 2.0, kinks=(-1.5, -0.5, 0.5, 1.5))  # round's jumps

SHIFTED = uniform(0.05, 0.95)  # the shifted Chebyshev polynomials' (0, 1)


def DEGREE(shape):  # noqa: N802 - a generator among the upper-case ones
    """Polynomial degrees 0..8 (integer-valued floats, as the kernels take n)."""
    return RNG.integers(0, 9, size=shape).astype(np.float64)


def LOW_DEGREE(shape):  # noqa: N802
    """Degrees 0..5: Hermite's larger coefficients cancel beyond float32's 2e-6 at higher ones."""
    return RNG.integers(0, 6, size=shape).astype(np.float64)


def _chebyshev_vw(x, n, trig):
    """V_n (cos) / W_n (sin) of the third / fourth kind: trig((n + 1/2) t) / trig(t / 2)."""
    t = np.arccos(x.astype(np.float64))  # the reference in double for float32 inputs too
    return trig((n + 0.5) * t) / trig(t / 2)


# op name -> (numpy reference(*inputs, **aux), input generators, aux values)
REFERENCE = {
    "add": (np.add, (ANY, ANY), {}),
    "sub": (np.subtract, (ANY, ANY), {}),
    "add_alpha": (lambda a, b, alpha: a + alpha * b, (ANY, ANY), {"alpha": 0.3}),
    "sub_alpha": (lambda a, b, alpha: a - alpha * b, (ANY, ANY), {"alpha": 0.3}),
    "div_trunc": (lambda a, b: np.trunc(a / b), (ANY, NONZERO), {}),
    "rsub": (lambda a, other: other - a, (ANY,), {"other": 1.5}),
    "mul": (np.multiply, (ANY, ANY), {}),
    "div": (np.divide, (ANY, NONZERO), {}),
    "reciprocal": (np.reciprocal, (NONZERO,), {}),
    "neg": (np.negative, (ANY,), {}),
    "pow": (lambda a, exponent: np.power(a, exponent), (POS,), {"exponent": 2.5}),
    "pow_tensor": (np.power, (POS, ANY), {}),
    "rpow": (lambda b, base: np.power(base, b), (ANY,), {"base": 1.7}),
    "square": (np.square, (ANY,), {}),
    "exp": (np.exp, (ANY,), {}),
    "expm1": (np.expm1, (ANY,), {}),
    "log": (np.log, (POS,), {}),
    "log1p": (np.log1p, (POS,), {}),
    "sqrt": (np.sqrt, (POS,), {}),
    "rsqrt": (lambda a: 1 / np.sqrt(a), (POS,), {}),
    "abs": (np.abs, (NONZERO,), {}),
    "sign": (np.sign, (NONZERO,), {}),
    "sin": (np.sin, (ANY,), {}),
    "cos": (np.cos, (ANY,), {}),
    "tan": (np.tan, (UNIT,), {}),
    "tanh": (np.tanh, (ANY,), {}),
    "sigmoid": (sp.expit, (ANY,), {}),
    "erf": (sp.erf, (ANY,), {}),
    "relu": (lambda a: np.maximum(a, 0), (NONZERO,), {}),
    "leaky_relu": (lambda a, negative_slope: np.where(a > 0, a, a * negative_slope), (NONZERO,),
                   {"negative_slope": 0.1}),
    "gelu": (lambda a: 0.5 * a * (1 + sp.erf(a / np.sqrt(2))), (ANY,), {}),
    "gelu_tanh": (lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3))),
                  (ANY,), {}),
    "softplus": (lambda a, beta, threshold: np.where(a * beta > threshold, a,
                                                     np.log1p(np.exp(a * beta)) / beta),
                 (uniform(-2, 2, kinks=(1.0,), margin=0.1),), {"beta": 1.5, "threshold": 1.5}),
    "clamp": (lambda a, lo, hi: np.clip(a, lo, hi), (uniform(-2, 2, kinks=(-0.5, 0.5)),),
              {"lo": -0.5, "hi": 0.5}),
    "maximum": (np.maximum, (ANY, ANY), {}),
    "minimum": (np.minimum, (ANY, ANY), {}),
    "where": (lambda cond, a, b: np.where(cond, a, b), (ANY, ANY), {"cond": "mask"}),
    "eq": (np.equal, (ANY, ANY), {}),
    "ne": (np.not_equal, (ANY, ANY), {}),
    "lt": (np.less, (ANY, ANY), {}),
    "le": (np.less_equal, (ANY, ANY), {}),
    "gt": (np.greater, (ANY, ANY), {}),
    "ge": (np.greater_equal, (ANY, ANY), {}),
    "isnan_": (np.isnan, (ANY,), {}),
    "logical_not": (np.logical_not, (ANY,), {}),
    "logical_and": (np.logical_and, (ANY, ANY), {}),
    "logical_or": (np.logical_or, (ANY, ANY), {}),
    "logical_xor": (np.logical_xor, (ANY, ANY), {}),
    "asin": (np.arcsin, (INSIDE,), {}),
    "acos": (np.arccos, (INSIDE,), {}),
    "atan": (np.arctan, (ANY,), {}),
    "floor": (np.floor, (NOT_INT,), {}),
    "ceil": (np.ceil, (NOT_INT,), {}),
    "trunc": (np.trunc, (NOT_INT,), {}),
    "round": (np.round, (NOT_HALF,), {}),
    "round_decimals": (lambda a, ten_pow, neg: np.round(a * ten_pow) / ten_pow, (ANY,),
                       {"ten_pow": 10.0, "neg": False}),
    "frac": (lambda a: a - np.trunc(a), (NOT_INT,), {}),
    # quotients of random operands are integers with probability 0 (the jumps of fmod/remainder)
    "fmod": (np.fmod, (ANY, NONZERO), {}),
    "fmod_scalar": (lambda a, other: np.fmod(a, other), (ANY,), {"other": 0.7}),
    "remainder": (np.remainder, (ANY, NONZERO), {}),
    "remainder_scalar": (lambda a, other: np.remainder(a, other), (ANY,), {"other": -0.7}),
    "floor_divide": (np.floor_divide, (ANY, NONZERO), {}),
    "isinf": (np.isinf, (ANY,), {}),
    "isfinite": (np.isfinite, (ANY,), {}),
    "isclose": (lambda a, b, rtol, atol, equal_nan: np.isclose(a, b, rtol=rtol, atol=atol,
                                                               equal_nan=equal_nan),
                (ANY, ANY), {"rtol": 0.5, "atol": 0.1, "equal_nan": False}),
    # added with the elementwise parity sweep
    "rsub_tensor": (lambda a, b: b - a, (ANY, ANY), {}),
    "pow_sqrt": (np.sqrt, (POS,), {}),
    "pow_rsqrt": (lambda a: 1.0 / np.sqrt(a), (POS,), {}),
    "pow_reciprocal": (np.reciprocal, (NONZERO,), {}),
    "pow_cube": (lambda a: a ** 3, (ANY,), {}),
    "pow_inverse_square": (lambda a: a ** -2.0, (NONZERO,), {}),
    "log2": (np.log2, (POS,), {}),
    "log10": (np.log10, (POS,), {}),
    "sinh": (np.sinh, (ANY,), {}),
    "cosh": (np.cosh, (ANY,), {}),
    "exp2": (np.exp2, (ANY,), {}),
    "deg2rad": (np.deg2rad, (ANY,), {}),
    "rad2deg": (np.rad2deg, (ANY,), {}),
    "sinc": (np.sinc, (ANY,), {}),
    "logit": (lambda a, lo, hi: sp.logit(np.clip(a, lo, hi)),
              (uniform(0.02, 0.98, kinks=(0.1, 0.9), margin=0.03),), {"lo": 0.1, "hi": 0.9}),
    "hypot": (np.hypot, (ANY, ANY), {}),
    "logaddexp": (np.logaddexp, (ANY, ANY), {}),
    "logaddexp2": (np.logaddexp2, (ANY, ANY), {}),
    "xlogy": (sp.xlogy, (ANY, POS), {}),
    "xlogy_scalar": (lambda a, other: sp.xlogy(a, other), (ANY,), {"other": 1.7}),
    "rxlogy": (lambda b, base: sp.xlogy(base, b), (POS,), {"base": 1.3}),
    "copysign": (np.copysign, (NONZERO, NONZERO), {}),
    "copysign_scalar": (lambda a, other: np.copysign(a, other), (NONZERO,), {"other": -0.7}),
    "fmax": (np.fmax, (ANY, ANY), {}),
    "fmin": (np.fmin, (ANY, ANY), {}),
    "lerp": (lambda a, b, weight: a + weight * (b - a), (ANY, ANY), {"weight": 0.3}),
    "lerp_tensor": (lambda a, b, w: a + w * (b - a), (ANY, ANY, ANY), {}),
    "addcmul": (lambda a, t1, t2, value: a + value * t1 * t2, (ANY, ANY, ANY), {"value": 0.5}),
    "addcdiv": (lambda a, t1, t2, value: a + value * t1 / t2, (ANY, ANY, NONZERO),
                {"value": 0.5}),
    "nan_to_num": (lambda a, nan, posinf, neginf: np.nan_to_num(a, nan=nan, posinf=posinf,
                                                                neginf=neginf),
                   (ANY,), {"nan": 0.0, "posinf": 10.0, "neginf": -10.0}),
    "signbit": (np.signbit, (ANY,), {}),
    "heaviside": (np.heaviside, (ANY, ANY), {}),
    # added with issue 13 (elementwise_special.py)
    "asinh": (np.arcsinh, (ANY,), {}),
    "acosh": (np.arccosh, (uniform(1.2, 3.0),), {}),
    "atanh": (np.arctanh, (INSIDE,), {}),
    "atan2": (np.arctan2, (NONZERO, NONZERO), {}),
    "erfc": (sp.erfc, (uniform(-2.0, 4.0),), {}),
    "erfinv": (sp.erfinv, (uniform(-0.99, 0.99),), {}),
    # the gamma/Bessel/normal family (elementwise_gamma): SciPy's functions away from poles
    "lgamma": (sp.gammaln, (POS,), {}),
    "digamma": (sp.digamma, (POS,), {}),
    "polygamma": (lambda a, order: sp.polygamma(order, a), (POS,), {"order": 2}),
    "i0": (sp.i0, (ANY,), {}),
    "special_i0e": (sp.i0e, (NONZERO,), {}),
    "special_i1": (sp.i1, (ANY,), {}),
    "special_i1e": (sp.i1e, (NONZERO,), {}),
    "special_ndtri": (sp.ndtri, (uniform(0.05, 0.95),), {}),
    "special_entr": (sp.entr, (POS,), {}),
    "special_erfcx": (sp.erfcx, (uniform(-3.0, 60.0),), {}),
    "special_log_ndtr": (sp.log_ndtr, (uniform(-8.0, 3.0),), {}),
    "special_xlog1py": (sp.xlog1py, (ANY, POS), {}),
    "special_xlog1py_scalar": (lambda a, other: sp.xlog1py(a, other), (ANY,), {"other": 0.5}),
    "special_rxlog1py": (lambda b, base: sp.xlog1py(base, b), (POS,), {"base": 1.5}),
    "special_zeta": (sp.zeta, (uniform(1.5, 4.0), uniform(0.5, 3.0)), {}),
    "igamma": (sp.gammainc, (uniform(0.2, 6.0), uniform(0.1, 8.0)), {}),
    "igammac": (sp.gammaincc, (uniform(0.2, 6.0), uniform(0.1, 8.0)), {}),
    # torch.special's Airy/Bessel functions and orthogonal polynomials (elementwise_bessel; no
    # derivatives): SciPy's functions, V/W through their trigonometric forms inside (-1, 1)
    # ATen's ports drop the implicit leading 1 of Cephes' p1evl denominators, so J/Y drift from
    # SciPy's as |x| grows (1e-8 relative at 5, 2e-6 near 6) and Airy below -2.09 is good to
    # ~1e-9: the float64 tolerance holds on |x| <= 1 and for Airy above -2.09; the rest is
    # compared with PyTorch bit for bit in test_special_bessel_polynomials.py
    "special_airy_ai": (lambda a: sp.airy(a)[0], (uniform(-2.0, 6.0),), {}),
    "special_bessel_j0": (sp.j0, (uniform(-1.0, 1.0),), {}),
    "special_bessel_j1": (sp.j1, (uniform(-1.0, 1.0),), {}),
    "special_bessel_y0": (sp.y0, (uniform(0.2, 1.0),), {}),
    "special_bessel_y1": (sp.y1, (uniform(0.2, 1.0),), {}),
    "special_modified_bessel_i1": (sp.i1, (uniform(-10.0, 10.0),), {}),
    "special_modified_bessel_k0": (sp.k0, (uniform(0.1, 10.0),), {}),
    "special_modified_bessel_k1": (sp.k1, (uniform(0.1, 10.0),), {}),
    "special_scaled_modified_bessel_k0": (sp.k0e, (uniform(0.1, 10.0),), {}),
    "special_scaled_modified_bessel_k1": (sp.k1e, (uniform(0.1, 10.0),), {}),
    "special_chebyshev_polynomial_t": (lambda x, n: sp.eval_chebyt(n, x), (INSIDE, DEGREE), {}),
    "special_chebyshev_polynomial_u": (lambda x, n: sp.eval_chebyu(n, x), (INSIDE, DEGREE), {}),
    "special_chebyshev_polynomial_v": (lambda x, n: _chebyshev_vw(x, n, np.cos), (INSIDE, DEGREE),
                                       {}),
    "special_chebyshev_polynomial_w": (lambda x, n: _chebyshev_vw(x, n, np.sin), (INSIDE, DEGREE),
                                       {}),
    "special_shifted_chebyshev_polynomial_t": (lambda x, n: sp.eval_sh_chebyt(n, x),
                                               (SHIFTED, DEGREE), {}),
    "special_shifted_chebyshev_polynomial_u": (lambda x, n: sp.eval_sh_chebyu(n, x),
                                               (SHIFTED, DEGREE), {}),
    "special_shifted_chebyshev_polynomial_v": (lambda x, n: _chebyshev_vw(2 * x - 1, n, np.cos),
                                               (SHIFTED, DEGREE), {}),
    "special_shifted_chebyshev_polynomial_w": (lambda x, n: _chebyshev_vw(2 * x - 1, n, np.sin),
                                               (SHIFTED, DEGREE), {}),
    "special_hermite_polynomial_h": (lambda x, n: sp.eval_hermite(n.astype(int), x),
                                     (UNIT, LOW_DEGREE), {}),
    "special_hermite_polynomial_he": (lambda x, n: sp.eval_hermitenorm(n.astype(int), x),
                                      (UNIT, LOW_DEGREE), {}),
    "special_laguerre_polynomial_l": (lambda x, n: sp.eval_laguerre(n, x), (POS, DEGREE), {}),
    "special_legendre_polynomial_p": (lambda x, n: sp.eval_legendre(n, x), (INSIDE, DEGREE), {}),
    # integer-only: tested on integer dtypes below (counts inside [0, 8), where NumPy's shifts
    # are defined; the out-of-range counts are compared with PyTorch in test_special_ops.py)
    "bitwise_left_shift": (np.left_shift, (lambda s: RNG.integers(-100, 100, s),
                                           lambda s: RNG.integers(0, 8, s)), {}),
    "bitwise_right_shift": (np.right_shift, (lambda s: RNG.integers(-100, 100, s),
                                             lambda s: RNG.integers(0, 8, s)), {}),
    # elementwise_numeric: gcd/lcm integer-only (small values: lcm stays inside int8), ldexp's
    # forward (its node is recorded by ops/numeric.py), nextafter (gradient 1 / 0 off a == b)
    "gcd": (np.gcd, (lambda s: RNG.integers(-6, 7, s), lambda s: RNG.integers(-6, 7, s)), {}),
    "lcm": (np.lcm, (lambda s: RNG.integers(-6, 7, s), lambda s: RNG.integers(-6, 7, s)), {}),
    "ldexp": (lambda a, b: a * np.power(a.dtype.type(2), b), (ANY, ANY), {}),
    "nextafter": (np.nextafter, (ANY, ANY), {}),
    # an LSTM step's fused gate arithmetic (ops/elementwise_rnn.py)
    "lstm_cell_state": (lambda i, f, g, c: sp.expit(f) * c + sp.expit(i) * np.tanh(g),
                        (ANY, ANY, ANY, ANY), {}),
    "lstm_cell_hidden": (lambda o, c: sp.expit(o) * np.tanh(c), (ANY, ANY), {}),
    # a GRU step's fused gate arithmetic (RNN.cpp's GRUCell on the chunked projections)
    "gru_cell": (lambda ir, iz, in_, hr, hz, hn, hx: (
        (hx - np.tanh(in_ + hn * sp.expit(hr + ir))) * sp.expit(hz + iz)
        + np.tanh(in_ + hn * sp.expit(hr + ir))), (ANY,) * 7, {}),
}
INTEGER_OPS = {"bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm"}

# broadcasting: (3, 4) against (4,), (3, 1) and a 0-d tensor
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3), ())]
TERNARY_SHAPES = [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((2, 3), (), (3,))]
UNARY_SHAPES = [(3, 4), (5,), ()]
QUATERNARY_SHAPES = [((3, 4),) * 4, ((3, 4), (4,), (3, 1), ())]
SEPTENARY_SHAPES = [((3, 4),) * 7, ((3, 4), (4,), (3, 1), (), (3, 4), (1, 4), (3, 4))]


def _shapes(op):
    if len(op.inputs) == 7:
        return SEPTENARY_SHAPES
    if len(op.inputs) == 4:
        return QUATERNARY_SHAPES
    if len(op.inputs) == 3:
        return TERNARY_SHAPES
    return BINARY_SHAPES if len(op.inputs) == 2 else [(s,) for s in UNARY_SHAPES]


def _make_case(name, shapes, dtype):
    ref, gens, aux = REFERENCE[name]
    arrays = [g(s).astype(dtype) for g, s in zip(gens, shapes)]
    out_shape = np.broadcast_shapes(*shapes)
    aux_vals = {}
    for k, v in aux.items():
        aux_vals[k] = RNG.random(out_shape) > 0.5 if v == "mask" else v
    return ref, arrays, aux_vals


def _call(name, tensors, aux_vals):
    aux_t = {k: (jg.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in aux_vals.items()}
    return call(OPS[name], *tensors, **aux_t)


def test_every_op_has_a_reference():
    assert set(OPS) == set(REFERENCE), sorted(set(OPS) ^ set(REFERENCE))


CASES = [(name, shapes) for name in sorted(OPS) for shapes in _shapes(OPS[name])
         if name not in INTEGER_OPS]
INTEGER_CASES = [(name, shapes) for name in sorted(INTEGER_OPS)
                 for shapes in _shapes(OPS[name])]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("name,shapes", INTEGER_CASES)
def test_integer_forward_matches_numpy(name, shapes, dtype):
    ref, arrays, _ = _make_case(name, shapes, dtype)
    got = _call(name, [jg.tensor(a) for a in arrays], {})
    expected = np.asarray(ref(*arrays))
    assert got.numpy().dtype == dtype
    np.testing.assert_array_equal(got.numpy(), expected.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,shapes", CASES)
def test_forward_matches_numpy(name, shapes, dtype):
    ref, arrays, aux_vals = _make_case(name, shapes, dtype)
    got = _call(name, [jg.tensor(a) for a in arrays], aux_vals)
    if "cond" in aux_vals:
        expected = ref(aux_vals["cond"], *arrays)
    else:
        expected = ref(*arrays, **aux_vals)
    expected = np.asarray(expected)
    assert tuple(got.shape) == expected.shape
    if expected.dtype == np.bool_:
        assert got.dtype is jg.bool
        np.testing.assert_array_equal(got.numpy(), expected)
    else:
        assert got.numpy().dtype == dtype, "the op must keep the input precision"
        tol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got.numpy(), expected.astype(dtype), rtol=tol, atol=tol)


DIFF_CASES = [(n, s) for n, s in CASES if OPS[n].differentiable]


@pytest.mark.parametrize("name,shapes", DIFF_CASES)
def test_gradient_matches_finite_differences(name, shapes):
    _, arrays, aux_vals = _make_case(name, shapes, np.float64)
    tensors = [jg.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: _call(name, list(xs), aux_vals), tensors)


@pytest.mark.parametrize("name", sorted(n for n in OPS if OPS[n].differentiable))
def test_second_derivative_matches_finite_differences(name):
    shapes = _shapes(OPS[name])[0]
    _, arrays, aux_vals = _make_case(name, shapes, np.float64)
    tensors = [jg.tensor(a, requires_grad=True) for a in arrays]
    assert gradgradcheck(lambda *xs: _call(name, list(xs), aux_vals), tensors, atol=1e-4)


@pytest.mark.parametrize("name", sorted(n for n in OPS if OPS[n].differentiable))
def test_node_name_and_slots(name):
    op = OPS[name]
    shapes = _shapes(op)[0]
    _, arrays, aux_vals = _make_case(name, shapes, np.float32)
    tensors = [jg.tensor(a, requires_grad=True) for a in arrays]
    out = _call(name, tensors, aux_vals)
    assert type(out.grad_fn).__name__ == op.node
    assert len(out.grad_fn.next_functions) == len(op.inputs)
    assert all(type(n).__name__ == "AccumulateGrad" for n, _ in out.grad_fn.next_functions)


def test_integer_inputs_promote_like_pytorch():
    i = jg.tensor([1, 2, 3])
    assert (i + 1).dtype is jg.int64
    assert (i + 1.5).dtype is jg.float32
    assert (i / 2).dtype is jg.float32
    assert i.exp().dtype is jg.float32
    assert (i > 1).dtype is jg.bool
    f64 = jg.tensor([1.0], dtype=jg.float64)
    assert (jg.ones(3) + f64).dtype is jg.float64
    assert (jg.ones(3) + jg.tensor(1.0, dtype=jg.float64)).dtype is jg.float32


def test_nan_propagates_like_pytorch():
    x = jg.tensor([float("nan"), -1.0, 2.0])
    for name in ("relu", "maximum", "minimum", "clamp"):
        if name == "clamp":
            r = jg.clamp(x, -0.5, 0.5)
        elif name in ("maximum", "minimum"):
            r = getattr(jg, name)(x, jg.zeros(3))
        else:
            r = jg.relu(x)
        assert np.isnan(r.numpy()[0]), name


def test_float32_kernels_stay_float32(monkeypatch):
    """Typed constants: no float64 arithmetic in a float32 kernel's LLVM IR."""
    from jitgrad.backends import cpu
    # compile afresh in memory: kernels loaded from Numba's disk cache carry no IR to inspect
    monkeypatch.setenv("JITGRAD_DISABLE_DISK_CACHE", "1")
    monkeypatch.setattr(cpu, "_modules", {})
    from jitgrad.ops import elementwise_call, elementwise_fast
    monkeypatch.setattr(elementwise_call, "_forward_plans", {})
    monkeypatch.setattr(elementwise_call, "_vjp_plans", {})
    # the fast path's plans hold kernels too; call() reads the dict through its own module
    fresh = {}
    monkeypatch.setattr(elementwise_fast, "_fast_plans", fresh)
    monkeypatch.setattr(elementwise_call, "_fast_plans", fresh)
    # eager's sigmoid is a host routine (backends/host_routines.py): launch its kernel here
    monkeypatch.setattr("jitgrad.backends.vml._HOST", ())
    x = jg.tensor(RNG.standard_normal(64).astype(np.float32), requires_grad=True)
    y = jg.sigmoid(x * 0.5 + 1.0)
    y.backward(jg.ones_like(y))
    checked = 0
    for key, mod in cpu._modules.items():
        if key[0] in ("sigmoid", "mul", "add"):
            for sig in mod.serial.signatures:
                if all(getattr(a, "dtype", None) is None or str(a.dtype) == "float32"
                       for a in sig if hasattr(a, "dtype")) and any(
                           str(getattr(a, "dtype", "")) == "float32" for a in sig):
                    ir = mod.serial.inspect_llvm(sig)
                    # the kernel itself, not the CPython wrapper that unboxes Python floats
                    kernels = [c for c in ir.split("\ndefine ")[1:]
                               if "serial" in c.split("\n")[0]
                               and "cpython" not in c.split("\n")[0]]
                    assert kernels, key
                    for body in kernels:
                        assert " double " not in body and "fpext" not in body, key
                    checked += 1
    assert checked >= 3


def test_every_target_binds_the_whole_scalar_vocabulary():
    """A name missing from one target would break only that target (e.g. create_graph)."""
    import builtins

    from jitgrad.backends import cpu_env
    from jitgrad.ops import tensor_env
    from jitgrad.ops.registry import SCALAR_VOCABULARY
    tensor_names = tensor_env._namespace()
    for name in SCALAR_VOCABULARY:
        assert hasattr(cpu_env, name) or hasattr(builtins, name), name
        assert name in tensor_names, name
    for op in OPS.values():  # and scalar bodies use nothing else
        for fn in [op.f, *op.vjp.values()]:
            code = fn.fn.__code__
            assert set(code.co_names) <= set(SCALAR_VOCABULARY), (fn.symbol, code.co_names)
