"""masked_scatter, select/slice/diagonal_scatter, renorm, isposinf/isneginf/isreal, is_nonzero/
is_complex, gcd/lcm, ldexp, nextafter, resolve_conj/resolve_neg against PyTorch: values, dtypes,
shapes, grad_fn names, gradients (float64 finite differences and double backward where
differentiable), warnings and errors word for word; the in-place forms (values, node names,
gradients through the written tensor, errors)."""
import numpy as np
import pytest

from tests._parity import assert_grad_parity, assert_parity, check_observations, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4))
S = RNG.standard_normal((2, 5))
M_ROW = np.array([[True, False, True, True]])
M_FULL = RNG.random((3, 4)) < 0.5
INTS = np.array([0, 6, -12, 7, 0, -9, 15, 1])
INTS2 = np.array([0, 4, 18, -3, 5, 0, -25, 1])

# ----------------------------------------------------------------------------- masked_scatter


@pytest.mark.parametrize("mask", [M_ROW, M_FULL, np.ones((2, 3, 4), bool), np.array(True),
                                  np.zeros((3, 4), bool)], ids=["row", "full", "bigger", "0d",
                                                               "none"])
def test_masked_scatter(mask):
    src = RNG.standard_normal(30)
    assert_parity(lambda T, x, m, s: T.masked_scatter(x, m, s), X, mask, src, grad=True)
    assert_parity(lambda T, x, m, s: x.masked_scatter(m, s.reshape(5, 6)), X, mask, src,
                  grad=True)
    assert_grad_parity(lambda T: lambda x, s: T.masked_scatter(x, T.tensor(mask), s), X, src)


def test_masked_scatter_dtypes_and_empty_source():
    assert_parity(lambda T, x, m, s: T.masked_scatter(x, m, s), INTS, INTS > 0, INTS2)
    assert_parity(lambda T, x, m, s: x.masked_scatter(m, s), INTS > 3, INTS > 0, INTS2 < 0)
    assert_parity(lambda T, x, m: x.masked_scatter(m, T.zeros(0)), X, np.zeros((3, 4), bool),
                  grad=True)


@pytest.mark.parametrize("fn", [
    lambda T, x, m, s: T.masked_scatter(x, m, s[:1, :2]),           # too few source elements
    lambda T, x, m, s: T.masked_scatter(x, m, s.float()),
    lambda T, x, m, s: T.masked_scatter(x, m.to(T.uint8), s),       # warns, then refuses
    lambda T, x, m, s: T.masked_scatter(x, m.float(), s),
    lambda T, x, m, s: T.masked_scatter(x, m, 1.0),
    lambda T, x, m, s: x.masked_scatter(m, 1.0),
    lambda T, x, m, s: T.masked_scatter(x, T.ones(2, 5, dtype=T.bool), s),
    lambda T, x, m, s: x.masked_scatter(3, s),
])
def test_masked_scatter_errors(fn):
    assert_parity(fn, X, M_ROW, S)


def test_masked_scatter_inplace():
    def scenario(T, record):
        x = T.tensor(X, requires_grad=True)
        s = T.tensor(S, requires_grad=True)
        y = x * 2
        r = y.masked_scatter_(T.tensor(M_ROW), s)
        record("same", r is y)
        record("y", y)
        (y * T.arange(12.0).reshape(3, 4)).sum().backward()
        record("x.grad", x.grad)
        record("s.grad", s.grad)
        z = T.tensor(X)
        z.masked_scatter_(T.tensor(M_FULL), T.tensor(S))
        record("z", z)
        record("version", z._version)
        z.masked_scatter_(T.ones(2, 3, 4, dtype=T.bool), T.tensor(S))
    check_observations(scenario)
    assert_parity(lambda T, x, s: x.detach().masked_scatter_(T.tensor(M_ROW), s[:1, :2]), X, S)
    assert_parity(lambda T, x, s: x.masked_scatter_(T.tensor(M_ROW), s), X, S, grad=True)


# ----------------------------------------------------------------------------- *_scatter

