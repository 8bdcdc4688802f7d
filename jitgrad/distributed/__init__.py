"""``jitgrad.distributed``: PyTorch's ``torch.distributed`` names over MPI (docs/distributed.md).

Importing this package does not import mpi4py; ``init_process_group`` does.
"""
from ._group import DistBackendError, DistError, Work
from .distributed_c10d import (
    Backend,
    GroupMember,
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_initialized,
    is_mpi_available,
    isend,
    recv,
    reduce_scatter,
    reduce_scatter_tensor,
    send,
)

__all__ = ["Backend", "ReduceOp", "group", "GroupMember", "Work", "DistError", "DistBackendError",
           "is_available",
           "is_mpi_available", "is_initialized", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast",
           "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "send", "recv", "isend", "irecv"]
