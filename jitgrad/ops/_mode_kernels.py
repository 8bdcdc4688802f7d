"""The CPU kernel of torch.mode: ATen's ``mode_kernel_impl`` (TensorCompareKernel.cpp) sorts
each row's (value, index) pairs with libstdc++'s ``std::sort`` comparing values only, then takes
the last pair of the first longest run. ``std::sort`` is not stable (introsort: median-of-three
quicksort above 16 elements, heapsort past the depth limit, a final insertion sort), so which
index PyTorch reports among equal values is decided by that algorithm: it is ported here
operation for operation, with the same ``<`` (NaN compares false both ways), so the indices are
PyTorch's for ties and NaN too."""
from __future__ import annotations

import numpy as np

from ..codegen.kcache import njit_cached

_THRESHOLD = 16  # libstdc++'s _S_threshold


@njit_cached(nogil=True)
def _swap(v, ix, a, b):
    v[a], v[b] = v[b], v[a]
    ix[a], ix[b] = ix[b], ix[a]


@njit_cached(nogil=True)
def _push_heap(v, ix, first, hole, top, val, vi):
    parent = (hole - 1) // 2
    while hole > top and v[first + parent] < val:
        v[first + hole] = v[first + parent]
        ix[first + hole] = ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = val
    ix[first + hole] = vi


@njit_cached(nogil=True)
def _adjust_heap(v, ix, first, hole, n, val, vi):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if v[first + child] < v[first + child - 1]:
            child -= 1
        v[first + hole] = v[first + child]
        ix[first + hole] = ix[first + child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        ix[first + hole] = ix[first + child - 1]
        hole = child - 1
    _push_heap(v, ix, first, hole, top, val, vi)


@njit_cached(nogil=True)
def _heap_sort(v, ix, first, last):
    """std::__partial_sort(first, last, last): make_heap, then sort_heap."""
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(v, ix, first, parent, n, v[first + parent], ix[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        val, vi = v[last], ix[last]
        v[last], ix[last] = v[first], ix[first]
        _adjust_heap(v, ix, first, 0, last - first, val, vi)


@njit_cached(nogil=True)
def _move_median_to_first(v, ix, result, a, b, c):
    if v[a] < v[b]:
        if v[b] < v[c]:
            _swap(v, ix, result, b)
        elif v[a] < v[c]:
            _swap(v, ix, result, c)
        else:
            _swap(v, ix, result, a)
    elif v[a] < v[c]:
        _swap(v, ix, result, a)
    elif v[b] < v[c]:
        _swap(v, ix, result, c)
    else:
        _swap(v, ix, result, b)


@njit_cached(nogil=True)
def _introsort_loop(v, ix, first, last, depth):
    """libstdc++'s __introsort_loop. It recurses into the right part and loops on the left;
    the parts are disjoint and each is partitioned independently, so a stack of pending parts
    gives the same arrangement (Numba cannot load a recursive function from its cache)."""
    stack = np.empty((2 * 64 + 8, 3), np.int64)
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2] = first, last, depth
    top = 1
    while top > 0:
        top -= 1
        first, last, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(v, ix, first, last)
                break
            depth -= 1
            mid = first + (last - first) // 2
            _move_median_to_first(v, ix, first, first + 1, mid, last - 1)
            lo, hi = first + 1, last  # __unguarded_partition around v[first]
            while True:
                # (the bounds only matter for NaN rows, where libstdc++'s sentinels fail)
                while lo < last - 1 and v[lo] < v[first]:
                    lo += 1
                hi -= 1
                while hi > first and v[first] < v[hi]:
                    hi -= 1
                if not lo < hi:
                    break
                _swap(v, ix, lo, hi)
                lo += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = lo, last, depth
            top += 1
            last = lo


@njit_cached(nogil=True)
def _linear_insert(v, ix, i):
    """__unguarded_linear_insert."""
    val, vi = v[i], ix[i]
    j = i - 1
    while j >= 0 and val < v[j]:
        v[j + 1], ix[j + 1] = v[j], ix[j]
        i = j
        j -= 1
    v[i], ix[i] = val, vi


@njit_cached(nogil=True)
def _insertion_sort(v, ix, first, last):
    for i in range(first + 1, last):
        if v[i] < v[first]:
            val, vi = v[i], ix[i]
            for j in range(i, first, -1):
                v[j], ix[j] = v[j - 1], ix[j - 1]
            v[first], ix[first] = val, vi
        else:
            _linear_insert(v, ix, i)


@njit_cached(nogil=True)
def std_sort(v, ix):
    """libstdc++'s std::sort of the pairs (v[i], ix[i]) by v."""
    n = v.shape[0]
    if n == 0:
        return
    lg = 0
    while (n >> (lg + 1)) > 0:
        lg += 1
    _introsort_loop(v, ix, 0, n, 2 * lg)
    if n > _THRESHOLD:
        _insertion_sort(v, ix, 0, _THRESHOLD)
        for i in range(_THRESHOLD, n):
            _linear_insert(v, ix, i)
    else:
        _insertion_sort(v, ix, 0, n)


@njit_cached(nogil=True)
def mode_rows(rows, out_index):
    """Per row of ``rows`` (2-D): the index (into the row) of ATen's mode."""
    n = rows.shape[1]
    v = rows[0].copy()
    ix = np.empty(n, np.int64)
    for r in range(rows.shape[0]):
        for i in range(n):
            v[i] = rows[r, i]
            ix[i] = i
        std_sort(v, ix)
        modei = 0
        freq = 0
        best = 0
        for i in range(n):
            freq += 1
            if i == n - 1 or v[i] != v[i + 1]:
                if freq > best:
                    modei = ix[i]
                    best = freq
                freq = 0
        out_index[r] = modei
