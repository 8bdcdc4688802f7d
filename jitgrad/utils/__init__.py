"""``jitgrad.utils``: ``data`` (Dataset, DataLoader) and ``hooks`` (RemovableHandle)."""
from . import data, hooks  # noqa: F401

__all__ = ["data", "hooks"]
