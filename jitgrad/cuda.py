"""jitgrad.cuda: device queries. This build runs on the CPU only (the CUDA backend is tracked
as its own issue); ``is_available()`` says so and ``device="cuda"`` raises a clear error."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed) -> None:
    """Accepted for scripts that seed every device; there is no CUDA generator."""


manual_seed_all = manual_seed
