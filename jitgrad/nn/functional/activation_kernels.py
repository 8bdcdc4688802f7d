"""ATen's CPU activation kernels (aten/src/ATen/native/cpu/Activation.cpp, Gelu.h), bit for bit
on float32/float64 CPU arrays: the forward and the input-gradient of silu, the elu family
(elu/selu/celu, also through the result), mish, log_sigmoid, softplus and gelu (both
approximations; float32 'none' only where PyTorch does not hand it to oneDNN: ``gelu_exact``),
softshrink's forward, hardswish's gradient and logit's (``logit_backward``). Several
parallel_for chunks run one per thread (prange); the values do not depend on it.

GCC compiles ATen's ``a + b * c`` on Vectorized values (and in the scalar lambdas) as one FMA
(-ffp-contract=fast): where a kernel below writes ``fma`` it is that contraction (measured).

``cpu_kernel_vec`` runs each ``parallel_for`` chunk (grain 32768, the chunks
``ops/_range_kernels.parallel_chunks`` gives jitgrad's thread count) as vectors of
2 * lanes elements (AVX-512: 32 floats / 16 doubles; AVX2: 16 / 8: the lanes of the build PyTorch
runs here, ``backends.cpu_capability``) with the ``Vectorized`` lambda, whose exp is
SLEEF's u10 (``jitgrad.math._sleef``), and the remaining < 2 * lanes elements with the scalar
lambda, whose ``std::exp`` is glibc's (Numba's ``math.exp`` calls the same libm). Each op below
is that pair of lambdas, written in ATen's operation order; nothing here may be contracted into
an FMA (``SLEEF_JIT``: no fast-math flags), since ATen's intrinsics and its scalar lambdas are not.
The output takes the layout TensorIterator allocates (``_output_layout``), and the operands are
read in its dim order: one run when they are dense in it (ATen's coalesced 1-D loop, over memory),
else row by row as ATen's 2-D loop (``_rows``), so each element takes ATen's lane or tail.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..._iter_layout import elementwise_output_layout
from ..._settings import get_num_threads
from ...backends.cpu_capability import CAPABILITY, vector_bytes
from ...math import sleef_exp, sleef_expm1, sleef_log1p, sleef_tanh
from ...math._intrinsics import fma, select
from ...math._onednn_gelu import HAVE_FWD16 as _HAVE_GELU_FWD16
from ...math._onednn_gelu import gelu_bwd as _onednn_gelu_bwd
from ...math._onednn_gelu import gelu_fwd as _onednn_gelu_fwd
from ...math._onednn_gelu import gelu_fwd16 as _onednn_gelu_fwd16
from ...math._sleef import SLEEF_JIT
from ...math._sleef_erf import vec_erf
from ...ops._range_kernels import parallel_chunks
from ...ops.elementwise_operands import _inverse, _restrided, has_c_strides

# sizeof(Vectorized<T>) in the ATen build PyTorch runs here (64 bytes on AVX-512, 32 on AVX2);
# cpu_kernel_vec unrolls two per step, so this decides which elements take the scalar tail
_VECTOR_BYTES = vector_bytes(CAPABILITY)


# Each run is sliced out and indexed from 0: a loop over range(lo, hi) indexes with a possibly
# negative start, whose wraparound check keeps LLVM from vectorizing it (~15x slower).
# Each (vec, scl) pair gets its own drivers with the pair bound at compile time: passed as
# first-class function arguments instead, their calls cost ~1.5x (measured on gelu's tanh).

def _make_drivers(vec, scl):
    @njit(**SLEEF_JIT)
    def unary_run(x, out, b, e, width, p):
        body = e - (e - b) % width
        xs, os = x[b:body], out[b:body]
        for i in range(xs.size):
            os[i] = vec(xs[i], p)
        xs, os = x[body:e], out[body:e]
        for i in range(xs.size):
            os[i] = scl(xs[i], p)

    @njit(**SLEEF_JIT)
    def binary_run(a, b, out, lo, hi, width, p):
        body = hi - (hi - lo) % width
        As, bs, os = a[lo:body], b[lo:body], out[lo:body]
        for i in range(os.size):
            os[i] = vec(As[i], bs[i], p)
        As, bs, os = a[body:hi], b[body:hi], out[body:hi]
        for i in range(os.size):
            os[i] = scl(As[i], bs[i], p)

    # serial, and over threads (a chunk per thread, as ATen's parallel_for)
    @njit(**SLEEF_JIT)
    def unary(x, out, chunks, width, p):
        for c in range(chunks.size - 1):
            unary_run(x, out, chunks[c], chunks[c + 1], width, p)

    @njit(parallel=True, **SLEEF_JIT)
    def unary_par(x, out, chunks, width, p):
        for c in prange(chunks.size - 1):
            unary_run(x, out, chunks[c], chunks[c + 1], width, p)

    @njit(**SLEEF_JIT)
    def binary(a, b, out, chunks, width, p):
        for c in range(chunks.size - 1):
            binary_run(a, b, out, chunks[c], chunks[c + 1], width, p)

    @njit(parallel=True, **SLEEF_JIT)
    def binary_par(a, b, out, chunks, width, p):
        for c in prange(chunks.size - 1):
            binary_run(a, b, out, chunks[c], chunks[c + 1], width, p)

    return {(1, False): unary, (1, True): unary_par, (2, False): binary, (2, True): binary_par}


_DRIVERS = {}


def _driver(vec, scl, arity, parallel):
    d = _DRIVERS.get((vec, scl))
    if d is None:
        d = _DRIVERS[(vec, scl)] = _CUSTOM_DRIVERS.get((vec, scl), _make_drivers)(vec, scl)
    return d[(arity, parallel)]


def supported(*arrays) -> bool:
    """Float32/float64 host arrays of one dtype: what these kernels compute."""
    dt = arrays[0].dtype
    return all(type(a) is np.ndarray and a.dtype == dt for a in arrays) and \
        dt in (np.float32, np.float64)


def _chunks(n, threads, grain):
    """at::parallel_for's chunk bounds over ``range(n)`` with ``grain`` (TensorIterator runs
    serially below the grain or on one thread)."""
    if grain is None:
        return parallel_chunks(n, threads)
    if n <= grain or threads <= 1:
        return np.array([0, n], np.int64)
    t = min(threads, -(-n // grain))
    size = -(-n // t)
    return np.array(sorted({min(n, k * size) for k in range(t + 1)}), np.int64)


def gelu_grain(n, threads):
    """GeluKernelImpl's grain: ``numel / threads`` above 16384 elements, else ATen's 32768."""
    return n // threads if n > 16384 else 32768


def _run(vec, scl, arrays, params, vectors=2, grain=None, contiguous=False):
    shape, dt = arrays[0].shape, arrays[0].dtype
    perm, strides = (None, None) if contiguous else _output_layout(shape, arrays)
    if perm is not None:
        # PyTorch's output layout (TensorIterator's, ops/elementwise_operands): the kernel runs
        # over the operands in its dim order, which for operands laid out like the output is
        # memory order, as ATen's 1-D run over them (and so is each element's vector or scalar
        # lane); the output is that buffer viewed back
        arrays = [np.broadcast_to(a, shape).transpose(perm) for a in arrays]
    kshape = arrays[0].shape
    rows = None if contiguous else _rows(kshape, arrays)
    flat = [np.ascontiguousarray(np.broadcast_to(a, kshape)).reshape(-1) for a in arrays]
    out = np.empty(flat[0].size, dt)
    p = tuple(dt.type(v) for v in params)
    threads = get_num_threads()
    if callable(grain):
        grain = grain(out.size, threads)
    chunks = _chunks(out.size, threads, grain)
    width = _STEP_BYTES.get(vec, _VECTOR_BYTES * vectors) // dt.itemsize
    if rows is not None:
        # operands not dense in the output's order: ATen's loop runs row by row (a row: the
        # innermost dims TensorIterator coalesces), vectorized where every operand steps by one
        # element (or is broadcast) along the row, else all scalar
        row, vectorized = rows
        if not vectorized:
            width = out.size + 1
        elif row < out.size:
            chunks = np.union1d(chunks, np.arange(0, out.size, row, dtype=np.int64))
    # several chunks: one thread each (the values do not depend on it)
    kernel = _driver(vec, scl, len(arrays), chunks.size > 2)
    kernel(*flat, out, chunks, width, p)
    if perm is None:
        return out.reshape(shape)
    out = out.reshape(arrays[0].shape).transpose(_inverse(perm))
    return out if strides is None else _restrided(out, strides)


def _rows(kshape, arrays):
    """None when every operand (in the kernel's dim order ``kshape``) is C-contiguous: one run,
    as ATen's over coalesced dense operands. Else ``(row, vectorized)``: the length of
    TensorIterator's inner loop (the innermost dims ``coalesce_dimensions`` merges for every
    operand; the output is dense in this order) and whether ``cpu_kernel_vec`` vectorizes it
    (each operand's step along it one element or 0: ``is_contiguous``/``is_contiguous_scalar``)."""
    if all(a.flags.c_contiguous for a in arrays):
        return None
    dims = [d for d in range(len(kshape)) if kshape[d] != 1]
    if not dims:
        return None
    strides = [tuple(s // a.itemsize for s in np.broadcast_to(a, kshape).strides)
               for a in arrays]
    inner = dims[-1]
    row = kshape[inner]
    for d in reversed(dims[:-1]):
        if any(st[d] != st[inner] * row for st in strides):
            break
        row *= kshape[d]
    vectorized = all(st[inner] in (0, 1) for st in strides)
    return row, vectorized


def _output_layout(shape, arrays):
    """(perm, strides) of the output TensorIterator allocates for ``arrays`` (ATen's operand
    order), as ``elementwise_operands._output_layout``; (None, None) for C-contiguous."""
    if all(a.flags.c_contiguous and (1 not in a.shape or has_c_strides(a)) for a in arrays):
        return None, None
    return elementwise_output_layout(
        shape, [(a.shape, tuple(s // a.itemsize for s in a.strides)) for a in arrays])


def unary(vec, scl, x, *params, vectors=2, grain=None, contiguous=False):
    """``out[i] = vec(x[i], params)`` on the vector lanes, ``scl`` on each chunk's tail (the
    last ``len % (vectors * lanes)`` elements), in the layout TensorIterator gives the output
    (``contiguous``: C-contiguous, for kernels ATen runs on ``input.contiguous()``). ``grain``:
    parallel_for's grain (default ATen's 32768), or a function of (numel, threads) giving it."""
    return _run(vec, scl, (x,), params, vectors, grain, contiguous)


def binary(vec, scl, a, b, *params):
    """The two-input form (a backward kernel's ``(grad, input)``)."""
    return _run(vec, scl, (a, b), params)


# ---- silu: x / (1 + exp(-x)); backward dy * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)) ----

@njit(**SLEEF_JIT)
def silu_vec(x, p):  # p = (1,)
    return x / (p[0] + sleef_exp(-x))


@njit(**SLEEF_JIT)
def silu_scl(x, p):
    return x / (p[0] + math.exp(-x))


@njit(**SLEEF_JIT)
def silu_backward_vec(dy, x, p):
    one = p[0]
    s = one / (one + sleef_exp(-x))
    return dy * s * fma(x, one - s, one)


@njit(**SLEEF_JIT)
def silu_backward_scl(dy, x, p):
    one = p[0]
    s = one / (one + math.exp(-x))
    return dy * s * fma(x, one - s, one)


# ---- elu(alpha, scale, input_scale): x > 0 ? x * poscoef : expm1(x * negiptcoef) * negcoef;
# p = (negcoef, poscoef, negiptcoef) ------------------------------------------------------------

@njit(**SLEEF_JIT)
def elu_vec(a, p):
    return select(a > 0, a * p[1], sleef_expm1(a * p[2]) * p[0])


@njit(**SLEEF_JIT)
def elu_scl(a, p):
    if a <= 0:
        return math.expm1(a * p[2]) * p[0]
    return a * p[1]


@njit(**SLEEF_JIT)
def elu_backward_vec(g, x, p):
    # a * negiptcoef * negcoef * exp(b * negiptcoef), left to right
    neg = g * p[2] * p[0] * sleef_exp(x * p[2])
    return select(x > 0, g * p[1], neg)


@njit(**SLEEF_JIT)
def elu_backward_scl(g, x, p):
    if x <= 0:
        return g * p[2] * p[0] * math.exp(x * p[2])
    return g * p[1]


@njit(**SLEEF_JIT)
def elu_backward_result_vec(g, y, p):
    return select(y > 0, g * p[1], g * p[2] * (y + p[0]))


@njit(**SLEEF_JIT)
def elu_backward_result_scl(g, y, p):
    if y <= 0:
        return g * p[2] * (y + p[0])
    return g * p[1]


# ---- softplus_backward(beta, threshold): p = (beta, threshold, 1) ---------------------------

@njit(**SLEEF_JIT)
def softplus_backward_vec(g, x, p):
    z = sleef_exp(x * p[0])
    return select(x * p[0] > p[1], g, g * z / (z + p[2]))


@njit(**SLEEF_JIT)
def softplus_backward_scl(g, x, p):
    z = math.exp(x * p[0])
    return g if x * p[0] > p[1] else g * z / (z + p[2])


# ---- log_sigmoid: ATen's _vec_log_sigmoid runs every element as a vector lane (the last,
# partial vector is a masked load): min(x, 0) - log1p(exp(-|x|)); no scalar tail ------------

@njit(**SLEEF_JIT)
def log_sigmoid_vec(x, p):  # p = (0,)
    m = select(x < p[0], x, p[0])
    m = select(x == x, m, x)                   # vec::minimum propagates NaN
    return m - sleef_log1p(sleef_exp(-abs(x)))


@njit(**SLEEF_JIT)
def log_sigmoid_backward_vec(g, x, p):  # p = (0, 1); the saved buffer is exp(-|x|)
    b = sleef_exp(-abs(x))
    neg = x < p[0]
    max_deriv = select(neg, p[1], p[0])
    sign = select(neg, p[1], -p[1])
    return fma(-sign, b / (p[1] + b), max_deriv) * g


# ---- mish: x * tanh(log1p(exp(x))); backward
# dy * (tsp + x * s * (1 - tsp * tsp)), s = 1 / (1 + exp(-x)), tsp = tanh(log1p(exp(x))) ----

@njit(**SLEEF_JIT)
def mish_vec(x, p):
    return x * sleef_tanh(sleef_log1p(sleef_exp(x)))


@njit(**SLEEF_JIT)
def mish_scl(x, p):
    return x * math.tanh(math.log1p(math.exp(x)))


@njit(**SLEEF_JIT)
def mish_backward_vec(dy, x, p):  # p = (1,)
    s = p[0] / (p[0] + sleef_exp(-x))
    tsp = sleef_tanh(sleef_log1p(sleef_exp(x)))
    return dy * fma(x * s, fma(-tsp, tsp, p[0]), tsp)


@njit(**SLEEF_JIT)
def mish_backward_scl(dy, x, p):
    s = p[0] / (p[0] + math.exp(-x))
    tsp = math.tanh(math.log1p(math.exp(x)))
    return dy * fma(x * s, fma(-tsp, tsp, p[0]), tsp)


# ---- softplus(beta, threshold): x * beta > threshold ? x : log1p(exp(x * beta)) / beta -------

@njit(**SLEEF_JIT)
def softplus_vec(x, p):  # p = (beta, threshold)
    return select(x * p[0] > p[1], x, sleef_log1p(sleef_exp(x * p[0])) / p[0])


@njit(**SLEEF_JIT)
def softplus_scl(x, p):
    return x if x * p[0] > p[1] else math.log1p(math.exp(x * p[0])) / p[0]


# ---- hardswish_backward: p = (-3, 3, 0.5, 0): 0 up to -3, grad from 3 up, grad * (x / 3 + 0.5)
# between; a NaN x gives NaN in the vector lanes, grad in the scalar tail (its comparisons are
# all false there) -----------------------------------------------------------------------------

@njit(**SLEEF_JIT)
def hardswish_backward_vec(g, x, p):
    inner = select(x >= p[1], g, g * (x / p[1] + p[2]))
    return select(x <= p[0], p[3], inner)


@njit(**SLEEF_JIT)
def hardswish_backward_scl(g, x, p):
    if x <= p[0]:
        return p[3]
    if x < p[1]:
        return g * (x / p[1] + p[2])
    return g


# ---- softshrink(lambd): p = (lambd, 0); x - l above l, x + l below -l; between, +0 in the
# vector lanes and x * 0 (signed) in the scalar tail; NaN stays NaN in both. Its loop steps 64
# bytes at a time on both builds (measured: the tail is len % 16 floats / % 8 doubles, on
# AVX-512 one vector, on AVX2 two): ``_STEP_BYTES`` fixes it whatever ``vectors`` says --------

@njit(**SLEEF_JIT)
def softshrink_vec(x, p):
    r = select(x > p[0], x - p[0], select(x < -p[0], x + p[0], p[1]))
    return select(x == x, r, x)


@njit(**SLEEF_JIT)
def softshrink_scl(x, p):
    if x > p[0]:
        return x - p[0]
    if x < -p[0]:
        return x + p[0]
    return x * p[1]


# kernels whose measured step is not 2 * sizeof(Vectorized<T>) in every build: vec -> bytes
_STEP_BYTES = {softshrink_vec: 64}


# ---- gelu(approximate='tanh') (ATen's Gelu.h / GeluBackwardKernelImpl): p = (kBeta, kKappa,
# 0.5, 1[, 3 * kKappa]); no inf special case in PyTorch 2.13 (gelu(-inf) is NaN there too).
# The forward's ``x + kKappa * x_cube`` and the backward's ``1 - t * t``,
# ``1 + 3 * kKappa * x_sq`` are FMAs in both lambdas, ``left_derivative + left *
# tanh_derivative * inner_derivative`` is not (measured: every other combination differs) ------

GELU_BETA = 1.41421356237309504880 * 1.12837916709551257390 * 0.5  # M_SQRT2 * M_2_SQRTPI / 2
GELU_KAPPA = 0.044715


@njit(**SLEEF_JIT)
def gelu_tanh_vec(x, p):
    inner = p[0] * fma(p[1], x * x * x, x)
    return p[2] * x * (p[3] + sleef_tanh(inner))


@njit(**SLEEF_JIT)
def gelu_tanh_scl(x, p):
    inner = p[0] * fma(p[1], x * x * x, x)
    return p[2] * x * (p[3] + math.tanh(inner))


@njit(**SLEEF_JIT)
def _gelu_tanh_backward(dy, x, t, p):
    left = p[2] * x
    left_derivative = p[2] * (p[3] + t)
    tanh_derivative = fma(-t, t, p[3])
    inner_derivative = p[0] * fma(p[4], x * x, p[3])
    return dy * (left_derivative + left * tanh_derivative * inner_derivative)


@njit(**SLEEF_JIT)
def gelu_tanh_backward_vec(dy, x, p):
    return _gelu_tanh_backward(dy, x, sleef_tanh(p[0] * fma(p[1], x * x * x, x)), p)


@njit(**SLEEF_JIT)
def gelu_tanh_backward_scl(dy, x, p):
    return _gelu_tanh_backward(dy, x, math.tanh(p[0] * fma(p[1], x * x * x, x)), p)


# ---- gelu(approximate='none'): x * 0.5 * (1 + erf(x * M_SQRT1_2)); backward
# dy * (cdf + x * pdf), cdf = 0.5 * (1 + erf(x * M_SQRT1_2)), pdf = kBeta * exp(x * x * -0.5).
# Vector erf: ATen's float polynomial / SLEEF's double erf (math/_sleef_erf.py); the tails use
# glibc's erff/erf and expf/exp (Numba's math.erf/exp). p = (M_SQRT1_2, 0.5, 1[, kBeta, -0.5])
# in the dtype; kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5 rounded once from double -----------------

GELU_ALPHA = 0.70710678118654752440                                   # M_SQRT1_2
GELU_PDF = 1.12837916709551257390 * 0.70710678118654752440 * 0.5     # kBeta


GELU_PARAMS = (GELU_ALPHA, 0.5, 1.0)
GELU_BACKWARD_PARAMS = (GELU_ALPHA, 0.5, 1.0, GELU_PDF, -0.5)


def gelu_onednn(x, contiguous):
    """PyTorch hands float32 gelu(approximate='none') of a contiguous tensor of more than one
    element to oneDNN (``use_mkldnn`` in Activation.cpp): forward and backward are then
    ``gelu_onednn_vec`` / ``gelu_onednn_backward`` (math/_onednn_gelu.py) on every element."""
    return x.dtype == np.float32 and x.size > 1 and contiguous


@njit(**SLEEF_JIT)
def gelu_onednn_vec(x, p):
    return _onednn_gelu_fwd(x)


@njit(**SLEEF_JIT)
def gelu_onednn_backward(dy, x, p):
    return dy * _onednn_gelu_bwd(x)


@njit(**SLEEF_JIT)
def gelu_vec(x, p):
    return x * p[1] * (p[2] + vec_erf(x * p[0]))


@njit(**SLEEF_JIT)
def gelu_scl(x, p):
    return x * p[1] * (p[2] + math.erf(x * p[0]))


@njit(**SLEEF_JIT)
def gelu_backward_vec(dy, x, p):
    cdf = p[1] * (p[2] + vec_erf(x * p[0]))
    pdf = p[3] * sleef_exp(x * x * p[4])
    return dy * fma(x, pdf, cdf)


@njit(**SLEEF_JIT)
def gelu_backward_scl(dy, x, p):
    cdf = p[1] * (p[2] + math.erf(x * p[0]))
    pdf = p[3] * math.exp(x * x * p[4])
    return dy * (cdf + x * pdf)


# oneDNN's gelu forward on 16 lanes at a time (``gelu_fwd16``: its coefficient tables as
# permutes, not the gathers LLVM makes of ``gelu_onednn_vec``, ~5x faster), the < 16 rest by the
# scalar form: the same bits either way, so chunks and blocks need not follow any library's.

def _make_gelu_onednn_drivers(vec, scl):
    @njit(**SLEEF_JIT)
    def run(x, out, b, e, width, p):
        xs, os = x[b:e], out[b:e]
        n = xs.size
        body = n - n % 16
        for i in range(0, body, 16):
            _onednn_gelu_fwd16(xs, os, i)
        for i in range(body, n):
            os[i] = _onednn_gelu_fwd(xs[i])

    @njit(**SLEEF_JIT)
    def unary(x, out, chunks, width, p):
        for c in range(chunks.size - 1):
            run(x, out, chunks[c], chunks[c + 1], width, p)

    @njit(parallel=True, **SLEEF_JIT)
    def unary_par(x, out, chunks, width, p):
        for c in prange(chunks.size - 1):
            run(x, out, chunks[c], chunks[c + 1], width, p)

    d = _make_drivers(vec, scl)
    d[(1, False)], d[(1, True)] = unary, unary_par
    return d


_CUSTOM_DRIVERS = {}
if _HAVE_GELU_FWD16:
    _CUSTOM_DRIVERS[(gelu_onednn_vec, gelu_onednn_vec)] = _make_gelu_onednn_drivers


# ---- logit_backward(eps) (BinaryOpsKernel.cpp): p = (lo, hi, out, 1, inf); no eps: lo = 0,
# hi = 1, out = NaN; eps: lo = eps, hi = 1 - eps, out = 0. The vector lambda is
# ``blendv(out, dy / (x * (1 - x)), lo <= x <= hi)``; the scalar one gives ``dy * inf`` at
# x == 0 or 1 instead: the two differ at x == -0.0 (the vector's dy / -0.0 has the other sign),
# so which elements take the tail shows in the result --------------------------------------

@njit(**SLEEF_JIT)
def logit_backward_vec(dy, x, p):
    return select((x >= p[0]) & (x <= p[1]), dy / (x * (p[3] - x)), p[2])


@njit(**SLEEF_JIT)
def logit_backward_scl(dy, x, p):
    if x < p[0] or x > p[1]:
        return p[2]
    if x == 0 or x == p[3]:
        return dy * p[4]
    return dy / (x * (p[3] - x))


def logit_backward(grad, x, eps=None):
    """ATen's ``logit_backward(grad, x, eps)`` on float32/float64 arrays of one dtype (``eps``
    None or negative: no clamp, NaN outside [0, 1]; else 0 outside [eps, 1 - eps])."""
    if eps is None or eps < 0:
        params = (0.0, 1.0, math.nan, 1.0, math.inf)
    else:
        params = (eps, 1.0 - eps, 0.0, 1.0, math.inf)
    return binary(logit_backward_vec, logit_backward_scl, grad, x, *params)
