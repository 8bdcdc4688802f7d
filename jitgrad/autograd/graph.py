"""``torch.autograd.graph``: the Node base class (every ``grad_fn`` is one)."""
from __future__ import annotations

from .engine_hooks import register_post_accumulate_grad_hook  # noqa: F401
from .node import Node, RemovableHandle  # noqa: F401

__all__ = ["Node"]
