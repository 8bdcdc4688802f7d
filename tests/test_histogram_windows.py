# ruff: noqa: B023 - agree()/raises_like() call each lambda at once, inside the loop
"""frexp, the window factories and histogram/histogramdd against PyTorch: exact values where
PyTorch's are reproducible (frexp, bartlett/kaiser windows, histogram counts and edges),
gradients, return types, out= and errors."""
import numpy as np
import pytest
from _parity import agree, raises_like

import jitgrad
from jitgrad.ops.frexp import _composed

torch = pytest.importorskip("torch")  # the comparisons need PyTorch

RNG = np.random.default_rng(21)


def _frexp_inputs(dt):
    fi = np.finfo(dt)
    scales = 10.0 ** RNG.integers(int(np.log10(fi.tiny)) + 1, int(np.log10(fi.max)), 500)
    special = [0.0, -0.0, 1.0, 0.5, -0.5, 2.0, np.inf, -np.inf, np.nan, fi.tiny, fi.tiny / 2,
               fi.smallest_subnormal, fi.max, -fi.max, 0.75, 1 - fi.eps / 2, 1 + fi.eps]
    return np.concatenate([RNG.standard_normal(500) * scales, special]).astype(dt)


def _bits(t):
    m, e = t
    return (m.detach().numpy().tobytes(), e.numpy().tolist(), str(m.dtype), str(e.dtype),
            type(t).__name__)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_frexp_values_bitwise(dt):
    x = _frexp_inputs(dt)
    assert _bits(jitgrad.frexp(jitgrad.tensor(x))) == _bits(torch.frexp(torch.tensor(x)))
    assert _bits(jitgrad.tensor(x).frexp()) == _bits(torch.tensor(x).frexp())
    agree(lambda T: T.frexp(T.tensor(x[:20]).reshape(4, 5)))
    agree(lambda T: T.frexp(T.tensor(dt(3.0))))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_frexp_device_composition_bitwise(dt):
    """The tensor-op path CUDA tensors take, checked on the CPU against PyTorch."""
    x = _frexp_inputs(dt)
    m, e = _composed(jitgrad.tensor(x))
    mt, et = torch.frexp(torch.tensor(x))
    assert m.numpy().tobytes() == mt.numpy().tobytes()
    assert e.numpy().tolist() == et.numpy().tolist() and str(e.dtype) == "torch.int32"


def test_frexp_grad_out_errors():
    def grad(T):
        x = T.tensor([3.0, 0.1, -7.5, 0.0], requires_grad=True)
        m, e = T.frexp(x)
        (m * T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        return type(m.grad_fn).__name__, e.requires_grad, x.grad
    agree(grad)

    def out(T):
        m, e = T.empty(0), T.empty(0, dtype=T.int32)
        r = T.frexp(T.tensor([3.0, 0.1]), out=(m, e))
        return type(r).__name__, r.mantissa is m, r.exponent is e, m, e
    agree(out)
    for f in (lambda T: T.frexp(T.tensor([1, 2])),
              lambda T: T.frexp(T.tensor([1.0]), out=(T.empty(0), T.empty(0))),
              lambda T: T.frexp(T.tensor([1.0]), out=(T.empty(0).double(),
                                                      T.empty(0, dtype=T.int32))),
              lambda T: T.frexp(T.tensor([1.0], requires_grad=True),
                                out=(T.empty(0), T.empty(0, dtype=T.int32)))):
        agree(f)


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]
LENGTHS = [*range(0, 20), 31, 64, 257, 1000]


def _window_args(name):
    return {"hamming_window": [(), (0.6,), (0.6, 0.3)], "kaiser_window": [(), (5.5,), (0.5,)]
            }.get(name, [()])


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_windows_values(name, dt):
    """bartlett and kaiser (and every float16 window) bit for bit; the cosine windows within
    an ulp or two in float32/float64: PyTorch's cos is SLEEF's vectorized one, jitgrad's its own
    (docs/math.md), and they round a few percent of arguments differently."""
    exact = name in ("bartlett_window", "kaiser_window") or dt == "float16"
    for n in LENGTHS:
        for periodic in (True, False):
            for args in _window_args(name):
                want = getattr(torch, name)(n, periodic, *args, dtype=getattr(torch, dt))
                got = getattr(jitgrad, name)(n, periodic, *args, dtype=getattr(jitgrad, dt))
                where = (name, n, periodic, args, dt)
                assert tuple(got.shape) == tuple(want.shape) and \
                    str(got.dtype) == str(want.dtype), where
                if exact:
                    assert got.numpy().tobytes() == want.numpy().tobytes(), where
                else:
                    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0,
                                               atol=4 * np.finfo(dt).eps, err_msg=str(where))


@pytest.mark.parametrize("name", WINDOWS)
def test_window_kwargs_and_errors(name):
    def desc(w):  # values to 6 places: the cosine windows may differ in the last ulp
        return tuple(w.shape), str(w.dtype), np.round(w.detach().numpy(), 6).tolist()
    agree(lambda T: desc(getattr(T, name)(6)))
    agree(lambda T: desc(getattr(T, name)(6, False, dtype=T.float64)))
    agree(lambda T: desc(getattr(T, name)(window_length=5, periodic=False)))

    def leaf(T):
        w = getattr(T, name)(5, requires_grad=True)
        return w.requires_grad, w.is_leaf, w.grad_fn is None
    agree(leaf)
    agree(lambda T: getattr(T, name)(1, requires_grad=True).requires_grad)
    for f in (lambda T: getattr(T, name)(-1),
              lambda T: getattr(T, name)(5, dtype=T.int64),
              lambda T: getattr(T, name)(-2, dtype=T.int32),
              lambda T: getattr(T, name)(5.0)):
        raises_like(f)
