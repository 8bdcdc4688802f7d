"""The gradient a sum-like reduction hands back is laid out as PyTorch's ``sum_backward`` lays it
out: a reduction without dims (``sum()``, ``sum(dim=None)``, ``sum([])``) or with keepdim
expands the incoming gradient as it is, so every expanded dim, a kept size-1 one included, has
stride 0; dims given one by one are unsqueezed back in increasing order first
(``unsqueeze_multiple``), so a size-1 dim among them keeps the unsqueeze's stride. ``mean``
divides that expanded gradient (``sum_backward(...) / n``). Strides and values compared with
PyTorch's, for inputs with and without size-1 dims, contiguous and transposed, and for an
incoming gradient laid out like the output or expanded from one value."""
import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(2024)
SHAPES = [(3, 1, 4), (1, 3), (3, 1), (1, 1, 4), (2, 3), (1,), ()]
DATA = {s: _rng.standard_normal(s) for s in SHAPES}

REDUCTIONS = {
    "sum()": lambda T, x: x.sum(), "sum(None)": lambda T, x: x.sum(dim=None),
    "sum([])": lambda T, x: x.sum([]), "sum(0)": lambda T, x: x.sum(0),
    "sum(-1)": lambda T, x: x.sum(-1), "sum(0, keepdim)": lambda T, x: x.sum(0, keepdim=True),
    "sum((0, -1))": lambda T, x: x.sum((0, -1)),
    "sum(every dim)": lambda T, x: x.sum(tuple(range(x.dim()))),
    "sum(every dim, keepdim)": lambda T, x: x.sum(tuple(range(x.dim())), keepdim=True),
    "mean()": lambda T, x: x.mean(), "mean(None)": lambda T, x: x.mean(dim=None),
    "mean(0)": lambda T, x: x.mean(0), "mean(-1, keepdim)": lambda T, x: x.mean(-1, keepdim=True),
    "mean((0, -1))": lambda T, x: x.mean((0, -1)),
    "mean(every dim)": lambda T, x: x.mean(tuple(range(x.dim()))),
    "nansum()": lambda T, x: T.nansum(x), "nansum(0)": lambda T, x: T.nansum(x, 0),
    "logsumexp(0)": lambda T, x: T.logsumexp(x, 0),
}


def _run(T, reduction, shape, layout, incoming):
    a = DATA[shape]
    if layout == "transposed":
        x = T.tensor(np.ascontiguousarray(a.swapaxes(0, -1))).transpose(0, -1)
    else:
        x = T.tensor(a)
    x.requires_grad_()
    h = x * 1.0  # a non-leaf: autograd.grad returns the gradient as the backward made it
    try:
        y = REDUCTIONS[reduction](T, h)
    except Exception as e:  # noqa: BLE001 - the same error is the outcome compared
        return type(e).__name__, str(e)
    g_out = T.ones_like(y) if incoming == "like output" else \
        T.tensor(0.5, dtype=T.float64).expand(y.shape)
    g, = T.autograd.grad(y, h, g_out)
    return tuple(g.shape), g.stride(), g.detach().numpy().tolist()


@pytest.mark.parametrize("reduction", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reduction_gradient_strides_match_pytorch(reduction, shape):
    for layout in ["contiguous", "transposed"] if len(shape) >= 2 else ["contiguous"]:
        for incoming in ["like output", "expanded"]:
            got = _run(jg, reduction, shape, layout, incoming)
            want = _run(torch, reduction, shape, layout, incoming)
            where = f"{layout}, incoming {incoming}"
            assert got[:2] == want[:2], f"{where}: jitgrad {got[:2]}, PyTorch {want[:2]}"
            if len(want) == 3:
                np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12,
                                           err_msg=where)
