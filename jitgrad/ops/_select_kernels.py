"""Which index ``topk`` and ``kthvalue`` pick among equal values: ATen's CPU selection
algorithms replayed step by step (Numba), since ties make their order visible.

* ``topk`` (``topk_impl_loop``, TopKImpl.h): (value, index) pairs, then libstdc++'s
  ``std::partial_sort`` of the first ``k`` when ``k * 64 <= n``; otherwise ``std::nth_element``
  at ``k - 1`` followed, when ``sorted``, by ``std::sort`` of the first ``k - 1``. The
  comparator puts NaN first for ``largest`` (``isnan(x) && !isnan(y) || x > y``) and last
  for smallest. The libstdc++ algorithms are GCC's: introsort/introselect with a
  median-of-three pivot moved to the front, an unguarded Hoare partition, insertion sort below
  17 elements (introselect: below 4), and the heap routines (``__adjust_heap``/``__push_heap``)
  for partial_sort and the depth-limit fallbacks. Only the order of equal keys depends on them.
* ``kthvalue`` (``quick_select_template``, SortingUtils.h): ATen's own quickselect with a
  median-of-three pivot, swapping values and indices together.

Pairs are kept as an index array whose key is looked up (the value is a function of the
index, so moving indices moves the pairs).
"""
from __future__ import annotations

import numpy as np

from ..codegen.kcache import njit_cached as njit

_THRESHOLD = 16  # libstdc++'s _S_threshold


@njit(inline="always", nogil=True)
def _less(v, i, j, largest):
    """``comp(pair i, pair j)`` of topk: NaN is the largest value."""
    x, y = v[i], v[j]
    if largest:
        return (x != x and y == y) or x > y
    return (x == x and y != y) or x < y


@njit(nogil=True)
def _insertion_sort(q, v, f, last, largest):
    if f == last:
        return
    for i in range(f + 1, last):
        val = q[i]
        if _less(v, val, q[f], largest):
            for m in range(i, f, -1):
                q[m] = q[m - 1]
            q[f] = val
        else:
            _unguarded_linear_insert(q, v, i, largest)


@njit(inline="always", nogil=True)
def _unguarded_linear_insert(q, v, last, largest):
    val = q[last]
    nxt = last - 1
    while _less(v, val, q[nxt], largest):
        q[last] = q[nxt]
        last = nxt
        nxt -= 1
    q[last] = val


@njit(inline="always", nogil=True)
def _swap(q, a, b):
    t = q[a]
    q[a] = q[b]
    q[b] = t


@njit(nogil=True)
def _partition_pivot(q, v, f, last, largest):
    """``__unguarded_partition_pivot``: the median of (f+1, mid, last-1) moved to ``f``, then
    the unguarded partition of [f+1, last) around it; returns the cut."""
    a, b, c = f + 1, f + (last - f) // 2, last - 1
    qa, qb, qc = q[a], q[b], q[c]
    if _less(v, qa, qb, largest):
        if _less(v, qb, qc, largest):
            _swap(q, f, b)
        elif _less(v, qa, qc, largest):
            _swap(q, f, c)
        else:
            _swap(q, f, a)
    elif _less(v, qa, qc, largest):
        _swap(q, f, a)
    elif _less(v, qb, qc, largest):
        _swap(q, f, c)
    else:
        _swap(q, f, b)
    lo, hi, p = f + 1, last, q[f]
    while True:
        while _less(v, q[lo], p, largest):
            lo += 1
        hi -= 1
        while _less(v, p, q[hi], largest):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(q, lo, hi)
        lo += 1


