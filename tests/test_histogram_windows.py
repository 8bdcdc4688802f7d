# ruff: noqa: B023 - agree()/raises_like() call each lambda at once, inside the loop
"""frexp, the window factories and histogram/histogramdd against PyTorch: exact values where
PyTorch's are reproducible (frexp, bartlett/kaiser windows, histogram counts and edges),
gradients, return types, out= and errors."""
import warnings

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


def _hist_case(dt, n, kind, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(dt)
    if seed % 3 == 0:
        x = np.round(x * 4) / 4  # values on the edges
    w = rng.random(n).astype(dt)
    e = np.sort(rng.standard_normal(int(rng.integers(2, 9)))).astype(dt)
    return x, w, e


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_histogram_bitwise(dt):
    """Counts and edges bit for bit; weights too while PyTorch's loop is single-threaded (at
    most 200 points), density included (its total is ATen's cascade sum)."""
    for seed in range(24):
        n = [0, 1, 7, 64, 199, 200][seed % 6]
        x, w, e = _hist_case(dt, n, None, seed)
        for bins in (1, 5, 37, "edges"):
            for extra in ({}, {"range": (-1.0, 2.0)}, {"density": True}, {"weight": 1},
                          {"weight": 1, "density": True}):
                def run(T):
                    kw = dict(extra)
                    if "weight" in kw:
                        kw["weight"] = T.tensor(w)
                    b = T.tensor(e) if bins == "edges" else bins
                    if bins == "edges":
                        kw.pop("range", None)
                    r = T.histogram(T.tensor(x), b, **kw)
                    return type(r).__name__, r.hist.numpy().tobytes(), r.bin_edges, r.hist.dtype
                agree(run)
                agree(lambda T: T.tensor(x).histogram(bins if bins != "edges" else 3))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_histogramdd_bitwise(dt):
    rng = np.random.default_rng(5)
    for n_dims in (1, 2, 3):
        m = 200 // n_dims  # one PyTorch thread: weighted sums in element order
        x = np.round(rng.standard_normal((m, n_dims)).astype(dt) * 4) / 4
        w = rng.random(m).astype(dt)
        edges = [np.sort(rng.standard_normal(int(rng.integers(2, 6)))).astype(dt)
                 for _ in range(n_dims)]
        for bins in (3, [int(rng.integers(1, 6)) for _ in range(n_dims)], "edges"):
            for extra in ({}, {"range": [-1.0, 2.0] * n_dims}, {"weight": 1, "density": True}):
                def run(T):
                    kw = dict(extra)
                    if "weight" in kw:
                        kw["weight"] = T.tensor(w)
                    b = [T.tensor(e) for e in edges] if bins == "edges" else bins
                    if bins == "edges":
                        kw.pop("range", None)
                    r = T.histogramdd(T.tensor(x), b, **kw)
                    return (type(r).__name__, r.hist.numpy().tobytes(), tuple(r.hist.shape),
                            r.bin_edges)
                agree(run)
        agree(lambda T: T.histogramdd(T.tensor(x).reshape(m, 1, n_dims), 2))


def test_histogram_weighted_many_points_close():
    """Beyond 200 points PyTorch adds weights per thread and then the partial histograms: the
    same values up to rounding."""
    x, w, _ = _hist_case(np.float64, 5000, None, 1)
    got = jitgrad.histogram(jitgrad.tensor(x), 20, weight=jitgrad.tensor(w))
    want = torch.histogram(torch.tensor(x), 20, weight=torch.tensor(w))
    assert got.bin_edges.numpy().tobytes() == want.bin_edges.numpy().tobytes()
    np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-12)


