"""``jitgrad.compile`` on CUDA tensors returns eager's layouts on every call: the ordinary
replay's fused groups and the CUDA-graph replay (``_compile/graphed.py``: static inputs keep the
arguments' strides, results are copied as the same views of their buffers) give PyTorch's
strides and storage offsets, checked against PyTorch on the CPU (layouts do not depend on the
device there) and the values against eager on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_compile_graph_layouts.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def _step(lib, x, w):
    with lib.no_grad():
        y = x.t() * 2          # x transposed in memory: y is C-contiguous (eager's rule)
        z = (y + 1) * w        # w transposed: z follows y
        v = (x * 3 - 1) * 0.5  # x's own (transposed) layout
        return z, v, v[1:], z.sum()


def _arguments(lib, a, b, device=None):
    kw = {} if device is None else {"device": device}
    # dense, transposed in memory (a graph's static copies keep these strides)
    x = lib.tensor(np.ascontiguousarray(a.T), **kw).t()
    w = lib.tensor(np.ascontiguousarray(b.T), **kw).t()
    return x, w


def _layouts(outs):
    return [(tuple(o.shape), tuple(o.stride()), o.storage_offset()) for o in outs]


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compiled_cuda_step_returns_eager_layouts(device, mode):
    rng = np.random.default_rng(2)
    compiled = jg.compile(lambda x, w: _step(jg, x, w), mode=mode)
    with jg.autograd.profile() as p:
        for _ in range(5):
            a = rng.standard_normal((3, 4)).astype(np.float32)
            b = rng.standard_normal((4, 3)).astype(np.float32)
            want = _step(torch, *_arguments(torch, a, b))
            eager = _step(jg, *_arguments(jg, a, b, "cuda"))
            got = compiled(*_arguments(jg, a, b, "cuda"))
            assert _layouts(eager) == _layouts(want)
            assert _layouts(got) == _layouts(want)
            assert want[2]._base is want[1] and got[2]._base is got[1]  # v[1:] views v
            for g, e in zip(got, eager):
                np.testing.assert_allclose(g.cpu().numpy(), e.cpu().numpy(), rtol=1e-6)
    assert p.compile_replays == 4, p.compile_reasons
    if mode == "reduce-overhead":
        assert p.compile_cuda_graph_replays >= 1, p.compile_reasons
