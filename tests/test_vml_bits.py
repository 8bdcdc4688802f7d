"""Unary float ops whose PyTorch CPU kernel is MKL VML (``backends/vml.py``) give PyTorch's bits
for float32 and float64: random values of several sizes (1 to 100003: VML's vector body and its
tail) and special values (+-0, +-inf, NaN, subnormals, the dtype's extremes), contiguous,
transposed and strided inputs, the in-place (``x.exp_()``) and ``out=`` forms, a 0-d and an
empty tensor, at 1 and 2 threads. Expected values are PyTorch's, computed in the same test.

The route needs the MKL release PyTorch links (``libmkl_rt`` of the pip ``mkl`` wheel, the
``jitgrad[mkl]`` extra): without it (or with another release, whose VML may round otherwise)
jitgrad runs its own kernels, which are not bit-identical, and these tests skip, saying so."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitgrad
from jitgrad.backends import blas, vml

torch = pytest.importorskip("torch")


def _mkl_release(text):
    found = re.search(r"Math Kernel Library Version (\S+)-Product Build (\d+)", text)
    return found.groups() if found else None


_TORCH_MKL = _mkl_release(torch.__config__.show())
_OURS = _mkl_release(blas.mkl_version())
pytestmark = pytest.mark.skipif(
    _TORCH_MKL is None or _OURS != _TORCH_MKL,
    reason=f"jitgrad's MKL {_OURS} is not PyTorch's {_TORCH_MKL} (pip install 'jitgrad[mkl]' "
           "installs the pinned one): without it the VML route is off, and VML's rounding may "
           "differ between releases")

OPS = list(vml.ROUTED)
DTYPES = [np.float32, np.float64]
SIZES = [1, 7, 16, 100, 4099, 100003]


def _values(n, dt, seed):
    """Random values over the ops' domains (and outside them: NaN results), special ones first."""
    rng = np.random.default_rng(seed)
    fi = np.finfo(dt)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, fi.tiny, -fi.tiny, fi.tiny / 4,
                        -fi.smallest_subnormal, fi.max, -fi.max, 1.0, -1.0, 0.5, 1e-30, 88.7,
                        710.0, -745.0, 1e15, 3.14159265], dtype=dt)
    mixed = np.concatenate([rng.standard_normal(n) * 3, rng.uniform(-1, 1, n),
                            np.exp(rng.uniform(-60, 60, n)) * rng.choice([-1, 1], n)])
    with np.errstate(over="ignore"):
        mixed = mixed.astype(dt)
    return rng.permutation(np.concatenate([special, rng.choice(mixed, n)]))[:n]


def _bits_equal(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.flatnonzero(got.view(np.uint8).reshape(got.size, -1)
                         != want.view(np.uint8).reshape(want.size, -1)) if got.size else []
    assert len(bad) == 0, f"{len(bad)} differing bytes, first elements {got.reshape(-1)[:3]}"


@pytest.fixture(params=OPS)
def op(request):
    return request.param


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("n", SIZES)
def test_contiguous(op, dt, n, threads):
    x = _values(n, dt, n)
    want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
    _bits_equal(getattr(jitgrad, op)(jitgrad.from_numpy(x.copy())).numpy(), want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_special_values(op, dt):
    fi = np.finfo(dt)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.tiny, -fi.tiny,
                  fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny / 3, fi.max, -fi.max,
                  fi.eps, 1 - fi.epsneg, -1.0, 1.0, 2.0, 1e10, -1e10], dtype=dt)
    want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
    _bits_equal(getattr(jitgrad, op)(jitgrad.from_numpy(x.copy())).numpy(), want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(64, 71), (3, 4099)])
def test_transposed_and_strided(op, dt, shape, threads):
    x = _values(shape[0] * shape[1], dt, 5).reshape(shape)
    tx, jx = torch.from_numpy(x.copy()), jitgrad.from_numpy(x.copy())
    f, g = getattr(torch, op), getattr(jitgrad, op)
    _bits_equal(g(jx.T).numpy(), f(tx.T).numpy())
    _bits_equal(g(jx[:, ::3]).numpy(), f(tx[:, ::3]).numpy())
    _bits_equal(g(jx.reshape(-1)[::2]).numpy(), f(tx.reshape(-1)[::2]).numpy())


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_inplace_and_out(op, dt, threads):
    x = _values(4099, dt, 3).reshape(1, 4099)
    want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
    j = jitgrad.from_numpy(x.copy())
    getattr(j, op + "_")()
    _bits_equal(j.numpy(), want)
    # in place on a transposed (non-contiguous) view
    base = _values(64 * 71, dt, 4).reshape(64, 71)
    tb, jb = torch.from_numpy(base.copy()), jitgrad.from_numpy(base.copy())
    getattr(tb.T, op + "_")()
    getattr(jb.T, op + "_")()
    _bits_equal(jb.numpy(), tb.numpy())
    out = jitgrad.empty(1, 4099, dtype=getattr(jitgrad, np.dtype(dt).name))
    getattr(jitgrad, op)(jitgrad.from_numpy(x.copy()), out=out)
    _bits_equal(out.numpy(), want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_zero_dim_and_empty(op, dt):
    for x in (np.array(0.37, dtype=dt), np.array(-2.5e-3, dtype=dt), np.zeros((0, 3), dt)):
        want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
        _bits_equal(getattr(jitgrad, op)(jitgrad.from_numpy(x.copy())).numpy(), want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_graph_and_grad(op, dt):
    """The recorded forward (general path: a leaf that requires grad, broadcast operands) keeps
    the bits, the node and its gradient (tanh's and exp's use the saved output)."""
    rng = np.random.default_rng(9)
    x = rng.uniform(0.05, 0.95, 237).astype(dt)  # inside every op's domain
    tx = torch.from_numpy(x.copy()).requires_grad_()
    jx = jitgrad.from_numpy(x.copy()).requires_grad_()
    ty, jy = getattr(torch, op)(tx), getattr(jitgrad, op)(jx)
    _bits_equal(jy.detach().numpy(), ty.detach().numpy())
    assert jy.grad_fn.name() == ty.grad_fn.name()
    g = rng.standard_normal(237).astype(dt)
    ty.backward(torch.from_numpy(g.copy()))
    jy.backward(jitgrad.from_numpy(g.copy()))
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-5 if dt is np.float32
                               else 1e-12, atol=0)


def test_integer_input_uses_default_dtype():
    """An integer tensor computes in the default dtype (the general path), through VML too."""
    x = np.arange(-50, 50, dtype=np.int64)
    for op in ("exp", "sqrt", "tanh", "sin", "erf"):
        want = getattr(torch, op)(torch.from_numpy(x.copy())).numpy()
        _bits_equal(getattr(jitgrad, op)(jitgrad.from_numpy(x.copy())).numpy(), want)
