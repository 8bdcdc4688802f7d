"""Process-wide settings with PyTorch's names: thread counts, deterministic algorithms, float32
matmul precision, warn-always, flush-denormal, and the build flags ``has_mkl`` & co.

What each one does here (jitgrad has no cuDNN/TF32 and no nondeterministic CPU kernel):

* ``set_num_threads(n)``: the intra-op threads, as PyTorch's: Numba's ``prange`` kernels
  (``numba.set_num_threads``, capped at the pool Numba started with, ``NUMBA_NUM_THREADS``)
  and MKL's GEMMs (``MKL_Set_Num_Threads``; ``backends/host_threads.py`` spreads its pieces
  over that count too). ``get_num_threads`` reports the last value set, else Numba's count.
* ``set_num_interop_threads``: recorded with PyTorch's rules (once only); jitgrad runs no
  inter-op pool, so it changes nothing else.
* ``use_deterministic_algorithms`` / the debug mode: the flags, kept and reported as PyTorch
  keeps them; jitgrad's CPU kernels are deterministic already, so nothing consults them.
* ``set_float32_matmul_precision``: validated and kept ("high"/"medium" would allow TF32 or
  bfloat16 passes on hardware with them; jitgrad's GEMMs always run full float32).
* ``set_warn_always``: the flag, kept.
* ``set_flush_denormal``: returns False (unsupported), as PyTorch does where it cannot set the
  FTZ/DAZ bits: jitgrad cannot set the CPU's MXCSR from Python, so denormals stay.
"""
from __future__ import annotations

import warnings

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "set_warn_always",
           "is_warn_always_enabled", "set_flush_denormal", "has_lapack",
           "has_openmp", "has_spectral"]

_state = {"threads": None, "interop": None, "deterministic": False, "warn_only": False,
          "matmul_precision": "highest", "warn_always": False}


def _positive_int(name, n):
    # bool is an int to Python but not to PyTorch's check (it reads PyLong exactly)
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def set_num_threads(n) -> None:
    """The threads of Numba's parallel kernels and of MKL's GEMMs."""
    _positive_int("set_num_threads", n)
    import numba

    from .backends import blas
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    blas.set_max_threads(n)
    _state["threads"] = n
    from .backends import host_threads
    host_threads.count_changed(n)


def get_num_threads() -> int:
    if _state["threads"] is not None:
        return _state["threads"]
    import numba
    return numba.config.NUMBA_NUM_THREADS


def set_num_interop_threads(n) -> None:
    _positive_int("set_num_interop_threads", n)
    if _state["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _state["interop"] = n


def get_num_interop_threads() -> int:
    if _state["interop"] is not None:
        return _state["interop"]
    import numba
    return numba.config.NUMBA_NUM_THREADS


def _bool(name, v):
    if not isinstance(v, bool):
        raise RuntimeError(f"{name} expects a bool, but got {type(v).__name__}")


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    for arg, v in (("mode' (position 1)", mode), ("warn_only'", warn_only)):
        if not isinstance(v, bool):
            raise TypeError(f"_set_deterministic_algorithms(): argument '{arg} must be bool, not "
                            f"{type(v).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default": off, 1/"warn": deterministic with warnings, 2/"error": deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision) -> None:
    if not isinstance(precision, str):
        raise RuntimeError("set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        # PyTorch's wording (its missing space included): the call is ignored
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def set_warn_always(b) -> None:
    _bool("setWarnOnlyOnce", b)
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


def set_flush_denormal(mode) -> bool:
    """False: flushing denormals is not supported here (see the module's docstring)."""
    _bool("flush_denormal", mode)
    return False


# the build flags PyTorch exposes: LAPACK is NumPy's/SciPy's, OpenMP is Numba's threading layer
# where it has one (jitgrad's FFT is not written, hence has_spectral False)
has_lapack = True
has_openmp = True
has_spectral = False


def _has_mkl() -> bool:
    from .backends import blas
    return blas.backend() == "mkl"
