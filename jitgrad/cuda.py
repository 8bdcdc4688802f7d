"""jitgrad.cuda: device queries (PyTorch semantics: available only when kernels can run).

``is_available()`` is True with numba-cuda and a working GPU, or under the CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda is imported: kernels really run there, one
Python thread per CUDA thread), and False otherwise, in which case ``device="cuda"`` raises a
clear RuntimeError. Calling these imports numba.cuda; ``import jitgrad`` does not."""

from .backends.cuda_alloc import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError


def is_available() -> bool:
    from .backends import cuda as B
    return B.is_available()


def device_count() -> int:
    from .backends import cuda as B
    return B.device_count()


def current_device() -> int:
    return 0


def synchronize(device=None) -> None:
    """Wait for the device; raises an index error a kernel flagged since the last synchronizing
    point (PyTorch reports its device-side asserts here too)."""
    from .backends import cuda as B
    if B.is_available():
        B._cuda().synchronize()
        B.raise_device_errors()


def manual_seed(seed) -> None:
    """Seed the CUDA generator (device-side Philox; ``jitgrad._cuda_random``). Does not import
    numba.cuda. ``jitgrad.manual_seed`` seeds it too."""
    from . import _cuda_random
    _cuda_random.manual_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    from . import _cuda_random
    _cuda_random.default_generator.seed()


seed_all = seed


def initial_seed() -> int:
    from . import _cuda_random
    return _cuda_random.default_generator.initial_seed()


def get_rng_state(device="cuda"):
    """The CUDA generator's state: 16 uint8 values (seed and Philox offset), a CPU tensor."""
    from . import _cuda_random
    from .ops.basic import tensor
    return tensor(_cuda_random.default_generator.get_state())


def set_rng_state(new_state, device="cuda") -> None:
    from . import _cuda_random
    d = new_state._data if hasattr(new_state, "_data") else new_state
    _cuda_random.default_generator.set_state(d)


# ----------------------------------------------------------------------------- memory
# The caching allocator's statistics (backends/cuda_alloc.py; docs/cuda-tensors.md, "Device
# memory"). As in PyTorch, before the first device allocation nothing is initialized: the
# statistics are empty and empty_cache() does nothing; none of these imports numba.cuda.

def _allocator(device):
    """The allocator for ``device`` (PyTorch's ``_get_device_index(device, optional=True)``
    rules), or None before the first device allocation."""
    from ._size import device as _device
    from .backends import cuda_alloc
    alloc = cuda_alloc.current()
    if alloc is None or device is None:
        return alloc
    if isinstance(device, int):
        index = device
    else:
        d = _device(device) if isinstance(device, str) else device
        if getattr(d, "type", None) != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        index = 0 if d.index is None else d.index
    if index != 0:
        raise RuntimeError(f"Invalid device argument {index}: did you call init?")
    return alloc


def memory_stats(device=None) -> dict:
    """PyTorch's flat statistics dict (``"allocated_bytes.all.current"``, ``".peak"``,
    ``"reserved_bytes.all.current"``, ``"num_device_alloc"``, ...), sorted by key."""
    alloc = _allocator(device)
    return {} if alloc is None else alloc.memory_stats()


def _current(device, key) -> int:
    alloc = _allocator(device)
    return 0 if alloc is None else alloc.memory_stats()[key]


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by live tensors (their blocks' sizes)."""
    return _current(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None) -> int:
    return _current(device, "allocated_bytes.all.peak")


def memory_reserved(device=None) -> int:
    """Bytes obtained from the driver: live blocks plus cached free ones."""
    return _current(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None) -> int:
    return _current(device, "reserved_bytes.all.peak")


def empty_cache() -> None:
    """Give the cached blocks no tensor uses back to the driver (live tensors keep theirs)."""
    from .backends import cuda_alloc
    alloc = cuda_alloc.current()
    if alloc is not None:
        alloc.empty_cache()


def reset_peak_memory_stats(device=None) -> None:
    """Set every ``peak`` statistic to its current value."""
    alloc = _allocator(device)
    if alloc is not None:
        alloc.reset_peak()


def reset_accumulated_memory_stats(device=None) -> None:
    """Zero the ``allocated``/``freed`` totals and the event counters."""
    alloc = _allocator(device)
    if alloc is not None:
        alloc.reset_accumulated()
