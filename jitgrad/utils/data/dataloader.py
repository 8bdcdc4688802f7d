"""``DataLoader``: batches from a dataset through a sampler and ``collate_fn``.

Loading runs in the calling process; ``num_workers > 0`` simulates PyTorch's worker processes
(task order, per-worker seeds and ``get_worker_info()``) so the batches match. Shuffling
consumes the global (or the given) generator as PyTorch's loader does — one 64-bit draw for the
iterator's base seed, then the sampler's draws — so seeded runs see PyTorch's batch order and
the random numbers drawn after an epoch stay in step with PyTorch's. Batches are made by
``collate.py`` (``default_collate`` / ``default_convert``, importable from here as before).
"""
from __future__ import annotations

import numpy as np

from .collate import (
    collate,
    default_collate,
    default_collate_err_msg_format,  # noqa: F401 - importable from here, as before
    default_collate_fn_map,
    default_convert,
)
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _impl, _int64_seed

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info",
           "WorkerInfo", "collate", "default_collate_fn_map"]


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a (simulated) worker."""

    def __init__(self, **kwargs):
        self.__keys = tuple(kwargs.keys())
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


_worker_info = None


def get_worker_info():
    """The current worker's ``WorkerInfo`` while a loader with ``num_workers > 0`` fetches,
    ``None`` in the main program."""
    return _worker_info


def _generate_state(base_seed, worker_id):
    """PyTorch's NumPy seed for a worker (``torch.utils.data._utils.worker._generate_state``)."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        result &= MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(4):
        pool[i] = hash(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))
    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = pool[i_dst]
        data_val = (data_val ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        data_val = (data_val ^ (data_val >> XSHIFT)) & MASK32
        state.append(data_val)
    return state


class _Fetcher:
    """PyTorch's _MapDatasetFetcher / _IterableDatasetFetcher."""

    def __init__(self, loader, dataset):
        self.dataset = dataset
        self.auto_collation = loader._auto_collation
        self.collate_fn = loader.collate_fn
        self.drop_last = loader.drop_last
        self.iterable = loader._is_iterable
        self.ended = False
        self.dataset_iter = iter(dataset) if self.iterable else None
        # Same values as stacking TensorDataset samples one by one, in one gather per tensor
        self.fast = (not self.iterable and self.collate_fn is default_collate
                     and type(dataset) is TensorDataset
                     and not any(t.requires_grad for t in dataset.tensors))

    def fetch(self, index):
        if self.iterable:
            if self.ended:
                raise StopIteration
            if self.auto_collation:
                data = []
                for _ in index:
                    try:
                        data.append(next(self.dataset_iter))
                    except StopIteration:
                        self.ended = True
                        break
                if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                    raise StopIteration
            else:
                data = next(self.dataset_iter)
            return self.collate_fn(data)
        if self.auto_collation:
            if self.fast:
                from ...ops.basic import tensor
                key = tensor(list(index))
                return [t[key] for t in self.dataset.tensors]
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(index)
            else:
                data = [self.dataset[idx] for idx in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _BaseIter:
    def __init__(self, loader):
        self._loader = loader
        self._num_yielded = 0
        # PyTorch's _BaseDataLoaderIter draws its base seed first (from loader.generator or
        # the global generator); the sampler draws when its iterator first runs.
        self._base_seed = _int64_seed(_impl(loader.generator))
        self._sampler_iter = iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _next_index(self):
        return next(self._sampler_iter)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _Fetcher(loader, loader.dataset)

    def __next__(self):
        data = self._fetcher.fetch(self._next_index())
        self._num_yielded += 1
        return data


class _RngContext:
    """The random state a worker process would own: jitgrad's CPU generator, ``random`` and
    ``numpy.random``, swapped in around each of the worker's fetches."""

    def __init__(self):
        import random

        from ...random import default_generator
        self.torch = default_generator().get_state()
        self.py = random.getstate()
        self.np = np.random.get_state()

    def restore(self):
        import random

        from ...random import default_generator
        default_generator().set_state(self.torch)
        random.setstate(self.py)
        np.random.set_state(self.np)


class _WorkerError:
    def __init__(self, exc, worker_id):
        self.exc = exc
        self.worker_id = worker_id

    def reraise(self):
        import traceback
        tb = "".join(traceback.format_exception(type(self.exc), self.exc,
                                                self.exc.__traceback__))
        msg = (f"Caught {type(self.exc).__name__} in DataLoader worker process "
               f"{self.worker_id}.\nOriginal {tb}")
        if isinstance(self.exc, KeyError):
            msg = KeyErrorMessage(msg)
        try:
            err = type(self.exc)(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise err


class KeyErrorMessage(str):
    def __repr__(self):
        return self


class _StopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _SimulatedWorker:
    """One DataLoader worker run in this process: its own fetcher (an IterableDataset is
    iterated by every worker, as in PyTorch), WorkerInfo and random state (seeded as PyTorch
    seeds a worker: ``base_seed + id`` for ``random`` and the generator, ``_generate_state``
    for NumPy), and ``worker_init_fn`` called first."""

    def __init__(self, loader, worker_id, base_seed):
        import random
        global _worker_info
        from ...random import default_generator
        self.id = worker_id
        self.ended = False
        seed = base_seed + worker_id
        main = _RngContext()
        previous = _worker_info
        try:
            random.seed(seed)
            default_generator().manual_seed(seed)
            np.random.seed(_generate_state(base_seed, worker_id))
            self.info = WorkerInfo(id=worker_id, num_workers=loader.num_workers, seed=seed,
                                   dataset=loader.dataset)
            _worker_info = self.info
            self.error = None
            try:
                if loader.worker_init_fn is not None:
                    loader.worker_init_fn(worker_id)
                self.fetcher = _Fetcher(loader, loader.dataset)
            except Exception as e:  # PyTorch's worker dies; the loader reports it
                self.error = e
            self.rng = _RngContext()
        finally:
            _worker_info = previous
            main.restore()

    def _in_worker(self, fn):
        global _worker_info
        main = _RngContext()
        previous = _worker_info
        try:
            self.rng.restore()
            _worker_info = self.info
            try:
                return fn()
            finally:
                self.rng = _RngContext()
        finally:
            _worker_info = previous
            main.restore()

    def run(self, index):
        """The worker's answer for a task, or None (a worker whose iterable ended sends
        nothing more)."""
        if self.error is not None:
            raise RuntimeError(f"DataLoader worker (pid(s) {self.id}) exited unexpectedly") \
                from self.error
        if self.ended:
            return None

        def fetch():
            try:
                return self.fetcher.fetch(index)
            except StopIteration:
                self.ended = True
                return _StopIteration(self.id)
            except Exception as e:
                return _WorkerError(e, self.id)
        return self._in_worker(fetch)

    def resume(self, loader):
        """A persistent worker's new epoch: a fresh fetcher (the iterable restarts)."""
        if self.error is None:
            self.ended = False
            self.fetcher = self._in_worker(lambda: _Fetcher(loader, loader.dataset))


class _MultiProcessIter(_BaseIter):
    """PyTorch's _MultiProcessingDataLoaderIter, its workers simulated in this process.

    Tasks go to the workers round-robin (skipping workers whose iterable ended) and
    ``prefetch_factor * num_workers`` are outstanding, as in PyTorch; a worker answers its
    tasks in order, and results are taken in task order (``in_order=True``; PyTorch with
    ``in_order=False`` returns whichever worker answers first, which is timing-dependent)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._workers = [_SimulatedWorker(loader, i, self._base_seed)
                         for i in range(loader.num_workers)]
        self._start()

    def _start(self):
        import itertools
        k = len(self._workers)
        self._status = [True] * k
        self._cycle = itertools.cycle(range(k))
        self._task_info = {}
        self._results = {}
        self._send_idx = 0
        self._rcvd_idx = 0
        for _ in range(self._loader.prefetch_factor * k):
            self._try_put_index()

    def _reset_epoch(self):
        # the workers still run the tasks sent before (their random state moves on), then
        # resume with fresh fetchers; no new base seed (PyTorch's persistent workers)
        for idx in sorted(self._task_info):
            if idx not in self._results:
                self._answer(idx)
        self._sampler_iter = iter(self._loader._index_sampler)
        self._num_yielded = 0
        for w in self._workers:
            w.resume(self._loader)
        self._start()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(len(self._workers)):
            w = next(self._cycle)
            if self._status[w]:
                break
        else:
            return
        self._task_info[self._send_idx] = (w, index)
        self._send_idx += 1

    def _answer(self, idx):
        w, index = self._task_info[idx]
        return self._workers[w].run(index)

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    w = info[0]
                    if self._rcvd_idx in self._results or self._status[w]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                raise StopIteration
            idx = self._rcvd_idx
            if idx not in self._results:
                self._results[idx] = self._answer(idx)
            data = self._results.pop(idx)
            if data is None:  # the worker had ended: PyTorch skips the task
                self._status[self._task_info.pop(idx)[0]] = False
                continue
            if isinstance(data, _StopIteration):
                self._status[data.worker_id] = False
                del self._task_info[idx]
                self._rcvd_idx += 1
                self._try_put_index()
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            self._try_put_index()
            if isinstance(data, _WorkerError):
                data.reraise()
            self._num_yielded += 1
            return data


class DataLoader:
    """Iterates over ``dataset`` in batches (PyTorch's constructor arguments and checks).

    ``num_workers > 0`` runs the workers in this process, one after another, with PyTorch's
    task order, worker seeds, ``get_worker_info()`` and ``worker_init_fn``, so the batches
    (and the random numbers drawn inside ``__getitem__``) are the ones PyTorch yields."""

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
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
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
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        # persistent workers keep their state (seeds, iterable position) across epochs
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset_epoch()
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._is_iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                n = n // self.batch_size if self.drop_last else ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        while True:
            yield None
