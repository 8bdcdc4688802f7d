"""Rounding, division-remainder, inverse-trig and classification ops (registry ops since they
moved off NumPy): forward values, signed zeros, dtypes, requires_grad, node names, gradients and
errors against PyTorch, plus finite-difference gradchecks away from the discontinuities."""
import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

# sums over inf/-inf/NaN values make NumPy warn inside jitgrad's reductions; torch does not
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAN, INF = float("nan"), float("inf")
FLOATS = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0, NAN, INF, -INF, 0.3, -0.7, 3.99, -3.01,
          1e30, -1e-30, 8388609.5, 0.49999997]
INTS = [-7, -3, -1, 0, 1, 2, 5, 9]
DTYPES = ["float32", "float64"]

# dividend / divisor pairs: every sign combination, zeros, infinities, NaN, exact multiples
A = [5.0, -5.0, 5.0, -5.0, -4.0, 4.0, 0.0, -0.0, INF, 5.0, -5.0, NAN, 1.0, 0.3, -0.3, 0.3,
     -0.0, -1.0, 0.0, 7.5, -7.5, 1e-30, -1e-30, 1e30, 2.5, -INF]
B = [3.0, 3.0, -3.0, -3.0, 2.0, -2.0, 3.0, 3.0, 3.0, INF, INF, 1.0, 0.0, 1.0, 1.0, -1.0,
     -2.0, 0.0, 0.0, -INF, -INF, 1e30, 1e30, 1e-30, NAN, 2.0]
IA = [5, -5, 5, -5, -4, 0, 7, -7, 0, 9]
IB = [3, 3, -3, -3, 2, -3, 1, -1, 5, -4]


def _pair(values, dtype, requires_grad=False):
    return (jg.tensor(values, dtype=getattr(jg, dtype), requires_grad=requires_grad),
            torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad))


def _same(got, want, *, exact=True, rtol=None):
    """Equal values (NaN == NaN), equal signs of zeros and infinities, same dtype."""
    g = got.detach().numpy() if isinstance(got, jg.Tensor) else np.asarray(got)
    w = want.detach().numpy()
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape
    if g.dtype.kind == "f":
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            if rtol is None:
                rtol = 2e-6 if g.dtype == np.float32 else 1e-14
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)
        keep = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[keep]), np.signbit(w[keep]))
    else:
        np.testing.assert_array_equal(g, w)


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# --------------------------------------------------------------------------- unary


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_rounding_matches_torch(name, dtype):
    x, tx = _pair(FLOATS, dtype, requires_grad=True)
    y, ty = getattr(jg, name)(x), getattr(torch, name)(tx)
    _same(y, ty)
    assert y.requires_grad and _node(y) == _node(ty)
    g, = jg.autograd.grad(y.sum(), x)
    tg, = torch.autograd.grad(ty.sum(), tx)
    _same(g, tg)


def test_round_is_half_to_even():
    x, tx = _pair([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 4.5000005, -4.4999995], "float32")
    _same(jg.round(x), torch.round(tx))
    np.testing.assert_array_equal(jg.round(x).numpy()[:7], [0, 2, 2, 4, -0, -2, -2])
    assert x.round().dtype is jg.float32


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_decimals_matches_torch(decimals, dtype):
    vals = [0.5, 1.25, 2.675, -0.125, 1234.5678, -1234.5678, 0.05, 15.0, 25.0, -0.0, NAN, INF]
    x, tx = _pair(vals, dtype, requires_grad=True)
    y, ty = jg.round(x, decimals=decimals), torch.round(tx, decimals=decimals)
    _same(y, ty)
    assert _node(y) == _node(ty) == "RoundBackward1"
    g, = jg.autograd.grad(y.sum(), x)
    _same(g, torch.autograd.grad(ty.sum(), tx)[0])


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding_is_identity_on_integers(name, dtype):
    x, tx = _pair(INTS, dtype)
    y, ty = getattr(jg, name)(x), getattr(torch, name)(tx)
    _same(y, ty)
    assert y.dtype is getattr(jg, dtype) and not y.requires_grad


