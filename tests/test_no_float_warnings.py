"""PyTorch turns IEEE exceptions into inf/NaN silently; jitgrad's NumPy-computed ops must not
raise NumPy's RuntimeWarnings (``invalid value encountered in reduce`` ...) for the same input."""
import math
import warnings

import numpy as np
import pytest

import jitgrad as jg

CASES = {
    "sum": lambda x: x.sum(),
    "mean": lambda x: x.mean(1),
    "prod": lambda x: x.prod(),
    "var": lambda x: x.var(),
    "std": lambda x: x.std(1),
    "logsumexp": lambda x: x.logsumexp(1),
    "norm": lambda x: x.norm(),
    "cumsum": lambda x: x.cumsum(1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inf_minus_inf_is_nan_without_warnings(name):
    data = [[math.inf, -math.inf, 1.0]]
    x = jg.tensor(data, dtype=jg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = CASES[name](x)
        out.sum().backward()
    try:
        import torch
    except ImportError:
        return
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    tout = CASES[name](tx)
    tout.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


ROWS = [[math.inf, -math.inf, 1.0], [-math.inf] * 3, [math.inf, 1.0, 2.0], [-math.inf, 1.0, 2.0],
        [math.inf, math.inf, 1.0], [math.nan, 1.0, 2.0]]


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_of_non_finite_rows_matches_torch(fn, dim):
    torch = pytest.importorskip("torch")
    for dt in ("float32", "float64"):
        mine = getattr(jg.tensor(ROWS, dtype=getattr(jg, dt)), fn)(dim).numpy()
        ref = getattr(torch.tensor(ROWS, dtype=getattr(torch, dt)), fn)(dim).numpy()
        np.testing.assert_allclose(mine, ref, rtol=1e-6)  # NaN/inf positions must agree exactly
