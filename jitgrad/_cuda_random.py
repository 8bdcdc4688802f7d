"""The CUDA generator: random numbers for CUDA tensors, generated on the device.

State is two host integers, like PyTorch's ``CUDAGeneratorImpl`` (seed + Philox offset): a call
draws its numbers from Philox4x32-10 with ``key = seed`` and ``counter = (element index,
offset)`` (``_cuda_rng_kernels``), then advances ``offset`` by one. Consequences:

* results do not depend on the launch configuration (grid/block sizes, simulator or GPU);
* ``jitgrad.manual_seed(s)`` / ``jitgrad.cuda.manual_seed(s)`` reset (seed, offset) = (s, 0),
  so seeded runs repeat exactly; successive calls use distinct counters (different streams);
* the numbers are **not** PyTorch's CUDA numbers (its kernels map counters to threads by launch
  configuration and use curand's transforms) nor the CPU generator's: a CUDA run seeded like a
  CPU run draws different (statistically equivalent) values.

Nothing here touches the host except the (seed, offset) bookkeeping; importing this module does
not import numba.cuda (the kernels module is imported on the first draw).
"""
from __future__ import annotations

import os
import threading

import numpy as np

from ._random import _DEFAULT_RNG_SEED, _seed_to_u64

__all__ = ["CudaGenerator", "default_generator", "manual_seed", "uniform", "normal", "randint",
           "random_", "cauchy", "log_normal", "geometric",
           "bernoulli", "dropout_mask", "exponential", "write_into",
           "multinomial_with_replacement", "standard_gamma"]

_MASK32 = 0xFFFFFFFF


class CudaGenerator:
    """(seed, offset) of the device's Philox stream (``torch.cuda`` default generator)."""

    device = "cuda:0"

    def __init__(self, seed=_DEFAULT_RNG_SEED):
        self._lock = threading.Lock()
        self._seed = _seed_to_u64(seed)
        self._offset = 0

    def manual_seed(self, seed):
        s = _seed_to_u64(seed)
        with self._lock:
            self._seed, self._offset = s, 0
        return self

    def seed(self):
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self) -> np.ndarray:
        """16 bytes: seed and offset (uint64, little endian), as a uint8 array."""
        with self._lock:
            return np.array([self._seed, self._offset], dtype="<u8").view(np.uint8).copy()

    def set_state(self, state):
        a = np.ascontiguousarray(np.asarray(state))
        if a.dtype != np.uint8 or a.size != 16:
            raise RuntimeError("Expected a CUDA generator state of 16 uint8 values")
        seed, offset = (int(v) for v in a.reshape(-1).view("<u8"))
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

    # CUDA graphs (``_compile/graphed.py``): while a step is taped, draws read (seed, offset)
    # from a device array and count their offsets from the step's start (``_draw``), so that a
    # graph replay needs only that array rewritten and the offset advanced by the step's draws
    _graph_base = None   # the offset when the taped step began, or None
    _graph_thread = None
    _graph_draws = 0
    _device_state = None

    def begin_graph_step(self):
        """Start taping a step: later draws in this thread go through the device state (made
        here, before the tape sees allocations; written at the step's first draw)."""
        from .backends import cuda as B
        if self._device_state is None:
            self._device_state = B.empty((4,), np.uint64)
        self._graph_base, self._graph_draws = self._offset, 0
        self._graph_thread = threading.get_ident()

    def end_graph_step(self) -> int:
        """Stop taping; the number of draws the step made through the device state."""
        self._graph_base = self._graph_thread = None
        return self._graph_draws

    def upload_graph_state(self):
        """Write (seed, offset) into the device state array (32 bytes, counted as a
        host->device transfer), allocating it the first time."""
        from .backends import cuda as B
        with self._lock:
            s, o = self._seed, self._offset
        words = np.array([s & _MASK32, s >> 32, o & _MASK32, (o >> 32) & _MASK32], np.uint64)
        B.stats.h2d += 1
        B.stats.h2d_bytes += words.nbytes
        self._device_state.copy_to_device(words)

    def advance(self, draws):
        """Move the offset past ``draws`` calls (what a graph replay's draws used)."""
        with self._lock:
            self._offset += draws

    def next_call(self):
        """Kernel key and counter words of the next call: (k0, k1, o0, o1) as np.uint64."""
        with self._lock:
            s, o = self._seed, self._offset
            self._offset += 1
        u = np.uint64
        return u(s & _MASK32), u(s >> 32), u(o & _MASK32), u((o >> 32) & _MASK32)


default_generator = CudaGenerator()


def manual_seed(seed) -> None:
    default_generator.manual_seed(seed)


