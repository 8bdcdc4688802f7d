"""Fixtures shared by test modules."""
import pytest

import jitgrad


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """PyTorch and jitgrad both on 1, then 2 threads (the bit-exactness tests: ATen splits its
    work by thread count)."""
    torch = pytest.importorskip("torch")
    old_t, old_j = torch.get_num_threads(), jitgrad.get_num_threads()
    torch.set_num_threads(request.param)
    jitgrad.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(old_t)
    jitgrad.set_num_threads(old_j)


@pytest.fixture
def without_vml(monkeypatch):
    """Unary ops on jitgrad's own kernels instead of MKL VML (backends/vml.py). On the CPU the
    per-op tanh, exp, ... run VML (PyTorch's bits) while the fused gate ops of
    ops/elementwise_rnn.py use jitgrad's tanh (within 1 ulp): the tests that they do the per-op
    arithmetic bit for bit compare them with the per-op path on the same kernels. (The fused
    RNN cells and layers call VML's tanh themselves and are compared with PyTorch directly.)"""
    from jitgrad.backends import vml
    from jitgrad.ops import elementwise_fast
    monkeypatch.setattr(vml, "routine", lambda name, dtype: 0)
    plans = dict(elementwise_fast._fast_plans)  # the fast path keeps each op's routine
    elementwise_fast._fast_plans.clear()
    yield
    elementwise_fast._fast_plans.clear()
    elementwise_fast._fast_plans.update(plans)


# jitgrad's CPU kernels follow the ATen build PyTorch runs on the host (backends/cpu_capability:
# AVX-512 or AVX2 vector widths, scalar tails, SLEEF/oneDNN branches), so the bit tests are
# strict on both. One case is not followed yet: logit's gradient at x == -0.0, where ATen's
# vector lambda and scalar tail differ in sign (activation_kernels.logit_backward has both, not
# yet wired into the logit op); which elements take the tail depends on the build, and this
# case's -0.0 lands in the AVX-512 tail but in an AVX2 vector.
_AVX512_ONLY_BITS = (
    "tests/test_elementwise_parity.py::test_unary_gradients_and_nodes[logit-float64]",
)


def pytest_collection_modifyitems(config, items):
    try:
        import torch
    except ImportError:
        return
    cap = torch.backends.cpu.get_cpu_capability()
    if cap == "AVX512":
        return
    mark = pytest.mark.xfail(strict=cap == "AVX2", reason=(  # the default build: unmeasured
        f"on PyTorch's {cap} build ATen's logit_backward vector lambda gives -inf at x == -0.0 "
        "(+inf in its scalar tail, and in jitgrad's registry formula)"))
    for item in items:
        if item.nodeid.startswith(_AVX512_ONLY_BITS):
            item.add_marker(mark)
