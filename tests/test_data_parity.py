"""jitgrad.utils.data against torch.utils.data: the same code run with both libraries must give
the same batches (values, dtypes, containers), orders (seeded shuffles), lengths and errors."""
import collections
import random
import warnings

import numpy as np
import pytest
from _parity import agree, neutral_run

import jitgrad

torch = pytest.importorskip("torch")


def D(lib):
    return lib.utils.data


def tds(lib, n=10):
    return D(lib).TensorDataset(lib.arange(n, dtype=lib.float32).reshape(n, 1), lib.arange(n))


NT = collections.namedtuple("NT", "x y")

COLLATE_BATCHES = {
    "ints": lambda t: [1, 2, 3],
    "floats": lambda t: [1.5, 2.0],
    "bools": lambda t: [True, False],
    "strs": lambda t: ["a", "b"],
    "bytes": lambda t: [b"a", b"b"],
    "np_f32": lambda t: [np.ones(2, np.float32), np.zeros(2, np.float32)],
    "np_i32": lambda t: [np.ones(2, np.int32), np.zeros(2, np.int32)],
    "np_bool": lambda t: [np.array([True]), np.array([False])],
    "np_0d": lambda t: [np.array(1.0), np.array(2.0)],
    "np_str_array": lambda t: [np.array(["a"]), np.array(["b"])],
    "np_f64_scalar": lambda t: [np.float64(1), np.float64(2)],
    "np_f32_scalar": lambda t: [np.float32(1), np.float32(2)],
    "np_i16_scalar": lambda t: [np.int16(1), np.int16(2)],
    "tensors_f16": lambda t: [t.ones(2, dtype=t.float16), t.zeros(2, dtype=t.float16)],
    "tensors_0d": lambda t: [t.tensor(1), t.tensor(2)],
    "tensor_shape_mismatch": lambda t: [t.ones(2), t.zeros(3)],
    "dicts": lambda t: [{"a": 1, "b": t.ones(2)}, {"a": 2, "b": t.zeros(2)}],
    "ordered_dicts": lambda t: [collections.OrderedDict(a=1.0), collections.OrderedDict(a=2.0)],
    "defaultdicts": lambda t: [collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)],
    "tuples": lambda t: [(1, 2.0, "x"), (3, 4.0, "y")],
    "lists": lambda t: [[1, 2], [3, 4]],
    "uneven_lists": lambda t: [[1, 2], [3]],
    "namedtuples": lambda t: [NT(1, 2.0), NT(3, 4.0)],
    "nested": lambda t: [{"a": [(1, np.float32(2))]}, {"a": [(3, np.float32(4))]}],
    "mixed_int_float": lambda t: [1, 2.5],
    "none": lambda t: [None, None],
}


@pytest.mark.parametrize("case", sorted(COLLATE_BATCHES))
def test_default_collate(case):
    agree(lambda t: D(t).default_collate(COLLATE_BATCHES[case](t)))


@pytest.mark.parametrize("data", [np.ones(2, np.int16), {"a": np.float32(1), "b": (np.int64(3), 1.0)},
                                  [np.arange(3)], "s", np.array(["x"])], ids=str)
def test_default_convert(data):
    agree(lambda t: D(t).default_convert(data))


