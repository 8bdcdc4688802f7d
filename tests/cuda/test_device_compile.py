"""jitgrad.compile on CUDA tensors: runs of elementwise ops fuse into one device kernel forward
and one backward node (the same LoopSpecs as on the CPU, rendered for CUDA), other ops replay
their device kernels; results against the same function run eagerly on the device and on the CPU.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_compile.py
"""
from __future__ import annotations

import numpy as np

import jitgrad as jg


def _chain(x, w):
    for _ in range(3):
        x = (x * w + 0.5).tanh() - 0.25
    return x.sum()


def test_fused_chain_on_cuda_matches_eager_and_cpu(device):
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal(37).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    f = jg.compile(_chain)
    results = []
    with jg.autograd.profile() as p:
        for dev, fn in (("cpu", _chain), ("cuda", _chain), ("cuda", f), ("cuda", f)):
            x = jg.tensor(xv, device=dev, requires_grad=True)
            w = jg.tensor(wv, device=dev, requires_grad=True)
            y = fn(x, w)
            y.backward()
            results.append((y.item(), x.grad.cpu().numpy(), w.grad.cpu().numpy(),
                            type(y.grad_fn).__name__))
    assert p.compile_captures == 1 and p.compile_replays == 1
    assert results[3][3] == "SumBackward0"
    (program,) = f._variants.values()
    groups = [it for kind, it in program.items if kind == "group"]
    assert len(groups) == 1 and len(groups[0].steps) == 12  # 3 x (mul, add, tanh, sub)
    assert groups[0].target.backend.__name__ == "jitgrad.backends.cuda"
    for r in results[1:]:
        np.testing.assert_allclose(r[0], results[0][0], rtol=1e-5)
        np.testing.assert_allclose(r[1], results[0][1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r[2], results[0][2], rtol=1e-5, atol=1e-6)


def test_compiled_training_step_on_cuda_matches_eager(device):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((8, 6)).astype(np.float32)
    Y = rng.integers(0, 3, 8)
    runs = []
    for compiled in (False, True):
        jg.manual_seed(0)
        model = jg.nn.Sequential(jg.nn.Linear(6, 16), jg.nn.ReLU(), jg.nn.Linear(16, 3)).to("cuda")
        opt = jg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y, model=model, opt=opt):
            opt.zero_grad()
            loss = jg.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        step = jg.compile(step) if compiled else step
        x, y = jg.tensor(X, device="cuda"), jg.tensor(Y, device="cuda")
        with jg.autograd.profile() as p:
            losses = [step(x, y).item() for _ in range(4)]
        runs.append((losses, [q.detach().cpu().numpy() for q in model.parameters()]))
        if compiled:
            assert (p.compile_replays, p.compile_eager_calls) == (3, 0), p.compile_reasons
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)
