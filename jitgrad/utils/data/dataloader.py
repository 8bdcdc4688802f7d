"""``DataLoader``: batches from a dataset through a sampler and ``collate_fn``.

Loading runs in the calling process (``num_workers`` is accepted and ignored). Shuffling
consumes the global (or the given) generator as PyTorch's loader does — one 64-bit draw for the
iterator's base seed, then the sampler's draws — so seeded runs see PyTorch's batch order and
the random numbers drawn after an epoch stay in step with PyTorch's.
"""
from __future__ import annotations

import collections.abc as abc
import numbers

import numpy as np

from ...tensor import Tensor
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _impl, _int64_seed

__all__ = ["DataLoader", "default_collate", "default_convert"]

_np_str_obj_array_pattern = ("S", "a", "U", "O")


def default_convert(data):
    from ...ops.basic import as_tensor
    if isinstance(data, np.ndarray) and data.dtype.kind not in _np_str_obj_array_pattern:
        return as_tensor(data)
    if isinstance(data, abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stack a list of samples into a batch, field by field (PyTorch's rules)."""
    from ...ops.basic import as_tensor, tensor
    from ...ops.shape import stack
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in _np_str_obj_array_pattern:
        return stack([as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic) and elem.dtype.kind not in _np_str_obj_array_pattern:
        return tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        from ... import _dtype as D
        return tensor(batch, dtype=D.float64)
    if isinstance(elem, numbers.Integral):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        return [default_collate(samples) for samples in transposed]
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")


class DataLoader:
    """Iterates over ``dataset`` in batches (PyTorch's constructor arguments)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually "
                                 "exclusive with drop_last")
        if sampler is None and not self._is_iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._is_iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None or batch_sampler is not None \
                else default_convert
        self.collate_fn = collate_fn
        self._default_collate = collate_fn is default_collate

    def __len__(self):
        if self._is_iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                n = n // self.batch_size if self.drop_last else ceil(n / self.batch_size)
            return n
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def __iter__(self):
        # PyTorch's _BaseDataLoaderIter draws its base seed first (from loader.generator or
        # the global generator); the sampler then draws when the first batch is requested.
        self._base_seed = _int64_seed(_impl(self.generator))
        if self._is_iterable:
            return self._iter_iterable()
        return self._iter_map()

    def _iter_map(self):
        ds = self.dataset
        fast = self._default_collate and type(ds) is TensorDataset
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield self.collate_fn(ds[idx])
            return
        for indices in self.batch_sampler:
            if fast:
                # Same values as stacking the samples one by one, in one gather per tensor.
                from ...ops.basic import tensor
                key = tensor(indices)
                yield [t[key] for t in ds.tensors]
            else:
                yield self.collate_fn([ds[i] for i in indices])

    def _iter_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for sample in it:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in it:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)