@pytest.mark.parametrize("call,message", [
    (lambda t: t.floor(), "floor_vml_cpu"), (lambda t: t.ceil(), "ceil_vml_cpu"),
    (lambda t: t.trunc(), "trunc_vml_cpu"), (lambda t: t.round(), "round_vml_cpu"),
    (lambda t: t.frac(), "frac_cpu")])
def test_rounding_bool_raises_like_torch(call, message):
    with pytest.raises(NotImplementedError, match=message):
        call(torch.tensor([True]))
    with pytest.raises(NotImplementedError, match=message):
        call(jg.tensor([True]))


def test_integer_frac_and_round_decimals_raise_like_torch():
    for lib in (torch, jg):
        with pytest.raises(NotImplementedError, match="frac_cpu\" not implemented for 'Long'"):
            lib.frac(lib.tensor([1, 2]))
        with pytest.raises(NotImplementedError, match="round_cpu\" not implemented for 'Long'"):
            lib.round(lib.tensor([1, 2]), decimals=1)


def test_float16_rounding():
    x = jg.tensor([1.5, 2.5, -0.5], dtype=jg.float16)
    tx = torch.tensor([1.5, 2.5, -0.5], dtype=torch.float16)
    for name in ("floor", "ceil", "trunc", "round"):
        _same(getattr(jg, name)(x), getattr(torch, name)(tx))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["asin", "acos", "atan"])
def test_inverse_trig_matches_torch(name, dtype):
    vals = [-1.0, -0.999, -0.5, -1e-8, -0.0, 0.0, 0.25, 0.5, 0.999, 1.0, 1.5, -2.0, NAN, INF,
            -INF, 1e10]
    x, tx = _pair(vals, dtype, requires_grad=True)
    y, ty = getattr(jg, name)(x), getattr(torch, name)(tx)
    _same(y, ty, exact=False)
    assert _node(y) == _node(ty) == name.capitalize() + "Backward0"
    g, = jg.autograd.grad(y.sum(), x)
    # near |x| = 1, 1 - x*x cancels: torch rounds x*x first, our kernel contracts it into an FMA
    # (at x = -0.999f: torch 22.366489, ours 22.366415, exact 22.366416), hence 1e-5 in float32
    _same(g, torch.autograd.grad(ty.sum(), tx)[0], exact=False,
          rtol=1e-5 if dtype == "float32" else 1e-13)


def test_inverse_trig_of_integers_is_float():
    x, tx = _pair(INTS, "int64")
    for name in ("asin", "acos", "atan"):
        y, ty = getattr(jg, name)(x), getattr(torch, name)(tx)
        assert y.dtype is jg.float32
        _same(y, ty, exact=False)


@pytest.mark.parametrize("name", ["asin", "acos", "atan"])
def test_inverse_trig_gradcheck(name):
    rng = np.random.default_rng(7)
    x = jg.tensor(rng.uniform(-0.9, 0.9, (3, 4)), requires_grad=True)
    fn = getattr(jg, name)
    assert gradcheck(fn, [x])
    assert gradgradcheck(fn, [x])


def test_methods_route_to_the_registry_ops():
    x = jg.tensor([-1.5, 0.5, 2.5], requires_grad=True)
    assert _node(x.floor()) == "FloorBackward0"
    assert _node(x.ceil()) == "CeilBackward0"
    assert _node(x.trunc()) == "TruncBackward0"
    assert _node(x.round()) == "RoundBackward0"
    assert _node(x.frac()) == "FracBackward0"
    assert _node(x % 2) == "RemainderBackward0"
    assert _node(x % x) == "RemainderBackward1"
    assert _node(x.fmod(2)) == "FmodBackward0"
    assert _node(x // 2) == "NotImplemented"
    assert _node(2 % x) == "NotImplemented"


# --------------------------------------------------------------------------- division


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_division_ops_match_torch(name, dtype):
    a, ta = _pair(A, dtype, requires_grad=True)
    b, tb = _pair(B, dtype, requires_grad=True)
    y, ty = getattr(jg, name)(a, b), getattr(torch, name)(ta, tb)
    _same(y, ty)
    assert y.requires_grad and _node(y) == _node(ty)
    if name == "floor_divide":
        with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not "
                                               "implemented"):
            y.sum().backward()
        return
    ga, gb = jg.autograd.grad(y.sum(), [a, b])
    tga, tgb = torch.autograd.grad(ty.sum(), [ta, tb])
    _same(ga, tga)
    _same(gb, tgb)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other", [2.0, -2.0, 0.75, 0.0, INF, -3])
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_division_by_scalar_matches_torch(name, other, dtype):
    a, ta = _pair(A, dtype, requires_grad=True)
    y, ty = getattr(jg, name)(a, other), getattr(torch, name)(ta, other)
    _same(y, ty)
    assert _node(y) == _node(ty)
    assert len(y.grad_fn.next_functions) == len(ty.grad_fn.next_functions)
    if name != "floor_divide":
        g, = jg.autograd.grad(y.sum(), a)
        _same(g, torch.autograd.grad(ty.sum(), ta)[0])


