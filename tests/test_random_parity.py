"""The CPU generator against PyTorch's: after the same seed every sampler gives torch's values
bit for bit (all float dtypes, sizes on both sides of ATen's vectorized thresholds, contiguous
and not), the stream stays in step afterwards, and the state/seed API and errors match."""
import pytest
from _parity import agree

import jitgrad

torch = pytest.importorskip("torch")


def seeded(draw, seed=123):
    """``draw`` after manual_seed, then one more rand and randn: the stream position and the
    cached Box-Muller value must agree too."""
    def f(t):
        t.manual_seed(seed)
        v = draw(t)
        return [v, t.rand(3), t.randn(3)]
    return f


SIZES = [1, 5, 15, 16, 17, 33, 100]
FLOATS = ["float32", "float64", "float16"]

INPLACE = {
    "uniform_": lambda x: x.uniform_(-2, 3),
    "normal_": lambda x: x.normal_(1.5, 2),
    "exponential_": lambda x: x.exponential_(2.5),
    "geometric_": lambda x: x.geometric_(0.3),
    "cauchy_": lambda x: x.cauchy_(0.5, 2),
    "log_normal_": lambda x: x.log_normal_(0.5, 0.7),
    "random_": lambda x: x.random_(),
    "random_to": lambda x: x.random_(10),
    "random_from_to": lambda x: x.random_(-3, 10),
    "random_from_none": lambda x: x.random_(7, None),
    "bernoulli_": lambda x: x.bernoulli_(0.3),
    "bernoulli_tensor": lambda x: x.bernoulli_(jitgrad.linspace(0, 1, x.numel()).reshape(x.shape)
                                               if isinstance(x, jitgrad.Tensor) else
                                               torch.linspace(0, 1, x.numel()).reshape(x.shape)),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_samplers(op, dt, n):
    agree(seeded(lambda t: INPLACE[op](t.empty(n, dtype=getattr(t, dt)))))


@pytest.mark.parametrize("op", ["uniform_", "normal_", "exponential_", "cauchy_", "log_normal_",
                                "random_", "bernoulli_"])
@pytest.mark.parametrize("layout", ["transposed", "strided_1d", "sliced_2d"])
def test_inplace_samplers_non_contiguous(op, layout):
    def make(t):
        if layout == "transposed":
            return t.empty(20, 4).t()
        if layout == "strided_1d":
            return t.empty(40)[::2]
        return t.empty(6, 8)[:, 1::2]
    agree(seeded(lambda t: (lambda x: (INPLACE[op](x), x)[1])(make(t))))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", FLOATS)
def test_factories(dt, n):
    agree(seeded(lambda t: t.rand(n, dtype=getattr(t, dt))))
    agree(seeded(lambda t: t.randn(n, dtype=getattr(t, dt))))
    agree(seeded(lambda t: t.bernoulli(t.full((n,), 0.4, dtype=getattr(t, dt)))))
    agree(seeded(lambda t: t.full((n,), 0.4, dtype=getattr(t, dt)).bernoulli()))
    agree(seeded(lambda t: t.normal(t.arange(n, dtype=getattr(t, dt)), 2.0)))


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "int64", "bool"])
@pytest.mark.parametrize("n", [3, 20])
def test_random_integer_dtypes(dt, n):
    agree(seeded(lambda t: t.empty(n, dtype=getattr(t, dt)).random_()))
    agree(seeded(lambda t: t.empty(n, dtype=getattr(t, dt)).random_(2 if dt == "bool" else 5)))
    agree(seeded(lambda t: t.empty(n, dtype=getattr(t, dt)).random_(0, None)))
    if dt != "bool":
        agree(seeded(lambda t: t.empty(n, dtype=getattr(t, dt)).geometric_(0.2)))