SCATTERS = {
    "select": (lambda T, x, s: T.select_scatter(x, s[0, :4], 0, 1), None),
    "select_neg": (lambda T, x, s: x.select_scatter(s[:, 1:4].t()[0], -1, -2), None),
    "slice": (lambda T, x, s: T.slice_scatter(x, s[:, :4], 0, 1), None),
    "slice_step": (lambda T, x, s: T.slice_scatter(x, s[:, :2].t(), dim=1, step=2), None),
    "slice_clamped": (lambda T, x, s: x.slice_scatter(s[:, :2].t(), 1, -10, 3, 2), None),
    "slice_empty": (lambda T, x, s: T.slice_scatter(x, s[:0, :4], 0, 5, 9), None),
    "diagonal": (lambda T, x, s: T.diagonal_scatter(x, s[0, :3]), None),
    "diagonal_offset": (lambda T, x, s: x.diagonal_scatter(s[1, :3], 1), None),
    "diagonal_dims": (lambda T, x, s: T.diagonal_scatter(x, s[0, :2], -1, 1, 0), None),
}


@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_view_scatter(name):
    fn = SCATTERS[name][0]
    assert_parity(fn, X, S, grad=True)
    assert_grad_parity(lambda T: lambda x, s: fn(T, x, s), X, S)


def test_view_scatter_dtypes():
    # src is cast to input's dtype (copy_); an integer result refuses a src requiring grad
    assert_parity(lambda T, x, s: T.select_scatter(x, s[0, :4].float(), 0, 1), X, S, grad=True)
    assert_parity(lambda T, x, s: T.select_scatter(x, s[0, :4].long(), 0, -1), X, S, grad=True)
    assert_parity(lambda T, x, s: T.slice_scatter(x.long(), s[:, :4], 0, 1), X, S, grad=True)
    assert_parity(lambda T, x, s: T.diagonal_scatter(x, s[0, :3]), INTS.reshape(2, 4),
                  INTS2.reshape(2, 4))


@pytest.mark.parametrize("fn", [
    lambda T, x, s: T.select_scatter(x, s[0, :3], 0, 1),
    lambda T, x, s: T.select_scatter(x, s[0, :4], 0, 5),
    lambda T, x, s: T.select_scatter(x, s[0, :4], 2, 1),
    lambda T, x, s: T.select_scatter(x, 1.0, 0, -1),
    lambda T, x, s: x.select_scatter(1.0, 0, -1),
    lambda T, x, s: T.slice_scatter(x, s[:, :4], 0, 1, 3, 0),
    lambda T, x, s: T.slice_scatter(x, s[:, :4], 0, 1, 3, -1),
    lambda T, x, s: T.slice_scatter(x, s[:, :3], dim=1, step=2),
    lambda T, x, s: T.slice_scatter(x, s[:, :0], dim=3),
    lambda T, x, s: T.diagonal_scatter(x, s[0, :4], 1),
    lambda T, x, s: T.diagonal_scatter(x, s[0, :3], 1, 1, 1),
    lambda T, x, s: T.diagonal_scatter(x, s[0, :3], 0, 0, 2),
])
def test_view_scatter_errors(fn):
    assert_parity(fn, X, S, grad=True)


# ----------------------------------------------------------------------------- renorm

@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 1), (3, -1, 0.5),
                                            (float("inf"), 1, 1.0), (0.5, 0, 50.0),
                                            (2, 0, 0.0)])
def test_renorm(p, dim, maxnorm):
    assert_parity(lambda T, x: T.renorm(x, p, dim, maxnorm), X, grad=True)
    assert_parity(lambda T, x: x.renorm(p, dim, maxnorm), RNG.standard_normal((2, 3, 2)),
                  grad=True)
    assert_grad_parity(lambda T: lambda x: T.renorm(x, p, dim, maxnorm), X)


def test_renorm_float32_and_inplace():
    assert_parity(lambda T, x: T.renorm(x.float(), 2, 0, 1.0), X, grad=True, rtol=1e-5)
    assert_parity(lambda T, x: (x * 1).renorm_(2, 1, 1.0), X, grad=True)
    assert_parity(lambda T, x: x.detach().clone().renorm_(1, 0, 2.0), X)


