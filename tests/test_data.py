"""jitgrad.utils.data: datasets, samplers, DataLoader batching, shuffling and collation."""
import numpy as np
import pytest

import jitgrad as jt
from jitgrad.utils.data import (
    DataLoader,
    Dataset,
    RandomSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def make_ds(n=10):
    X = jt.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
    y = jt.tensor(np.arange(n))
    return TensorDataset(X, y)


def test_tensor_dataset():
    ds = make_ds()
    assert len(ds) == 10
    x, y = ds[3]
    np.testing.assert_array_equal(x.numpy(), [6, 7])
    assert y.item() == 3
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(jt.zeros(3), jt.zeros(4))


def test_sequential_batches_and_drop_last():
    ds = make_ds(10)
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == jt.Size([4, 2]) and batches[0][0].dtype is jt.float32
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 1, 2, 3],
                                                                     [4, 5, 6, 7]]
    assert len(DataLoader(ds, batch_size=4)) == 3


def test_shuffle_is_a_permutation_and_seeded():
    ds = make_ds(50)

    def order(seed):
        g = jt.Generator()
        g.manual_seed(seed)
        loader = DataLoader(ds, batch_size=8, shuffle=True, generator=g)
        return [i for _, y in loader for i in y.tolist()]

    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(50))
    assert a == b and a != c
    jt.manual_seed(3)
    d = [i for _, y in DataLoader(ds, batch_size=8, shuffle=True) for i in y.tolist()]
    jt.manual_seed(3)
    e = [i for _, y in DataLoader(ds, batch_size=8, shuffle=True) for i in y.tolist()]
    assert d == e and sorted(d) == list(range(50))


def test_epochs_reshuffle():
    ds = make_ds(30)
    g = jt.Generator()
    g.manual_seed(0)
    loader = DataLoader(ds, batch_size=30, shuffle=True, generator=g)
    e1 = next(iter(loader))[1].tolist()
    e2 = next(iter(loader))[1].tolist()
    assert e1 != e2


def test_shuffle_order_and_rng_stream_match_torch():
    torch = pytest.importorskip("torch")
    X = np.arange(40, dtype=np.float32).reshape(20, 2)
    Y = np.arange(20)
    for use_gen in (False, True):
        orders = []
        after = []
        for lib in (torch, jt):
            lib.manual_seed(7)
            kw = {}
            if use_gen:
                g = lib.Generator()
                g.manual_seed(5)
                kw["generator"] = g
            loader = lib.utils.data.DataLoader(
                lib.utils.data.TensorDataset(lib.tensor(X), lib.tensor(Y)), batch_size=6,
                shuffle=True, **kw)
            orders.append([[b[1].tolist() for b in loader] for _ in range(2)])
            after.append(lib.rand(3).numpy())
        assert orders[0] == orders[1]
        np.testing.assert_array_equal(after[0], after[1])


def test_custom_dataset_and_default_collate():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.array([i, i * i], dtype=np.float32), "i": i, "name": f"s{i}"}

    batches = list(DataLoader(Squares(), batch_size=2))
    assert len(batches) == 3
    b = batches[1]
    np.testing.assert_array_equal(b["x"].numpy(), [[2, 4], [3, 9]])
    assert b["i"].dtype is jt.int64 and b["i"].tolist() == [2, 3]
    assert b["name"] == ["s2", "s3"]
    c = default_collate([(jt.tensor([1.0]), 0.5), (jt.tensor([2.0]), 1.5)])
    assert c[1].dtype is jt.float64 and c[0].shape == jt.Size([2, 1])


def test_custom_collate_and_batch_size_none():
    ds = make_ds(4)
    out = list(DataLoader(ds, batch_size=2, collate_fn=lambda items: len(items)))
    assert out == [2, 2]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 4 and single[0][1].item() == 0


def test_random_sampler_and_subset_split():
    ds = make_ds(10)
    g = jt.Generator()
    g.manual_seed(0)
    idx = list(RandomSampler(ds, generator=g))
    assert sorted(idx) == list(range(10))
    g.manual_seed(0)
    a, b = random_split(ds, [7, 3], generator=g)
    assert isinstance(a, Subset) and len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [5, 6])
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=RandomSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)
