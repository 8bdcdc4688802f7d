"""``torch.distributed``'s process-group API over MPI (mpi4py): initialization and collectives.

Ranks and the world size come from the MPI launcher (``mpiexec -n 4 python train.py``; srun and
other PMI launchers work the same). ``mpi4py`` is imported by ``init_process_group`` only.
"""
from __future__ import annotations

from datetime import timedelta

import numpy as np

from ..tensor import Tensor
from . import _group as G
from ._buffers import ReduceOp, Staged, host_or_device_empty, mpi_op

__all__ = ["is_available", "is_mpi_available", "is_initialized", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "barrier",
           "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "send", "recv", "isend", "irecv", "ReduceOp", "Backend",
           "group", "GroupMember"]


class Backend:
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"


def is_mpi_available() -> bool:
    """True when mpi4py can be imported (checked without importing it)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


is_available = is_mpi_available


def is_initialized() -> bool:
    return G._DEFAULT[0] is not None


_MPI: list = []


def _mpi():
    if _MPI:
        return _MPI[0]
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(
            "jitgrad.distributed needs mpi4py and an MPI library: pip install "
            "'jitgrad[distributed]' (mpi4py + the mpich wheel), or mpi4py built against your "
            f"cluster's MPI ({e})") from None
    _MPI.append(MPI)
    return MPI


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's default process group.

    ``backend`` must be ``"mpi"`` (or None). With ``init_method="env://"`` (or when ``RANK`` /
    ``WORLD_SIZE`` are set) those variables are checked against what the MPI launcher assigned;
    ``rank`` / ``world_size`` likewise. MPI cannot join processes started without a launcher
    into one world, so disagreeing values raise ``ValueError`` instead of being ignored.
    ``timeout`` (a ``timedelta``, default 30 minutes) bounds every collective's wait."""
    if G._DEFAULT[0] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() != Backend.MPI:
        raise ValueError(f"jitgrad.distributed supports only the 'mpi' backend (got "
                         f"{backend!r}): launch with mpiexec and pass backend='mpi'")
    if store is not None:
        raise ValueError("store= is not supported by the MPI backend (MPI does the rendezvous)")
    if init_method is not None and not str(init_method).startswith("env://"):
        raise ValueError(f"init_method {init_method!r} is not supported by the MPI backend: "
                         "the MPI launcher does the rendezvous (use None or 'env://')")
    if timeout is None:
        timeout = G.DEFAULT_TIMEOUT
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise RuntimeError("jitgrad.distributed needs an MPI initialized with "
                           "MPI_THREAD_MULTIPLE (mpi4py's default; check mpi4py.rc.thread_level "
                           "and that the MPI library supports it)")
    mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
    expected = {"rank": (rank if rank != -1 else G.env_int("RANK"), mpi_rank),
                "world_size": (world_size if world_size != -1 else G.env_int("WORLD_SIZE"),
                               mpi_size)}
    for name, (given, actual) in expected.items():
        if given is not None and given != actual:
            raise ValueError(
                f"{name}={given} (from the arguments or the environment) disagrees with the MPI "
                f"launcher's {name}={actual}: start the processes with mpiexec -n <world size> "
                "(MPI cannot join separately started processes into one world)")
    G.install(G.ProcessGroup(comm.Dup(), timeout, alarm=comm.Dup()))


def destroy_process_group(group=None) -> None:
    """Leave the default group (MPI itself is finalized by mpi4py at exit)."""
    _resolve(group)
    g = G.uninstall()
    if g._broken is None:  # after a timeout MPI is stuck in a collective: leave it alone
        g.comm.Free()
        g.alarm.Free()


class _GroupMember:
    """``dist.group.WORLD`` / ``dist.GroupMember.WORLD``: the default group once initialized."""

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return G._DEFAULT[0]

    NON_GROUP_MEMBER = -100


group = GroupMember = _GroupMember()


def _resolve(group) -> G.ProcessGroup:
    default = G.default_group()
    if group is None or group is default:
        return default
    raise ValueError("only the default process group is supported (group=None)")


def get_rank(group=None) -> int:
    return _resolve(group).rank


def get_world_size(group=None) -> int:
    return _resolve(group).size


def get_backend(group=None) -> str:
    _resolve(group)
    return Backend.MPI


def _tensor(t, what="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{what}` of type "
                        f"torch.Tensor but got {type(t)} instead.")
    return t


def _check_rank(value, size, what):
    if not isinstance(value, (int, np.integer)) or not 0 <= value < size:
        raise ValueError(f"Invalid {what} rank {value!r}: the world has ranks 0..{size - 1}")


# ---------------------------------------------------------------------------------- collectives


