"""``RemovableHandle``: what ``register_*_hook`` returns (PyTorch's ``torch.utils.hooks``)."""
from __future__ import annotations

import weakref

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    ``hooks_dict`` maps handle ids to hooks; ``extra_dict`` (a dict or a list of dicts) holds
    per-hook flags (``with_kwargs``, ``always_call``) removed along with the hook.
    """

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
