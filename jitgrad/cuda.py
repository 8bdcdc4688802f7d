"""jitgrad.cuda: device queries (PyTorch semantics: available only when kernels can run).

``is_available()`` is True with numba-cuda and a working GPU, or under the CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda is imported: kernels really run there, one
Python thread per CUDA thread), and False otherwise, in which case ``device="cuda"`` raises a
clear RuntimeError. Calling these imports numba.cuda; ``import jitgrad`` does not."""


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
