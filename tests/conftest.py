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