RANDOM_EDGES = {
    "big_range": lambda t: t.empty(4, dtype=t.int64).random_(-2**40, 2**40),
    "full_64_bits": lambda t: t.empty(4, dtype=t.int64).random_(-2**63, None),
    "full_64_bits_double": lambda t: t.empty(4, dtype=t.float64).random_(-2**63, None),
    "float_from_none": lambda t: t.empty(4, dtype=t.float32).random_(2**20, None),
    "half_update_to": lambda t: t.empty(4, dtype=t.float16).random_(0, 65504),
    "to_keyword": lambda t: t.empty(4).random_(to=3),
    "from_gt_to": lambda t: t.empty(4).random_(5, 2),
    "single_negative": lambda t: t.empty(4, dtype=t.int64).random_(-2**63),
    "int8_out_of_bounds": lambda t: t.empty(4, dtype=t.int8).random_(0, 200),
    "uint8_from_negative": lambda t: t.empty(4, dtype=t.uint8).random_(-1, 3),
    "int32_from_none_negative": lambda t: t.empty(4, dtype=t.int32).random_(-5, None),
    "half_out_of_bounds": lambda t: t.empty(4, dtype=t.float16).random_(0, 70000),
    "half_cast_collision": lambda t: t.empty(4, dtype=t.float16).random_(65504 - 20, 65504),
    "float_from_too_big": lambda t: t.empty(4).random_(2**30, None),
    "exponential_bad_lambda": lambda t: t.empty(3).exponential_(-1),
    "exponential_int": lambda t: t.empty(3, dtype=t.int64).exponential_(),
    "normal_int": lambda t: t.empty(3, dtype=t.int64).normal_(),
    "uniform_int": lambda t: t.empty(3, dtype=t.int64).uniform_(),
    "cauchy_int": lambda t: t.empty(3, dtype=t.int64).cauchy_(),
    "cauchy_bad_sigma": lambda t: t.empty(3).cauchy_(0, 0),
    "log_normal_int": lambda t: t.empty(3, dtype=t.int64).log_normal_(),
    "log_normal_bad_std": lambda t: t.empty(3).log_normal_(0, -1),
    "geometric_bad_p": lambda t: t.empty(3).geometric_(1.5),
    "geometric_bool": lambda t: t.empty(3, dtype=t.bool).geometric_(0.5),
    "bernoulli_bad_p": lambda t: t.bernoulli(t.full((3,), 1.5)),
    "bernoulli_int": lambda t: t.bernoulli(t.zeros(2, dtype=t.int64)),
    "bernoulli_scalar_p": lambda t: t.bernoulli(t.zeros(20, dtype=t.float64), 0.3),
    "empty": lambda t: t.empty(0).normal_(),
}


@pytest.mark.parametrize("case", sorted(RANDOM_EDGES))
def test_random_edges(case):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the "out of bounds [-(2^24), 2^24]" UserWarning
        agree(seeded(RANDOM_EDGES[case]))


@pytest.mark.parametrize("n", [1, 10, 20])
def test_randint_randperm(n):
    agree(seeded(lambda t: t.randint(-5, 2**30, (n,))))
    agree(seeded(lambda t: t.randint(3, 9, (n,), dtype=t.int32)))
    agree(seeded(lambda t: t.randperm(n)))
    agree(seeded(lambda t: t.randperm(n, dtype=t.float32)))


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_multinomial(replacement, dt):
    agree(seeded(lambda t: t.multinomial(
        t.tensor([0.1, 2, 0.5, 1, 0, 3], dtype=getattr(t, dt)), 4, replacement)))
    agree(seeded(lambda t: t.multinomial(t.rand(3, 5, dtype=getattr(t, dt)), 5, replacement)))
    agree(seeded(lambda t: t.tensor([0.1, 2, 0.5], dtype=getattr(t, dt)).multinomial(
        2, replacement=replacement)))
    agree(seeded(lambda t: t.multinomial(t.tensor([0.1, 2, 0.5], dtype=getattr(t, dt)), 1,
                                        replacement)))
    agree(seeded(lambda t: t.multinomial(t.tensor([0.1, 2, 0.5]), 4, replacement,
                                        generator=t.Generator().manual_seed(3))))


@pytest.mark.parametrize("case", ["too_many", "negative", "zero_sum", "three_dims", "integer",
                                  "zero_samples", "nan"])
