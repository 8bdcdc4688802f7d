"""Hand-written numba.cuda kernels for the non-elementwise ops (array level, no Tensor):

* ``layout``: strided/broadcast -> contiguous copy with dtype cast; fill
* ``reduce``: sum/mean/prod/amax/amin/all/any, max/min with indices, argmax/argmin along any dims
  (block-per-output shared-memory tree reductions)
* ``matmul``: tiled shared-memory (batched, broadcasting) matmul
* ``softmax``: softmax/log_softmax and their backward along any dim
* ``index``: gather, scatter_add (atomics), scatter, index_select, index_add
* ``advanced``: advanced indexing (index/mask keys) read/write/accumulate, nonzero
* ``bitwise``: integer ``&``/``|``/``^``/``~`` (bools use the registry's logical ops)
* ``sort``: stable rank sort along a dim (sort/argsort/msort/topk)
* ``scan``: cumsum/cumprod along any dims, inclusive/exclusive, forward/reversed (block per row)

Importing this package imports numba.cuda (through ``backends.cuda_env``).
"""
from . import advanced, bitwise, index, layout, matmul, reduce, scan, softmax, sort  # noqa: F401
from .common import View, as_view  # noqa: F401
