"""Random numbers for CUDA tensors, generated on the device (Philox4x32-10, ``_cuda_random``):
the generator against the Random123 known-answer vectors and a pure-Python reference,
distributions (moments, ranges, KS tests), reproducibility after manual_seed, distinct streams
for successive calls, independence from the launch configuration, and no host transfers.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_random.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

N = 1024  # enough for 4-sigma moment checks; small for the simulator


def _h(t):
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------------- the generator

M32 = 0xFFFFFFFF


def philox_ref(ctr, key):
    """Philox4x32-10 with Python integers (Salmon et al. 2011, Random123's philox.h)."""
    c, k = list(ctr), list(key)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


# Random123 kat_vectors: philox4x32 10 <ctr x4> <key x2> -> <out x4>
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


# bound on first use (collection must not import numba.cuda); module globals, because the
# simulator swaps in its fake ``cuda`` module through a kernel's globals
cuda = philox = None


def _kat_kernel(words, out):
    if cuda.grid(1) == 0:
        r = philox(words[0], words[1], words[2], words[3], words[4], words[5])
        out[0], out[1], out[2], out[3] = r[0], r[1], r[2], r[3]


def _philox_on_device(ctr, key):
    """Launch a kernel that calls the device function ``philox`` and writes its four words;
    read them back. (Calling the device function from the host, as this test once did, only
    works in the simulator.)"""
    global cuda, philox
    from jitgrad._cuda_rng_kernels import philox
    from jitgrad.backends import cuda as B
    from jitgrad.backends.cuda_env import cuda, kernel_jit
    words = B.to_device(np.array(list(ctr) + list(key), np.uint64))
    out = B.zeros((4,), np.uint64)
    B.launch_flat(kernel_jit(_kat_kernel), 1, (words, out))
    return [int(v) for v in B.to_host(out)]


@pytest.mark.parametrize("ctr,key,want", KAT, ids=["zeros", "ones", "pi"])
def test_philox_known_answers(device, ctr, key, want):
    assert tuple(philox_ref(ctr, key)) == want
    assert tuple(_philox_on_device(ctr, key)) == want


def test_uniform_bits_follow_the_counter_layout(device):
    """Element i of a float32 uniform is ``(word0 >> 8) * 2**-24`` of Philox((i, 0, offset),
    seed): the documented counter layout, checked against the reference."""
    jg.cuda.manual_seed(0x1234_5678_9ABC)
    jg.rand(3, device="cuda")  # offset 0
    x = _h(jg.rand(40, device="cuda"))  # offset 1
    s = 0x1234_5678_9ABC
    ref = [(philox_ref((i, 0, 1, 0), (s & M32, s >> 32))[0] >> 8) * 2.0 ** -24 for i in range(40)]
    np.testing.assert_array_equal(x, np.float32(ref))


# ----------------------------------------------------------------------------- distributions


def test_rand_and_randn_distributions(device):
    from scipy import stats
    for dt in (jg.float32, jg.float64):
        jg.manual_seed(1)
        device.reset_stats()
        u, z = jg.rand(N, device="cuda", dtype=dt), jg.randn(4, N // 4, device="cuda", dtype=dt)
        assert device.stats.h2d == 0  # generated on the device, no upload
        assert u.is_cuda and u.dtype is dt and z.shape == (4, N // 4) and z.dtype is dt
        u, z = _h(u), _h(z).ravel()
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / N)
        assert abs(u.var() - 1 / 12) < 0.01
        assert abs(z.mean()) < 4 / np.sqrt(N) and abs(z.var() - 1) < 4 * np.sqrt(2 / N)
        assert stats.kstest(u, "uniform").pvalue > 1e-4
        assert stats.kstest(z, "norm").pvalue > 1e-4
        assert len(np.unique(u)) > N - 5


def test_inplace_samplers_on_device(device):
    from scipy import stats
    jg.manual_seed(2)
    t = jg.empty(N, device="cuda", dtype=jg.float64)
    device.reset_stats()
    v0 = t._version
    a = _h(t.uniform_(-3.0, 5.0))
    assert t._version == v0 + 1 and device.stats.h2d == 0
    assert a.min() >= -3 and a.max() < 5 and abs(a.mean() - 1) < 4 * 8 / np.sqrt(12 * N)
    b = _h(t.normal_(2.0, 0.5))
    assert abs(b.mean() - 2) < 4 * 0.5 / np.sqrt(N)
    assert stats.kstest((b - 2) / 0.5, "norm").pvalue > 1e-4
    e = _h(t.exponential_(4.0))
    assert e.min() >= 0 and stats.kstest(e * 4, "expon").pvalue > 1e-4
    # a strided (transposed) target is written through its strides
    m = jg.zeros(8, 16, device="cuda").t()
    m.uniform_()
    assert (_h(m) > 0).mean() > 0.95 and not np.array_equal(_h(m)[:, 0], _h(m)[:, 1])


def test_randint(device):
    jg.manual_seed(3)
    r = jg.randint(-3, 4, (N,), device="cuda")
    assert r.dtype is jg.int64 and r.is_cuda
    v = _h(r)
    assert set(np.unique(v)) == set(range(-3, 4))
    counts = np.bincount(v + 3)
    assert np.all(np.abs(counts - N / 7) < 4 * np.sqrt(N / 7))
    big = _h(jg.randint(0, 2 ** 40, (64,), device="cuda"))  # 64-bit range
    assert big.min() >= 0 and big.max() < 2 ** 40 and big.max() > 2 ** 36
    like = jg.randint_like(jg.zeros(3, dtype=jg.int32, device="cuda"), 5)
    assert like.is_cuda and like.dtype is jg.int32
    with pytest.raises(RuntimeError, match="from.*less than.*to"):
        jg.randint(3, 3, (2,), device="cuda")


def test_bernoulli_scalar_and_tensor_p(device):
    jg.manual_seed(4)
    b = _h(jg.empty(N, device="cuda").bernoulli_(0.3))
    assert set(np.unique(b)) <= {0.0, 1.0}
    assert abs(b.mean() - 0.3) < 4 * np.sqrt(0.21 / N)
    p = jg.tensor(np.repeat([0.0, 0.9, 1.0, 0.25], N // 4), device="cuda")
    c = _h(jg.empty(N, device="cuda").bernoulli_(p)).reshape(4, -1)
    assert c[0].sum() == 0 and c[2].all()
    assert abs(c[1].mean() - 0.9) < 4 * np.sqrt(0.09 / (N // 4))
    assert abs(c[3].mean() - 0.25) < 4 * np.sqrt(0.1875 / (N // 4))
    with pytest.raises(RuntimeError, match=r"p to be in \[0, 1\]"):
        jg.empty(2, device="cuda").bernoulli_(1.5)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_keep_rate_and_scaling(device, p):
    jg.manual_seed(5)
    x = jg.ones(N, device="cuda")
    device.reset_stats()
    y = jg.nn.functional.dropout(x, p)
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    v = _h(y)
    kept = v != 0
    np.testing.assert_array_equal(v[kept], np.float32(1) / np.float32(1 - p))
    assert abs(kept.mean() - (1 - p)) < 4 * np.sqrt(p * (1 - p) / N)
    assert not _h(jg.nn.functional.dropout(x, 1.0)).any()
    d = jg.nn.Dropout(p).cuda()
    assert np.array_equal(_h(d.eval()(x)), _h(x))


# ----------------------------------------------------------------------------- streams


def test_manual_seed_reproduces_and_calls_differ(device):
    def draw():
        return _h(jg.rand(50, device="cuda")), _h(jg.randn(50, device="cuda"))
    jg.manual_seed(7)
    a1, b1 = draw()
    jg.manual_seed(7)
    a2, b2 = draw()
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    jg.cuda.manual_seed(7)  # the CUDA generator alone
    np.testing.assert_array_equal(_h(jg.rand(50, device="cuda")), a1)
    jg.manual_seed(8)
    assert not np.array_equal(draw()[0], a1)
    jg.manual_seed(7)
    x, y = _h(jg.rand(N, device="cuda")), _h(jg.rand(N, device="cuda"))
    assert abs(np.corrcoef(x, y)[0, 1]) < 4 / np.sqrt(N)  # successive calls: new streams


def test_cuda_draws_leave_the_cpu_generator_alone(device):
    jg.manual_seed(9)
    cpu_state = jg.get_rng_state()
    jg.randn(10, device="cuda")
    jg.empty(4, device="cuda").uniform_()
    assert np.array_equal(jg.get_rng_state().numpy(), cpu_state.numpy())
    st = jg.cuda.get_rng_state()
    a = _h(jg.rand(20, device="cuda"))
    jg.cuda.set_rng_state(st)
    np.testing.assert_array_equal(_h(jg.rand(20, device="cuda")), a)
    assert jg.cuda.initial_seed() == 9
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        jg.rand(2, device="cuda", generator=jg.Generator())


def test_launch_configuration_does_not_change_the_numbers(device):
    """The same call launched as 1x1, 1x7, 3x5 and the default grid gives identical values."""
    from jitgrad import _cuda_random as CR
    from jitgrad._cuda_rng_kernels import make_kernel
    n = 45
    for kind, dt, scalars in (("uniform", np.float32, (np.float32(0), np.float32(1),
                                                        np.float32(1))),
                              ("normal", np.float64, (np.float64(0), np.float64(1)))):
        CR.manual_seed(11)
        ref = _h(jg.rand(n, device="cuda", dtype=jg.float32)) if kind == "uniform" else \
            _h(jg.randn(n, device="cuda", dtype=jg.float64))
        _, kern = make_kernel(kind, dt)
        for blocks, threads in ((1, 1), (1, 7), (3, 5)):
            CR.manual_seed(11)
            out = device.empty((n,), dt)
            kern[blocks, threads](np.int64(n), *CR.default_generator.next_call(), *scalars, out)
            np.testing.assert_array_equal(device.to_host(out), ref)


def test_nn_init_on_device(device):
    w = jg.empty(6, 5, device="cuda")
    device.reset_stats()
    jg.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    jg.nn.init.normal_(jg.empty(3, device="cuda"), 0, 0.02)
    assert device.stats.h2d == 0
    bound = 1 / np.sqrt(5)  # kaiming_uniform with a=sqrt(5): U(-1/sqrt(fan_in), +)
    v = _h(w)
    assert np.abs(v).max() <= bound and v.std() > bound / 4
