"""``sigmoid`` on the CPU gives PyTorch's bits for every shape: ATen computes each contiguous run
with its vector formula in whole steps of 32 floats / 16 doubles and with ``1 / (1 +
std::exp(-x))`` on the rest (``backends/host_routines.py``), the runs being TensorIterator's
rows cut at ``parallel_for``'s thread chunks. Expected values are PyTorch's, computed in the
same test; the values span both formulas' differing roundings (|x| up to ~12)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.nn.functional as JF

torch = pytest.importorskip("torch", reason="needs PyTorch")

DTYPES = [np.float32, np.float64]


def _values(shape, dt, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(dt)


def _assert_bits(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = int((got.view(np.uint8).reshape(got.size, -1)
               != want.view(np.uint8).reshape(want.size, -1)).any(1).sum()) if got.size else 0
    assert bad == 0, f"{bad} of {got.size} elements differ"


FORMS = {
    "torch.sigmoid": (lambda m, x: m.sigmoid(x)),
    "method": (lambda m, x: x.sigmoid()),
    "F.sigmoid": (lambda m, x: (JF if m is jitgrad else torch.nn.functional).sigmoid(x)),
    "nn.Sigmoid": (lambda m, x: m.nn.Sigmoid()(x)),
}


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_every_size_up_to_100_and_more(dt):
    for n in list(range(1, 101)) + [1000, 33 * 7]:
        x = _values(n, dt, n)
        want = torch.sigmoid(torch.from_numpy(x.copy())).numpy()
        _assert_bits(jitgrad.sigmoid(jitgrad.from_numpy(x.copy())).numpy(), want)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_forms(form, dt):
    x = _values((5, 45), dt, 3)
    fn = FORMS[form]
    want = fn(torch, torch.from_numpy(x.copy())[:, :45 - 2]).numpy()
    _assert_bits(fn(jitgrad, jitgrad.from_numpy(x.copy())[:, :45 - 2]).numpy(), want)


VIEWS = {
    "transposed": lambda a: a.T,
    "rows_sliced": lambda a: a[:, :45],
    "step2": lambda a: a[:, ::2],
    "transposed_sliced": lambda a: a.T[:45],
    "row_block": lambda a: a[1:7, 3:50],
    "expanded": lambda a: a[:, :1].expand(8, 64),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_strided(view, dt):
    x = _values((8, 64), dt, 5)
    f = VIEWS[view]
    want = torch.sigmoid(f(torch.from_numpy(x.copy()))).numpy()
    _assert_bits(jitgrad.sigmoid(f(jitgrad.from_numpy(x.copy()))).numpy(), want)


@pytest.mark.parametrize("shape", [(100003,), (1000, 77)], ids=["1d", "2d"])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_large_by_threads(shape, dt, threads):
    # more than GRAIN_SIZE (32768) elements: at 2 threads ATen's chunks cut the runs
    x = _values(shape, dt, 11)
    if len(shape) == 2:
        want = torch.sigmoid(torch.from_numpy(x)[:, :70]).numpy()
        got = jitgrad.sigmoid(jitgrad.from_numpy(x)[:, :70]).numpy()
    else:
        want = torch.sigmoid(torch.from_numpy(x)).numpy()
        got = jitgrad.sigmoid(jitgrad.from_numpy(x)).numpy()
    _assert_bits(got, want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_inplace_and_out(dt):
    x = _values((8, 64), dt, 9)
    t = torch.from_numpy(x.copy())
    t[:, :45].sigmoid_()
    j = jitgrad.from_numpy(x.copy())
    j[:, :45].sigmoid_()
    _assert_bits(j.numpy(), t.numpy())
    t2, j2 = torch.from_numpy(x.copy()), jitgrad.from_numpy(x.copy())
    _assert_bits(j2.sigmoid_().numpy(), t2.sigmoid_().numpy())
    out_t, out_j = torch.empty(8, 45, dtype=t.dtype), jitgrad.empty(8, 45, dtype=j.dtype)
    torch.sigmoid(torch.from_numpy(x.copy())[:, :45], out=out_t)
    jitgrad.sigmoid(jitgrad.from_numpy(x.copy())[:, :45], out=out_j)
    _assert_bits(out_j.numpy(), out_t.numpy())


@pytest.mark.parametrize("n", [45, 1000])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_backward(n, dt):
    # sigmoid_backward is grad * (1 - y) * y in both of ATen's lambdas: only y's bits matter
    x, g = _values(n, dt, 13), _values(n, dt, 14)
    xt = torch.tensor(x, requires_grad=True)
    torch.sigmoid(xt).backward(torch.from_numpy(g))
    xj = jitgrad.tensor(x, requires_grad=True)
    jitgrad.sigmoid(xj).backward(jitgrad.from_numpy(g))
    _assert_bits(xj.grad.numpy(), xt.grad.numpy())


def _chain(m, x, w):
    # no product meets a sum (a fused loop may contract those: docs/compile.md)
    return m.sigmoid(x * w) * 0.5


@pytest.mark.parametrize("n", [37, 1000])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_compiled_reuses_eager_bits(n, dt):
    compiled = jitgrad.compile(lambda x, w: _chain(jitgrad, x, w))
    for step in range(3):  # the first call records, the later ones replay
        x, w = _values(n, dt, 20 + step), _values(n, dt, 30 + step)
        xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        yt = _chain(torch, xt, wt)
        yt.sum().backward()
        xj, wj = jitgrad.tensor(x, requires_grad=True), jitgrad.tensor(w, requires_grad=True)
        yj = compiled(xj, wj)
        yj.sum().backward()
        _assert_bits(yj.detach().numpy(), yt.detach().numpy())
        _assert_bits(xj.grad.numpy(), xt.grad.numpy())
        _assert_bits(wj.grad.numpy(), wt.grad.numpy())


def _formula_split_values(dt, n):
    """``n`` values (repeating) where ATen's vector and scalar sigmoid formulas round
    differently (float32; float64's agree here): every element that a thread chunk moves
    between a vector body and a scalar tail then changes bits, so a wrong chunking shows."""
    pool = _values(20000, dt, 41)
    with_vectors = torch.sigmoid(torch.from_numpy(pool)).numpy()  # < GRAIN_SIZE: one chunk
    scalar = np.concatenate([torch.sigmoid(torch.from_numpy(pool[i:i + 16])).numpy()
                             for i in range(0, pool.size, 16)])  # 16 < 32: all scalar
    split = pool[with_vectors != scalar]
    return np.resize(split if split.size else pool, n)


THREAD_COUNTS = [1, 2, 3, 4]
GRAIN_SIZES = [32768, 32769, 65536 + 17, 100003, 3 * 32768 + 31]


def _on_threads(n):
    torch.set_num_threads(n)
    jitgrad.set_num_threads(n)


@pytest.fixture
def restore_threads():
    old_t, old_j = torch.get_num_threads(), jitgrad.get_num_threads()
    yield
    torch.set_num_threads(old_t)
    jitgrad.set_num_threads(old_j)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_thread_counts_around_the_grain(dt, restore_threads):
    # parallel_for cuts at ceil(n / min(t, ceil(n / 32768))): each chunk has its own scalar
    # tail, so 1..4 threads (more than this machine's cores too) give different bits
    for n in GRAIN_SIZES:
        x = _formula_split_values(dt, n)
        for t in THREAD_COUNTS:
            _on_threads(t)
            want = torch.sigmoid(torch.from_numpy(x)).numpy()
            _assert_bits(jitgrad.sigmoid(jitgrad.from_numpy(x)).numpy(), want)
            want = torch.sigmoid(torch.from_numpy(x)[1:]).numpy()  # unaligned start
            _assert_bits(jitgrad.sigmoid(jitgrad.from_numpy(x)[1:]).numpy(), want)
        x2 = _formula_split_values(dt, n * 2).reshape(-1, 2)[:, :1]  # strided rows
        for t in THREAD_COUNTS:
            _on_threads(t)
            want = torch.sigmoid(torch.from_numpy(x2)).numpy()
            _assert_bits(jitgrad.sigmoid(jitgrad.from_numpy(x2)).numpy(), want)


@pytest.mark.parametrize("op", ["exp", "tanh", "log", "sin", "sqrt"])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_vml_ops_by_thread_count(op, dt, restore_threads):
    # VML is elementwise: parallel_for's chunks must not change a bit at any thread count
    for n in (32769, 100003):
        x = np.abs(_values(n, dt, n)) + dt(1e-3)
        for t in THREAD_COUNTS:
            _on_threads(t)
            want = getattr(torch, op)(torch.from_numpy(x)).numpy()
            _assert_bits(getattr(jitgrad, op)(jitgrad.from_numpy(x)).numpy(), want)


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_compiled_replay_follows_the_thread_count(dt, restore_threads):
    # a replay calls the routine from compiled code: it must cut at the count set since the
    # recording, with no eager call in between to pass it on
    x = _formula_split_values(dt, 100003)
    w = _values(100003, dt, 3)
    compiled = jitgrad.compile(lambda a, b: jitgrad.sigmoid(a) * b)
    _on_threads(1)
    compiled(jitgrad.from_numpy(x), jitgrad.from_numpy(w))  # records
    for t in (4, 2, 3, 1, 4):
        _on_threads(t)
        got = compiled(jitgrad.from_numpy(x), jitgrad.from_numpy(w)).numpy()
        want = (torch.sigmoid(torch.from_numpy(x)) * torch.from_numpy(w)).numpy()
        _assert_bits(got, want)
