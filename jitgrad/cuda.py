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
    from .backends import cuda as B
    if B.is_available():
        B._cuda().synchronize()


def manual_seed(seed) -> None:
    """Accepted for scripts that seed every device; there is no CUDA generator."""


manual_seed_all = manual_seed
