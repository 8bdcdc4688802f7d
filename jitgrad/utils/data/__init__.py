"""``jitgrad.utils.data``: datasets, samplers and the DataLoader (PyTorch's API, in-process)."""
from .collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .dataset import (
                         ChainDataset,
                         ConcatDataset,
                         Dataset,
                         IterableDataset,
                         StackDataset,
                         Subset,
                         TensorDataset,
                         random_split,
)
from .distributed import DistributedSampler
from .sampler import (
                         BatchSampler,
                         RandomSampler,
                         Sampler,
                         SequentialSampler,
                         SubsetRandomSampler,
                         WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DataLoader", "DistributedSampler", "default_collate", "default_convert",
           "get_worker_info", "WorkerInfo"]
