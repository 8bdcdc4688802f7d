"""float32/float64 matrix products on the CPU give PyTorch's bits: mm, addmm, linear (forward
and its three gradients), matmul (folded 3-D @ 2-D and batched) and bmm, at 1 and 2 threads,
over tiny, skinny, square and MLP-sized shapes with contiguous and transposed operands.

jitgrad makes ATen's calls (backends/blas.py): the same GEMM arguments, the bias in C with beta
as addmm_impl_cpu_, the layouts of mm_mat1/mm_mat2_backward, ATen's own loop for tiny bmm
matrices, ATen's sum order for the bias gradient. The GEMM cases need the MKL release PyTorch
links (MKL picks different kernels in other releases, e.g. 2026.2): they skip, saying so, when
another one (or none) is installed. Every expected value is PyTorch's, computed in the same test
with the same thread count."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import blas

torch = pytest.importorskip("torch")


def _mkl_release(text):
    found = re.search(r"Math Kernel Library Version (\S+)-Product Build (\d+)", text)
    return found.groups() if found else None


_TORCH_MKL = _mkl_release(torch.__config__.show())
_OURS = _mkl_release(blas.mkl_version())
same_mkl = pytest.mark.skipif(
    _TORCH_MKL is None or _OURS != _TORCH_MKL,
    reason=f"jitgrad's MKL {_OURS} is not PyTorch's {_TORCH_MKL} (pip install 'jitgrad[mkl]' "
           "installs the pinned one): GEMM kernels differ between MKL releases")

# (m, k, n): tiny, skinny, the reported (300,70)x(5,70)^T and (64,512)x(10,512)^T, a dot
# product, square, and an MLP's 256x784x512
SHAPES = [(2, 3, 4), (5, 7, 3), (300, 70, 5), (64, 512, 10), (1, 100, 1), (7, 300, 9),
          (33, 65, 17), (1000, 20, 3), (128, 128, 128), (256, 784, 512)]
DTYPES = [np.float32, np.float64]



def _arrays(dtype, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _layouts(a):
    """The same values contiguous and as a transposed view (column-major): (label, array)."""
    return [("C", a), ("F", np.ascontiguousarray(a.T).T)]


def _pair(a, grad=False):
    """(torch, jitgrad) tensors of ``a``'s values and layout (a transposed view stays one)."""
    if a.flags.c_contiguous:
        t, j = torch.from_numpy(a.copy()), jitgrad.from_numpy(a.copy())
    else:
        c = np.ascontiguousarray(a.T)
        t, j = torch.from_numpy(c.copy()).t(), jitgrad.from_numpy(c.copy()).t()
    if grad:
        t = t.detach().requires_grad_()
        j = j.detach().requires_grad_()
    return t, j


def _assert_bits(want, got, what):
    w = want.detach().numpy()
    g = got.detach().numpy()
    assert w.shape == g.shape and w.dtype == g.dtype, what
    differ = np.count_nonzero(w != g)
    assert differ == 0, f"{what}: {differ} of {w.size} elements differ from PyTorch's"


def _check_grads(pairs, what):
    for name, (t, j) in pairs.items():
        if t.grad is None:
            assert j.grad is None, f"{what} {name}"
        else:
            _assert_bits(t.grad, j.grad, f"{what} grad {name}")


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_mm_and_its_gradients(threads, dtype, shape):
    m, k, n = shape
    x, w = _arrays(dtype, (m, k), (n, k))
    g = _arrays(dtype, (m, n), seed=1)[0]
    for lx, xa in _layouts(x):
        for lw, wa in _layouts(w.T.copy()):  # mat2 (k, n): C, or the weight's w.t() view
            what = f"mm x:{lx} mat2:{lw}"
            pairs = {"x": _pair(xa, True), "y": _pair(wa, True)}
            (tx, jx), (ty, jy) = pairs["x"], pairs["y"]
            out_t, out_j = torch.mm(tx, ty), jitgrad.mm(jx, jy)
            _assert_bits(out_t, out_j, what)
            _assert_bits(tx @ ty, jx @ jy, what + " @")
            out_t.backward(torch.from_numpy(g))
            out_j.backward(jitgrad.from_numpy(g))
            _check_grads(pairs, what)


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_addmm_puts_the_bias_in_gemms_c(threads, dtype, shape):
    m, k, n = shape
    x, w, b, full = _arrays(dtype, (m, k), (n, k), (n,), (m, n))
    for bias in (b, b.reshape(1, n), full):
        for beta, alpha in ((1, 1), (0.5, 2.0), (0, 1)):
            bias_in = bias.copy()
            if beta == 0:
                bias_in[...] = np.nan  # beta = 0: C is not read
            what = f"addmm bias{bias.shape} beta={beta} alpha={alpha}"
            want = torch.addmm(torch.from_numpy(bias_in), torch.from_numpy(x),
                               torch.from_numpy(w).t(), beta=beta, alpha=alpha)
            got = jitgrad.addmm(jitgrad.from_numpy(bias_in), jitgrad.from_numpy(x),
                                jitgrad.from_numpy(w).t(), beta=beta, alpha=alpha)
            _assert_bits(want, got, what)


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_linear_forward_and_gradients(threads, dtype, shape):
    """F.linear (AddmmBackward0 with the bias, MmBackward0 without) on 2-D and 3-D inputs: the
    output and the gradients of input, weight and bias for a random cotangent."""
    m, k, n = shape
    x, w, b = _arrays(dtype, (m, k), (n, k), (n,))
    for lead in ((m,), (1, m) if m > 1 else (m, 1)):
        xs = x.reshape(*lead, k)
        g = _arrays(dtype, (*lead, n), seed=2)[0]
        for with_bias in (True, False):
            what = f"linear input{xs.shape} bias={with_bias}"
            pairs = {"x": _pair(xs, True), "w": _pair(w, True)}
            if with_bias:
                pairs["b"] = _pair(b, True)
            outs = []
            for lib, i in ((torch, 0), (jitgrad, 1)):
                args = [pairs[name][i] for name in pairs]
                out = lib.nn.functional.linear(*args)
                out.backward(lib.from_numpy(g))
                outs.append(out)
            _assert_bits(outs[0], outs[1], what)
            _check_grads(pairs, what)


