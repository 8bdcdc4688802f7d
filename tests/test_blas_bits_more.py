"""float32/float64 products beyond mm/addmm/linear/bmm give PyTorch's bits on the CPU: mv/addmv
(ATen's gemv call), dot/vdot/inner (?dot), addr (its vectorized kernel's fma), baddbmm (the bias
in the batched GEMM's C), addbmm (one addmm_ per batch), linalg.multi_dot/chain_matmul (ATen's
product order), tensordot, einsum's common contractions, matmul with broadcasting, linear on 3-D
inputs: outputs and every input gradient, at 1 and 2 threads, small (below ATen's 400
multiply-add loop) and medium shapes. F.bilinear is not bit for bit (see its test).

Every expected value is PyTorch's, computed in the same test at the same thread count. The
BLAS cases need the MKL release PyTorch links (tests/test_blas_bits.py's ``same_mkl``)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests.test_blas_bits import same_mkl

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]
SIZES = [(3, 5, 7), (64, 128, 96)]  # (m, k, n)



def _differ(want, got):
    w, g = want.detach().numpy(), got.detach().numpy()
    assert w.shape == g.shape and w.dtype == g.dtype
    return np.count_nonzero(w.view(f"u{w.itemsize}") != g.view(f"u{g.itemsize}"))


def _run(fn, arrays, dtype, layouts=None):
    """``fn(lib, *tensors)`` under both libraries with leaves that require grad, then backward
    of a random cotangent: [(what, torch tensor, jitgrad tensor)] for the output and each
    input's gradient. ``layouts[i] == "T"`` passes array i as a transposed view."""
    arrays = [a.astype(dtype) for a in arrays]
    results = []
    for lib in (torch, jitgrad):
        leaves, args = [], []
        for i, a in enumerate(arrays):
            if layouts and layouts[i] == "T":
                t = lib.from_numpy(np.ascontiguousarray(a.T).copy()).requires_grad_()
                leaves.append(t)
                args.append(t.t())
            else:
                t = lib.from_numpy(a.copy()).requires_grad_()
                leaves.append(t)
                args.append(t)
        out = fn(lib, *args)
        g = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(dtype)
        out.backward(lib.from_numpy(g))
        results.append([out] + [t.grad for t in leaves])
    names = ["out"] + [f"grad{i}" for i in range(len(arrays))]
    return list(zip(names, *results))


def _assert_exact(fn, arrays, dtype, layouts=None, what=""):
    for name, want, got in _run(fn, arrays, dtype, layouts):
        assert (want is None) == (got is None), f"{what} {name}"
        if want is not None:
            d = _differ(want, got)
            assert d == 0, f"{what} {name}: {d} of {want.numel()} elements differ from PyTorch's"