def test_multinomial_errors(case):
    probs = {"too_many": [0.1, 2, 0.5], "negative": [0.1, -2, 0.5], "zero_sum": [0.0, 0.0],
             "three_dims": [[[1.0, 1.0]]], "integer": [1, 2], "zero_samples": [1.0, 1.0],
             "nan": [1.0, float("nan")]}[case]
    k = {"too_many": 4, "zero_samples": 0}.get(case, 1)
    agree(lambda t: t.multinomial(t.tensor(probs), k))


NORMAL_FORMS = {
    "floats_size": lambda t: t.normal(2.0, 3.0, size=(4, 5)),
    "floats_size_f64": lambda t: t.normal(2.0, 3.0, size=(20,), dtype=t.float64),
    "tensor_tensor": lambda t: t.normal(t.arange(20.), t.arange(1, 21.)),
    "float_tensor": lambda t: t.normal(1.0, t.arange(1, 21.)),
    "float_tensor_f64": lambda t: t.normal(0.5, t.arange(1, 21, dtype=t.float64)),
    "tensor_tensor_broadcast": lambda t: t.normal(t.zeros(4, 1), t.ones(5)),
    "tensor_tensor_mixed": lambda t: t.normal(t.zeros(17), t.full((17,), 2.0, dtype=t.float64)),
    "tensor_float_small": lambda t: t.normal(t.zeros(3), 0.5),
    "generator": lambda t: t.normal(0.0, 1.0, size=(3,), generator=t.Generator().manual_seed(9)),
    "negative_std": lambda t: t.normal(0.0, -1.0, size=(2,)),
    "negative_std_tensor": lambda t: t.normal(t.zeros(2), -t.ones(2)),
    "negative_std_float": lambda t: t.normal(t.zeros(2), -1.0),
    "integer_mean": lambda t: t.normal(t.zeros(3, dtype=t.int64), 1.0),
    "out": lambda t: (lambda o: (t.normal(0.0, 1.0, size=(2, 3), out=o), o)[1])(t.empty(0)),
    # 0-d parameters give 0-d samples (np.ascontiguousarray would make them 1-d)
    "zero_dim_tensor_tensor": lambda t: t.normal(t.tensor(0.5), t.tensor(2.0)),
    "zero_dim_tensor_float": lambda t: t.normal(t.tensor(0.5), 2.0),
    "zero_dim_float_tensor": lambda t: t.normal(0.5, t.tensor(2.0)),
    "zero_dim_bernoulli": lambda t: t.bernoulli(t.tensor(0.5)),
}


@pytest.mark.parametrize("case", sorted(NORMAL_FORMS))
def test_normal_forms(case):
    agree(seeded(NORMAL_FORMS[case]))


def test_normal_and_bernoulli_nodes():
    def f(t):
        m = t.zeros(3, requires_grad=True)
        s = t.ones(3, requires_grad=True)
        p = t.full((3,), 0.5, requires_grad=True)
        outs = [t.normal(m, 1.0), t.normal(1.0, s), t.normal(m, s), t.bernoulli(p)]
        sum(o.sum() for o in outs).backward()
        return [[o.grad_fn.name() for o in outs], m.grad, s.grad, p.grad]
    agree(f)

    def g(t):
        x = t.zeros(4, requires_grad=True).clone()
        return [type(getattr(x, op)(*args).grad_fn).__name__ for op, args in
                [("geometric_", (0.5,)), ("cauchy_", ()), ("log_normal_", ())]]
    agree(g)


