"""``torch.poisson`` / ``torch.binomial`` against PyTorch run here: seeded draws bit for bit
(float16/32/64, both algorithm branches of each sampler, the special values, layouts and
broadcasting, the generator stream afterwards), the errors and warnings for bad input, and the
nodes PyTorch records (PoissonBackward0's zero gradient, binomial's NotImplemented)."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import agree, check_snippet, torch

import jitgrad

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is the reference")


def _stream(T):
    """What is drawn next (the samplers' generator position afterwards)."""
    return T.rand(3, dtype=T.float64), T.randn(2, dtype=T.float64)


_R = np.random.default_rng(11)
RATES = {
    "small": _R.uniform(0, 10, 300).tolist(),                 # Knuth's product of uniforms
    "large": _R.uniform(10, 5000, 300).tolist(),              # transformed rejection
    "edges": [0.0, 1e-12, 9.999999, 10.0, 10.000001, 1e6, 5e15, 1e30, float("inf")],
}


@pytest.mark.parametrize("seed", [0, 77])
@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(RATES))
def test_poisson_draws_are_pytorchs(name, dt, seed):
    def run(T):
        T.manual_seed(seed)
        return T.poisson(T.tensor(RATES[name], dtype=getattr(T, dt))), _stream(T)
    agree(run)


def test_poisson_layouts_shapes_and_generator():
    rates = _R.uniform(0, 30, (4, 5)).tolist()

    def run(T):
        g = T.Generator().manual_seed(5)
        x = T.tensor(rates, dtype=T.float64)
        return (T.poisson(x.t(), generator=g), T.poisson(x[:, ::2], generator=g),
                T.poisson(T.tensor(3.5), generator=g), T.poisson(T.zeros(0, 3), generator=g),
                T.poisson(x.expand(2, 4, 5), generator=g), g.get_state()[:32])
    agree(run)


_N = 600
_C = np.floor(_R.uniform(0, 400, _N))
_P = _R.uniform(0, 1, _N)
PAIRS = {
    "inversion": (np.floor(_R.uniform(0, 15, _N)).tolist(), _R.uniform(0, 1, _N).tolist()),
    "btrs": ((_C + 40).tolist(), np.clip(_P, 0.15, 0.85).tolist()),
    "mixed": (_C.tolist(), _P.tolist()),
    "huge": (_R.uniform(0, 3e7, 200).tolist(), (_R.uniform(0, 1, 200) ** 4).tolist()),
    "edges": ([0.0, 5.0, 5.0, 5.0, -3.0, 4.0, 2.5, 1e6, 1e6, 3.0, 100.0, 100.0],
              [0.5, 0.0, 1.0, -0.5, 0.5, 2.0, 0.5, 1e-5, 1 - 1e-5, float("nan"), 0.1, 0.9]),
}


@pytest.mark.parametrize("seed", [0, 123])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_binomial_draws_are_pytorchs(name, dt, seed):
    count, prob = PAIRS[name]

    def run(T):
        T.manual_seed(seed)
        kind = getattr(T, dt)
        return T.binomial(T.tensor(count, dtype=kind), T.tensor(prob, dtype=kind)), _stream(T)
    agree(run)


def test_binomial_broadcasting_and_layouts():
    def run(T):
        T.manual_seed(3)
        c = T.tensor([[10.0, 20.0, 30.0]]).expand(4, 3)
        p = T.tensor([[0.1], [0.5], [0.7], [0.95]])
        return T.binomial(c, p), T.binomial(c.t().contiguous().t(), p), _stream(T)
    agree(run)


@pytest.mark.parametrize("code", [
    "torch.binomial(torch.tensor([1.0, 2.0]), torch.tensor([[0.5], [0.5]]))",
    "torch.binomial(torch.tensor([1, 2]), torch.tensor([0.5, 0.5]))",
    "torch.binomial(torch.tensor([1.0, 2.0]), torch.tensor([1, 0]))",
    "torch.binomial(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.5], dtype=torch.float64))",
    "torch.binomial(torch.tensor([1.0], dtype=torch.float64), torch.tensor([0.5]))",
    "torch.binomial(torch.tensor([1.0], dtype=torch.float16), torch.tensor([0.5], "
    "dtype=torch.float16))",
    "torch.binomial(torch.tensor([1.0, 2.0]), 0.5)",
    "torch.binomial([1.0], torch.tensor([0.5]))",
    "torch.poisson(torch.tensor([1, 2]))",
    "torch.poisson(torch.tensor([1.0, -1.0]))",
    "torch.poisson(torch.tensor([float('nan')]))",
    "torch.poisson(1.0)",
    "torch.poisson(torch.tensor([1.0]), generator=3)",
])
def test_errors_and_warnings(code):
    check_snippet("torch.manual_seed(0)\n" + code,
                  lambda v, lib: (str(v.dtype), v.shape, v.tolist()))


def test_poisson_error_after_partial_draws_leaves_the_stream_as_pytorch():
    """ATen draws for the elements before the bad rate, then raises."""
    def run(T):
        T.manual_seed(1)
        try:
            T.poisson(T.tensor([3.0, 40.0, -1.0, 2.0]))
        except RuntimeError:
            pass
        return _stream(T)
    agree(run)


def test_poisson_records_a_zero_gradient():
    def run(T):
        T.manual_seed(0)
        x = T.tensor([1.0, 20.0, 0.5], requires_grad=True)
        y = T.poisson(x)
        (g,) = T.autograd.grad((y * 3).sum(), x)
        y2 = T.poisson(x * 2)
        y2.sum().backward()
        return y.grad_fn.name(), y.requires_grad, g, x.grad, y2.grad_fn.next_functions[0][0].name()
    agree(run)


def test_binomial_records_not_implemented():
    def run(T):
        c = T.tensor([5.0, 6.0], requires_grad=True)
        p = T.tensor([0.3, 0.4])
        z = T.binomial(c, p)
        name = z.grad_fn.name()
        try:
            z.sum().backward()
        except RuntimeError as e:
            return name, str(e)
        return name, None
    agree(run)
    with jitgrad.no_grad():
        assert jitgrad.binomial(jitgrad.tensor([1.0], requires_grad=True),
                                jitgrad.tensor([0.5])).grad_fn is None
