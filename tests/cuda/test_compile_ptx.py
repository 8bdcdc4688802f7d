"""The fused kernels jitgrad.compile generates (a group's forward and its backward for every
pattern of incoming gradients) compile to PTX for sm_80 and sm_90, without f64 in float32."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jitgrad as jg

CCS = ((8, 0), (9, 0))


def _group(dtype):
    def f(x, w):
        a = (x * w + 0.5).tanh()
        b = (a * x).exp() - w.sigmoid()
        return a, b.relu()

    cf = jg.compile(f)
    args = [jg.tensor(np.ones(5, dtype), requires_grad=True) for _ in range(2)]
    cf(*args)
    cf(*args)
    (program,) = cf._variants.values()
    groups = [it for kind, it in program.items if kind == "group"]
    assert len(groups) == 1
    return groups[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_group_kernels_ptx(ptx_backend, compile_ptx, dtype, without_vml):
    # The group is recorded on host tensors; on the CPU it would split its forward at the steps
    # eager sends to MKL VML (tanh, exp, sigmoid), which a CUDA group never does: without_vml
    # records the unsplit group whose kernels the GPU runs.
    from jitgrad.codegen import kcache
    from jitgrad.codegen.cuda import render_cuda
    group = _group(dtype)
    specs = [group.forward_spec]
    for present in itertools.product((False, True), repeat=len(group.grad_outputs)):
        if any(present):
            specs.append(group._backward_spec(present))
    for spec in specs:
        mod = kcache.load(render_cuda(spec), "cuda-ptxcheck")
        args = [np.int64(0)] + [np.zeros(1, dtype) for _ in spec.arrays]
        args += list(group.consts) + [np.zeros(1, dtype) for _ in spec.outputs]
        sig = ptx_backend.signature_of(args)
        for cc in CCS:
            ptx = compile_ptx(mod.kernel_py, sig, cc)
            if dtype == np.float32:
                bad = ptx_backend.f64_instructions(ptx, allow_trig_reduction=False)
                assert not bad, bad[:3]
