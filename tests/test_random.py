"""Tests for jitgrad._random: a bit-exact replica of torch's CPU generator.

Three kinds of tests:
* hard-coded expectations read off real torch 2.13 output (run without torch);
* bit-exact comparisons against the installed torch (skipped without torch);
* statistics, state round-trips, seeding and speed.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from jitgrad import _random as R

F32 = np.float32
F64 = np.float64
AVX2 = R.cpu_capability() == "avx2"


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _t2n(t):
    return t.detach().cpu().numpy()


def _tdt(torch, dt):
    return {np.dtype(F32): torch.float32, np.dtype(F64): torch.float64,
            np.dtype(np.float16): torch.float16,
            np.dtype(np.int64): torch.int64, np.dtype(np.int32): torch.int32,
            np.dtype(np.uint8): torch.uint8}[np.dtype(dt)]


def _eq(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


SEEDS = [0, 1, 7, 42, 1234, 2**32 + 3, 2**63 + 11, -5]
SIZES = [1, 2, 3, 15, 16, 17, 31, 33, 100, 1000, (8, 10), (3, 4, 5), (2, 0),
         ()]


# ---------------------------------------------------------------------------
# hard-coded expectations (values printed by torch 2.13.0+cpu)
# ---------------------------------------------------------------------------

def test_literal_rand():
    # torch.manual_seed(0); torch.rand(3)
    g = R.Generator().manual_seed(0)
    assert _eq(g.rand(3), np.array(
        [0.49625658988952637, 0.7682217955589294, 0.08847743272781372], F32))
    # torch.manual_seed(0); torch.rand(3, dtype=torch.float64)
    g.manual_seed(0)
    assert _eq(g.rand(3, F64), np.array(
        [0.9700530018065531, 0.707819864399788, 0.45938294312745087], F64))


def test_literal_randn_serial():
    # torch.manual_seed(0); torch.randn(3)  (numel < 16: serial Box-Muller)
    g = R.Generator().manual_seed(0)
    assert _eq(g.randn(3), np.array(
        [1.5409960746765137, -0.293428897857666, -2.1787893772125244], F32))
    # torch.manual_seed(0); torch.randn(3, dtype=torch.float64)
    g.manual_seed(0)
    assert _eq(g.randn(3, F64), np.array(
        [1.5409961082440433, -0.2934289057609464, -2.1787893820745574], F64))


def test_literal_randn_fill_f64():
    # torch.manual_seed(0); torch.randn(17, dtype=torch.float64)
    g = R.Generator().manual_seed(0)
    assert _eq(g.randn(17, F64), np.array(
        [-2.310411800234176, -0.6332746088675096, -1.2609246557194385,
         -0.726951062065411, -0.019964750907762653, 0.2102998901016947,
         0.17718935139366584, -0.830510051008449, 0.23871805816817063,
         -0.2426793824588577, -0.7730112772958181, -1.5951814880783068,
         -0.6870036940435463, 1.4880743158106724, -0.4484158047114511,
         -0.8910030351707375, 0.6748575435940039], F64))


@pytest.mark.skipif(not AVX2, reason="torch uses the AVX2 kernel only on "
                    "x86-64 CPUs with AVX2")
def test_literal_randn_fill_f32_avx2():
    # torch.manual_seed(0); torch.randn(16)  (AVX2 normal_fill)
    g = R.Generator().manual_seed(0)
    assert _eq(g.randn(16), np.array(
        [-1.1258398294448853, -1.152360200881958, -0.2505785822868347,
         -0.4338788092136383, 0.8487103581428528, 0.6920091509819031,
         -0.31601276993751526, -2.1152193546295166, 0.32227492332458496,
         -1.2633347511291504, 0.34998318552970886, 0.30813392996788025,
         0.11984150856733322, 1.237657904624939, 1.1167771816253662,
         -0.2472781538963318], F32))
    # torch.manual_seed(123); torch.empty(20).normal_(1.5, 0.5)[:4]
    g.manual_seed(123)
    assert _eq(g.normal_(20, 1.5, 0.5)[:4], np.array(
        [1.6686850786209106, 1.4111113548278809, 1.3482362031936646,
         1.2059941291809082], F32))
    # torch.manual_seed(42); torch.empty(4).uniform_(-2, 3)  (FMA build)
    g.manual_seed(42)
    assert _eq(g.uniform_(4, -2, 3), np.array(
        [2.411346435546875, 2.5750198364257812, -0.08568120002746582,
         2.7965283393859863], F32))


def test_literal_integers_and_bernoulli():
    g = R.Generator().manual_seed(0)
    # torch.manual_seed(0); torch.randint(0, 10, (8,))
    assert _eq(g.randint(0, 10, (8,)), np.array([4, 9, 3, 0, 3, 9, 7, 3]))
    # torch.manual_seed(0); torch.randperm(8)
    g.manual_seed(0)
    assert _eq(g.randperm(8), np.array([4, 0, 7, 3, 2, 5, 1, 6]))
    # torch.manual_seed(0); torch.empty(8).bernoulli_(0.5)
    g.manual_seed(0)
    assert _eq(g.bernoulli(0.5, (8,)),
               np.array([0, 0, 1, 0, 0, 0, 1, 1], F32))
    # torch.manual_seed(0)
    # torch.multinomial(torch.tensor([.1, .2, .3, .4]), 6, True)
    # torch.multinomial(torch.tensor([.1, .2, .3, .4]), 3)
    g.manual_seed(0)
    p = np.array([0.1, 0.2, 0.3, 0.4], F32)
    assert _eq(g.multinomial(p, 6, True), np.array([3, 3, 2, 3, 3, 3]))
    assert _eq(g.multinomial(p, 3), np.array([3, 0, 1]))


def test_literal_stream_continues():
    # torch.manual_seed(42); torch.rand(2); torch.randn(2); torch.rand(2)
    g = R.Generator().manual_seed(42)
    assert _eq(g.rand(2), np.array([0.8822692632675171, 0.9150039553642273],
                                   F32))
    assert _eq(g.randn(2), np.array([0.47404009103775024,
                                     0.19778664410114288], F32))
    assert _eq(g.rand(2), np.array([0.2565724849700928, 0.7936413288116455],
                                   F32))


def test_default_seed_of_new_generator():
    # torch.Generator().initial_seed() == 67280421310721
    assert R.Generator().initial_seed() == 67280421310721


# ---------------------------------------------------------------------------
# bit-exact against torch
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_rand_randn_match_torch(torch, seed, dtype):
    g = R.Generator()
    tdt = _tdt(torch, dtype)
    for shape in SIZES:
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.rand(shape, dtype), _t2n(torch.rand(shape, dtype=tdt)))
        assert _eq(g.randn(shape, dtype),
                   _t2n(torch.randn(shape, dtype=tdt))), shape
        # and the stream keeps agreeing afterwards
        assert _eq(g.randn(shape, dtype),
                   _t2n(torch.randn(shape, dtype=tdt))), shape
        assert _eq(g.rand(5, dtype), _t2n(torch.rand(5, dtype=tdt)))


@pytest.mark.parametrize("n", [16, 17, 32, 33, 1000, 4099, 100003])
def test_randn_large_match_torch(torch, n):
    g = R.Generator()
    for seed in (0, 3, 99):
        for dtype in (F32, F64):
            g.manual_seed(seed)
            torch.manual_seed(seed)
            assert _eq(g.randn(n, dtype),
                       _t2n(torch.randn(n, dtype=_tdt(torch, dtype))))


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.3, 2.7), (-5.0, 1e-3),
                                      (100.0, 0.01), (1.5, 0.0)])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_normal_match_torch(torch, mean, std, dtype):
    g = R.Generator()
    tdt = _tdt(torch, dtype)
    for seed in (0, 5):
        for n in (1, 7, 16, 21, 500):
            g.manual_seed(seed)
            torch.manual_seed(seed)
            assert _eq(g.normal_(n, mean, std, dtype),
                       _t2n(torch.empty(n, dtype=tdt).normal_(mean, std)))


def test_normal_noncontiguous_matches_torch(torch):
    # a non-contiguous destination always takes the serial sampler and is
    # filled in memory order
    g = R.Generator().manual_seed(6)
    torch.manual_seed(6)
    t = torch.empty(10, 8).t()
    t.normal_()
    vals = g.normal_((8, 10), contiguous=False)
    assert _eq(vals.reshape(10, 8).T, _t2n(t))


@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-3.7, 11.3), (-2, 3),
                                      (1.0, 2.0), (1e-3, 1e-3), (-1e6, 1e6)])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_uniform_match_torch(torch, low, high, dtype):
    g = R.Generator()
    for seed in (0, 11):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        tdt = _tdt(torch, dtype)
        assert _eq(g.uniform_((7, 13), low, high, dtype),
                   _t2n(torch.empty(7, 13, dtype=tdt).uniform_(low, high)))


def test_uniform_upper_bound_is_mapped_to_low(torch):
    # seed 2, draw #12675698 has all 24 low bits set: 1 + (1 - 2**-24) rounds
    # to 2.0 in float32 and ATen returns `from` instead.
    k = 12675698
    g = R.Generator().manual_seed(2)
    raw = g.random_raw(k + 1)
    assert raw[k] & 0xFFFFFF == 0xFFFFFF
    g.manual_seed(2)
    a = g.uniform_(k + 1, 1.0, 2.0)
    assert a[-1] == 1.0 and a.max() < 2.0
    torch.manual_seed(2)
    assert _eq(a, _t2n(torch.empty(k + 1).uniform_(1.0, 2.0)))


@pytest.mark.parametrize("low,high", [(0, 2), (0, 10), (-5, 100), (3, 4),
                                      (0, 2**28 - 1), (0, 2**28),
                                      (-2**27, 2**27), (0, 2**31),
                                      (0, 2**32 - 1), (0, 2**32),
                                      (-2**40, 2**40), (-2**63, 2**63 - 1)])
def test_randint_match_torch(torch, low, high):
    g = R.Generator()
    for seed in (0, 9):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.randint(low, high, (50,)),
                   _t2n(torch.randint(low, high, (50,))))
        assert _eq(g.rand(3), _t2n(torch.rand(3)))


def test_randint_dtypes_match_torch(torch):
    g = R.Generator().manual_seed(9)
    torch.manual_seed(9)
    for dt, hi in ((np.int32, 1000), (np.int32, 2**30), (np.uint8, 256),
                   (F32, 1000), (F64, 2**29), (np.int64, 7)):
        assert _eq(g.randint(0, hi, (40,), dt),
                   _t2n(torch.randint(0, hi, (40,), dtype=_tdt(torch, dt))))
    assert _eq(g.randint(10, shape=(4, 5)), _t2n(torch.randint(10, (4, 5))))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 10, 100, 1000, 65537])
def test_randperm_match_torch(torch, n):
    g = R.Generator()
    for seed in (0, 1, 77):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.randperm(n), _t2n(torch.randperm(n)))
        assert _eq(g.randperm(n, F32),
                   _t2n(torch.randperm(n, dtype=torch.float32)))


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0, 1 / 3])
def test_bernoulli_scalar_match_torch(torch, p):
    g = R.Generator()
    for seed in (0, 5):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.bernoulli(p, (100,)),
                   _t2n(torch.empty(100).bernoulli_(p)))
        assert _eq(g.bernoulli(p, (7, 3), F64),
                   _t2n(torch.empty(7, 3, dtype=torch.float64).bernoulli_(p)))
        x = torch.ones(4, 5)
        assert _eq(g.bernoulli(p, (4, 5)), _t2n(torch.bernoulli(x, p)))


def test_bernoulli_tensor_match_torch(torch):
    P = np.random.RandomState(0).rand(6, 7)
    g = R.Generator()
    for seed in (0, 5):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        for dt in (F32, F64):
            p = P.astype(dt)
            assert _eq(g.bernoulli(p), _t2n(torch.bernoulli(torch.from_numpy(p))))
        # bernoulli_(p_tensor) broadcasts p to the destination
        assert _eq(g.bernoulli(P[0].astype(F32), (3, 7)),
                   _t2n(torch.empty(3, 7).bernoulli_(
                       torch.from_numpy(P[0].astype(F32)))))


@pytest.mark.parametrize("p", [0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.77, 0.9,
                               0.123, 0.0, 1.0])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_dropout_matches_torch(torch, p, dtype):
    F = torch.nn.functional
    x = np.random.RandomState(1).randn(37, 11).astype(dtype)
    g = R.Generator()
    for seed in (0, 11):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        mask = g.dropout_mask(x.shape, p, dtype)
        assert _eq(x * mask, _t2n(F.dropout(torch.from_numpy(x), p,
                                            training=True)))
        # the stream position agrees afterwards too
        assert _eq(g.rand(3), _t2n(torch.rand(3)))


@pytest.mark.parametrize("lambd", [1.0, 2.5, 0.7, 1e-3])
def test_exponential_match_torch(torch, lambd):
    g = R.Generator()
    for dt in (F32, F64):
        g.manual_seed(2)
        torch.manual_seed(2)
        assert _eq(g.exponential_((100,), lambd, dt),
                   _t2n(torch.empty(100, dtype=_tdt(torch, dt))
                        .exponential_(lambd)))


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("num_samples", [1, 3, 9])
def test_multinomial_match_torch(torch, replacement, num_samples):
    pr = np.random.RandomState(3).rand(4, 9).astype(F32)
    g = R.Generator()
    for seed in (0, 4):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.multinomial(pr, num_samples, replacement),
                   _t2n(torch.multinomial(torch.from_numpy(pr), num_samples,
                                          replacement)))
        p1 = pr[0].astype(F64)
        assert _eq(g.multinomial(p1, num_samples, replacement),
                   _t2n(torch.multinomial(torch.from_numpy(p1), num_samples,
                                          replacement)))
    g.manual_seed(1)
    torch.manual_seed(1)
    assert _eq(g.multinomial(pr, 1000, True),
               _t2n(torch.multinomial(torch.from_numpy(pr), 1000, True)))


def test_float16_match_torch(torch):
    g = R.Generator()
    for n in (7, 16, 17, 1000):
        g.manual_seed(8)
        torch.manual_seed(8)
        h = torch.float16
        assert _eq(g.rand(n, np.float16), _t2n(torch.rand(n, dtype=h)))
        assert _eq(g.randn(n, np.float16), _t2n(torch.randn(n, dtype=h)))
        assert _eq(g.normal_(n, 1.5, 0.2, np.float16),
                   _t2n(torch.empty(n, dtype=h).normal_(1.5, 0.2)))


def test_mixed_stream_matches_torch(torch):
    g = R.Generator()
    ops = [("randn", 1), ("randn", 1), ("randn", 3), ("rand", 2),
           ("randn", 20), ("randn", 5), ("randint", 7), ("randn", 1),
           ("randperm", 10), ("randn", 2), ("bern", 9), ("rand64", 3),
           ("randn64", 17), ("randn64", 1), ("randn", 1), ("uniform", 40)]
    for seed in SEEDS:
        g.manual_seed(seed)
        torch.manual_seed(seed)
        for op, n in ops:
            if op == "randn":
                a, b = g.randn(n), torch.randn(n)
            elif op == "randn64":
                a, b = g.randn(n, F64), torch.randn(n, dtype=torch.float64)
            elif op == "rand":
                a, b = g.rand(n), torch.rand(n)
            elif op == "rand64":
                a, b = g.rand(n, F64), torch.rand(n, dtype=torch.float64)
            elif op == "randint":
                a, b = g.randint(-5, 100, (n,)), torch.randint(-5, 100, (n,))
            elif op == "randperm":
                a, b = g.randperm(n), torch.randperm(n)
            elif op == "bern":
                a, b = g.bernoulli(0.3, (n,)), torch.empty(n).bernoulli_(0.3)
            else:
                a, b = g.uniform_(n, -1, 1), torch.empty(n).uniform_(-1, 1)
            assert _eq(a, _t2n(b)), (seed, op, n)
        assert _eq(g.get_state(), _t2n(torch.get_rng_state()))


def test_separate_generators_match_torch(torch):
    tg = torch.Generator().manual_seed(123)
    jg = R.Generator().manual_seed(123)
    assert _eq(jg.randn(50), _t2n(torch.randn(50, generator=tg)))
    assert _eq(jg.rand(5), _t2n(torch.rand(5, generator=tg)))
    assert _eq(jg.randperm(12), _t2n(torch.randperm(12, generator=tg)))


def test_state_layout_matches_torch(torch):
    g = R.Generator()
    for seed in (0, 2**40 + 1):
        g.manual_seed(seed)
        torch.manual_seed(seed)
        assert _eq(g.get_state(), _t2n(torch.get_rng_state()))
        g.randn(1)  # leaves a cached Box-Muller value
        torch.randn(1)
        assert _eq(g.get_state(), _t2n(torch.get_rng_state()))
        g.rand(700)
        torch.rand(700)
        assert _eq(g.get_state(), _t2n(torch.get_rng_state()))
    # torch state -> jitgrad, jitgrad state -> torch
    torch.manual_seed(77)
    torch.randn(3)
    g.set_state(_t2n(torch.get_rng_state()))
    assert _eq(g.randn(5), _t2n(torch.randn(5)))
    g.manual_seed(31)
    g.randn(1)
    torch.set_rng_state(torch.from_numpy(g.get_state()))
    assert _eq(g.randn(3), _t2n(torch.randn(3)))


# ---------------------------------------------------------------------------
# state, seeding, API behaviour (no torch needed)
# ---------------------------------------------------------------------------

def test_state_round_trip():
    g = R.Generator().manual_seed(5)
    g.randn(1)  # cached normal sample is part of the state
    s = g.get_state()
    assert s.dtype == np.uint8 and s.shape == (5056,)
    a = [g.randn(3), g.rand(1000), g.randint(0, 9, (5,)), g.randn(40, F64)]
    g2 = R.Generator().set_state(s)
    b = [g2.randn(3), g2.rand(1000), g2.randint(0, 9, (5,)),
         g2.randn(40, F64)]
    for x, y in zip(a, b):
        assert _eq(x, y)
    g.set_state(s)
    assert _eq(g.randn(3), a[0])
    assert g2.initial_seed() == 5
    with pytest.raises(RuntimeError):
        g.set_state(np.zeros(10, np.uint8))
    with pytest.raises(RuntimeError):
        g.set_state(np.zeros(5056, np.uint8))  # not seeded / left == 0


def test_constructor_and_clone_state():
    assert R.Generator("cpu").initial_seed() == 67280421310721
    assert R.Generator(seed=9).initial_seed() == 9
    with pytest.raises(RuntimeError):
        R.Generator("cuda")
    g = R.Generator(seed=4)
    g.randn(1)
    h = g.clone_state()
    assert _eq(g.randn(20), h.randn(20))
    assert _eq(g.get_state(), h.get_state())


def test_manual_seed_resets_cache_and_is_deterministic():
    g = R.Generator().manual_seed(3)
    first = g.randn(1)
    g.manual_seed(3)
    assert _eq(g.randn(1), first)
    g.randn(1)  # consume the pair; cache now empty
    g.manual_seed(3)
    assert _eq(g.randn(1), first)


def test_seed_values():
    g = R.Generator()
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    assert g.manual_seed(2**64 - 1).initial_seed() == 2**64 - 1
    # only the low 32 bits reach mt19937
    a = R.Generator().manual_seed(2**32 + 7).rand(4)
    assert _eq(a, R.Generator().manual_seed(7).rand(4))
    with pytest.raises(RuntimeError):
        g.manual_seed(2**64)
    with pytest.raises(RuntimeError):
        g.manual_seed(-2**63 - 1)
    s = g.seed()
    assert 0 <= s < 2**64 and g.initial_seed() == s


def test_module_level_default_generator():
    assert R.manual_seed(0) is R.default_generator
    assert R.initial_seed() == 0
    a = R.default_generator.rand(3)
    R.manual_seed(0)
    assert _eq(R.default_generator.rand(3), a)
    st = R.get_rng_state()
    b = R.default_generator.randn(4)
    R.set_rng_state(st)
    assert _eq(R.default_generator.randn(4), b)


def test_default_generator_seed_is_nondeterministic():
    code = ("from jitgrad import _random as R; "
            "print(R.default_generator.initial_seed())")
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    seeds = {int(subprocess.check_output([sys.executable, "-c", code],
                                         env=env, cwd=root))
             for _ in range(2)}
    assert len(seeds) == 2
    assert 67280421310721 not in seeds


def test_errors():
    g = R.Generator()
    with pytest.raises(RuntimeError):
        g.normal_(4, 0.0, -1.0)
    with pytest.raises(RuntimeError):
        g.randint(5, 5, (3,))
    with pytest.raises(RuntimeError):
        g.bernoulli(1.5, (3,))
    with pytest.raises(RuntimeError):
        g.bernoulli(np.array([0.5, 2.0], F32))
    with pytest.raises(RuntimeError):
        g.uniform_(3, 2.0, 1.0)
    with pytest.raises(RuntimeError):
        g.multinomial(np.array([0.5, 0.5], F32), 3)
    with pytest.raises(NotImplementedError):  # torch: "check_uniform_bounds" not implemented
        g.rand(3, np.int64)


def test_shapes_and_dtypes():
    g = R.Generator().manual_seed(0)
    assert g.rand((2, 3)).shape == (2, 3) and g.rand(4).dtype == F32
    assert g.randn((), F64).shape == () and g.randn(0).shape == (0,)
    assert g.randint(0, 3, (2, 2)).dtype == np.int64
    assert g.randperm(5, np.int32).dtype == np.int32
    assert g.bernoulli(0.5, (3,), np.bool_).dtype == np.bool_
    assert g.bernoulli(np.full((2, 2), 0.5, F64)).dtype == F64
    assert sorted(g.randperm(50).tolist()) == list(range(50))
    assert g.dropout_mask((5,), 0.0).tolist() == [1.0] * 5
    assert g.dropout_mask((5,), 1.0).tolist() == [0.0] * 5
    # aliases without the trailing underscore
    for a, b in (("uniform", "uniform_"), ("normal", "normal_"),
                 ("exponential", "exponential_")):
        g.manual_seed(1)
        x = getattr(g, a)((20,), 0.5, 2.0) if a != "exponential" else \
            g.exponential((20,), 2.0)
        g.manual_seed(1)
        y = getattr(g, b)((20,), 0.5, 2.0) if a != "exponential" else \
            g.exponential_((20,), 2.0)
        assert _eq(x, y)


def test_statistics():
    g = R.Generator().manual_seed(1234)
    n = 1_000_000
    for dt in (F32, F64):
        u = g.rand(n, dt)
        assert 0.0 <= u.min() and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 3e-3
        assert abs(u.var() - 1 / 12) < 1e-3
        z = g.randn(n, dt)
        assert abs(z.mean()) < 5e-3 and abs(z.std() - 1.0) < 5e-3
        assert abs(np.mean(z ** 3)) < 2e-2 and abs(np.mean(z ** 4) - 3) < 5e-2
        zs = np.concatenate([g.randn(3, dt) for _ in range(20000)])
        assert abs(zs.mean()) < 2e-2 and abs(zs.std() - 1.0) < 2e-2
        w = g.normal_(n, 3.0, 0.5, dt)
        assert abs(w.mean() - 3.0) < 3e-3 and abs(w.std() - 0.5) < 3e-3
    b = g.bernoulli(0.3, (n,))
    assert abs(b.mean() - 0.3) < 3e-3
    counts = np.bincount(g.randint(0, 10, (n,)), minlength=10)
    assert counts.min() > 0.097 * n and counts.max() < 0.103 * n
    e = g.exponential_((n,), 2.0, F64)
    assert abs(e.mean() - 0.5) < 5e-3
    m = g.multinomial(np.array([0.1, 0.2, 0.7], F32), 100000, True)
    freq = np.bincount(m, minlength=3) / 100000
    assert np.allclose(freq, [0.1, 0.2, 0.7], atol=6e-3)
    # randperm: every position roughly uniform
    first = [g.randperm(5)[0] for _ in range(5000)]
    assert np.bincount(first, minlength=5).min() > 850
