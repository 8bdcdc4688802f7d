"""Bit-exact replica of PyTorch's default CPU random number generator.

PyTorch's CPU generator (``at::CPUGeneratorImpl``) is a 32-bit Mersenne
Twister (``at::mt19937``) plus a one-value cache for Box-Muller normals.
Every sampler below consumes the engine exactly like the corresponding ATen
CPU kernel (torch 2.13), so after ``manual_seed(s)`` the numbers are the same
as ``torch.manual_seed(s)`` followed by the same calls:

=====================  ======================================================
torch                   here
=====================  ======================================================
``torch.rand``          ``Generator.rand`` / ``uniform_``: one 32-bit draw per
                        float32 (24 bits used), two per float64 (53 bits)
``torch.randn``         ``Generator.randn`` / ``normal_``: numel >= 16 and
                        contiguous -> ATen's ``normal_fill`` (uniforms first,
                        then Box-Muller per block of 16, the tail block is
                        recomputed from 16 fresh uniforms); otherwise the
                        serial ``normal_distribution<double>`` with its cached
                        second value
``torch.randint``       ``Generator.randint``: ``random() % range + low``
                        (``random64()`` when range >= 2**28)
``torch.randperm``      ``Generator.randperm``: ATen's swap shuffle
``bernoulli``/dropout   ``Generator.bernoulli`` / ``dropout_mask``
``multinomial``         ``Generator.multinomial``
``exponential_``        ``Generator.exponential_``
=====================  ======================================================

The float32 ``normal_fill`` kernel differs per CPU build of ATen: x86-64 CPUs
with AVX2 (which includes every AVX-512 CPU, ATen never dispatches
``normal_stub`` to AVX-512) run a Cephes-style SIMD log/sincos compiled with
fused multiply-adds; other CPUs run scalar libm code.  The AVX2 variant is
replicated operation by operation (the FMA placement was read off the
disassembly of torch 2.13's ``libtorch_cpu.so``); the choice follows
:func:`cpu_capability` (``ATEN_CPU_CAPABILITY=default`` is honoured like
torch does).

Known differences: the libm-based paths (float64 normals, the non-AVX2
float32 kernel, exponential) call the platform libm like torch does, so they
match where torch and jitgrad share a libm (glibc on Linux); multinomial
without replacement orders zero-probability categories (picked only once the
non-zero ones are exhausted) by index, while torch's topk leaves ties in an
implementation-defined order.

Only numpy and the standard library are imported at module import time.
The kernels are compiled with numba (``cache=True``) on first use.

Layout: this module holds the Generator (seeding, state bytes, raw draws)
and the default generator; the samplers are its base classes in
``_random_continuous`` and ``_random_discrete``, their argument checks in
``_random_args``, the engine and kernels in ``_random_kernels``.
"""
import os
import struct
import threading

import numpy as np

from ._random_continuous import _ContinuousSamplers
from ._random_discrete import _DiscreteSamplers
from ._random_kernels import (
    _DEFAULT_RNG_SEED,
    _ENGINE_LEN,
    _LEFT,
    _N,
    _NEXT,
    _STATE_SIZE,
    _U64,
    _kernels,
    cpu_capability,
)

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "cpu_capability",
]

# ---------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------

def _seed_to_u64(seed):
    try:
        seed = int(seed)
    except (TypeError, ValueError):
        raise TypeError(
            f"seed must be an int, got {type(seed).__name__}") from None
    if not (-(1 << 63) <= seed <= _U64):
        raise RuntimeError(
            "Overflow when unpacking long long, seed must be within the "
            "range [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]")
    return seed & _U64


def _nondeterministic_seed():
    # c10::detail::getNonDeterministicRandom(): 8 bytes of /dev/urandom
    return int.from_bytes(os.urandom(8), "little")


# ---------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------

_STRUCT = struct.Struct("<QiiQ624Qdddi4xf?3x")
assert _STRUCT.size == _STATE_SIZE


