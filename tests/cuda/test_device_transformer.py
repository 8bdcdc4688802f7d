"""nn.Transformer on CUDA tensors: a one-layer encoder-decoder's output and every gradient
against the same model on the CPU (itself checked against PyTorch in
tests/nn/test_transformer_decoder.py). No device-specific code exists for it: this checks that
the masks, causal detection and attention it composes run on the device.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_transformer.py
"""
from __future__ import annotations

import warnings

import numpy as np

import jitgrad as jg
import jitgrad.nn as nn


def _host(t):
    return t.detach().cpu().numpy()


def test_transformer_forward_backward_on_device(device):
    rng = np.random.default_rng(4)
    src0, tgt0 = rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 2, 4))
    pad = np.array([[False, False, True], [False, False, False]])
    jg.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor (batch_first is False)
        cpu = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, dtype=jg.float64)
        dev = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, dtype=jg.float64)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to("cuda")
    res = {}
    for where, m in (("cpu", cpu), ("cuda", dev)):
        src = jg.tensor(src0, device=where, requires_grad=True)
        tgt = jg.tensor(tgt0, device=where, requires_grad=True)
        mask = nn.Transformer.generate_square_subsequent_mask(2, device=where,
                                                              dtype=jg.float64)
        out = m(src, tgt, tgt_mask=mask, memory_key_padding_mask=jg.tensor(pad, device=where))
        w = jg.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape) / 7,
                      device=where)
        (out * w).sum().backward()
        grads = [src.grad, tgt.grad] + [p.grad for p in m.parameters()]
        if where == "cuda":
            assert out.is_cuda and all(g.is_cuda for g in grads)
        res[where] = [_host(out)] + [_host(g) for g in grads]
    assert len(res["cpu"]) == len(res["cuda"])
    for a, b in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)