def _draw(kind, shape, dtype, out_dtype, scalars, arrays=(), out=None):
    """Launch sampler ``kind`` over ``shape``; returns a CudaArray (``out`` when given and
    contiguous: written in place)."""
    from ._cuda_array import CudaArray
    from ._cuda_rng_kernels import make_kernel
    from .backends import cuda as B
    shape = tuple(int(s) for s in shape)
    dest = out if out is not None and out.is_contiguous() else CudaArray.empty(shape, out_dtype)
    n = dest.size
    gen = default_generator
    if n and gen._graph_base is not None and gen._graph_thread == threading.get_ident():
        from ._cuda_rng_kernels import make_graph_safe_kernel
        _, kern = make_graph_safe_kernel(kind, dtype, out_dtype)
        if gen._graph_draws == 0:
            gen.upload_graph_state()  # (seed, offset) at the step's first draw: its base
        with gen._lock:
            intra = gen._offset - gen._graph_base
            gen._offset += 1
        gen._graph_draws += 1
        B.launch_flat(kern, n, (np.int64(n), gen._device_state, np.uint64(intra), *scalars,
                                *arrays, dest.flat()))
    elif n:
        _, kern = make_kernel(kind, dtype, out_dtype)
        B.launch_flat(kern, n, (np.int64(n), *gen.next_call(), *scalars, *arrays,
                                dest.flat()))
    if out is not None and dest is not out:
        write_into(out, dest)
        return out
    return dest


def write_into(dst, src) -> None:
    """Copy CudaArray ``src`` into the (possibly strided) CudaArray ``dst`` on the device."""
    from .backends.cuda_kernels.layout import copy_into
    if dst.size:
        copy_into(dst.kview(), src.kview())


