"""torch.as_strided / Tensor.as_strided(_) (jitgrad/ops/shape_as_strided.py) against PyTorch:
the view's values, sharing and storage offset, AsStridedBackward0/1 gradients (repeated and
expanded elements included), in-place writes through the view, and the errors."""
import numpy as np
import pytest

from tests._parity import check_snippet, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _describe(v, lib):
    if isinstance(v, tuple):
        return tuple(_describe(u, lib) for u in v)
    if isinstance(v, lib.Tensor):
        gf = v.grad_fn
        return (str(v.dtype), tuple(v.shape), v.tolist(), v.stride(),
                None if gf is None else type(gf).__name__)
    return v


CASES = [
    "x = torch.arange(6.); v = torch.as_strided(x, (2, 2), (1, 2), 1); v",
    "x = torch.arange(6.); v = x.as_strided((2, 3), (1, 2)); v[0, 0] = 9; (v, x)",
    "x = torch.arange(6.); v = torch.as_strided(x, (3, 3), (1, 1)); (v, v.storage_offset())",
    "x = torch.arange(6.); z = x[2:]; w = torch.as_strided(z, (2,), (2,)); "
    "(w, w.storage_offset())",
    "x = torch.arange(6.); z = x[2:]; torch.as_strided(z, (2,), (2,), 0)",
    "x = torch.arange(12.).reshape(3, 4).t(); torch.as_strided(x, (2, 2), (4, 1))",
    "x = torch.arange(6., requires_grad=True); y = x * 1; v = torch.as_strided(y, (2, 2), "
    "(1, 2), 1); v.sum().backward(); (v, x.grad)",
    "x = torch.arange(6., requires_grad=True); v = torch.as_strided(x * 1, (3, 3), (1, 1)); "
    "(v * torch.arange(9.).reshape(3, 3)).sum().backward(); x.grad",
    "x = torch.arange(6., requires_grad=True); z = (x * 1)[2:]; "
    "w = torch.as_strided(z, (2,), (2,)); (w * 3).sum().backward(); x.grad",
    "e = torch.ones(3, requires_grad=True); r = torch.as_strided(e.expand(2, 3), (3,), (1,)); "
    "(r * torch.tensor([1., 2., 3.])).sum().backward(); e.grad",
    "x = torch.arange(6., requires_grad=True); v = torch.as_strided(x, (2,), (2,)); "
    "v.sum().backward(); x.grad",
    "x = torch.arange(6., requires_grad=True); y = x * 1; y.as_strided_((2,), (1,)); "
    "y.sum().backward(); (y, x.grad)",
    "x = torch.arange(6.); torch.as_strided_(x, (2, 2), (2, 1), 1); (x, x.stride())",
    "x = torch.arange(6., requires_grad=True); y = x * 1; v = torch.as_strided(y, (3,), (2,)); "
    "v.mul_(10); y.sum().backward(); (y, x.grad)",
    "x = torch.arange(6., requires_grad=True); y = x * 1; z = y[1:]; "
    "v = torch.as_strided(z, (2,), (3,)); v.add_(1); (y * torch.arange(6.)).sum().backward(); "
    "(y, z, x.grad)",
    "torch.as_strided(torch.arange(6.), (2,), (1, 1))",
    "torch.as_strided(torch.arange(6.), (7,), (1,))",
    "torch.as_strided(torch.arange(6.), (2,), (-1,))",
    "torch.as_strided(torch.arange(6.), (2,), (1,), -1)",
    "torch.as_strided(torch.arange(6.), (-1,), (1,))",
    "torch.as_strided(torch.arange(6.), 2, 1)",
    "torch.as_strided(3, (2,), (1,))",
    "torch.as_strided(torch.arange(6.), (2,), (1,), 5)",
]


@pytest.mark.parametrize("code", CASES)
def test_as_strided(code):
    check_snippet(code.replace("; ", "\n"), _describe)


def test_gradient_against_a_dense_reference():
    # the gradient of sum(w * as_strided(x)) is, at each storage element, the sum of the
    # weights of the view positions reading it
    w = np.arange(1.0, 10.0).reshape(3, 3)
    import jitgrad
    x = jitgrad.zeros(8, requires_grad=True, dtype=jitgrad.float64)
    (jitgrad.as_strided(x, (3, 3), (2, 1), 1) * jitgrad.tensor(w)).sum().backward()
    want = np.zeros(8)
    for i in range(3):
        for j in range(3):
            want[1 + 2 * i + j] += w[i, j]
    np.testing.assert_array_equal(x.grad.numpy(), want)
