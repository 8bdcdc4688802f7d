"""``torch.return_types``: the named tuples (structseqs) of the ops that return values and
indices (max/min with a dim, aminmax, sort, topk, cummax, ...), one class per name, printed and
pickled as PyTorch's."""
from __future__ import annotations

import collections

from ..tensor import Tensor


class _ReturnType(tuple):
    """torch.return_types.<name>(values=..., indices=...): a tuple with named fields, printed
    as PyTorch prints its structseqs."""

    _name = "max"
    _fields = ("values", "indices")
    n_fields = n_sequence_fields = 2
    __slots__ = ()

    def __new__(cls, *items):
        if len(items) == 1 and not isinstance(items[0], Tensor):  # from an iterable
            items = tuple(items[0])
        if len(items) != len(cls._fields):
            raise TypeError(f"torch.return_types.{cls._name} takes a {len(cls._fields)}-sequence "
                            f"({len(items)}-sequence given)")
        return tuple.__new__(cls, items)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{body})"

    def __reduce__(self):
        return (_make_return, (self._name, self._fields, tuple(self)))


def _field(i):
    return property(lambda self: self[i])


_RETURN_TYPES = {}


def _return_type(name, fields=("values", "indices")):
    """The structseq class ``torch.return_types.<name>`` (one class per name)."""
    if name not in _RETURN_TYPES:
        ns = {"_name": name, "_fields": fields, "__slots__": (), "n_fields": len(fields),
              "n_sequence_fields": len(fields)}
        ns.update({f: _field(i) for i, f in enumerate(fields)})
        _RETURN_TYPES[name] = type(name, (_ReturnType,), ns)
    return _RETURN_TYPES[name]


def _make_return(name, fields, items):
    return _return_type(name, tuple(fields))(*items)


collections.abc.Sequence.register(_ReturnType)
