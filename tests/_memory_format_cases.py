"""Test data shared by the memory-format parity tests (host: tests/test_memory_format_parity.py,
device: tests/cuda/test_memory_format_cuda.py): the ``*_like`` factories, each called the same
way on ``torch`` or ``jitgrad`` (``L``) so one table drives both libraries."""

LIKES = {
    "empty_like": lambda L, t, **k: L.empty_like(t, **k),
    "zeros_like": lambda L, t, **k: L.zeros_like(t, **k),
    "ones_like": lambda L, t, **k: L.ones_like(t, **k),
    "full_like": lambda L, t, **k: L.full_like(t, 2.5, **k),
    "randn_like": lambda L, t, **k: L.randn_like(t, **k),
    "rand_like": lambda L, t, **k: L.rand_like(t, **k),
}
