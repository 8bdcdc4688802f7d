"""``record_composition`` nodes (one PyTorch node computed by a hidden composition) give
partial derivatives per input: an input computed from another input (``trapezoid(x * x, x)``)
must not have that path counted twice. Against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg


@pytest.mark.parametrize("op", ["trapezoid", "cumulative_trapezoid"])
def test_composition_input_computed_from_another_input(op):
    x0 = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
    grads = []
    for lib in (jg, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = getattr(lib, op)(x * x, x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