def _uniform_dtype(dtype):
    """Uniforms are drawn in float64 for float64 outputs and in float32 otherwise."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def uniform(shape, low=0.0, high=1.0, dtype=np.float32, out=None):
    """``empty(shape).uniform_(low, high)`` on the device: values in [low, high)."""
    low, high = float(low), float(high)
    if not low <= high:
        raise RuntimeError("uniform_ expects to return a [from, to) range, but found "
                           f"from={low} > to={high}")
    ft = _uniform_dtype(dtype).type
    return _draw("uniform", shape, ft, dtype, (ft(low), ft(high - low), ft(high)), out=out)


def normal(shape, mean=0.0, std=1.0, dtype=np.float32, out=None):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    ft = _uniform_dtype(dtype).type
    return _draw("normal", shape, ft, dtype, (ft(mean), ft(std)), out=out)


def randint(low, high, shape, dtype=np.int64, out=None):
    low, high = int(low), int(high)
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    return _draw("randint", shape, np.float32, dtype, (np.int64(low), np.uint64(high - low)),
                 out=out)


def random_(out, *bounds):
    """``out.random_(*bounds)`` in place on the device, with the CPU generator's rules
    (``_random_discrete.random_``; ATen's random_from_to checks and ranges): ``()`` is
    ``[0, 2**digits]`` for floats (float32: 2**24), ``[0, max]`` for integers, 0/1 for bool;
    ``(to,)`` is ``[0, to)``, ``(from, to)`` is ``[from, to)``, ``(from, None)`` is
    ``[from, max]``. The values are ``base + word % span`` (Philox words, not the CPU's)."""
    from ._random_args import (
        _FLOAT_DIGITS,
        _check_from_to_in_range,
        _update_from,
        _update_to,
        random_inclusive_bounds,
    )
    dt = np.dtype(out.dtype)
    if not bounds:
        if dt.kind == "b":
            span = 2
        elif dt.kind == "f":
            span = (1 << _FLOAT_DIGITS[dt.name]) + 1
        else:
            span = int(np.iinfo(dt).max) + 1
        return _span_draw(out, 0, span)
    frm, to = (0, bounds[0]) if len(bounds) == 1 else bounds
    frm = int(frm)
    if to is not None:
        to = int(to)
        if not frm < to:
            raise RuntimeError("random_ expects 'from' to be less than 'to', but got "
                               f"from={frm} >= to={to}")
        if dt.kind == "f":
            frm, to = _update_from(dt, frm), _update_to(dt, to)
            if not frm < to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than "
                                   f"'to' casted to dtype, but got from={frm} >= to={to}")
        _check_from_to_in_range(frm, to - 1, dt)
        return _span_draw(out, frm, to - frm)
    if frm == -(1 << 63):  # [int64 min, int64 max]: the whole 64-bit word
        if dt.kind not in "f" and dt != np.int64 or dt == np.float16:
            raise RuntimeError("random_full_64_bits_range_kernel_cuda handles only int64, "
                               "double, float and bfloat16")
        return _draw("random64", out.shape, np.float32, dt, (), out=out)
    frm, to_inc = random_inclusive_bounds(dt, frm)
    return _span_draw(out, frm, to_inc - frm + 1)


def _span_draw(out, base, span):
    # span <= 2**64 - 1 here: the full 64-bit range is the random64 kernel's
    return _draw("randint", out.shape, np.float32, out.dtype, (np.int64(base), np.uint64(span)),
                 out=out)


def _need_float(dtype, kernel, dist=None):
    from ._random_args import _need_float as need
    need(dtype, kernel, dist)


def cauchy(shape, median=0.0, sigma=1.0, dtype=np.float32, out=None):
    """``empty(shape).cauchy_(median, sigma)``: ATen's CUDA transform ``median + sigma *
    tan(pi * (u - 1/2))`` of a uniform in (0, 1], in the uniforms' dtype."""
    _need_float(dtype, "cauchy_cuda", dist="Cauchy")
    sigma = float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    ft = _uniform_dtype(dtype).type
    return _draw("cauchy", shape, ft, dtype, (ft(median), ft(sigma)), out=out)


def log_normal(shape, mean=1.0, std=2.0, dtype=np.float32, out=None):
    """``empty(shape).log_normal_(mean, std)``: ``exp`` of a Box-Muller normal."""
    _need_float(dtype, "log_normal_cuda")
    std = float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    ft = _uniform_dtype(dtype).type
    return _draw("log_normal", shape, ft, dtype, (ft(mean), ft(std)), out=out)


def geometric(shape, p, dtype=np.float32, out=None):
    """``empty(shape).geometric_(p)``: ``ceil(log(u) / log1p(-p))`` (any real dtype but bool,
    as PyTorch's CUDA kernel)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        raise NotImplementedError('"geometric_cuda" not implemented for \'Bool\'')
    p = float(p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    ft = _uniform_dtype(dt).type
    return _draw("geometric", shape, ft, dt, (ft(np.log1p(ft(-p))),), out=out)


_BERNOULLI_RANGE = (RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                    "(Could this error message be improved?  If so, please report an "
                    "enhancement request to PyTorch.)")


def _flag_code(error):
    """(mapped flag array, code) of ``error`` for a kernel's device-side check
    (``cuda_kernels.bounds``: raised at the next synchronizing point)."""
    from .backends.cuda_kernels.bounds import check_args
    flag, chk = check_args(error, False, 0)
    return flag, chk[0]


def bernoulli(p, shape, dtype=np.float32, out=None):
    """0/1 samples of ``dtype``: ``p`` a Python number, or a CudaArray of probabilities
    (broadcast to ``shape``; checked on the device as PyTorch's CUDA kernel asserts: a value
    outside [0, 1] raises the CPU path's error at the next synchronizing point)."""
    dt = np.dtype(dtype)
    one = dt.type(1)
    if isinstance(p, (int, float, np.number)):
        pv = float(p)
        if not 0.0 <= pv <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={pv}")
        ft = _uniform_dtype(dt).type
        return _draw("bernoulli", shape, ft, dt, (ft(pv), one), out=out)
    ft = _uniform_dtype(p.dtype)
    pf = p.flat(tuple(shape), ft)
    flag, code = _flag_code(_BERNOULLI_RANGE)
    return _draw("bernoulli_tensor", shape, ft, dt, (one, code), (flag, pf), out=out)


MULTINOMIAL_ERRORS = (
    (RuntimeError, "invalid multinomial distribution (encountering probability entry < 0)"),
    (RuntimeError, "invalid multinomial distribution (encountering probability entry = "
                   "infinity or NaN)"),
    (RuntimeError, "invalid multinomial distribution (sum of probabilities <= 0)"))


def multinomial_with_replacement(p, cum, n_sample):
    """``(rows, n_sample)`` int64 category indices, sampled with replacement from the rows of
    the contiguous ``(rows, cats)`` CudaArrays ``p`` (probabilities) and ``cum`` (their
    normalized prefix sums), both float32 or float64: one draw (one offset) for the call."""
    rows, cats = (int(s) for s in p.shape)
    ft = _uniform_dtype(p.dtype)
    codes = []
    for err in MULTINOMIAL_ERRORS:
        flag, code = _flag_code(err)
        codes.append(code)
    return _draw("multinomial", (rows, int(n_sample)), ft.type, np.int64,
                 (np.int64(n_sample), np.int64(cats), *codes),
                 (flag, p.flat(None, ft), cum.flat(None, ft)))


def dropout_mask(shape, p, dtype=np.float32):
    """The scaled keep-mask of ``F.dropout`` (0 or ``1/(1-p)`` in ``dtype``), like the CPU
    generator's ``dropout_mask``: ``p == 0`` ones, ``p == 1`` zeros, nothing drawn for those."""
    from .ops.factory_args import _device_full
    dt = np.dtype(dtype)
    p = float(p)
    if p == 0.0:
        return _device_full(shape, 1, dt)
    n = int(np.prod(shape, dtype=np.int64))
    if p == 1.0 or n == 0:
        return _device_full(shape, 0, dt)
    q = 1.0 - p
    ft = _uniform_dtype(dt).type
    # kept elements hold 1/q rounded once in dtype, the value the CPU path's noise / q gives
    return _draw("bernoulli", shape, ft, dt, (ft(q), dt.type(1) / dt.type(q)))


def exponential(shape, lambd=1.0, dtype=np.float32, out=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    ft = _uniform_dtype(dtype).type
    return _draw("exponential", shape, ft, dtype, (ft(lambd),), out=out)


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples, one per element of the CudaArray ``alpha`` (float32/float64,
    any layout), in its dtype: ATen's sample_gamma on the device (``_cuda_rng_kernels``), one
    call (one offset), ``max(tiny, sample)``."""
    dt = np.dtype(alpha.dtype)
    return _draw("gamma", alpha.shape, dt.type, dt, (dt.type(np.finfo(dt).tiny),),
                 (alpha.flat(),))