def _rand(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _cases(m, k, n):
    b = 3 if m < 10 else 4
    a_b = {"beta": 0.5, "alpha": 2.0}
    return {
        "mv": ([(m, k), (k,)], lambda L, x, v: L.mv(x, v), None),
        "mv column-major": ([(m, k), (k,)], lambda L, x, v: L.mv(x, v), "TN"),
        "addmv": ([(m,), (m, k), (k,)], lambda L, i, x, v: L.addmv(i, x, v), None),
        "addmv beta/alpha": ([(m,), (m, k), (k,)],
                             lambda L, i, x, v: L.addmv(i, x, v, **a_b), None),
        "addmv column-major": ([(m,), (m, k), (k,)],
                               lambda L, i, x, v: L.addmv(i, x, v, **a_b), "NTN"),
        "addmv scalar bias": ([(1,), (m, k), (k,)], lambda L, i, x, v: L.addmv(i, x, v), None),
        "matmul 2-D @ 1-D": ([(m, k), (k,)], lambda L, x, v: x @ v, None),
        "matmul 3-D @ 1-D": ([(b, m, k), (k,)], lambda L, x, v: x @ v, None),
        "matmul 1-D @ 3-D": ([(k,), (b, k, n)], lambda L, v, x: v @ x, None),
        "matmul 3-D @ 2-D": ([(b, m, k), (k, n)], lambda L, x, w: x @ w, None),
        "matmul 4-D @ 4-D": ([(2, b, m, k), (2, b, k, n)], lambda L, x, y: x @ y, None),
        "matmul 4-D broadcast": ([(2, 1, m, k), (1, b, k, n)], lambda L, x, y: x @ y, None),
        "dot": ([(k * n,), (k * n,)], lambda L, x, y: L.dot(x, y), None),
        "vdot": ([(k * n,), (k * n,)], lambda L, x, y: L.vdot(x, y), None),
        "matmul 1-D @ 1-D": ([(k,), (k,)], lambda L, x, y: x @ y, None),
        "inner 1-D": ([(k,), (k,)], lambda L, x, y: L.inner(x, y), None),
        "inner 2-D": ([(m, k), (n, k)], lambda L, x, y: L.inner(x, y), None),
        "outer": ([(m,), (n,)], lambda L, x, y: L.outer(x, y), None),
        "ger": ([(m,), (n,)], lambda L, x, y: L.ger(x, y), None),
        "addr": ([(m, n), (m,), (n,)], lambda L, i, x, y: L.addr(i, x, y), None),
        "addr beta/alpha": ([(m, n), (m,), (n,)], lambda L, i, x, y: L.addr(i, x, y, **a_b),
                            None),
        "addr row bias": ([(n,), (m,), (n,)], lambda L, i, x, y: L.addr(i, x, y, **a_b), None),
        "addr column-major bias": ([(m, n), (m,), (n,)],
                                   lambda L, i, x, y: L.addr(i, x, y, **a_b), "TNN"),
        "baddbmm": ([(b, m, n), (b, m, k), (b, k, n)],
                    lambda L, i, x, y: L.baddbmm(i, x, y), None),
        "baddbmm beta/alpha": ([(b, m, n), (b, m, k), (b, k, n)],
                               lambda L, i, x, y: L.baddbmm(i, x, y, **a_b), None),
        "baddbmm broadcast bias": ([(n,), (b, m, k), (b, k, n)],
                                   lambda L, i, x, y: L.baddbmm(i, x, y, **a_b), None),
        "addbmm": ([(m, n), (b, m, k), (b, k, n)], lambda L, i, x, y: L.addbmm(i, x, y), None),
        "addbmm beta/alpha": ([(m, n), (b, m, k), (b, k, n)],
                              lambda L, i, x, y: L.addbmm(i, x, y, **a_b), None),
        "tensordot": ([(b, m, k), (m, k, n)], lambda L, x, y: L.tensordot(x, y, dims=2), None),
        "tensordot dims": ([(m, b, k), (k, n, b)],
                           lambda L, x, y: L.tensordot(x, y, dims=([1, 2], [2, 0])), None),
        "tensordot to a scalar": ([(b, k), (b, k)],
                                  lambda L, x, y: L.tensordot(x, y, dims=2), None),
        "einsum ij,jk->ik": ([(m, k), (k, n)], lambda L, x, y: L.einsum("ij,jk->ik", x, y),
                             None),
        "einsum bij,bjk->bik": ([(b, m, k), (b, k, n)],
                                lambda L, x, y: L.einsum("bij,bjk->bik", x, y), None),
        "einsum bhqd,bhkd->bhqk": ([(2, b, m, k), (2, b, n, k)],
                                   lambda L, x, y: L.einsum("bhqd,bhkd->bhqk", x, y), None),
        "linear 3-D": ([(b, m, k), (n, k), (n,)],
                       lambda L, x, w, c: L.nn.functional.linear(x, w, c), None),
        "multi_dot 3": ([(m, k), (k, n), (n, m)], lambda L, *t: L.linalg.multi_dot(list(t)),
                        None),
        "multi_dot 4": ([(m, k), (k, n), (n, m), (m, 2)],
                        lambda L, *t: L.linalg.multi_dot(list(t)), None),
        "multi_dot vectors": ([(m,), (m, k), (k, n), (n,)],
                              lambda L, *t: L.linalg.multi_dot(list(t)), None),
    }


CASE_NAMES = list(_cases(3, 5, 7))


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("case", CASE_NAMES)
def test_product_and_gradients_bit_for_bit(threads, dtype, size, case):
    shapes, fn, layouts = _cases(*size)[case]
    _assert_exact(fn, _rand(*shapes), dtype, layouts, f"{case} {size}")


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
def test_chain_matmul_takes_multi_dots_order(threads, dtype):
    for shapes in ([(3, 5), (5, 7), (7, 3)], [(64, 128), (128, 96), (96, 2)],
                   [(2, 64), (64, 128), (128, 96), (96, 64)]):
        with pytest.warns(UserWarning):
            _assert_exact(lambda L, *t: L.chain_matmul(*t), _rand(*shapes), dtype,
                          what=f"chain_matmul {shapes}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 40), (7, 45), (1, 50), (50, 1), (190, 190), (300, 200),
                                   (257, 131)], ids=str)
