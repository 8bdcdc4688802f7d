"""asinh/acosh/atanh, atan2, erfc, erfinv and the integer shifts against PyTorch: values and
dtypes (float32, float64, integers, bool; 0-d and empty), gradients (also against float64 finite
differences, to second order), node names, methods, in-place forms, operators, out= and errors."""
import numpy as np
import pytest
from _parity import compare, raises_like

import jitgrad
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(13)
UNARY = {
    "asinh": RNG.uniform(-5, 5, (3, 4)),
    "acosh": RNG.uniform(1.01, 6, (3, 4)),
    "atanh": RNG.uniform(-0.95, 0.95, (3, 4)),
    "erfc": RNG.uniform(-3, 9, (3, 4)),
    "erfinv": RNG.uniform(-0.999, 0.999, (3, 4)),
}
ALIASES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_and_gradient(name, dtype):
    tol = 2e-6 if dtype == "float32" else 1e-12
    compare(lambda T, x: getattr(T, name)(x), [UNARY[name]], dtype, grad=True, rtol=tol,
            atol=tol)
    compare(lambda T, x: getattr(x, name)(), [UNARY[name][0, 0]], dtype, grad=True, rtol=tol,
            atol=tol)  # 0-d, method
    compare(lambda T, x: getattr(T, name)(x), [np.zeros((0, 3))], dtype, grad=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values(name):
    v = np.array([-np.inf, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan])
    compare(lambda T, x: getattr(T, name)(x), [v], "float32", rtol=2e-6, atol=0)
    compare(lambda T, x: getattr(T, name)(x), [v], "float64", rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(UNARY) + ["atan2"])
def test_integer_and_bool_inputs_promote(name, dtype):
    a = np.array([0, 1, 1, 0, 1]) if dtype == "bool" else np.array([0, 1, 2, 3, 7])
    a = a.astype(bool) if dtype == "bool" else a
    if name == "atan2":
        compare(lambda T, x: T.atan2(x, x.flip(0)), [a], dtype, rtol=2e-6)
    else:
        compare(lambda T, x: getattr(T, name)(x), [a], dtype, rtol=2e-6)


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_aliases(alias, name):
    x = UNARY[name]
    compare(lambda T, t: getattr(T, alias)(t), [x], grad=True)
    compare(lambda T, t: getattr(t, alias)(), [x], grad=True)
    assert getattr(jitgrad, alias) is getattr(jitgrad, alias)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atan2_broadcasting_gradient(dtype):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,))
    tol = 2e-6 if dtype == "float32" else 1e-12
    compare(lambda T, x, y: T.atan2(x, y), [a, b], dtype, grad=True, rtol=tol, atol=tol)
    compare(lambda T, x, y: T.arctan2(x, y), [a, b], dtype, grad=True, rtol=tol, atol=tol)
    compare(lambda T, x, y: x.atan2(y), [a[0, 0], b], dtype, grad=True, rtol=tol, atol=tol)
    zero = np.array([0.0, -0.0, 0.0, -0.0, 1.0, np.inf])
    compare(lambda T, x, y: T.atan2(x, y), [zero, zero[::-1].copy()], dtype)


def test_finite_differences_to_second_order():
    for name, x in UNARY.items():
        t = jitgrad.tensor(x[:2, :2] * (0.9 if name == "erfinv" else 1.0), requires_grad=True)
        fn = getattr(jitgrad, name)
        assert gradcheck(fn, (t,))
        assert gradgradcheck(fn, (t,), atol=1e-4)
    a = jitgrad.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    b = jitgrad.tensor(RNG.standard_normal((2, 3)) + 2.0, requires_grad=True)
    assert gradcheck(jitgrad.atan2, (a, b))
    assert gradgradcheck(jitgrad.atan2, (a, b), atol=1e-4)


def test_inplace_and_out():
    for name in list(UNARY) + list(ALIASES):
        base = UNARY[ALIASES.get(name, name)]
        compare(lambda T, x, n=name: getattr(x.clone(), n + "_")(), [base])
        # in a graph: asinh_/acosh_/atanh_ record AsinhBackward1/... whose backward raises
        if ALIASES.get(name, name) in ("asinh", "acosh", "atanh"):
            xj = jitgrad.tensor(base, requires_grad=True)
            xt = torch.tensor(base, requires_grad=True)
            rj, rt = getattr(xj * 1.0, name + "_")(), getattr(xt * 1.0, name + "_")()
            assert type(rj.grad_fn).__name__ == rt.grad_fn.name()
            np.testing.assert_allclose(rj.detach().numpy(), rt.detach().numpy(), rtol=1e-12)
            with pytest.raises(NotImplementedError) as et:
                rt.sum().backward()
            with pytest.raises(NotImplementedError, match=str(et.value)):
                rj.sum().backward()
        else:
            compare(lambda T, x, n=name: getattr(x * 1.0, n + "_")(), [base], grad=True)
        compare(lambda T, x, n=name: getattr(T, n)(x, out=T.empty(3)), [base[0]])
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    compare(lambda T, x, y: x.clone().atan2_(y), [a, b])
    compare(lambda T, x, y: x.clone().arctan2_(y), [a, b])
    compare(lambda T, x, y: T.atan2(x, y, out=T.empty(4, dtype=T.float64)), [a, b])