@pytest.mark.parametrize("fn", [
    lambda T, x: T.renorm(x, -1, 0, 1.0),
    lambda T, x: T.renorm(x, 0, 0, 1.0),
    lambda T, x: T.renorm(x, 1, 0, -1.0),
    lambda T, x: T.renorm(x, 1, 0, -0.5),
    lambda T, x: T.renorm(x, 1, 5, 1.0),
    lambda T, x: T.renorm(x.long(), 1, 0, 1.0),
    lambda T, x: T.renorm(x[0], 1, 0, 1.0),
    lambda T, x: T.renorm(x.sum(), 1, 0, 1.0),
    lambda T, x: x.renorm_(2, 0, 1.0),
])
def test_renorm_errors(fn):
    assert_parity(fn, X, grad=True)


# ----------------------------------------------------------------------------- predicates

SPECIAL = np.array([1.0, np.inf, -np.inf, np.nan, -0.0])


@pytest.mark.parametrize("name", ["isposinf", "isneginf", "isreal"])
def test_float_predicates(name):
    assert_parity(lambda T, x: getattr(T, name)(x), SPECIAL, grad=True)
    assert_parity(lambda T, x: getattr(x.float(), name)(), SPECIAL)
    assert_parity(lambda T, x: getattr(T, name)(x), INTS)
    assert_parity(lambda T, x: getattr(T, name)(x), INTS > 0)
    assert_parity(lambda T, x: getattr(T, name)(1.0), SPECIAL)


@pytest.mark.parametrize("value", [np.array([0.0]), np.array([[np.nan]]), np.array(-2),
                                   np.array(False), np.array([True]), np.array([]),
                                   np.array([1, 2]), np.zeros((2, 0))])
def test_is_nonzero(value):
    assert_parity(lambda T, x: T.is_nonzero(x), value)
    assert_parity(lambda T, x: x.is_nonzero(), value)


def test_is_complex_resolve():
    assert_parity(lambda T, x: (T.is_complex(x), x.is_complex(), T.is_conj(x), x.is_neg()), X)
    assert_parity(lambda T, x: T.is_complex(1), X)
    assert_parity(lambda T, x: (T.is_floating_point(x), T.is_floating_point(x.long())), X)
    assert_parity(lambda T, x: T.is_floating_point(1), X)
    assert_parity(lambda T, x: T.is_nonzero(1), X)
    assert_parity(lambda T, x: (T.resolve_conj(x) is x, x.resolve_neg() is x,
                                T.resolve_neg(x) is x, x.resolve_conj()), X, grad=True)
    assert_parity(lambda T, x: T.resolve_conj(1), X)


# ----------------------------------------------------------------------------- gcd / lcm

@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_gcd_lcm(name, dtype):
    a, b = INTS[:6], INTS2[:6]  # lcm stays within int8
    assert_parity(lambda T, x, y: getattr(T, name)(x.to(getattr(T, dtype)),
                                                   y.to(getattr(T, dtype))), a, b)
    assert_parity(lambda T, x, y: getattr(x.to(getattr(T, dtype)), name)(y), a, b)


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_broadcast_inplace_and_errors(name):
    assert_parity(lambda T, x, y: getattr(T, name)(x.reshape(8, 1), y), INTS, INTS2)
    assert_parity(lambda T, x, y: getattr(T, name)(x, y[0] + 4), INTS, INTS2)
    assert_parity(lambda T, x, y: getattr(x.clone(), name + "_")(y), INTS, INTS2)
    assert_parity(lambda T, x, y: getattr(x.int(), name + "_")(y), INTS, INTS2)
    for fn in (lambda T, x, y: getattr(T, name)(x.float(), y),
               lambda T, x, y: getattr(T, name)(x > 0, y > 0),
               lambda T, x, y: getattr(T, name)(x, 4),
               lambda T, x, y: getattr(T, name)(4, y),
               lambda T, x, y: getattr(x, name)(4.0),
               lambda T, x, y: getattr(x.clone(), name + "_")(y.double()),  # the cast error
               lambda T, x, y: getattr(x[:3], name)(y)):
        assert_parity(fn, INTS, INTS2)


# ----------------------------------------------------------------------------- ldexp

