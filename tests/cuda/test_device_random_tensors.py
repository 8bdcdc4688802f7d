"""The tensor-parameter samplers on CUDA tensors (``jitgrad._cuda_random_tensors``):
``normal(mean_t, std)`` & co, ``bernoulli(p_t)`` and ``multinomial``.

CUDA draws cannot equal PyTorch's (or the CPU path's) numbers, so these tests compare shapes,
dtypes, devices, nodes and errors with the CPU path and PyTorch; the draws themselves with an
independent NumPy reimplementation of the documented Philox stream (``philox_ref`` from
``test_device_random``: counter (element, 0, offset, 0), key = seed, one offset per call);
statistics with honest bounds (5 sigma, chi-square p-values); reproducibility under
``manual_seed``; and CUDA-graph replays against eager.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_random_tensors.py
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from test_device_random import M32, philox_ref

import jitgrad as jg


def _h(t):
    return t.detach().cpu().numpy()


def _words(seed, offset, n):
    """The four Philox words of elements 0..n-1 of the call at ``offset`` (uint64 array)."""
    key = (seed & M32, seed >> 32)
    return np.array([philox_ref((i, 0, offset, 0), key) for i in range(n)], np.uint64)


def _unit32(w):
    return (w >> np.uint64(8)).astype(np.float64) * 2.0 ** -24


def _normal_ref(w):
    """Box-Muller of the float32 normal sampler, in float64."""
    u1, u2 = 1.0 - _unit32(w[:, 0]), _unit32(w[:, 2])
    return np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)


# ----------------------------------------------------------------------------- normal


@pytest.mark.parametrize("form", ["tensor-float", "float-tensor", "tensor-tensor"])
def test_normal_nodes_shapes_dtypes_and_zero_gradients(device, form):
    """The node, shape, dtype and (zero) gradients of each overload are the CPU path's and
    PyTorch's; the result lives on the device."""
    m = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, 1.0]])
    s = np.array([1.0, 0.5, 2.0])
    results = {}
    for lib, dev in ((jg, "cuda"), (jg, "cpu"), (torch, "cpu")):
        mean = lib.tensor(m, device=dev, requires_grad=True)
        std = lib.tensor(s, device=dev, requires_grad=True)
        args = {"tensor-float": (mean, 2.0), "float-tensor": (1.5, std),
                "tensor-tensor": (mean, std)}[form]
        x = lib.normal(*args)
        x.sum().backward()
        grads = [None if t.grad is None else t.grad.cpu().numpy() for t in (mean, std)]
        results[(lib.__name__, dev)] = (type(x.grad_fn).__name__, tuple(x.shape), str(x.dtype),
                                        x.device.type, grads)
    got = results[("jitgrad", "cuda")]
    cpu, ref = results[("jitgrad", "cpu")], results[("torch", "cpu")]
    assert got[:3] == cpu[:3] == ref[:3] and got[3] == "cuda"
    for a, b in zip(got[4], ref[4]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)  # zeros, as PyTorch's NormalBackward1/2/3


def test_normal_draws_follow_the_philox_stream(device):
    """normal(mean_t, std) is normal_(0, std) + mean and the tensor-std forms normal_(0, 1) *
    std + mean, one draw (one offset) per call: against the NumPy Philox reference."""
    seed, n = 0x5EED_0001, 48
    mean = np.linspace(-2, 2, n).astype(np.float32)
    std = np.linspace(0.1, 3, n).astype(np.float32)
    m, s = jg.tensor(mean, device="cuda"), jg.tensor(std, device="cuda")
    jg.manual_seed(seed)
    a, b, c = _h(jg.normal(m, 0.5)), _h(jg.normal(1.5, s)), _h(jg.normal(m, s))
    z = [_normal_ref(_words(seed, k, n)) for k in range(3)]
    np.testing.assert_allclose(a, 0.5 * z[0] + mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, z[1] * std + 1.5, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, z[2] * std + mean, rtol=1e-5, atol=1e-5)
    # the generator advanced by three calls: the next draw is offset 3's
    u = _h(jg.rand(8, device="cuda"))
    np.testing.assert_array_equal(u, np.float32(_unit32(_words(seed, 3, 8)[:, 0])))


