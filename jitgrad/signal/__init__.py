"""``torch.signal``: its ``windows`` module (loaded on first access by jitgrad.__getattr__)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
