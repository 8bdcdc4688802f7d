"""torch.special's Airy/Bessel functions and orthogonal polynomials against PyTorch run here.

Values are compared bit for bit (NaN-aware ``np.array_equal``) in float32 and float64, on the
special points (0, -0, +-1, the branch limits, negatives, large, inf, NaN, subnormals) and on
random sweeps over every branch. The one exception is the polynomials' NaN ``x`` with n >= 2
(Chebyshev, shifted Chebyshev, Laguerre, Legendre): PyTorch returns an uninitialized variable
there (its recurrence stops before its first step), jitgrad NaN; those entries are checked to be
NaN here and excluded from the comparison. Also: dtype promotion of (x, n) with Tensors, Numbers,
integers and broadcasting, ``out=``, the float16 errors, argument errors, and that no result
requires grad (PyTorch declares no derivative).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg

RNG = np.random.default_rng(7)

UNARY = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
# the recurrences ATen stops at a NaN, returning a variable it never set
UNSET_FOR_NAN_X = {"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                   "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                   "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                   "shifted_chebyshev_polynomial_w", "laguerre_polynomial_l",
                   "legendre_polynomial_p"}

SPECIAL_X = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-6, -1e-6, 1e-5, 2.0, -2.0, 2.09, -2.09, 2.5,
             5.0, -5.0, 5.000001, 8.0, -8.0, 8.3203353, 8.5, 20.0, -20.0, 103.892, 104.0, 700.0,
             -700.0, 1e10, -1e10, 1e30, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 5e-324,
             1e-310, 0.9999999, 1.0000001, 0.25, 0.75]


def _same(a, b):
    return np.array_equal(a, b, equal_nan=True)


def _unary_points(dt):
    sweep = np.concatenate([RNG.uniform(-12, 12, 3000), RNG.uniform(-2.2, 2.2, 1000),
                            np.exp(RNG.uniform(-40, 7, 2000)) * RNG.choice([-1, 1], 2000)])
    return np.concatenate([np.array(SPECIAL_X), sweep]).astype(dt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_unary_bit_for_bit(name, dtype):
    x = _unary_points(dtype)
    want = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    got = getattr(jg.special, name)(jg.tensor(x))
    assert got.dtype is getattr(jg, np.dtype(dtype).name)
    bad = ~((want == got.numpy()) | (np.isnan(want) & np.isnan(got.numpy())))
    assert not bad.any(), (x[bad][:5], want[bad][:5], got.numpy()[bad][:5])


DEGREES = [-5.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 3.7,
           15.0, 50.0, 127.0, 128.0, 129.0, 511.0, 512.0, 513.0, 1000.0, 1e19, -1e19, np.inf,
           -np.inf, np.nan]


def _polynomial_grid(dt):
    x = np.concatenate([np.array(SPECIAL_X), RNG.uniform(-1, 1, 200), RNG.uniform(-3, 3, 100),
                        RNG.uniform(0, 1, 100)])
    xs, ns = np.meshgrid(x, np.array(DEGREES))
    return xs.ravel().astype(dt), ns.ravel().astype(dt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_bit_for_bit(name, dtype):
    x, n = _polynomial_grid(dtype)
    want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    got = getattr(jg.special, name)(jg.tensor(x), jg.tensor(n)).numpy()
    keep = np.ones(x.shape, bool)
    if name in UNSET_FOR_NAN_X:
        unset = np.isnan(x) & (n >= 2) & (n < 2.0 ** 63)
        assert np.isnan(got[unset]).all()
        keep = ~unset
    bad = keep & ~((want == got) | (np.isnan(want) & np.isnan(got)))
    assert not bad.any(), (x[bad][:5], n[bad][:5], want[bad][:5], got[bad][:5])


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "legendre_polynomial_p",
                                  "hermite_polynomial_he", "shifted_chebyshev_polynomial_w"])
def test_high_degrees_through_the_recurrence_and_the_trigonometric_form(name):
    x = np.array([0.3, -0.7, 0.999, 1.0001, -1.2, 1e-3], dtype=np.float64)
    n = np.array([20.0, 100.0, 1000.0, 5000.0, 300.0, 70.0])
    want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    got = getattr(jg.special, name)(jg.tensor(x), jg.tensor(n)).numpy()
    assert _same(want, got)


def _run(lib, name, x, n):
    t = lambda v: lib.tensor(v) if isinstance(v, (list, np.ndarray)) else v  # noqa: E731
    return getattr(lib.special, name)(t(x), t(n))


@pytest.mark.parametrize("x,n", [
    (np.array([0.3, -0.2, 1.5], np.float32), 3),                      # Tensor, int
    (np.array([0.3, -0.2, 1.5], np.float32), 3.7),                    # Tensor, float
    (np.array([0.3, -0.2, 1.5], np.float32), True),                   # Tensor, bool
    (np.array([1, 2, -3]), 4),                                        # int Tensor, int
    (np.array([1, 2, -3]), 2.5),                                      # int Tensor, float
    (0.3, np.array([0, 1, 5, 9])),                                    # Number, int Tensor
    (2, np.array([0, 1, 5, 9])),                                      # int, int Tensor
    (np.array([0.3, 0.6]), np.array([2, 7], np.int32)),               # float64, int32
    (np.array([0.3, 0.6], np.float32), np.array([2.0, 9.0])),         # float32, float64
    (np.array([[0.3], [0.9]], np.float32), np.array([1, 4, 10])),     # broadcasting
    (np.array([True, False]), np.array([3, 4], np.int8)),             # bool, int8
    (np.array([0.2, 0.4], np.float32), np.array(3.0)),                # 0-d float64 n
])
@pytest.mark.parametrize("name", ["chebyshev_polynomial_u", "hermite_polynomial_h",
                                  "laguerre_polynomial_l", "shifted_chebyshev_polynomial_v"])
def test_polynomial_operands_promote_like_pytorch(name, x, n):
    want = _run(torch, name, x, n)
    got = _run(jg, name, x, n)
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    assert _same(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["bessel_j0", "modified_bessel_k1", "airy_ai"])
def test_integer_and_bool_inputs_promote_to_the_default_float(name):
    for v in (np.array([0, 1, 2, 7]), np.array([True, False])):
        want = getattr(torch.special, name)(torch.tensor(v))
        got = getattr(jg.special, name)(jg.tensor(v))
        assert str(got.dtype) == str(want.dtype) == "torch.float32"
        assert _same(got.numpy(), want.numpy())


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - compared by type and message
        return type(e).__name__, str(e)
    return "ok", str(r.dtype), tuple(r.shape), r.numpy().tolist()


@pytest.mark.parametrize("code", [
    "S.bessel_j0(T.tensor([1.0, 2.0], dtype=T.float16))",
    "S.scaled_modified_bessel_k1(T.tensor([1.0], dtype=T.float16))",
    "S.chebyshev_polynomial_t(T.tensor([0.5], dtype=T.float16), 2)",
    "S.legendre_polynomial_p(T.tensor([1, 2], dtype=T.float16), T.tensor([1, 2], dtype=T.float16))",
    "S.hermite_polynomial_h(T.tensor([0.5]), T.tensor([1, 2], dtype=T.float16))",
    "S.bessel_y0(3.0)",
    "S.airy_ai([1.0])",
    "S.bessel_j1(T.ones(2), T.ones(2))",
    "S.bessel_j1()",
    "S.bessel_j0(T.ones(1), foo=1)",
    "S.bessel_j0(input=T.ones(1), x=T.ones(1))",
    "S.airy_ai(T.ones(1), input=1)",
    "S.airy_ai(input=T.ones(2))",
    "S.airy_ai(x=T.ones(2))",
    "S.bessel_j0(x=T.ones(2))",
    "S.modified_bessel_k0(input=T.ones(2))",
    "S.scaled_modified_bessel_k0(input=T.ones(2))",
    "S.chebyshev_polynomial_t(0.3, 3)",
    "S.chebyshev_polynomial_t(T.ones(2), 'a')",
    "S.chebyshev_polynomial_t('a', T.ones(2))",
    "S.chebyshev_polynomial_t(T.ones(2))",
    "S.chebyshev_polynomial_t(T.ones(2), 2, foo=1)",
    "S.chebyshev_polynomial_t(x=T.ones(2) * 0.3, n=2)",
    "S.chebyshev_polynomial_t(T.ones(2) * 0.3, n=T.tensor([2, 3]))",
    "S.chebyshev_polynomial_t(T.ones(2), T.ones(3))",
    "S.chebyshev_polynomial_t(T.ones(2), 2, out=3)",
    "S.bessel_j0(T.ones(2), out=3)",
    "S.bessel_j0(T.ones(2), out=T.empty(2, dtype=T.int64))",
    "S.bessel_j0(T.tensor([1, 2]), out=T.empty(2, dtype=T.float64))",
    "S.bessel_y1(T.tensor([1.5, 2.0]), out=T.empty(2, dtype=T.float64))",
    "S.legendre_polynomial_p(T.tensor([0.3, 0.5]), 3, out=T.empty(2, dtype=T.int32))",
    "S.legendre_polynomial_p(T.tensor([0.3, 0.5]), 3, out=T.empty(2, dtype=T.float64))",
])
def test_errors_and_out_like_pytorch(code):
    want = _outcome(lambda: eval(code, {"S": torch.special, "T": torch}))
    got = _outcome(lambda: eval(code, {"S": jg.special, "T": jg}))
    assert got == want


def test_out_is_written_and_returned():
    x = np.array([0.3, 1.7, 4.0])
    for name, args in (("modified_bessel_i1", ()), ("laguerre_polynomial_l", (4,))):
        o = jg.empty(3, dtype=jg.float64)
        r = getattr(jg.special, name)(jg.tensor(x), *args, out=o)
        want = getattr(torch.special, name)(torch.tensor(x), *args)
        assert r is o and _same(o.numpy(), want.numpy())


def test_no_result_requires_grad_as_in_pytorch():
    for lib in (torch, jg):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        ys = [lib.special.bessel_y1(x), lib.special.chebyshev_polynomial_w(x, 3),
              lib.special.hermite_polynomial_he(0.4, x), lib.special.modified_bessel_k0(x)]
        assert all(not y.requires_grad and y.grad_fn is None for y in ys)
        o = lib.empty(2)
        lib.special.airy_ai(x, out=o)  # out= allowed: no derivative to refuse
        assert not o.requires_grad
    msgs = []
    for lib in (torch, jg):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            lib.special.bessel_j0(x).sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_not_on_the_torch_namespace_or_tensor():
    for name in UNARY + POLYNOMIALS:
        assert hasattr(jg.special, name) and name in jg.special.__all__
        assert hasattr(torch, name) == hasattr(jg, name)
        assert hasattr(torch.Tensor, name) == hasattr(jg.Tensor, name)


def test_python_scalar_vocabulary_matches_the_kernels():
    """The Python-scalar versions (tensor_env's fallbacks, the CUDA simulator's code path) give
    the compiled kernels' float64 values up to an ulp or so (NumPy's log/sin/cos are not libm's,
    and their fma is a * b + c rounded twice in float64): more relative near a zero."""
    from jitgrad.backends.special_targets import python
    P = python()
    x = np.array([-3.0, -0.4, 0.2, 1.5, 3.0, 6.0, 9.5])
    for name, fn in (("bessel_y0", "bessel_y0"), ("airy_ai", "airy_ai"),
                     ("modified_bessel_k1", "modified_bessel_k1")):
        want = getattr(jg.special, name)(jg.tensor(x)).numpy()
        got = np.array([P[fn](v) for v in x])
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    want = jg.special.legendre_polynomial_p(jg.tensor(x / 10), 7).numpy()
    np.testing.assert_allclose([P["legendre_p"](v / 10, 7.0) for v in x], want, rtol=1e-15,
                               atol=1e-15)