class Generator(_ContinuousSamplers, _DiscreteSamplers):
    """Replica of ``torch.Generator()`` on the CPU (``at::CPUGeneratorImpl``).

    All samplers return NumPy arrays (C order); they draw from the stream in
    the same order as ATen fills a contiguous tensor.
    """

    device = "cpu"

    def __init__(self, device="cpu", seed=None):
        if device is not None and not str(device).startswith("cpu"):
            raise RuntimeError(
                f"jitgrad.Generator only supports the CPU, got {device!r}")
        self._lock = threading.RLock()
        self._engine = np.zeros(_ENGINE_LEN, dtype=np.int64)
        # [valid, value] caches of normal_distribution<double> / <float>
        self._ncache = np.zeros(2, dtype=np.float64)
        self._fcache = None
        self._seed = 0
        self.manual_seed(_DEFAULT_RNG_SEED if seed is None else seed)

    # -- seeding -----------------------------------------------------------
    def manual_seed(self, seed):
        """Seed like ``torch.Generator.manual_seed``; returns ``self``."""
        s = _seed_to_u64(seed)
        with self._lock:
            self._set_seed(s)
        return self

    def _set_seed(self, s):
        self._seed = s
        self._ncache[:] = 0.0
        self._fcache = None
        _engine_seed(self._engine, s)

    def seed(self):
        """Re-seed from a non-deterministic source and return the seed."""
        s = _nondeterministic_seed()
        with self._lock:
            self._set_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    # -- state -------------------------------------------------------------
    def get_state(self):
        """State in torch's ``CPUGeneratorImplState`` byte layout (5056 B).

        The result can be fed to ``torch.Generator.set_state`` (as a uint8
        tensor) and vice versa.
        """
        with self._lock:
            e = self._engine
            valid = bool(self._ncache[0] != 0.0)
            fvalid = self._fcache is not None
            raw = _STRUCT.pack(
                self._seed, int(e[_LEFT]), 1, int(e[_NEXT]),
                *[int(v) for v in e[:_N]],
                0.0, float(self._ncache[1]) if valid else 0.0, 0.0,
                1 if valid else 0,
                float(self._fcache) if fvalid else 0.0, fvalid)
        return np.frombuffer(raw, dtype=np.uint8).copy()

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state` (or ``torch.get_rng_state``)."""
        if hasattr(new_state, "numpy") and not isinstance(new_state, np.ndarray):
            new_state = new_state.numpy()
        buf = np.ascontiguousarray(np.asarray(new_state))
        if buf.dtype != np.uint8:
            raise TypeError("RNG state must be a uint8 array, got "
                            f"{buf.dtype}")
        buf = buf.reshape(-1)
        if buf.size != _STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but "
                f"found the input RNG state size to be {buf.size}")
        vals = _STRUCT.unpack(buf.tobytes())
        seed, left, seeded, nxt = vals[:4]
        words = vals[4:4 + _N]
        _nx, normal_y, _rho, normal_valid, fnext, fvalid = vals[4 + _N:]
        nxt &= 0xFFFFFFFF
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        with self._lock:
            e = self._engine
            e[:_N] = np.array(words, dtype=np.uint64).astype(np.uint32)
            e[_LEFT] = left
            e[_NEXT] = nxt
            self._seed = seed
            if normal_valid:
                self._ncache[0] = 1.0
                self._ncache[1] = normal_y
            else:
                self._ncache[:] = 0.0
            self._fcache = np.float32(fnext) if fvalid else None
        return self

    def clone_state(self):
        """A new Generator with a copy of this one's state."""
        g = Generator.__new__(Generator)
        g._lock = threading.RLock()
        with self._lock:
            g._engine = self._engine.copy()
            g._ncache = self._ncache.copy()
            g._fcache = self._fcache
            g._seed = self._seed
        return g

    # -- raw draws ---------------------------------------------------------
    def random_raw(self, n):
        """``n`` raw 32-bit outputs of the engine (``CPUGeneratorImpl::random``)."""
        out = np.empty(int(n), dtype=np.uint32)
        if out.size:
            with self._lock:
                _kernels().mt_fill(self._engine, out)
        return out



# names without the trailing underscore (same samplers)
Generator.uniform = Generator.uniform_
Generator.normal = Generator.normal_
Generator.exponential = Generator.exponential_


def _engine_seed(engine, s):
    """at::mt19937(seed): init_with_uint32(seed & 0xffffffff), in NumPy."""
    x = s & 0xFFFFFFFF
    words = [0] * _N
    words[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        words[j] = x
    engine[:_N] = words
    engine[_LEFT] = 1
    engine[_NEXT] = 0


# ---------------------------------------------------------------------------
# module-level default generator (torch.default_generator)
# ---------------------------------------------------------------------------

default_generator = Generator(seed=_nondeterministic_seed())


def manual_seed(seed):
    """``torch.manual_seed``: seed the default generator and return it."""
    return default_generator.manual_seed(seed)


def seed():
    """``torch.seed``: non-deterministic re-seed; returns the seed."""
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