def test_histogram_grad_out_and_errors():
    x = np.array([1.0, 2.0, 1.0, 2.5, 4.0], np.float32)

    def grad(T):
        xr = T.tensor(x, requires_grad=True)
        h = T.histogram(xr, 3)
        names = type(h.hist.grad_fn).__name__, type(h.bin_edges.grad_fn).__name__
        try:
            h.hist.sum().backward()
        except RuntimeError as e:
            return names, str(e)
    agree(grad)

    def grad_dd(T):
        p = T.tensor(x.reshape(5, 1).repeat(2, 1), requires_grad=True)
        h = T.histogramdd(p, 2)
        out = [type(h.hist.grad_fn).__name__]
        for t in (h.hist, h.bin_edges[0]):
            try:
                t.sum().backward()
            except RuntimeError as e:
                out.append(str(e))
        return out
    agree(grad_dd)

    def out(T):
        ho, eo = T.empty(0), T.empty(0)
        r = T.histogram(T.tensor(x), 3, out=(ho, eo))
        return type(r).__name__, r.hist is ho, r.bin_edges is eo, ho, eo
    agree(out)

    def out_grad(T):  # no autograd refusal here, a non-empty out resized with the warning
        ho, eo = T.empty(0), T.empty(5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.histogram(T.tensor(x, requires_grad=True), 3, out=(ho, eo))
        return ho, eo, len(caught)
    agree(out_grad)
    for f in (lambda T: T.histogram(T.tensor(x), 2, out=(T.empty(0).double(), T.empty(0))),
              lambda T: T.histogram(T.tensor(x), 2, out=(T.empty(0), T.empty(0).double()))):
        agree(f)
    nan = np.array([1.0, np.nan], np.float32)
    for f in (lambda T: T.histogram(T.tensor(nan), 3),
              lambda T: T.histogram(T.tensor(x).long(), 3),
              lambda T: T.histogram(T.tensor(x), 0),
              lambda T: T.histogram(T.tensor(x), 3, range=(3.0, 0.0)),
              lambda T: T.histogram(T.tensor(x), 3, range=(0.0, float("inf"))),
              lambda T: T.histogram(T.tensor(x), 3, range=(0.0, 1.0, 2.0)),
              lambda T: T.histogram(T.tensor(x), 3, weight=T.ones(4)),
              lambda T: T.histogram(T.tensor(x), 3, weight=T.ones(5).double()),
              lambda T: T.histogram(T.tensor(x), T.tensor([[0.0, 1.0]])),
              lambda T: T.histogram(T.tensor(x), T.tensor([0.0, 1.0]).double()),
              lambda T: T.histogram(T.tensor(x), T.tensor([])),
              lambda T: T.histogram(T.tensor(x), T.tensor([1.0])),
              lambda T: T.histogram(T.empty(0), 3),
              lambda T: T.histogram(T.tensor(2.0), 3),
              lambda T: T.histogramdd(T.tensor(x), 2),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1), [2, 2]),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1), [T.tensor([0.0, 1.0])] * 2),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1), [0]),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1), 2, range=[0.0, 1.0, 2.0]),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1).long(), 2),
              lambda T: T.histogramdd(T.tensor(x).reshape(5, 1), 2, weight=T.ones(4)),
              lambda T: T.histogramdd(T.empty(0, 2), 2)):
        agree(f)


SIGNAL_WINDOWS = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
                  "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


@pytest.mark.parametrize("name", SIGNAL_WINDOWS)
def test_signal_windows(name):
    """torch.signal.windows: shapes, dtypes, grad_fn names and requires_grad as PyTorch's;
    bartlett bit for bit, the others within a few ulps (PyTorch's vectorized exp/sin/cos/sqrt
    are SLEEF's and round some arguments differently from jitgrad's)."""
    assert dir(jitgrad.signal.windows) == dir(torch.signal.windows)
    kw = {"general_cosine": {"a": [0.5, 0.3, 0.2]}, "kaiser": {"beta": 5.0},
          "gaussian": {"std": 2.5}, "exponential": {"tau": 3.0}}.get(name, {})
    for M in [*range(0, 12), 31, 100]:
        for sym in (True, False):
            for dt in ("float32", "float64"):
                def make(T):
                    extra = dict(kw)
                    if name == "exponential" and not sym:
                        extra["center"] = 2.0
                    return getattr(T.signal.windows, name)(
                        M, sym=sym, dtype=getattr(T, dt), requires_grad=True, **extra)
                got, want = make(jitgrad), make(torch)
                assert (tuple(got.shape), str(got.dtype), got.requires_grad,
                        type(got.grad_fn).__name__) == \
                    (tuple(want.shape), str(want.dtype), want.requires_grad,
                     type(want.grad_fn).__name__)
                g, w = got.detach().numpy(), want.detach().numpy()
                if name == "bartlett":
                    assert g.tobytes() == w.tobytes()
                else:
                    np.testing.assert_allclose(g, w, rtol=0, atol=8 * np.finfo(dt).eps)


def test_signal_window_errors():
    for f in (lambda T: T.signal.windows.hann(-1),
              lambda T: T.signal.windows.hann(3, dtype=T.float16),
              lambda T: T.signal.windows.gaussian(3, std=0.0),
              lambda T: T.signal.windows.exponential(3, tau=-1.0),
              lambda T: T.signal.windows.exponential(3, center=1.0),
              lambda T: T.signal.windows.kaiser(3, beta=-1.0),
              lambda T: T.signal.windows.general_cosine(3, a=[]),
              lambda T: T.signal.windows.general_cosine(3, a=3)):
        agree(f)
