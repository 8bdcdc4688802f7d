"""backends/host_threads: every piece runs once, per-thread indices, errors reach the caller,
and MKL runs single-threaded inside the pool threads only (the caller's setting is kept).

    python -m pytest tests/test_host_threads.py
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from jitgrad.backends import blas, host_threads


def test_every_piece_once_with_thread_indices():
    seen = []

    def fn(piece, index):
        seen.append(piece)
        return piece, index, threading.get_ident(), blas.max_threads()

    for threads in (1, 2, 3):
        seen.clear()
        out = host_threads.run(fn, range(50), threads)
        assert sorted(seen) == list(range(50))
        flat = [r for rs in out.values() for r in rs]
        assert sorted(p for p, *_ in flat) == list(range(50))
        assert set(out) <= set(range(threads))
        for index, results in out.items():  # one OS thread per index
            assert len({ident for _, i, ident, _ in results}) <= 1
            assert all(i == index for _, i, _, _ in results)
        if threads > 1:
            assert all(t == 1 for *_, t in flat)  # MKL sequential inside the pool
    assert host_threads.run(fn, [], 2) == {0: []}


def test_errors_reach_the_caller_and_blas_setting_is_kept():
    before = blas.max_threads()

    def fn(piece, index):
        if piece == 7:
            raise ValueError("piece 7")
        return piece

    with pytest.raises(ValueError, match="piece 7"):
        host_threads.run(fn, range(20), 2)
    assert blas.max_threads() == before
    a = np.ones((64, 64))
    assert host_threads.run(lambda p, i: float(blas.matmul(a, a)[0, 0]), range(4), 2)
