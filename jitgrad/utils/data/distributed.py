"""``DistributedSampler``: each rank's share of a dataset, in PyTorch's exact index order.

Ported from PyTorch's ``torch/utils/data/distributed.py``.
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license (the PyTorch license terms apply to this module).

The shuffle is ``randperm(len(dataset))`` from a generator seeded with ``seed + epoch``; jitgrad's
generator reproduces PyTorch's CPU generator bit for bit, so every rank sees the indices it
would see under PyTorch.
"""
from __future__ import annotations

import math

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices ``rank, rank + num_replicas, ...`` of the (shuffled, padded or truncated)
    dataset order; call ``set_epoch(epoch)`` before each epoch for a new shuffle."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from ... import distributed as dist
        if num_replicas is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            # drop the tail so that every rank gets the same number of samples
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            from ...ops.basic import randperm
            from ...random import Generator
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:  # pad with the first indices (repeatedly if needed)
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size "
                                 f"({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match "
                                 f"num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """A new shuffle for ``epoch`` (the same on every rank)."""
        self.epoch = epoch
