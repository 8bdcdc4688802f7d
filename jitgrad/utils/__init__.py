"""``jitgrad.utils``: ``data`` (Dataset, DataLoader), ``hooks`` (RemovableHandle) and
``checkpoint`` (activation checkpointing)."""
from . import checkpoint, data, hooks  # noqa: F401

__all__ = ["checkpoint", "data", "hooks"]