# (batch, m, k, n): below and above ATen's 400 multiply-adds per matrix, one matrix, many
BMM_SHAPES = [(3, 5, 7, 3), (3, 7, 8, 7), (3, 8, 7, 8), (4, 300, 70, 5), (2, 64, 512, 10),
              (5, 33, 65, 17), (3, 1, 100, 1), (64, 16, 16, 16), (1, 20, 30, 40),
              (8, 128, 64, 128)]


def _stack_views(a):
    """A stack contiguous, with transposed matrices, and broadcast from one matrix."""
    tr = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    return [("C", a), ("T", tr), ("broadcast", np.broadcast_to(a[:1], a.shape))]


def _both(a):
    """(torch, jitgrad) tensors with ``a``'s strides (including stride-0 broadcast ones)."""
    base = a[:1].copy() if a.strides[0] == 0 else None
    if base is not None:
        return (torch.from_numpy(base).expand(*a.shape),
                jitgrad.from_numpy(base).expand(*a.shape))
    if a.flags.c_contiguous:
        return torch.from_numpy(a.copy()), jitgrad.from_numpy(a.copy())
    c = np.ascontiguousarray(a.transpose(0, 2, 1))
    return torch.from_numpy(c).transpose(1, 2), jitgrad.from_numpy(c.copy()).transpose(1, 2)


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BMM_SHAPES, ids=str)
def test_bmm_and_batched_matmul(threads, dtype, shape):
    bs, m, k, n = shape
    a, b = _arrays(dtype, (bs, m, k), (bs, k, n))
    for la, av in _stack_views(a):
        for lb, bv in _stack_views(b):
            what = f"bmm a:{la} b:{lb}"
            (ta, ja), (tb, jb) = _both(av), _both(bv)
            _assert_bits(torch.bmm(ta, tb), jitgrad.bmm(ja, jb), what)
            _assert_bits(ta @ tb, ja @ jb, what + " matmul")
    # matmul broadcasting a 2-D operand over the stack, and a 4-D batch
    (ta, ja), w = _both(a), b[0]
    _assert_bits(ta @ torch.from_numpy(w), ja @ jitgrad.from_numpy(w), "3-D @ 2-D")
    a4 = a.reshape(1, bs, m, k)
    _assert_bits(torch.from_numpy(a4) @ torch.from_numpy(b),
                 jitgrad.from_numpy(a4) @ jitgrad.from_numpy(b), "4-D @ 3-D")


@same_mkl
@pytest.mark.parametrize("dtype", DTYPES)
def test_mlp_step_gradients(threads, dtype):
    """Two Linear layers and a ReLU, forward and backward: every parameter's gradient."""
    x, w1, b1, w2, b2 = _arrays(dtype, (64, 784), (128, 784), (128,), (10, 128), (10,))
    grads = []
    for lib in (torch, jitgrad):
        ps = [lib.from_numpy(p.copy()).requires_grad_() for p in (w1, b1, w2, b2)]
        h = lib.relu(lib.nn.functional.linear(lib.from_numpy(x), ps[0], ps[1]))
        out = lib.nn.functional.linear(h, ps[2], ps[3])
        (out * out).sum().backward()
        grads.append([out] + [p.grad for p in ps])
    for name, want, got in zip(("out", "w1", "b1", "w2", "b2"), *grads):
        _assert_bits(want, got, f"mlp {name}")
