"""``torch.autograd.graph``: the Node base class (every ``grad_fn`` is one) and the saved-tensor
hooks (``saved_tensors_hooks``, ``disable_saved_tensors_hooks``, ``save_on_cpu``)."""
from __future__ import annotations

from .engine_hooks import register_post_accumulate_grad_hook  # noqa: F401
from .node import Node, RemovableHandle  # noqa: F401
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

__all__ = ["Node", "saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu"]