@njit(nogil=True)
def _adjust_heap(q, v, base, hole, n, val, largest):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if _less(v, q[base + child], q[base + child - 1], largest):
            child -= 1
        q[base + hole] = q[base + child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        q[base + hole] = q[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _less(v, q[base + parent], val, largest):
        q[base + hole] = q[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[base + hole] = val


@njit(nogil=True)
def _heap_select(q, v, f, mid, last, largest):
    n = mid - f
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(q, v, f, parent, n, q[f + parent], largest)
            if parent == 0:
                break
            parent -= 1
    for i in range(mid, last):
        if _less(v, q[i], q[f], largest):  # __pop_heap(f, mid, i)
            val = q[i]
            q[i] = q[f]
            _adjust_heap(q, v, f, 0, n, val, largest)


@njit(nogil=True)
def _partial_sort(q, v, f, mid, last, largest):
    _heap_select(q, v, f, mid, last, largest)
    while mid - f > 1:  # __sort_heap
        mid -= 1
        val = q[mid]
        q[mid] = q[f]
        _adjust_heap(q, v, f, 0, mid - f, val, largest)


@njit(inline="always", nogil=True)
def _lg(n):
    r = -1
    while n:
        n >>= 1
        r += 1
    return r


@njit(nogil=True)
def _sort(q, v, f, last, largest):
    """``std::sort``: the introsort loop's ranges (disjoint: an explicit stack processes them
    in any order), then the final insertion sort over the whole range."""
    if f == last:
        return
    stack = np.empty((2 * _lg(last - f) + 4, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = f, last, 2 * _lg(last - f)
    top = 1
    while top:
        top -= 1
        lo, hi, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while hi - lo > _THRESHOLD:
            if depth == 0:
                _partial_sort(q, v, lo, hi, hi, largest)
                break
            depth -= 1
            cut = _partition_pivot(q, v, lo, hi, largest)
            if top == stack.shape[0]:
                grown = np.empty((2 * top, 3), np.int64)
                grown[:top] = stack
                stack = grown
            stack[top, 0], stack[top, 1], stack[top, 2] = cut, hi, depth
            top += 1
            hi = cut
    if last - f > _THRESHOLD:
        _insertion_sort(q, v, f, f + _THRESHOLD, largest)
        for i in range(f + _THRESHOLD, last):
            _unguarded_linear_insert(q, v, i, largest)
    else:
        _insertion_sort(q, v, f, last, largest)


@njit(nogil=True)
def _nth_element(q, v, f, nth, last, largest):
    if f == last or nth == last:
        return
    depth = 2 * _lg(last - f)
    while last - f > 3:
        if depth == 0:
            _heap_select(q, v, f, nth + 1, last, largest)
            _swap(q, f, nth)
            return
        depth -= 1
        cut = _partition_pivot(q, v, f, last, largest)
        if cut <= nth:
            f = cut
        else:
            last = cut
    _insertion_sort(q, v, f, last, largest)


@njit(nogil=True)
def topk_rows(a, k, largest, sorted_, out):
    """``out[r]`` = the indices ``topk`` returns for row ``r`` of the 2-D ``a`` (k >= 1)."""
    n = a.shape[1]
    partial = k * 64 <= n
    q = np.empty(n, np.int64)
    for r in range(a.shape[0]):
        v = a[r]
        for j in range(n):
            q[j] = j
        if partial:
            _partial_sort(q, v, 0, k, n, largest)
        else:
            _nth_element(q, v, 0, k - 1, n, largest)
            if sorted_:
                _sort(q, v, 0, k - 1, largest)
        for j in range(k):
            out[r, j] = q[j]


@njit(inline="always", nogil=True)
def _gt(x, y):
    """kthvalue's ``gt_or_nan``."""
    return (x != x and y == y) or x > y


@njit(nogil=True)
def kth_rows(a, k, out):
    """``out[r]`` = the index ``kthvalue`` returns for row ``r`` of the 2-D ``a`` (0-based
    ``k``): ``quick_select_template`` on a copy of the row and its indices."""
    n = a.shape[1]
    arr = np.empty(n, a.dtype)
    idx = np.empty(n, np.int64)
    for r in range(a.shape[0]):
        for j in range(n):
            arr[j] = a[r, j]
            idx[j] = j
        lo, hi = 0, n - 1
        while True:
            if hi <= lo:
                break
            if hi == lo + 1:
                if _gt(arr[lo], arr[hi]):
                    _swap(arr, lo, hi)
                    _swap(idx, lo, hi)
                break
            p = lo + (hi - lo) // 2
            _swap(arr, p, lo + 1)
            _swap(idx, p, lo + 1)
            if _gt(arr[lo + 1], arr[hi]):
                _swap(arr, lo + 1, hi)
                _swap(idx, lo + 1, hi)
            if _gt(arr[lo], arr[hi]):
                _swap(arr, lo, hi)
                _swap(idx, lo, hi)
            if _gt(arr[lo + 1], arr[lo]):
                _swap(arr, lo + 1, lo)
                _swap(idx, lo + 1, lo)
            i, j = lo + 1, hi
            piv = arr[lo]
            while True:
                i += 1
                while _gt(piv, arr[i]):
                    i += 1
                j -= 1
                while _gt(arr[j], piv):
                    j -= 1
                if j < i:
                    break
                _swap(arr, i, j)
                _swap(idx, i, j)
            _swap(arr, lo, j)
            _swap(idx, lo, j)
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
        out[r] = idx[k]


def all_nan_nth(n, nth):
    """The index ``std::nth_element`` leaves at ``nth`` when every key is equivalent (an
    all-NaN ``nanmedian`` slice): only the partition steps move anything."""
    q = np.arange(n, dtype=np.int64)
    _nth_element_equal(q, nth)
    return int(q[nth])


@njit(nogil=True)
def _nth_element_equal(q, nth):
    # _nth_element with a comparator that is always False: NaN keys never compare less
    v = np.zeros(q.shape[0])
    v[:] = np.nan
    _nth_element(q, v, 0, nth, q.shape[0], False)


@njit(nogil=True)
def sort_rows(a, descending, out):
    """``out[r]`` = the indices ``sort(stable=False)`` returns for row ``r`` of the 2-D ``a``:
    ATen's CPU sort runs ``std::sort`` on (value, index) pairs, NaN last ascending and first
    descending (the topk comparators)."""
    n = a.shape[1]
    q = np.empty(n, np.int64)
    for r in range(a.shape[0]):
        for j in range(n):
            q[j] = j
        _sort(q, a[r], 0, n, descending)
        out[r] = q
