"""Fixtures shared by the tests under tests/nn."""
from __future__ import annotations

import pytest


@pytest.fixture
def one_thread():
    """jitgrad and PyTorch both on one thread, restored after: PyTorch's results depend on its
    thread count where its parallel chunks move a vector loop's scalar tail or split a sum
    (sigmoid_, bias gradients), so the bit-for-bit comparisons run both on one."""
    torch = pytest.importorskip("torch", reason="needs PyTorch")
    import jitgrad as jg
    mine, ref = jg.get_num_threads(), torch.get_num_threads()
    jg.set_num_threads(1)
    torch.set_num_threads(1)
    yield
    jg.set_num_threads(mine)
    torch.set_num_threads(ref)