@pytest.mark.parametrize("name", ["remainder", "floor_divide"])
def test_scalar_dividend_matches_torch(name):
    b, tb = _pair(B, "float32", requires_grad=True)
    y, ty = getattr(jg, name)(3.0, b), getattr(torch, name)(3.0, tb)
    _same(y, ty)
    assert _node(y) == _node(ty) == "NotImplemented"
    with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not implemented"):
        y.sum().backward()


def test_operators_match_torch():
    a, ta = _pair(A, "float32")
    b, tb = _pair(B, "float32")
    _same(a % b, ta % tb)
    _same(a // b, ta // tb)
    _same(a % 2.5, ta % 2.5)
    _same(a // -2.5, ta // -2.5)
    _same(7 % b, 7 % tb)
    _same(7 // b, 7 // tb)
    i, ti = _pair(IA, "int64")
    j, tj = _pair(IB, "int64")
    _same(i % j, ti % tj)
    _same(i // j, ti // tj)
    _same(i % -3, ti % -3)
    _same(-7 // j, -7 // tj)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_integer_division_ops_match_torch(name, dtype):
    a, ta = _pair(IA, dtype)
    b, tb = _pair(IB, dtype)
    _same(getattr(jg, name)(a, b), getattr(torch, name)(ta, tb))
    for s in (3, -3, 2.5, -0.5):
        _same(getattr(jg, name)(a, s), getattr(torch, name)(ta, s))
    if name != "fmod":
        _same(getattr(jg, name)(11, b), getattr(torch, name)(11, tb))


@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_integer_division_by_zero_raises(name):
    a, ta = _pair(IA, "int64")
    zero_somewhere = [1, 2, 0, 3, 1, 1, 1, 1, 1, 1]
    for lib, x in ((torch, ta), (jg, a)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            getattr(lib, name)(x, lib.tensor(zero_somewhere))
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            getattr(lib, name)(x, 0)
    # a float result divides by zero without error
    _same(getattr(jg, name)(a, 0.0), getattr(torch, name)(ta, 0.0))


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_mode_matches_torch(mode):
    a, ta = _pair(A, "float32", requires_grad=True)
    b, tb = _pair(B, "float32", requires_grad=True)
    for args, targs in (((a, b), (ta, tb)), ((a, 2.0), (ta, 2.0)), ((6.0, b), (6.0, tb))):
        y = jg.div(*args, rounding_mode=mode)
        ty = torch.div(*targs, rounding_mode=mode)
        _same(y, ty)
        assert _node(y) == _node(ty) == "DivBackward2"
        assert len(y.grad_fn.next_functions) == len(ty.grad_fn.next_functions)
        g = jg.autograd.grad(y.sum(), [t for t in args if isinstance(t, jg.Tensor)])
        tg = torch.autograd.grad(ty.sum(), [t for t in targs if isinstance(t, torch.Tensor)])
        for u, v in zip(g, tg):
            _same(u, v)
    i, ti = _pair(IA, "int64")
    j, tj = _pair(IB, "int64")
    _same(jg.div(i, j, rounding_mode=mode), torch.div(ti, tj, rounding_mode=mode))
    _same(jg.div(-7, j, rounding_mode=mode), torch.div(-7, tj, rounding_mode=mode))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        jg.div(i, 0, rounding_mode=mode)


def test_bool_division_raises_like_torch():
    for lib in (torch, jg):
        t = lib.tensor([True, False])
        for name, kernel in (("remainder", "remainder_cpu"), ("fmod", "fmod_cpu"),
                             ("floor_divide", "div_floor_cpu")):
            with pytest.raises(NotImplementedError, match=kernel):
                getattr(lib, name)(t, t)


def test_fmod_scalar_dividend_is_a_type_error():
    with pytest.raises(TypeError):
        torch.fmod(2.0, torch.ones(2))
    with pytest.raises(TypeError):
        jg.fmod(2.0, jg.ones(2))


def test_division_promotes_like_torch():
    cases = [(jg.tensor([5, -5]), 2.5), (jg.tensor([5, -5]), jg.tensor([2.0, 3.0])),
             (jg.tensor([5.0], dtype=jg.float32), jg.tensor([3.0], dtype=jg.float64)),
             (jg.tensor([5, -5], dtype=jg.int32), 3)]
    for a, b in cases:
        ta = torch.tensor(a.numpy())
        tb = torch.tensor(b.numpy()) if isinstance(b, jg.Tensor) else b
        for name in ("remainder", "fmod", "floor_divide"):
            _same(getattr(jg, name)(a, b), getattr(torch, name)(ta, tb))


def _away_from_multiples():
    """Dividends whose quotient by the divisors stays >= 0.1 away from an integer."""
    rng = np.random.default_rng(3)
    b = rng.uniform(0.5, 2.0, (3, 4)) * np.where(rng.random((3, 4)) < 0.5, -1, 1)
    q = rng.integers(-3, 4, (3, 4)) + rng.uniform(0.1, 0.9, (3, 4))
    return q * b, b


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_division_gradcheck(name):
    a, b = _away_from_multiples()
    fn = getattr(jg, name)
    ta = jg.tensor(a, requires_grad=True)
    tb = jg.tensor(b, requires_grad=True)
    assert gradcheck(fn, [ta, tb])
    assert gradgradcheck(fn, [ta, tb], atol=1e-4)
    assert gradcheck(lambda x: fn(x, 0.7), [ta])
    # broadcasting divisor
    tb1 = jg.tensor(b[0], requires_grad=True)
    assert gradcheck(fn, [ta, tb1])


# --------------------------------------------------------------------------- classification


@pytest.mark.parametrize("dtype", DTYPES + ["int64", "int32", "bool"])
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_classification_matches_torch(name, dtype):
    vals = {"bool": [True, False]}.get(dtype, INTS if dtype.startswith("int") else FLOATS)
    x, tx = _pair(vals, dtype)
    y = getattr(jg, name)(x)
    _same(y, getattr(torch, name)(tx))
    assert y.dtype is jg.bool


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("tols", [{}, {"rtol": 0.1}, {"atol": 1e-3}, {"rtol": 0, "atol": 0}])
def test_isclose_matches_torch(tols, equal_nan, dtype):
    a_vals = [1.0, INF, NAN, -INF, 1.0, 1e-9, 100.0, 0.0, NAN, 2.0, 1.0, -1.0, 1e30]
    b_vals = [1.0, INF, NAN, INF, 1.00001, 0.0, 100.001, -0.0, 1.0, 2.2, 1.001, -1.0000001,
              1.0000001e30]
    a, ta = _pair(a_vals, dtype)
    b, tb = _pair(b_vals, dtype)
    _same(jg.isclose(a, b, equal_nan=equal_nan, **tols),
          torch.isclose(ta, tb, equal_nan=equal_nan, **tols))
    # broadcasting
    _same(jg.isclose(a, b[:1], equal_nan=equal_nan, **tols),
          torch.isclose(ta, tb[:1], equal_nan=equal_nan, **tols))


def test_isclose_integers_and_errors_match_torch():
    a, ta = _pair([1, 5, 100, -7, 2 ** 40], "int64")
    b, tb = _pair([1, 6, 101, -8, 2 ** 40 + 1], "int64")
    for tols in ({}, {"rtol": 0.1}, {"atol": 1}, {"rtol": 0, "atol": 0}):
        _same(jg.isclose(a, b, **tols), torch.isclose(ta, tb, **tols))
    c, tc = _pair([True, False], "bool")
    _same(jg.isclose(c, c), torch.isclose(tc, tc))
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        jg.isclose(jg.ones(2), jg.ones(2, dtype=jg.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        jg.isclose(jg.ones(2), jg.ones(2), rtol=-1)
