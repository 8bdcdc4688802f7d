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


# Tests that compare jitgrad's CPU kernels with PyTorch's bit for bit, where jitgrad reproduces
# PyTorch's AVX-512 build (its vector width, where GCC contracted a * b + c into an fma, which
# elements take the scalar tail). A PyTorch running its AVX2 kernels rounds some elements
# differently (1-2 ulp; measured on an AVX2 EPYC, 2026-11-27): there these are expected to
# fail, a known gap (jitgrad does not yet pick the host's ATen build), not run as passes.
# tests/_parity.ATEN_AVX512 is the same switch for tests that check an ulp bound instead.
_AVX512_BITS = (
    "tests/test_gelu_onednn_sweep.py::test_forward_and_gradient_over_bit_patterns[",
    "tests/test_gelu_softplus_bits.py::",
    "tests/test_programs_s12.py::test_log_softmax_last_dim_backward_bits[",
    "tests/test_programs_s12.py::test_log_softmax_rows_backward_bits[",
    "tests/test_programs_s13.py::test_cross_entropy_loss_and_grad_bits[",
    "tests/test_sdpa_bits.py::",
    "tests/test_sdpa_math_bits.py::",
    "tests/test_sigmoid_tail_bits.py::",
    "tests/test_softmax_norm_bits.py::",
    "tests/test_elementwise_output_layout.py::test_activation_layout_and_bits[",
    "tests/test_elementwise_output_layout.py::test_activation_gradient_layout_and_bits[",
    "tests/test_elementwise_parity.py::test_unary_gradients_and_nodes[logit-float64]",
)
_AVX512_BITS_SUFFIX = {"tests/test_elementwise_output_layout.py::test_unary_follows_the_input[":
                       "-sigmoid]"}


def pytest_collection_modifyitems(config, items):
    try:
        import torch
    except ImportError:
        return
    cap = torch.backends.cpu.get_cpu_capability()
    if cap == "AVX512":
        return
    mark = pytest.mark.xfail(strict=False, reason=(
        f"bits of PyTorch's AVX-512 build; this PyTorch runs its {cap} kernels, which round "
        "some elements differently (jitgrad does not follow the host's ATen build yet)"))
    for item in items:
        nid = item.nodeid
        if nid.startswith(_AVX512_BITS) or any(
                nid.startswith(p) and nid.endswith(s) for p, s in _AVX512_BITS_SUFFIX.items()):
            item.add_marker(mark)