def test_atan2_errors():
    x = np.array([1.0, 2.0])
    raises_like(lambda T, t: T.atan2(t, 2), x)
    raises_like(lambda T, t: T.atan2(2.0, t), x)
    raises_like(lambda T, t: T.atan2(t, t[:1].expand(3)), x, match_message=False)


# ----------------------------------------------------------------------------- shifts

SHIFT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
def test_shift_counts_inside_and_outside_the_width(dtype):
    """PyTorch's rule for negative and over-wide counts: << gives 0, >> the sign fill."""
    lo, hi = (0, 255) if dtype == "uint8" else (-120, 120)
    a = np.concatenate([RNG.integers(lo, hi, 30), [lo, hi, 0, 1]]).astype(np.int64)
    counts = list(range(-3, 70)) + [100, -100, 1000]
    for c in counts:
        compare(lambda T, x, c=c: x << c, [a], dtype)
        compare(lambda T, x, c=c: x >> c, [a], dtype)
    s = np.array(counts * 2)[: 2 * len(counts)]
    vals = np.resize(a, s.shape)
    compare(lambda T, x, y: T.bitwise_left_shift(x, y), [vals, s], dtype)
    compare(lambda T, x, y: T.bitwise_right_shift(x, y), [vals, s], dtype)


def test_shift_dtypes_and_operand_forms():
    a = np.array([1, -2, 3, 40])
    compare(lambda T, x: 3 << x.abs(), [a])
    compare(lambda T, x: 1000 >> x.abs(), [a])
    compare(lambda T, x: T.bitwise_left_shift(3, x.abs()), [a], "int8")
    compare(lambda T, x: x.bitwise_left_shift(2), [a], "int16")
    compare(lambda T, x: x.bitwise_right_shift(x.abs().to(T.int32)), [a], "int8")
    compare(lambda T, x: x << x.abs().to(T.int32), [a], "int8")  # promotes to int32
    compare(lambda T, x: x.bool() << 2, [a])  # bool << int: int64
    compare(lambda T, x: x.bool() << x, [a])
    compare(lambda T, x: x << 2, [np.zeros(0, np.int64)])
    compare(lambda T, x: x << 2, [np.array(5)])
    compare(lambda T, x: x << 2, [np.array(5)], "int32")
    compare(lambda T, x: T.bitwise_left_shift(x, 3, out=T.empty(4, dtype=T.int64)), [a])


def test_shift_inplace():
    a = np.array([1, -2, 3, 40])

    def ilshift(T, x):
        y = x.clone()
        y <<= 2
        y >>= x.abs()
        return y
    compare(ilshift, [a])
    compare(ilshift, [a], "int8")
    compare(lambda T, x: x.clone().bitwise_left_shift_(3), [a])
    compare(lambda T, x: x.clone().bitwise_right_shift_(1), [a], "uint8")


def test_shift_errors():
    a = np.array([1, 2])

    def shift_float_count(T, x):
        y = x.clone()
        y <<= 1.5
    raises_like(lambda T, x: x.double() << 1, a)
    raises_like(lambda T, x: x << 1.5, a)
    raises_like(lambda T, x: x >> x.double(), a)
    raises_like(lambda T, x: x.bool() << True, a)
    raises_like(lambda T, x: x.bool() >> x.bool(), a)
    raises_like(shift_float_count, a)
    raises_like(lambda T, x: T.bitwise_left_shift(2, 3), a, match_message=False)
    raises_like(lambda T, x: x << x.new_ones(3), a, match_message=False)


def test_shift_no_gradient_node():
    x = jitgrad.tensor([1, 2])
    assert (x << 1).grad_fn is None and not (x << 1).requires_grad


def test_fused_backward_chain_of_the_new_ops():
    """A chain the fusion planner turns into one backward kernel (the new vocabulary names
    inlined there too), against PyTorch."""
    a, b = RNG.uniform(0.1, 0.8, (64,)), RNG.uniform(0.1, 0.8, (64,))
    compare(lambda T, x, y: T.atan2(T.erfinv(x).asinh() * T.erfc(y), (y + 1.5).acosh())
            .atanh(), [a, b], grad=True, rtol=1e-10, atol=1e-12)
    compare(lambda T, x, y: T.atan2(T.erfinv(x).asinh() * T.erfc(y), (y + 1.5).acosh()),
            [a, b], "float32", grad=True, rtol=2e-5, atol=1e-6)