STATE = {
    "roundtrip": lambda t: (lambda s: (t.randn(20), t.set_rng_state(s), t.randn(20)))(
        (t.manual_seed(7), t.get_rng_state())[1]),
    "state_bytes_with_cached_normal": lambda t: (t.manual_seed(7), t.randn(3),
                                                 t.get_rng_state())[2],
    "state_format": lambda t: [str(t.get_rng_state().dtype), tuple(t.get_rng_state().shape)],
    "initial_seed": lambda t: (t.manual_seed(-1), t.initial_seed(), t.rand(2))[1:],
    "seed_float": lambda t: (t.manual_seed(3.0), t.initial_seed())[1],
    "seed_str": lambda t: (t.manual_seed("3"), t.initial_seed())[1],
    "seed_too_big": lambda t: t.manual_seed(2**64),
    "seed_uint64": lambda t: (t.manual_seed(2**64 - 1), t.initial_seed(), t.rand(2))[1:],
    "manual_seed_returns_default": lambda t: [t.manual_seed(1) is t.default_generator,
                                              type(t.manual_seed(1)).__name__,
                                              isinstance(t.default_generator, t.Generator)],
    "default_generator": lambda t: (t.manual_seed(4), t.default_generator.initial_seed(),
                                    t.rand(2, generator=t.default_generator), t.rand(2))[1:],
    "set_state_short": lambda t: t.set_rng_state(t.zeros(10, dtype=t.uint8)),
    "set_state_float": lambda t: t.set_rng_state(t.zeros(5056)),
    "set_state_invalid": lambda t: t.set_rng_state(t.zeros(5056, dtype=t.uint8)),
    "set_state_list": lambda t: t.Generator().set_state([1]),
    "generator_seed_float": lambda t: t.Generator().manual_seed(1.5),
    "generator_seed_too_big": lambda t: t.Generator().manual_seed(2**64),
    "seed_types": lambda t: [type(t.Generator().seed()).__name__, type(t.seed()).__name__,
                             type(t.initial_seed()).__name__],
}


@pytest.mark.parametrize("case", sorted(STATE))
def test_state_and_seeds(case):
    agree(STATE[case])


def test_generator():
    def f(t):
        g = t.Generator()
        r = [g.initial_seed(), str(g.device)]
        g.manual_seed(11)
        a = t.rand(5, generator=g)
        s = g.get_state()
        b = t.randn(5, generator=g)
        g.set_state(s)
        r += [a, b, t.randn(5, generator=g), str(s.dtype), tuple(s.shape), g.initial_seed()]
        h = t.Generator().set_state(g.get_state())
        r += [t.rand(3, generator=h), t.rand(3, generator=g)]
        c = g.clone_state()
        r += [t.rand(2, generator=c), t.rand(2, generator=g)]
        return r
    agree(f)

    def global_to_generator(t):  # a state moves between the global and a private generator
        t.manual_seed(3)
        t.randn(5)
        g = t.Generator().set_state(t.get_rng_state())
        return [t.randn(5, generator=g), t.randn(5)]
    agree(global_to_generator)
    agree(lambda t: t.Generator().graphsafe_get_state())
    agree(lambda t: t.Generator().graphsafe_set_state(t.Generator()))


def test_fork_rng():
    def f(t):
        t.manual_seed(1)
        with t.random.fork_rng():
            t.rand(5)
        return t.rand(2)
    agree(f)


def test_generator_everywhere():
    """``generator=`` on every sampler uses that stream and leaves the global one alone."""
    def f(t):
        t.manual_seed(0)
        g = t.Generator().manual_seed(5)
        x = t.empty(20)
        out = [t.rand(3, generator=g), t.randn(20, generator=g), t.randint(0, 9, (4,), generator=g),
               t.randperm(6, generator=g), t.bernoulli(t.full((4,), 0.5), generator=g),
               t.multinomial(t.ones(4), 2, generator=g),
               t.normal(0.0, 1.0, size=(3,), generator=g)]
        for op, args in [("uniform_", ()), ("normal_", ()), ("exponential_", ()),
                         ("geometric_", (0.4,)), ("cauchy_", ()), ("log_normal_", ()),
                         ("random_", (5,)), ("bernoulli_", (0.5,))]:
            out.append(getattr(x, op)(*args, generator=g).clone())
        return out + [t.rand(2)]
    agree(f)


def test_rand_like_and_randn_like_take_a_generator():
    outs = []
    for T in (torch, jitgrad):
        g = T.Generator().manual_seed(3)
        x = T.zeros(2, 3, dtype=T.float64)
        outs.append((T.rand_like(x, generator=g).tolist(), T.randn_like(x, generator=g).tolist()))
    assert outs[0] == outs[1]
