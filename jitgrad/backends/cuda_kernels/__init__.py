"""Hand-written numba.cuda kernels for the non-elementwise ops (array level, no Tensor):

* ``layout``: strided/broadcast -> contiguous copy with dtype cast; fill
* ``reduce``: sum/mean/prod/amax/amin/all/any, max/min with indices, argmax/argmin along any dims
  (block-per-output shared-memory tree reductions)
* ``matmul``: tiled shared-memory (batched, broadcasting) matmul
* ``softmax``: softmax/log_softmax and their backward along any dim
* ``index``: gather, scatter_add (atomics), scatter, index_select, index_add
* ``advanced``: advanced indexing (index/mask keys) read/write/accumulate, nonzero
* ``conv``: im2col / col2im of the convolutions (their GEMMs use ``matmul``)
* ``bitwise``: integer ``&``/``|``/``^``/``~`` (bools use the registry's logical ops)
* ``sort``: stable rank sort along a dim (sort/argsort/msort/topk)
* ``scan``: cumsum/cumprod along any dims, inclusive/exclusive, forward/reversed (block per row)
* ``linalg``: LU / LU solve / determinants / Cholesky / triangular solves (a thread per
  matrix: inv, det, slogdet, solve, cholesky, solve_triangular)
* ``pool``: max pools (window max + indices) and separable resampling (avg pools, interpolate)

Importing this package imports numba.cuda (through ``backends.cuda_env``).
"""
from . import (  # noqa: F401
    advanced,
    bitwise,
    conv,
    index,
    layout,
    linalg,
    matmul,
    pool,
    reduce,
    scan,
    softmax,
    sort,
)
from .common import View, as_view  # noqa: F401