def barrier(group=None, async_op=False, device_ids=None):
    g = _resolve(group)
    work = g.submit("barrier", lambda comm: comm.Ibarrier(), async_op=async_op)
    return work if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across ranks in place (AVG: SUM then divide by the world size)."""
    g = _resolve(group)
    _tensor(tensor)
    dtype = np.dtype(tensor._data.dtype)
    MPI = _mpi()
    mop = mpi_op(MPI, op, dtype)
    staged = Staged(tensor)

    def finish():
        staged.write_back()
        if op is ReduceOp.AVG:
            from ..autograd import no_grad
            with no_grad():
                tensor.div_(g.size)

    work = g.submit("all_reduce", lambda comm: comm.Iallreduce(MPI.IN_PLACE, staged.buf, mop),
                    finish, [tensor], async_op)
    return work if async_op else None


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    g = _resolve(group)
    _tensor(tensor)
    src = group_src if src is None else src
    _check_rank(src, g.size, "src")
    staged = Staged(tensor, fill=True)
    work = g.submit("broadcast", lambda comm: comm.Ibcast(staged.buf, root=int(src)),
                    staged.write_back, [tensor], async_op)
    return work if async_op else None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (world_size * n elements) gets every rank's ``input_tensor``."""
    g = _resolve(group)
    _tensor(output_tensor, "output_tensor")
    _tensor(input_tensor, "input_tensor")
    if output_tensor.numel() != g.size * input_tensor.numel():
        raise ValueError(f"output tensor size must be equal to world_size times input tensor "
                         f"size ({output_tensor.numel()} != {g.size} * {input_tensor.numel()})")
    _same_dtype(output_tensor, input_tensor)
    send = Staged(input_tensor)
    recv = Staged(output_tensor, fill=False)
    work = g.submit("all_gather_into_tensor",
                    lambda comm: comm.Iallgather(send.buf, recv.buf), recv.write_back,
                    [output_tensor], async_op)
    return work if async_op else None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[i]`` gets rank i's ``tensor`` (all of one shape and dtype)."""
    g = _resolve(group)
    _tensor(tensor)
    _check_list(tensor_list, tensor, g.size, "tensor_list")
    send = Staged(tensor)
    gathered = host_or_device_empty(tensor, (g.size, *tensor.shape))

    def finish():
        from ..autograd import no_grad
        with no_grad():
            for i, out in enumerate(tensor_list):
                out.copy_(Tensor._make(gathered[i], False))

    work = g.submit("all_gather", lambda comm: comm.Iallgather(send.buf, gathered), finish,
                    [tensor_list], async_op)
    return work if async_op else None


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank i's ``output`` = the reduction over ranks of the i-th of ``world_size`` equal
    chunks of ``input``."""
    g = _resolve(group)
    _tensor(output, "output")
    _tensor(input, "input")
    if input.numel() != g.size * output.numel():
        raise ValueError(f"input tensor must be the same size as output size times world size "
                         f"({input.numel()} != {g.size} * {output.numel()})")
    _same_dtype(output, input)
    return _reduce_scatter(g, output, Staged(input).buf, op, async_op, "reduce_scatter_tensor")


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank i's ``output`` = the reduction over ranks of their ``input_list[i]``."""
    g = _resolve(group)
    _tensor(output, "output")
    _check_list(input_list, output, g.size, "input_list")
    from ..autograd import no_grad
    from ..ops.shape_join import stack
    with no_grad():
        inputs = stack(list(input_list))  # one contiguous send buffer, on the inputs' device
    return _reduce_scatter(g, output, Staged(inputs).buf, op, async_op, "reduce_scatter")


def _reduce_scatter(g, output, sendbuf, op, async_op, name):
    MPI = _mpi()
    mop = mpi_op(MPI, op, np.dtype(output._data.dtype))
    recv = Staged(output, fill=False)

    def finish():
        recv.write_back()
        if op is ReduceOp.AVG:
            from ..autograd import no_grad
            with no_grad():
                output.div_(g.size)

    work = g.submit(name, lambda comm: comm.Ireduce_scatter_block(sendbuf, recv.buf, mop),
                    finish, [output], async_op)
    return work if async_op else None


def _same_dtype(a, b):
    if a.dtype is not b.dtype:
        raise TypeError(f"tensors must have the same dtype (got {a.dtype} and {b.dtype})")


def _check_list(tensors, like, size, what):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        raise ValueError(f"{what} must be a list of world_size={size} tensors")
    for t in tensors:
        _tensor(t, what)
        if tuple(t.shape) != tuple(like.shape) or t.dtype is not like.dtype:
            raise ValueError(f"every tensor in {what} must have the shape and dtype of the "
                             f"input ({tuple(like.shape)}, {like.dtype}); got "
                             f"({tuple(t.shape)}, {t.dtype})")


# ---------------------------------------------------------------------------- point to point


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    g = _resolve(group)
    _tensor(tensor)
    dst = group_dst if dst is None else dst
    _check_rank(dst, g.size, "dst")
    if dst == g.rank:
        raise ValueError("Invalid destination rank: should not be the same as rank of the "
                         "current process.")
    staged = Staged(tensor)
    return g.submit("send", lambda comm: comm.Isend(staged.buf, dest=int(dst), tag=tag),
                    None, [tensor], async_op=True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    g = _resolve(group)
    _tensor(tensor)
    src = group_src if src is None else src
    MPI = _mpi()
    if src is not None:
        _check_rank(src, g.size, "src")
    staged = Staged(tensor, fill=False)
    work = g.submit("recv", lambda comm: comm.Irecv(
        staged.buf, source=MPI.ANY_SOURCE if src is None else int(src), tag=tag),
        staged.write_back, [tensor], async_op=True, status=MPI.Status())
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor``; returns the sender's rank (any rank when ``src`` is None)."""
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return int(work._status.Get_source())