def test_normal_statistics_broadcasting_and_reproducibility(device):
    from scipy import stats
    n = 4096
    mean = jg.tensor(np.float32([-3.0, 0.0, 5.0, 1.0]), device="cuda")
    std = jg.tensor(np.float32([[0.5], [2.0]]), device="cuda").expand(2, 4).repeat(n // 8, 1)
    jg.manual_seed(11)
    x = jg.normal(mean, std)  # mean (4,) broadcast against std (n/4, 4)
    assert tuple(x.shape) == (n // 4, 4) and x.is_cuda and x.dtype is jg.float32
    z = ((_h(x) - _h(mean)) / _h(std)).ravel()
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.var() - 1) < 5 * np.sqrt(2 / n)
    assert stats.kstest(z, "norm").pvalue > 1e-5
    jg.manual_seed(11)
    np.testing.assert_array_equal(_h(jg.normal(mean, std)), _h(x))
    # float64 keeps its dtype; 0-d parameters give 0-d samples
    d = jg.normal(jg.zeros(3, dtype=jg.float64, device="cuda"), 1.0)
    assert d.dtype is jg.float64 and d.is_cuda
    assert jg.normal(jg.tensor(1.0, device="cuda"), jg.tensor(2.0, device="cuda")).shape == ()


def test_normal_errors(device):
    m = jg.zeros(3, device="cuda")
    bad = jg.tensor([1.0, -1.0, 1.0], device="cuda")
    for args in ((m, bad), (0.0, bad)):
        with pytest.raises(RuntimeError, match=r"^normal expects all elements of std >= 0.0$"):
            jg.normal(*args)
        with pytest.raises(RuntimeError, match=r"^normal expects all elements of std >= 0.0$"):
            torch.normal(torch.zeros(3) if args[0] is m else 0.0, torch.tensor([1.0, -1, 1]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        jg.normal(m, -1.0)
    # std is checked as ATen does on CUDA too: std.min() >= 0 read back (one bool)
    device.reset_stats()
    jg.normal(m, jg.ones(3, device="cuda"))
    assert device.stats.d2h == 1 and device.stats.h2d == 0
    device.reset_stats()
    jg.normal(m, 1.0)
    assert device.stats.d2h == 0 and device.stats.h2d == 0
    with pytest.raises(NotImplementedError, match='"normal_kernel_cuda" not implemented for '
                                                  "'Long'"):
        jg.normal(jg.zeros(2, dtype=jg.int64, device="cuda"), 1.0)
    with pytest.raises(RuntimeError, match="same device"):
        jg.normal(m, jg.ones(3))
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        jg.normal(m, 1.0, generator=jg.Generator())


# ----------------------------------------------------------------------------- bernoulli


def test_bernoulli_tensor_p_follows_the_stream_and_matches_the_cpu_nodes(device):
    seed, n = 77, 64
    p = np.linspace(0, 1, n).astype(np.float32)
    jg.manual_seed(seed)
    pc = jg.tensor(p, device="cuda", requires_grad=True)
    b = jg.bernoulli(pc)
    u = _unit32(_words(seed, 0, n)[:, 0])
    np.testing.assert_array_equal(_h(b), (u < p).astype(np.float32))  # one uniform each
    assert b.is_cuda and b.dtype is jg.float32
    cpu = jg.bernoulli(jg.tensor(p, requires_grad=True))
    ref = torch.bernoulli(torch.tensor(p, requires_grad=True))
    assert type(b.grad_fn).__name__ == type(cpu.grad_fn).__name__ == \
        type(ref.grad_fn).__name__ == "BernoulliBackward0"
    b.sum().backward()
    np.testing.assert_array_equal(_h(pc.grad), np.zeros(n, np.float32))
    # Tensor.bernoulli(), bernoulli(x, p) and bernoulli_(p_t) draw on the device as well
    x = jg.full((2, 3), 0.5, dtype=jg.float64, device="cuda")
    for y in (x.bernoulli(), jg.bernoulli(x, 0.25), jg.empty(2, 3, device="cuda").bernoulli_(x)):
        assert y.is_cuda and tuple(y.shape) == (2, 3) and set(np.unique(_h(y))) <= {0.0, 1.0}
    assert jg.bernoulli(x).dtype is jg.float64
    assert type(jg.bernoulli(x.requires_grad_(), 0.25).grad_fn).__name__ == \
        type(jg.bernoulli(jg.zeros(2, requires_grad=True), 0.25).grad_fn).__name__


def test_bernoulli_statistics(device):
    n = 4096
    probs = np.float32([0.0, 0.1, 0.5, 0.93, 1.0, 0.3, 0.7, 0.25])
    jg.manual_seed(12)
    b = _h(jg.bernoulli(jg.tensor(np.tile(probs, n // 8), device="cuda"))).reshape(-1, 8)
    m = n // 8
    assert not b[:, 0].any() and b[:, 4].all()
    sig = np.sqrt(probs * (1 - probs) / m)
    assert np.all(np.abs(b.mean(0) - probs) <= 5 * sig)


def test_bernoulli_range_is_checked_on_the_device(device):
    """p outside [0, 1] (or NaN) raises the CPU path's error at the next synchronizing point
    (PyTorch's CUDA kernel asserts on the device); no host read is made for the check."""
    cpu_msg = None
    try:
        torch.bernoulli(torch.tensor([1.5]))
    except RuntimeError as e:
        cpu_msg = str(e)
    for bad in (1.5, -0.25, float("nan")):
        p = jg.tensor([0.5, bad, 0.2], device="cuda")
        device.reset_stats()
        r = jg.bernoulli(p)  # returns at once: the error is pending
        assert device.stats.d2h == 0
        with pytest.raises(RuntimeError) as info:
            r.cpu()
        assert str(info.value) == cpu_msg
        jg.bernoulli(jg.tensor([0.5], device="cuda")).cpu()  # reported once, then usable
    t = jg.empty(3, device="cuda").bernoulli_(jg.tensor([0.1, 2.0, 0.3], device="cuda"))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        jg.cuda.synchronize()
    assert t.is_cuda
    with pytest.raises(RuntimeError, match="expected probabilities tensor to have floating "
                                           "type, got Long"):
        jg.bernoulli(jg.ones(2, dtype=jg.int64, device="cuda"))


# ----------------------------------------------------------------------------- multinomial

PROBS = np.float32([0.125, 0.0, 0.25, 0.5, 0.125])  # exact prefix sums in float32


def test_multinomial_with_replacement_follows_the_stream(device):
    """Sample i: the first category whose normalized prefix sum reaches 1 - u_i (u_i the
    float32 uniform of element i), moved back over zero-probability categories."""
    seed, n = 31, 40
    cum = np.cumsum(PROBS / PROBS.sum(dtype=np.float32), dtype=np.float32)
    jg.manual_seed(seed)
    got = _h(jg.multinomial(jg.tensor(PROBS * 4, device="cuda"), n, True))
    val = 1.0 - _unit32(_words(seed, 0, n)[:, 0])
    want = np.searchsorted(cum.astype(np.float64), val, side="left")
    np.testing.assert_array_equal(got, want)
    # 2-D: row r's samples are elements r * n ... of the same call
    jg.manual_seed(seed)
    two = _h(jg.multinomial(jg.tensor(np.stack([PROBS, PROBS[::-1]]), device="cuda"), n, True))
    np.testing.assert_array_equal(two[0], want)
    val1 = 1.0 - _unit32(_words(seed, 0, 2 * n)[n:, 0])
    rev = np.cumsum(PROBS[::-1], dtype=np.float32).astype(np.float64)
    np.testing.assert_array_equal(two[1], np.searchsorted(rev, val1, side="left"))


def test_multinomial_with_replacement_statistics(device):
    from scipy import stats
    n = 4000
    jg.manual_seed(13)
    probs = jg.tensor(np.stack([PROBS, np.float32([1, 1, 0, 2, 0])]), device="cuda")
    s = jg.multinomial(probs, n, replacement=True)
    assert s.dtype is jg.int64 and s.is_cuda and tuple(s.shape) == (2, n)
    v = _h(s)
    for row, p in zip(v, (PROBS, np.float64([1, 1, 0, 2, 0]) / 4)):
        counts = np.bincount(row, minlength=5)
        assert np.all(counts[p == 0] == 0)  # zero-probability categories never drawn
        exp = n * p[p > 0]
        chi2 = ((counts[p > 0] - exp) ** 2 / exp).sum()
        assert stats.chi2.sf(chi2, (p > 0).sum() - 1) > 1e-6
    jg.manual_seed(13)
    np.testing.assert_array_equal(_h(jg.multinomial(probs, n, replacement=True)), v)


def test_multinomial_without_replacement_follows_the_stream(device):
    """ATen's exponential trick: argmax / topk of p / q, q = Exp(1) draws of one call."""
    seed = 41
    probs = np.float32([[0.1, 0.0, 0.3, 0.6], [0.25, 0.25, 0.25, 0.25], [0.0, 0.5, 0.0, 0.5]])
    q = -np.log(1.0 - _unit32(_words(seed, 0, 12)[:, 0])).reshape(3, 4)
    key = probs / q
    jg.manual_seed(seed)
    one = _h(jg.multinomial(jg.tensor(probs, device="cuda"), 1))
    np.testing.assert_array_equal(one[:, 0], key.argmax(1))
    jg.manual_seed(seed)
    two = _h(jg.tensor(probs, device="cuda").multinomial(2))
    np.testing.assert_array_equal(two, np.argsort(-key, axis=1, kind="stable")[:, :2])
    assert two.dtype == np.int64 and tuple(two.shape) == (3, 2)
    for row, p in zip(two, probs):
        assert len(set(row)) == 2 and np.all(p[row] > 0)  # distinct, never a zero category
    jg.manual_seed(seed)
    one_d = jg.multinomial(jg.tensor(probs[0], device="cuda"), 1, True)  # n == 1: same path
    assert tuple(one_d.shape) == (1,) and _h(one_d)[0] == one[0, 0]


def test_multinomial_without_replacement_statistics(device):
    """The first sample of a without-replacement draw is categorical(p): chi-square over
    rows (few rows: row reductions are slow under the simulator)."""
    from scipy import stats
    rows, p = 96, np.float64([0.1, 0.0, 0.2, 0.7])
    jg.manual_seed(14)
    v = _h(jg.multinomial(jg.tensor(np.tile(p, (rows, 1)), device="cuda"), 3))
    assert np.all(np.sort(v, 1) == [0, 2, 3])  # three distinct, the zero category never
    counts = np.bincount(v[:, 0], minlength=4)[[0, 2, 3]]
    exp = rows * p[[0, 2, 3]]
    assert stats.chi2.sf(((counts - exp) ** 2 / exp).sum(), 2) > 1e-6


def test_multinomial_errors(device):
    def both(probs, n, repl):
        """(jitgrad CUDA error, PyTorch CPU error) messages; jitgrad's raised by a sync."""
        msgs = []
        for run in (lambda: jg.multinomial(jg.tensor(probs, device="cuda"), n, repl).cpu(),
                    lambda: torch.multinomial(torch.tensor(probs), n, repl)):
            with pytest.raises(RuntimeError) as info:
                run()
            msgs.append(str(info.value))
        return msgs
    inf, nan = float("inf"), float("nan")
    # with replacement, n > 1: checked on the device (PyTorch's CUDA asserts), the CPU's words
    for probs in ([1.0, -1.0], [1.0, inf], [1.0, nan], [0.0, 0.0], [[1.0, 1.0], [0.0, 0.0]]):
        a, b = both(probs, 3, True)
        assert a == b
    # the fast path (no replacement or n == 1): PyTorch's host check, read back once
    for probs, n, repl in (([1.0, -1.0], 1, True), ([1.0, inf], 1, False),
                           ([0.0, 0.0], 2, False), ([[1.0, 1.0], [0.0, 0.0]], 1, False)):
        a, b = both(probs, n, repl)
        assert a == b
    x = jg.tensor([0.5, 0.5], device="cuda")
    device.reset_stats()
    jg.multinomial(x, 1)
    assert device.stats.d2h == 1
    device.reset_stats()
    jg.multinomial(x, 5, True)
    assert device.stats.d2h == 0 and device.stats.h2d == 0
    for args, msg in (((jg.ones(2, 2, 2, device="cuda"), 1), "prob_dist must be 1 or 2 dim"),
                      ((x, 3), "cannot sample n_sample > prob_dist.size"),
                      ((x, 0), "cannot sample n_sample <= 0 samples"),
                      ((jg.ones(2, dtype=jg.int64, device="cuda"), 1),
                       "multinomial only supports floating-point dtypes")):
        with pytest.raises(RuntimeError, match=msg):
            jg.multinomial(*args)


# ----------------------------------------------------------------------------- CUDA graphs


def test_cuda_graph_replays_the_samplers_exactly(device):
    """bernoulli(p_t), normal(mean_t, std) and multinomial with replacement make no host
    reads, so a step of them becomes a CUDA graph; its replays give eager's draws and leave
    the stream where eager leaves it."""
    p = jg.tensor(np.float32([0.2, 0.9, 0.5]), device="cuda")
    m = jg.tensor(np.float32([1.0, -1.0, 0.0]), device="cuda")
    probs = jg.tensor(PROBS, device="cuda")

    def step(p, m, probs):
        with jg.no_grad():
            return jg.bernoulli(p) + jg.normal(m, 0.5), jg.multinomial(probs, 6, True)

    def run(fn):
        jg.manual_seed(21)
        outs = [[_h(t) for t in fn(p, m, probs)] for _ in range(4)]
        return outs, _h(jg.rand(4, device="cuda"))

    eager = run(step)
    with jg.autograd.profile() as prof:
        graphed = run(jg.compile(step, mode="reduce-overhead"))
    assert prof.compile_cuda_graph_replays >= 1
    for a, b in zip(eager[0], graphed[0]):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(eager[1], graphed[1])