def test_addr_kernel_roundings(threads, dtype, shape):
    """addr is no BLAS call: the vectorized runs (fma) and scalar tails of ATen's kernel, the
    runs down the columns of a column-major bias, and the pieces ATen's threads split a large
    result into (at 2 threads) decide the bits."""
    m, n = shape
    for bias, layout in (((m, n), "NNN"), ((m, n), "TNN"), ((n,), None), ((m, 1), None)):
        for coef in ({}, {"beta": 0.5, "alpha": 2.0}, {"beta": 0, "alpha": 1.5}):
            _assert_exact(lambda L, i, x, y, coef=coef: L.addr(i, x, y, **coef),
                          _rand(bias, (m,), (n,)), dtype,
                          layout if m > 1 and n > 1 else None, f"addr {bias} {coef}")


def test_addr_result_layout_follows_a_column_major_bias():
    s = np.asfortranarray(np.arange(20.0).reshape(4, 5))
    outs = [lib.addr(lib.from_numpy(np.ascontiguousarray(s.T)).t(), lib.ones(4, dtype=lib.float64),
                     lib.ones(5, dtype=lib.float64)) for lib in (torch, jitgrad)]
    assert tuple(outs[0].stride()) == tuple(outs[1].stride())
    np.testing.assert_array_equal(outs[0].numpy(), outs[1].numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_beta_zero_ignores_nan_bias(dtype):
    """beta == 0 never reads the bias, in the gemv, batched GEMM, per-batch GEMM and addr
    kernels alike (BLAS's rule, kept by ATen)."""
    nan = np.full
    x, v, b1, b2, u = _rand((6, 4), (4,), (3, 6, 4), (3, 4, 5), (5,))
    cases = [
        (lambda L: L.addmv(L.from_numpy(nan(6, np.nan, dtype)), L.from_numpy(x.astype(dtype)),
                           L.from_numpy(v.astype(dtype)), beta=0)),
        (lambda L: L.baddbmm(L.from_numpy(nan((3, 6, 5), np.nan, dtype)),
                             L.from_numpy(b1.astype(dtype)), L.from_numpy(b2.astype(dtype)),
                             beta=0, alpha=2.0)),
        (lambda L: L.addbmm(L.from_numpy(nan((6, 5), np.nan, dtype)),
                            L.from_numpy(b1.astype(dtype)), L.from_numpy(b2.astype(dtype)),
                            beta=0)),
        (lambda L: L.addr(L.from_numpy(nan((6, 5), np.nan, dtype)),
                          L.from_numpy(x[:, 0].astype(dtype)), L.from_numpy(u.astype(dtype)),
                          beta=0)),
    ]
    for fn in cases:
        want, got = fn(torch), fn(jitgrad)
        assert not np.isnan(got.numpy()).any()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addbmm_of_no_batches_scales_the_bias(dtype):
    b = np.arange(6.0).reshape(2, 3).astype(dtype)
    outs = [lib.addbmm(lib.from_numpy(b), lib.zeros(0, 2, 4, dtype=lib.from_numpy(b).dtype),
                       lib.zeros(0, 4, 3, dtype=lib.from_numpy(b).dtype), beta=0.5)
            for lib in (torch, jitgrad)]
    np.testing.assert_array_equal(outs[0].numpy(), outs[1].numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_mv_with_a_broadcast_vector_takes_atens_loop(dtype):
    """A stride-0 vector (expand) is outside BLAS's fast path: ATen's own gemv loop, in both
    of its layouts."""
    x = _rand((9, 40))[0].astype(dtype)
    for layout in ("C", "F"):
        outs = []
        for lib in (torch, jitgrad):
            m = lib.from_numpy(x.copy()) if layout == "C" else \
                lib.from_numpy(np.ascontiguousarray(x.T)).t()
            v = lib.from_numpy(np.array([0.3], dtype)).expand(40)
            outs.append(lib.addmv(lib.from_numpy(np.ones(9, dtype)), m, v, beta=0.5, alpha=3.0))
        assert _differ(*outs) == 0, layout


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=str)
def test_bilinear_within_rounding(threads, dtype, size):
    """F.bilinear is not bit for bit: PyTorch computes it through _trilinear (sumproduct_pair's
    permutes and bmm), nn/functional/dense.py composes other products, so the sums run in
    another order. Values and gradients agree to a few ulps of the sums' magnitudes."""
    m, k, n = size
    arrays = _rand((6, m), (6, k), (n, m, k), (n,))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for name, want, got in _run(lambda L, x, y, w, b: L.nn.functional.bilinear(x, y, w, b),
                                arrays, dtype):
        w_, g_ = want.detach().numpy(), got.detach().numpy()
        scale = max(1.0, float(np.abs(w_).max()))
        np.testing.assert_allclose(g_, w_, rtol=tol, atol=tol * scale, err_msg=name)


@pytest.mark.parametrize("one_call", [True, False], ids=["one call", "op by op"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", [(300, 1, 20, 4), (50, 1, 784, 3), (784, 1, 10)], ids=str)
def test_lowered_step_with_unit_dims_is_eager_bit_for_bit(monkeypatch, one_call, dtype, sizes):
    """A compiled training step (jitgrad.compile's lowered replay) at batch 1 with a one-unit
    layer: the input gradient of the layer after it is a (1, k) @ (k, 1) product, which eager
    (as ATen's mm_mat1_backward) computes transposed because a (1, 1) input passes the
    column-major test; the lowered step must make the same GEMM call."""
    from jitgrad._compile import lower, lower_program
    from tests.test_compile_lowered import _data, _model, _snapshot, _step
    if one_call and lower_program._gemm(np.dtype(dtype)) is None:
        pytest.skip("the one-call program needs MKL's CBLAS")
    monkeypatch.setattr(lower, "ONE_CALL", one_call)
    runs = []
    for compiled in (False, True):
        model = _model(jitgrad, dtype, sizes=sizes)
        opt = jitgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        fn = _step(jitgrad, model, opt)
        fn = jitgrad.compile(fn) if compiled else fn
        x, y = _data(jitgrad, dtype, n=1, classes=sizes[-1])
        x = jitgrad.tensor(np.random.default_rng(3).standard_normal((1, sizes[0])).astype(dtype))
        out = []
        with jitgrad.autograd.profile() as prof:
            for _ in range(4):
                out.append((fn(x, y).item(),) + _snapshot(model))
        if compiled:
            assert prof.compile_lowered_replays == 3, prof.compile_reasons
        runs.append(out)
    for eager, lowered in zip(*runs):
        assert eager[0] == lowered[0]
        for e, c in zip(eager[1] + eager[2], lowered[1] + lowered[2]):
            np.testing.assert_array_equal(e, c)


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=str)
def test_addbmm_and_baddbmm_over_strided_stacks(threads, dtype, size):
    """Stacks with transposed matrices and every other matrix of a longer stack: addbmm's
    per-matrix GEMMs and baddbmm's batched one read them in place as ATen does."""
    m, k, n = size
    a, b = _rand((8, k, m), (8, k, n))
    outs = {}
    for lib in (torch, jitgrad):
        ta = lib.from_numpy(a.astype(dtype)).transpose(1, 2)[::2]  # (4, m, k), transposed
        tb = lib.from_numpy(b.astype(dtype))[1::2]
        bias = lib.from_numpy(np.linspace(-1, 1, m * n).reshape(m, n).astype(dtype))
        outs[lib] = (lib.addbmm(bias, ta, tb, beta=0.5, alpha=2.0),
                     lib.baddbmm(bias, ta, tb, beta=0.5, alpha=2.0))
    for want, got in zip(outs[torch], outs[jitgrad]):
        assert _differ(want, got) == 0
