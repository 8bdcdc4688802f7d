"""The ``cuda`` extra's NumPy compatibility (issue 11): numba-cuda 0.30.4 (the newest release)
registers an overload for ``np.row_stack``, which NumPy 2.5 removed, when it first compiles a
kernel; ``backends/numba_cuda_compat.py`` works around it. These tests fail when the combination
of NumPy and numba-cuda installed here, or a simulated NumPy 2.5 (``row_stack`` deleted from
``numpy`` and its ``__all__``, as 2.5 did), cannot compile a jitgrad CUDA kernel to PTX.

They run in the main (non-simulator) process, each in a fresh interpreter (numba.cuda's
compilation registries are filled once per process)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NUMPY_25 = """
import numpy as np
if "row_stack" in np.__dict__:  # NumPy < 2.5: remove it as 2.5 did
    del np.row_stack
    np.__all__ = [n for n in np.__all__ if n != "row_stack"]
"""

COMPILE = """
import numpy as np
import jitgrad as jg
from jitgrad.backends import cuda as B
from jitgrad.codegen import kcache
from jitgrad.codegen.cuda import render_cuda
from jitgrad.ops.elementwise_call import _forward_spec
from jitgrad.ops import elementwise  # noqa: F401 - fills the registry
from jitgrad.ops.registry import OPS

# a registry op's forward kernel (the path every elementwise op on a CUDA tensor takes) ...
spec = _forward_spec(OPS["mul"], ("a", "a"))
mod = kcache.load(render_cuda(spec), "cuda-ptxcheck")
x = np.zeros(1, np.float32)
ptx = B.compile_ptx(mod.kernel_py, B.signature_of((np.int64(0), x, x, x)), (8, 0))
assert ".entry" in ptx and "mul" in ptx and ".f64" not in ptx, ptx[-400:]
# ... and a hand-written one (a reduction)
from jitgrad.backends.cuda_kernels import reduce
from jitgrad.backends.cuda_kernels.common import BLOCK
ptx = B.compile_ptx(reduce.make_tree_kernel("sum", np.dtype(np.float32), BLOCK)[0],
                    B.signature_of((x, 0, (1,), (1,), (1,), (1,), 1, 1, np.float32(1), x)),
                    (8, 0))
assert ".entry" in ptx
print("row_stack after:", "row_stack" in np.__dict__)
"""


def _run(code):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_kernels_compile_with_the_installed_numpy(ptx_backend):
    r = _run(COMPILE)
    assert r.returncode == 0, r.stderr[-3000:]


def test_kernels_compile_on_numpy_without_row_stack(ptx_backend):
    """NumPy >= 2.5 (simulated when the installed one is older): jitgrad's path still compiles,
    and NumPy is left as it was (no ``np.row_stack`` appears for the user's code)."""
    r = _run(NUMPY_25 + COMPILE)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "row_stack after: False" in r.stdout


def test_the_workaround_is_what_makes_it_compile(ptx_backend):
    """Without the workaround (numba.cuda imported and used directly), the simulated NumPy 2.5
    breaks numba-cuda 0.30.x: proof that the test above is not vacuous. When a numba-cuda
    release guards the overload itself this fails — then the workaround can go (and this test
    with it)."""
    code = NUMPY_25 + """
from numba import cuda
from numba.core import types as nt
def k(a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = 1.0
cuda.compile_ptx(k, (nt.float32[::1],), cc=(8, 0))
"""
    r = _run(code)
    if r.returncode == 0:
        pytest.fail("numba-cuda compiled on a NumPy without row_stack by itself: retire "
                    "backends/numba_cuda_compat.py's row_stack shim")
    assert "row_stack" in r.stderr, r.stderr[-2000:]
