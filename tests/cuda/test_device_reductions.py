"""var/std/var_mean/std_mean, norm, logsumexp, prod, cumsum, all/any/count_nonzero on CUDA
tensors: forward and backward against the CPU path (an independent NumPy implementation), the
scan kernel against NumPy, and no host<->device transfer in forward or backward.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_reductions.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

INF = float("inf")
RNG = np.random.default_rng(11)
A = RNG.standard_normal((2, 3, 5))
A[0, 1, 2] = 0.0  # a zero: prod/norm gradients take their zero branches
ZEROS = RNG.standard_normal((3, 4))
ZEROS[0, 1] = 0.0  # row 0: one zero; row 1: two zeros; row 2: none
ZEROS[1, 0] = ZEROS[1, 3] = 0.0
NONZERO = RNG.uniform(0.5, 1.5, (3, 4)) * np.sign(RNG.standard_normal((3, 4)))
SPECIAL = RNG.standard_normal((4, 5))
SPECIAL[0, 1] = np.nan
SPECIAL[1, 2] = INF
SPECIAL[2, :] = -INF  # a row of -inf: logsumexp shifts by 0 and gives -inf
LONG = RNG.standard_normal((2, 19))  # 19 > 2 simulator blocks of 8: the scan carries chunks

CASES = {
    # var / std / var_mean / std_mean: dims, keepdim, correction / unbiased
    "var_dim": (lambda x: x.var(1), A),
    "var_all": (lambda x: x.var(), A),
    "var_dims_keep_c0": (lambda x: x.var((0, 2), keepdim=True, correction=0), A),
    "var_unbiased_false": (lambda x: jg.var(x, 2, False), A),
    "var_correction2": (lambda x: x.var(-1, correction=2), A),
    "std_all_keep": (lambda x: x.std(None, keepdim=True), A),
    "std_bool_unbiased": (lambda x: jg.std(x, False), A),
    "var_mean": (lambda x: jg.cat([t.flatten() for t in jg.var_mean(x, 1)]), A),
    "std_mean_keep": (lambda x: jg.cat([t.flatten() for t in
                                        jg.std_mean(x, (0, 1), keepdim=True)]), A),
    "var_special": (lambda x: x.var(1), SPECIAL),
    "var_strided_view": (lambda x: x.permute(2, 0, 1)[1:].var((1, 2)), A),
    # norm (torch.linalg.vector_norm semantics)
    "norm_fro": (lambda x: x.norm(), A),
    "norm2_zero_row": (lambda x: jg.cat([x[:1] * 0, x[1:]]).norm(dim=1), NONZERO),
    "norm1": (lambda x: x.norm(1, dim=(0, 2)), A),
    "norm_inf": (lambda x: x.norm(INF, dim=2, keepdim=True), A),
    "norm_ninf": (lambda x: x.norm(-INF, dim=0), A),
    "norm0": (lambda x: x.norm(0, dim=1), A),
    "norm3": (lambda x: x.norm(3, dim=(1, 2)), A),
    "norm_half": (lambda x: x.norm(0.5, dim=1), NONZERO),
    "norm_special": (lambda x: x.norm(dim=1), SPECIAL),
    # logsumexp
    "logsumexp": (lambda x: x.logsumexp(1), A),
    "logsumexp_dims_keep": (lambda x: jg.logsumexp(x, (0, 2), keepdim=True), A),
    "logsumexp_special": (lambda x: x.logsumexp(1), SPECIAL),
    # prod (zeros: the gradient is the product of the other elements)
    "prod_dim": (lambda x: x.prod(1), NONZERO),
    "prod_zeros": (lambda x: x.prod(1), ZEROS),
    "prod_zeros_all": (lambda x: x.prod(), ZEROS),
    "prod_zeros_dim0_keep": (lambda x: x.prod(0, keepdim=True), ZEROS),
    "prod_zeros_3d": (lambda x: x.prod(2), A),
    "prod_special": (lambda x: x.prod(1), SPECIAL),
    # cumsum along every dim, a transposed (strided) input, rows longer than a block
    "cumsum0": (lambda x: x.cumsum(0), A),
    "cumsum_transposed": (lambda x: x.transpose(0, 2).cumsum(0), A),
    "cumsum_long": (lambda x: x.cumsum(1), LONG),
    "cumsum_special": (lambda x: x.cumsum(1), SPECIAL),
    # all / any / count_nonzero (no gradient): NaN counts as nonzero
    "all_any": (lambda x: jg.cat([x.all(1).flatten(), (x > 0).any(2, keepdim=True).flatten(),
                                  x.all().reshape(1), (x > 5).any().reshape(1)]), A),
    "all_any_special": (lambda x: jg.cat([x.all(1), x.any(0), (x * 0).any(1),
                                          (x * 0).all(1)]), SPECIAL),
    "count_nonzero": (lambda x: jg.cat([x.count_nonzero(1).flatten(),
                                        x.count_nonzero().reshape(1),
                                        (x > 0).count_nonzero((0, 2)).flatten()]), A),
}

F32_CASES = ("var_dim", "std_all_keep", "norm3", "logsumexp_dims_keep", "prod_zeros",
             "cumsum_long")
PARAMS = [pytest.param(n, jg.float64, id=f"{n}-f64") for n in sorted(CASES)] + [
    pytest.param(n, jg.float32, id=f"{n}-f32") for n in F32_CASES]


def _leaf(array, dev, dtype):
    if array.ndim == 0:  # a 0-d upload comes out as shape (1,) (core bug, reported): index it
        return jg.tensor(array.reshape(1), device=dev, dtype=dtype)[0].detach().requires_grad_()
    return jg.tensor(array, device=dev, dtype=dtype, requires_grad=True)


def _run(fn, array, dev, dtype):
    x = _leaf(array, dev, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN/inf inputs (NumPy scalars)
        y = fn(x)
        if y.requires_grad:
            w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
            (y * w).sum().backward()
    return y.detach().cpu().numpy(), None if x.grad is None else x.grad.cpu().numpy()


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_reduction_forward_and_backward_match_cpu(device, name, dtype):
    fn, array = CASES[name]
    yc, gc = _run(fn, array, "cpu", dtype)
    yd, gd = _run(fn, array, "cuda", dtype)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-12, atol=1e-12)
    assert yd.dtype == yc.dtype and yd.shape == yc.shape
    np.testing.assert_allclose(yd, yc, **tol)
    assert (gc is None) == (gd is None)
    if gc is not None:
        np.testing.assert_allclose(gd, gc, **tol)


def test_prod_gradient_with_zeros_is_the_product_of_the_others(device):
    """Independent of the CPU path: d prod(row) / d x_i = prod of the row without x_i."""
    x = jg.tensor(ZEROS, device="cuda", requires_grad=True)
    x.prod(1).sum().backward()
    want = np.array([[np.prod(np.delete(r, i)) for i in range(r.size)] for r in ZEROS])
    np.testing.assert_allclose(x.grad.cpu().numpy(), want, rtol=1e-12, atol=0)
    assert want[0, 1] != 0 and want[1].tolist() == [0.0] * 4  # the cases the branch is for


def test_int_and_bool_inputs(device):
    ints = RNG.integers(-3, 4, (3, 6))
    for dev_fn in (lambda t: t.cumsum(1), lambda t: t.prod(0), lambda t: t.count_nonzero(1),
                   lambda t: t.all(0), lambda t: (t > 0).cumsum(0), lambda t: t.logsumexp(1),
                   lambda t: (t > 0).any(1), lambda t: t.to(jg.int32).cumsum(0)):
        c, d = dev_fn(jg.tensor(ints)), dev_fn(jg.tensor(ints, device="cuda"))
        assert d.is_cuda and d.dtype is c.dtype and d.shape == c.shape
        np.testing.assert_allclose(d.cpu().numpy().astype(float), c.numpy().astype(float),
                                   rtol=1e-6)
    np.testing.assert_array_equal(jg.tensor(ints, device="cuda").cumsum(1).cpu().numpy(),
                                  np.cumsum(ints, 1))


SCAN_CASES = [(k, *c) for k in ("block", "thread") for c in (
    ("sum", 0, False, False), ("sum", 0, True, True), ("sum", (0, 2), False, True),
    ("prod", (0, 2), True, False), ("prod", (0, 2), True, True), ("prod", 2, False, False))]


@pytest.mark.parametrize("kernel,op,axes,exclusive,reverse", SCAN_CASES)
def test_scan_kernel_against_numpy(device, kernel, op, axes, exclusive, reverse):
    """Inclusive/exclusive, forward/reversed scans over one and two dims of a strided view, with
    the block-per-row and the thread-per-row kernel."""
    from jitgrad.backends.cuda_kernels import View, scan
    x = RNG.uniform(0.8, 1.25, (3, 2, 9))
    v = View(device.to_device(x.reshape(-1)), (9, 2, 3), (1, 9, 18))  # x.transpose(2, 1, 0)
    xt = x.transpose(2, 1, 0)
    ax = (axes,) if isinstance(axes, int) else axes
    back = tuple(range(3 - len(ax), 3))
    moved = np.moveaxis(xt, ax, back)
    flat = moved.reshape(moved.shape[:3 - len(ax)] + (-1,))  # rows: scanned dims in C order
    f = flat[..., ::-1] if reverse else flat
    want = (np.cumsum if op == "sum" else np.cumprod)(f, -1)
    if exclusive:
        want = np.concatenate([np.full_like(want[..., :1], 0.0 if op == "sum" else 1.0),
                               want[..., :-1]], -1)
    if reverse:
        want = want[..., ::-1]
    want = np.moveaxis(want.reshape(moved.shape), back, ax)
    got = device.to_host(scan.scan(v, axes, op, exclusive=exclusive, reverse=reverse,
                                   kernel=kernel))
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_special_shapes(device):
    """0-d inputs, empty reduced dims and a degenerate correction, against the CPU."""
    cases = [
        (lambda x: x.var(), np.array(1.5)),  # dof <= 0 -> nan (and the warning)
        (lambda x: x.var(correction=0) + x.std(0, correction=0), np.array(1.5)),
        (lambda x: x.var(1), np.ones((2, 1))),  # one element per row, unbiased: nan
        (lambda x: x.logsumexp(1), np.ones((2, 0))),  # empty rows: -inf
        (lambda x: x.prod() + x.cumsum(0) + x.norm() + x.logsumexp(0), np.array(-2.0)),
        (lambda x: x.prod(1), np.ones((2, 0))),
    ]
    for fn, arr in cases:
        with warnings.catch_warnings(record=True) as wc:
            warnings.simplefilter("always")
            yc, gc = _run(fn, arr, "cpu", jg.float64)
        with warnings.catch_warnings(record=True) as wd:
            warnings.simplefilter("always")
            yd, gd = _run(fn, arr, "cuda", jg.float64)
        assert [str(w.message) for w in wd if w.category is UserWarning] == \
            [str(w.message) for w in wc if w.category is UserWarning]
        assert yd.shape == yc.shape
        np.testing.assert_allclose(yd, yc, rtol=1e-12)
        np.testing.assert_allclose(gd, gc, rtol=1e-12)


def test_create_graph_through_device_reductions(device):
    """Second derivatives (cumsum's backward is itself differentiable on the device)."""
    def second(dev):
        x = jg.tensor(A[0], device=dev, requires_grad=True)
        y = (x.cumsum(1) ** 2).sum() + x.var(0).sum() * 3 + (x.prod(1) * 2).sum()
        (g,) = jg.autograd.grad(y, x, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), x)
        return g.detach().cpu().numpy(), gg.cpu().numpy()
    for c, d in zip(second("cpu"), second("cuda")):
        np.testing.assert_allclose(d, c, rtol=1e-11, atol=1e-12)


def test_reductions_make_no_transfers(device):
    """Forward and backward of every op here stay on the device: 0 h2d, 0 d2h."""
    xs = [jg.tensor(a, device="cuda", requires_grad=True) for a in (A, ZEROS)]
    device.reset_stats()
    x, z = xs
    loss = (x.var(1).sum() + jg.std_mean(x, 2)[0].sum() + x.norm() + x.norm(3, dim=1).sum()
            + x.logsumexp(2).sum() + z.prod(1).sum() + x.cumsum(1).sum() + x.all(1).sum()
            + x.any().to(x.dtype) + x.count_nonzero(0).sum())
    loss.backward()
    counted = device.stats.snapshot()
    assert counted["h2d"] == 0 and counted["d2h"] == 0, counted
    assert counted["launches"] > 0 and all(t.grad.is_cuda for t in xs)
