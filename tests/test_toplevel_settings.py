"""torch.finfo/iinfo, the numeric constants and the process settings (jitgrad/_numeric_info.py,
jitgrad/_settings.py) against PyTorch: values, reprs, errors, and the state each setter leaves."""
import math
import os
import subprocess
import sys

import pytest

import jitgrad
from tests._parity import agree, check_snippet, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

FLOATS = ["float16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def test_constants():
    for name in ("pi", "e", "inf"):
        assert getattr(jitgrad, name) == getattr(torch, name)
    assert math.isnan(jitgrad.nan) and jitgrad.newaxis is None is torch.newaxis


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    def fn(T):
        f = T.finfo(getattr(T, name))
        return (repr(f), str(f), f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal,
                f.resolution, f.dtype, type(f.max).__name__, type(f.dtype).__name__)
    agree(fn)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    def fn(T):
        i = T.iinfo(getattr(T, name))
        return repr(i), i.bits, i.max, i.min, i.dtype, type(i.max).__name__
    agree(fn)


def test_info_objects():
    agree(lambda T: repr(T.finfo()))
    agree(lambda T: T.finfo(type=T.float16).bits)
    agree(lambda T: (T.finfo(T.float32) == T.finfo(T.float32),
                     T.finfo(T.float32) == T.finfo(T.float64), T.iinfo(T.int8) == T.iinfo(T.int8)))
    agree(lambda T: hash(T.finfo(T.float32)))
    agree(lambda T: setattr(T.finfo(T.float32), "eps", 3))
    agree(lambda T: T.finfo.__name__)


@pytest.mark.parametrize("call", [
    "finfo(T.int32)", "finfo(T.bool)", "finfo('float32')", "finfo(3)", "finfo(None)",
    "finfo(T.float32, 1)", "iinfo(T.float32)", "iinfo(T.bool)", "iinfo('int32')", "iinfo()",
])
def test_info_errors(call):
    agree(lambda T: eval("T." + call))


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _in_fresh_process(code):
    """Settings are process-wide: each library's run happens in its own interpreter."""
    out = []
    for lib in ("torch", "jitgrad"):
        r = subprocess.run([sys.executable, "-c", f"import {lib} as torch\n{code}"],
                           capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": _ROOT, "PATH": os.environ.get("PATH", "")})
        out.append((r.stdout, r.stderr.strip().splitlines()[-1:] if r.returncode else None))
    assert out[1] == out[0]


THREADS = """
def show(f, *a):
    try:
        r = f(*a)
        print(f.__name__, a, r)
    except Exception as e:
        print(f.__name__, a, type(e).__name__, e)
for v in (0, -1, "a", 1.5, True):
    show(torch.set_num_threads, v)
    show(torch.set_num_interop_threads, v)
show(torch.set_num_threads, 1)
print(torch.get_num_threads())
show(torch.set_num_interop_threads, 3)
show(torch.set_num_interop_threads, 2)
print(torch.get_num_interop_threads())
"""


def test_threads():
    _in_fresh_process(THREADS)


def test_threads_reach_numba():
    import numba
    before = jitgrad.get_num_threads()
    try:
        jitgrad.set_num_threads(1)
        assert numba.get_num_threads() == 1 and jitgrad.get_num_threads() == 1
    finally:
        jitgrad.set_num_threads(before)
    assert numba.get_num_threads() == min(before, numba.config.NUMBA_NUM_THREADS)


DETERMINISM = """
def state():
    return (torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.get_deterministic_debug_mode())
print(state())
torch.use_deterministic_algorithms(True, warn_only=True); print(state())
torch.use_deterministic_algorithms(True); print(state())
torch.use_deterministic_algorithms(False, warn_only=True); print(state())
for m in ["default", "warn", "error", 0, 1, 2, 3, "x", None, 1.0]:
    try:
        torch.set_deterministic_debug_mode(m); print(m, state())
    except Exception as e:
        print(m, type(e).__name__, e)
for b in ["x", 1, None]:
    try:
        torch.use_deterministic_algorithms(b)
    except Exception as e:
        print(type(e).__name__, e)
try:
    torch.use_deterministic_algorithms(True, warn_only=1)
except Exception as e:
    print(type(e).__name__, e)
"""


def test_deterministic_flags():
    _in_fresh_process(DETERMINISM)


OTHERS = """
import warnings
warnings.simplefilter("always")
print(torch.get_float32_matmul_precision())
for p in ["high", "medium", "highest", "x", 1, "HIGH"]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            torch.set_float32_matmul_precision(p)
            print(p, torch.get_float32_matmul_precision(), [str(m.message)[:90] for m in w])
        except Exception as e:
            print(p, type(e).__name__, e)
print(torch.is_warn_always_enabled())
torch.set_warn_always(True); print(torch.is_warn_always_enabled())
for b in ["x", 1]:
    try:
        torch.set_warn_always(b)
    except Exception as e:
        print(type(e).__name__, e)
for b in [1, "x"]:
    try:
        torch.set_flush_denormal(b)
    except Exception as e:
        print(type(e).__name__, e)
print(type(torch.set_flush_denormal(False)).__name__)
print(torch.has_lapack, type(torch.has_mkl).__name__, type(torch.has_openmp).__name__)
"""


def test_other_settings():
    _in_fresh_process(OTHERS)


def test_flush_denormal_is_reported_unsupported():
    # PyTorch returns True on x86 (it sets FTZ/DAZ); jitgrad cannot, and says so with False
    assert jitgrad.set_flush_denormal(True) is False


def test_has_mkl_is_the_blas_backend():
    from jitgrad.backends import blas
    assert jitgrad.has_mkl is (blas.backend() == "mkl")
    check_snippet("torch.has_lapack", lambda v, lib: v)