E_INT = np.array([1, -2, 3, 0, 10])
E_FLOAT = np.array([1.0, -0.5, 2.0, 0.25, -3.0])
MANT = np.array([1.0, 2.5, -3.0, 0.1, -7.25])


def test_ldexp():
    assert_parity(lambda T, x, e: T.ldexp(x, e), MANT, E_INT, grad=True)
    assert_parity(lambda T, x, e: T.ldexp(x, e), MANT, E_FLOAT, grad=True)
    assert_parity(lambda T, x, e: x.ldexp(e.reshape(5, 1)), MANT, E_FLOAT, grad=True)
    assert_parity(lambda T, x, e: T.ldexp(x.float(), e), MANT, E_INT, grad=True)
    assert_parity(lambda T, x, e: T.ldexp(x.float(), e), MANT, E_FLOAT, grad=True)
    assert_parity(lambda T, x, e: T.ldexp(x.long(), e.int()), E_INT, E_INT)
    assert_grad_parity(lambda T: lambda x, e: T.ldexp(x, e), MANT, E_FLOAT)
    # PyTorch's self gradient g * pow(2, other) is an integer power for an integer exponent
    # (0 for a negative one): compared with torch, not with finite differences
    assert_grad_parity(lambda T: lambda x: T.ldexp(x, T.tensor(E_INT)), MANT, fd=False)


def test_ldexp_inplace_and_errors():
    assert_parity(lambda T, x, e: (x * 1).ldexp_(e), MANT, E_INT, grad=True)
    assert_parity(lambda T, x, e: (x * 1).ldexp_(e), MANT, E_FLOAT, grad=True)
    assert_parity(lambda T, x, e: x.detach().float().ldexp_(e), MANT, E_FLOAT)
    assert_parity(lambda T, x, e: e.clone().ldexp_(e), MANT, E_INT)
    assert_parity(lambda T, x, e: T.ldexp(x, 2), MANT, E_INT)
    assert_parity(lambda T, x, e: x.ldexp(2.0), MANT, E_INT)
    assert_parity(lambda T, x, e: T.ldexp(2.0, e), MANT, E_INT)


# ----------------------------------------------------------------------------- nextafter

A_NA = np.array([0.0, np.nan, 1.0, 2.0, -1.5, np.inf, 0.0, 1e-310])
B_NA = np.array([0.0, 1.0, np.nan, 2.0, 3.0, 0.0, -1.0, 0.0])


def test_nextafter():
    exact = {"rtol": 0, "atol": 0}
    assert_parity(lambda T, a, b: T.nextafter(a, b), A_NA, B_NA, **exact)
    assert_parity(lambda T, a, b: T.nextafter(a.float(), b.float()), A_NA, B_NA, **exact)
    assert_parity(lambda T, a, b: a.nextafter(b.float()), A_NA, B_NA, **exact)
    assert_parity(lambda T, a, b: T.nextafter(a.float(), b.long()), A_NA, np.arange(8), **exact)
    assert_parity(lambda T, a, b: T.nextafter(a, b), A_NA, B_NA, grad=True)
    assert_parity(lambda T, a, b: T.nextafter(a.float(), b.float()), A_NA, B_NA, grad=True)
    assert_parity(lambda T, a, b: T.nextafter(a, b.reshape(8, 1)), A_NA, B_NA, grad=True)
    # a step function: its gradient is PyTorch's convention, not a finite difference
    assert_grad_parity(lambda T: lambda a, b: T.nextafter(a, b), A_NA[2:5], B_NA[2:5] * 0.5,
                       fd=False)


def test_nextafter_inplace_and_errors():
    assert_parity(lambda T, a, b: (a * 1).nextafter_(b), A_NA, B_NA, grad=True)
    assert_parity(lambda T, a, b: a.detach().float().nextafter_(b.float()), A_NA, B_NA,
                  rtol=0, atol=0)
    for fn in (lambda T, a, b: T.nextafter(a.long(), b.long()),
               lambda T, a, b: T.nextafter(a > 0, b > 0),
               lambda T, a, b: T.nextafter(a, 1.0),
               lambda T, a, b: a.nextafter(1.0),
               lambda T, a, b: a.long().nextafter_(b)):
        assert_parity(fn, A_NA, B_NA)