@pytest.mark.parametrize("batch_size", [1, 3, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batching(batch_size, drop_last):
    def f(t):
        dl = D(t).DataLoader(tds(t), batch_size=batch_size, drop_last=drop_last)
        return [len(dl), list(dl), list(dl)]
    agree(f)


@pytest.mark.parametrize("n,bs", [(10, 4), (37, 5), (3, 8)])
def test_shuffle_global_seed(n, bs):
    def f(t):
        t.manual_seed(3)
        out = list(D(t).DataLoader(tds(t, n), batch_size=bs, shuffle=True))
        return out + [t.rand(3)]  # the global stream is in step afterwards
    agree(f)


def test_shuffle_generator_two_epochs():
    def f(t):
        g = t.Generator()
        g.manual_seed(7)
        dl = D(t).DataLoader(tds(t, 37), batch_size=5, shuffle=True, generator=g)
        return [list(dl), list(dl), len(dl), t.randint(0, 100, (3,), generator=g)]
    agree(f)


LOADER_ERRORS = {
    "sampler_and_shuffle": lambda t: D(t).DataLoader(tds(t), sampler=[0], shuffle=True),
    "batch_sampler_and_batch_size": lambda t: D(t).DataLoader(tds(t), batch_sampler=[[0]],
                                                              batch_size=2),
    "batch_sampler_and_drop_last": lambda t: D(t).DataLoader(tds(t), batch_sampler=[[0]],
                                                             drop_last=True),
    "batch_sampler_and_sampler": lambda t: D(t).DataLoader(tds(t), batch_sampler=[[0]],
                                                           sampler=[0]),
    "batch_sampler_and_shuffle": lambda t: D(t).DataLoader(tds(t), batch_sampler=[[0]],
                                                           shuffle=True),
    "batch_size_none_drop_last": lambda t: D(t).DataLoader(tds(t), batch_size=None,
                                                           drop_last=True),
    "batch_size_zero": lambda t: D(t).DataLoader(tds(t), batch_size=0),
    "negative_workers": lambda t: D(t).DataLoader(tds(t), num_workers=-1),
    "negative_timeout": lambda t: D(t).DataLoader(tds(t), timeout=-1),
    "prefetch_without_workers": lambda t: D(t).DataLoader(tds(t), prefetch_factor=2),
    "persistent_without_workers": lambda t: D(t).DataLoader(tds(t), persistent_workers=True),
    "tensor_dataset_mismatch": lambda t: D(t).TensorDataset(t.arange(3), t.arange(4)),
}


@pytest.mark.parametrize("case", sorted(LOADER_ERRORS))
def test_loader_errors(case):
    a, b = neutral_run(torch, LOADER_ERRORS[case]), neutral_run(jitgrad, LOADER_ERRORS[case])
    assert a[0] == "err" and b == a


def test_sampler_and_batch_sampler_arguments():
    agree(lambda t: (lambda dl: [list(dl), len(dl)])(
        D(t).DataLoader(tds(t), sampler=[9, 8, 7, 1], batch_size=3)))
    agree(lambda t: (lambda dl: [list(dl), len(dl)])(
        D(t).DataLoader(tds(t), batch_sampler=[[0, 1], [5, 3, 2]])))


def test_custom_collate_and_plain_datasets():
    agree(lambda t: list(D(t).DataLoader(tds(t, 5), batch_size=2, collate_fn=lambda b: len(b))))
    agree(lambda t: list(D(t).DataLoader([1, 2, 3, 4, 5], batch_size=2)))
    agree(lambda t: list(D(t).DataLoader([{"x": np.float32(i)} for i in range(5)], batch_size=2)))
    agree(lambda t: list(D(t).DataLoader([np.ones(2), (np.int64(3), 1.0)], batch_size=None)))


def map_ds(t):
    class Ds(D(t).Dataset):
        def __getitem__(self, i):
            return (i, float(i) * 0.5, np.full(2, i, np.int16))

        def __len__(self):
            return 7
    return Ds()


def iter_ds(t, n=7):
    class It(D(t).IterableDataset):
        def __iter__(self):
            return iter(range(n))
    return It()


def sharded_ds(t, n=11):
    class It(D(t).IterableDataset):
        def __iter__(self):
            w = D(t).get_worker_info()
            return iter(range(n)) if w is None else iter(range(w.id, n, w.num_workers))
    return It()


def uneven_ds(t):
    class It(D(t).IterableDataset):
        def __iter__(self):
            w = D(t).get_worker_info()
            return iter(range(10 * w.id, 10 * w.id + 3 + 4 * w.id))
    return It()


def random_ds(t):
    class Ds(D(t).Dataset):
        def __getitem__(self, i):
            w = D(t).get_worker_info()
            return (i, t.rand(2), random.random(), np.random.rand(),
                    -1 if w is None else w.id, -1 if w is None else w.seed)

        def __len__(self):
            return 9
    return Ds()


def test_dataset_subclasses():
    agree(lambda t: list(D(t).DataLoader(map_ds(t), batch_size=3)))
    agree(lambda t: [len(map_ds(t) + map_ds(t)), (map_ds(t) + map_ds(t))[8]])
    agree(lambda t: list(D(t).DataLoader(iter_ds(t), batch_size=3)))
    agree(lambda t: list(D(t).DataLoader(iter_ds(t), batch_size=3, drop_last=True)))
    agree(lambda t: list(D(t).DataLoader(iter_ds(t), batch_size=None)))
    agree(lambda t: list(iter_ds(t) + iter_ds(t, 2)))  # ChainDataset
    agree(lambda t: D(t).DataLoader(iter_ds(t), shuffle=True))
    agree(lambda t: D(t).DataLoader(iter_ds(t), sampler=[0]))
    agree(lambda t: len(D(t).DataLoader(iter_ds(t), batch_size=3)))  # no __len__: TypeError
    agree(lambda t: D(t).Dataset()[0])
    agree(lambda t: D(t).get_worker_info())


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("kind", ["duplicated", "sharded", "uneven", "random_map"])
def test_workers(workers, kind):
    """Workers run in-process but give PyTorch's batches: an IterableDataset is iterated by
    every worker, batches come round-robin, and each worker's random state is PyTorch's."""
    def f(t):
        t.manual_seed(5)
        if kind == "duplicated":
            dl = D(t).DataLoader(iter_ds(t), batch_size=2, num_workers=workers)
        elif kind == "sharded":
            dl = D(t).DataLoader(sharded_ds(t), batch_size=2, num_workers=workers,
                                 drop_last=True)
        elif kind == "uneven":
            dl = D(t).DataLoader(uneven_ds(t), batch_size=2, num_workers=workers,
                                 prefetch_factor=1)
        else:
            dl = D(t).DataLoader(random_ds(t), batch_size=2, num_workers=workers, shuffle=True)
        return [list(dl), t.rand(1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "suggested max number of worker" warning
        agree(f)


def test_persistent_workers_and_worker_errors():
    def f(t):
        t.manual_seed(5)
        random.seed(0)
        np.random.seed(0)
        dl = D(t).DataLoader(random_ds(t), batch_size=4, num_workers=2, persistent_workers=True)
        return [list(dl), list(dl), t.rand(1), random.random(), np.random.rand()]
    agree(f)

    def g(t):
        class Bad(D(t).Dataset):
            def __getitem__(self, i):
                if i == 3:
                    raise ValueError("bad item")
                return i

            def __len__(self):
                return 6
        try:
            list(D(t).DataLoader(Bad(), batch_size=2, num_workers=2))
        except ValueError as e:
            return str(e).split("\n")[0]
    agree(g)
    agree(lambda t: (lambda it: [len(it), next(it)])(
        iter(D(t).DataLoader(list(range(10)), batch_size=3, num_workers=2))))


SAMPLERS = {
    "random_global": lambda t: (t.manual_seed(1), list(D(t).RandomSampler(range(10))))[1],
    "random_replacement": lambda t: list(D(t).RandomSampler(
        range(10), replacement=True, num_samples=70, generator=t.Generator().manual_seed(5))),
    "random_replacement_global": lambda t: (t.manual_seed(2), list(D(t).RandomSampler(
        range(10), replacement=True)))[1],
    "random_num_samples": lambda t: list(D(t).RandomSampler(
        range(10), num_samples=25, generator=t.Generator().manual_seed(5))),
    "random_bad_num_samples": lambda t: D(t).RandomSampler(range(10), num_samples=0),
    "random_bad_replacement": lambda t: D(t).RandomSampler(range(10), replacement=1),
    "sequential": lambda t: [list(D(t).SequentialSampler(range(4))),
                             len(D(t).SequentialSampler(range(4)))],
    "subset_random": lambda t: (t.manual_seed(4), list(D(t).SubsetRandomSampler([3, 5, 7, 9])))[1],
    "weighted": lambda t: (t.manual_seed(4), list(D(t).WeightedRandomSampler(
        [0.1, 0.9, 0.4, 0.7], 12, replacement=True)))[1],
    "weighted_no_replacement": lambda t: (lambda s: [list(s), list(s), len(s)])(
        D(t).WeightedRandomSampler(t.tensor([0.1, 0.9, 0.4, 0.7, 3.0]), 3, replacement=False,
                                   generator=t.Generator().manual_seed(4))),
    "weighted_2d": lambda t: D(t).WeightedRandomSampler([[0.1, 1.0]], 2),
    "weighted_bad_num_samples": lambda t: D(t).WeightedRandomSampler([0.1, 1.0], 0),
    "weighted_bad_replacement": lambda t: D(t).WeightedRandomSampler([0.1, 1.0], 2, 1),
    "batch": lambda t: [list(D(t).BatchSampler(range(10), 3, False)),
                        list(D(t).BatchSampler(range(10), 3, True)),
                        len(D(t).BatchSampler(range(10), 3, True)),
                        len(D(t).BatchSampler(range(10), 3, False))],
    "batch_bad_size": lambda t: D(t).BatchSampler(range(10), 0, False),
    "batch_bad_drop_last": lambda t: D(t).BatchSampler(range(10), 2, 1),
}


@pytest.mark.parametrize("case", sorted(SAMPLERS))
def test_samplers(case):
    agree(lambda t: [SAMPLERS[case](t), t.rand(2)])


SPLITS = {
    "ints_generator": lambda t: [s.indices for s in D(t).random_split(
        range(10), [3, 7], generator=t.Generator().manual_seed(42))],
    "fractions_global": lambda t: (t.manual_seed(42), [list(s) for s in D(t).random_split(
        range(11), [0.3, 0.3, 0.4])], t.rand(1))[1:],
    "bad_sum": lambda t: D(t).random_split(range(10), [3, 3]),
    "bad_fraction": lambda t: D(t).random_split(range(10), [1.5, -0.5]),
    "tensor_dataset": lambda t: (lambda sp: [sp[0][1], sp[1].indices])(D(t).random_split(
        tds(t), [5, 5], generator=t.Generator().manual_seed(42))),
}


@pytest.mark.parametrize("case", sorted(SPLITS))
def test_random_split(case):
    agree(SPLITS[case])


def test_subset_concat_stack():
    agree(lambda t: (lambda s: [s[1], len(s), s[[0, 2]], s.__getitems__([0, 2])])(
        D(t).Subset(list(range(10, 20)), [3, 1, 4])))
    agree(lambda t: D(t).Subset(tds(t), [3, 1, 4]).__getitems__([0, 2]))
    agree(lambda t: (lambda c: [len(c), c[2], c[3], c[-1], c[-8], c.cumulative_sizes])(
        D(t).ConcatDataset([list(range(3)), list(range(10, 15))])))
    agree(lambda t: D(t).ConcatDataset([list(range(3))])[-4])
    agree(lambda t: D(t).ConcatDataset([]))
    agree(lambda t: D(t).ConcatDataset([iter_ds(t)]))
    agree(lambda t: list(D(t).ChainDataset([iter_ds(t, 2), iter_ds(t, 3)])))
    agree(lambda t: [D(t).StackDataset([1, 2], [3, 4])[1], D(t).StackDataset(a=[1], b=[2])[0]])
    agree(lambda t: list(D(t).DataLoader(D(t).StackDataset(tds(t, 4), list(range(4))),
                                        batch_size=3)))
    agree(lambda t: D(t).StackDataset([1, 2], [3])[0])
